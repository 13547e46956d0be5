"""The frameworks duets on the page (config duets.frameworks; driver/report/split.py
frameworks_duets, driver/report/bottom_line.py frameworks_line): the rows and the answer's line
come from the duets_frameworks table, recomputed here from its rows; the cells' picks only where
no such duets ran."""
import math

import numpy as np
import pandas as pd
import pytest

from driver.report import frameworks_line as bottom_line
from driver.report import split
from driver.tables.duets import duets_table

SIDES = {"torch2.13": {"keras": "none", "mode": "eager", "api": "custom_loop"},
         "keras3-jax": {"keras": "keras3", "mode": "eager", "api": "train_on_batch"}}
REF = {"model": "small", "data": "small", "keras": "tf_keras", "mode": "graph",
       "api": "train_on_batch", "input": "numpy", "device": "cpu"}


def records(ratios, n=6, sd=0.01, seed=0):
    """n duet files per way: log ratios around log(ratio) with spread sd, TF's side 5 ms."""
    rng = np.random.default_rng(seed)
    out = []
    for env, ratio in ratios.items():
        cell = dict(REF, **SIDES[env])
        for r, x in enumerate(math.log(ratio) + sd * rng.standard_normal(n)):
            out.append({"machine": "amd-epyc-2c-x", "env": env, "cell": cell,
                        "reference_env": "tf2.21", "reference_cell": REF, "status": "ok",
                        "replicate": r, "kind": "duet", "log_ratio": float(x),
                        "left_median_s": 0.005 * math.exp(x), "right_median_s": 0.005,
                        "wall_s": 7.0, "design": {"replicates": n, "max_replicates": n,
                                                  "frameworks": True}})
    return out


@pytest.fixture
def table():
    return duets_table(records({"torch2.13": 0.7, "keras3-jax": 1.02}),
                       kind="duets_frameworks")


def test_the_table_decides_each_way_and_the_page_shows_its_verdicts(table):
    by_env = table.set_index("env")
    assert by_env.loc["torch2.13", "verdict"] == "left_faster"
    assert by_env.loc["keras3-jax", "verdict"] == "equivalent"
    view = split.frameworks_duets(table, 0.10)
    assert view["n"] == 2 and view["id"] == "t-best-duets"
    wins = {row[1]["text"].split(" · ")[0]: row[-1]["text"] for row in view["rows"]}
    ratio = by_env.loc["torch2.13", "ratio"]
    assert wins["torch2.13"] == f"torch2.13, {1 / ratio:.2f}x as fast"
    assert wins["keras3-jax"] == "neither (within 10%)"
    assert view["rows"][0][3]["text"].startswith("tf2.21 · tf_keras · TF 1-style graph")


def test_the_answers_line_is_the_duets_where_they_ran(table):
    cells_pick = pd.DataFrame([{"machine": "amd-epyc-2c-x", "task": "train",
                                "left_family": "PyTorch", "left_median_s": 0.004, "ratio": 0.8,
                                "verdict": "undecided", "right_median_s": 0.005,
                                "right_framework_version": "2.21.0", "right_mode": "graph",
                                "right_api": "train_on_batch", "right_keras": "tf_keras"}])
    line = bottom_line.frameworks_line(cells_pick, table)
    assert line["what"].endswith("(training, in duets)")
    for r in table.to_dict("records"):
        assert f"{r['ratio']:.2f}x" in line["text"] and f"{int(r['n'])} duets" in line["text"]
    assert "PyTorch" not in line["text"]  # the cells' pick is not the answer here
    alone = bottom_line.frameworks_line(cells_pick, pd.DataFrame())
    assert alone["what"] == "Best against best (training)" and "0.80x" in alone["text"]
    with pytest.raises(ValueError, match="one machine"):
        two = pd.concat([table, table.assign(machine="intel-xeon-2c-y")])
        bottom_line.frameworks_line(cells_pick, two)


def test_a_cells_best_row_that_duets_answer_is_marked_descriptive_one_by_one(table):
    """frameworks_best rows whose framework's env has a duets_frameworks row (same machine,
    model, data, training way for the task "train") give the duets' verdict, marked
    descriptive and counted apart; the others keep their own."""
    best = pd.DataFrame([
        {"machine": "amd-epyc-2c-x", "model": "small", "data": "small", "device": "cpu",
         "task": task, "left_family": fam, "left_env": env, "ratio": 0.8, "ratio_ci_low": 0.6,
         "ratio_ci_high": 1.1, "verdict": "undecided", "left_median_s": 0.004,
         "right_median_s": 0.005, "p_adjusted": 0.2}
        for task, fam, env in (("train", "PyTorch", "torch2.13"),
                               ("predict", "PyTorch", "torch2.13"),
                               ("train", "Keras 3 on PyTorch", "keras3-torch"))])
    view = split.best_vs_best(best, 0.10, table)
    assert view["descriptive"] == 1 and view["n"] == 3
    wins = [row[7] for row in view["rows"]]
    ratio = table.set_index("env").loc["torch2.13", "ratio"]
    assert wins[0]["text"] == ("descriptive (duets answer this: torch2.13 · Eager · custom loop · "
                               "NumPy: "
                               f"PyTorch, {1 / ratio:.2f}x as fast)")
    assert wins[0]["title"] == "the cells' own verdict: undecided"
    assert [w["text"] for w in wins[1:]] == ["undecided", "undecided"]
    # without duets every row keeps its own verdict
    assert split.best_vs_best(best, 0.10)["descriptive"] == 0
