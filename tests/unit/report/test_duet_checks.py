"""The duets' own checks in words (driver/report/duet_checks.py), recomputed from the tables the
real table code builds from planted duet records: an A/A row with a planted order bias is called
a false positive, a round planted to move every row is named, a run without the tables says
nothing, and the A/A rows are never counted as versions of the answer."""
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from driver.report import duet_checks
from driver.report.statements import claims
from driver.tables import duet_rounds, duets

REPO = Path(__file__).resolve().parents[3]
CELL = {"model": "small", "data": "small", "keras": "tf.keras", "mode": "graph",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}


def recs(log_ratios, env, machine="m1"):
    return [{"machine": machine, "env": env, "cell": dict(CELL), "reference_env": "tf1.14",
             "reference_cell": dict(CELL), "replicate": i, "status": "ok",
             "log_ratio": float(x), "left_median_s": 0.007 * math.exp(x),
             "right_median_s": 0.007, "left_framework_version": env[2:] + ".1",
             "right_framework_version": "1.14.0", "window_log_ratios": [x, x], "wall_s": 6.0,
             "reason": "", "design": {}} for i, x in enumerate(log_ratios)]


def family(aa_bias=0.0, moved_round=None, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(10):
        x = rng.normal(0.05 * (k % 3), 0.02, 4)
        if moved_round is not None:
            x[moved_round] += 0.08
        out += recs(x, f"tf2.{k}")
    out += recs(rng.normal(aa_bias, 0.005, 4), "tf1.14")  # A/A: the reference against itself
    return out


def tables(records):
    head = duets.duets_table(records)
    return {"duets": head, "duets_aa": duets.duets_table(records, aa=True),
            "duet_rounds": duet_rounds.duet_rounds(head, records)}


def test_aa_false_positive_and_order_bias_recomputed():
    tabs = tables(family(aa_bias=0.3))
    aa = tabs["duets_aa"]
    (m,) = duet_checks.duet_checks(tabs)
    text = next(c for c in m["checks"] if c.kind == "aa").text
    different = int(aa["verdict"].isin(["left_faster", "right_faster"]).sum())
    assert different == 1  # the planted bias is found by the table
    assert f"{different} of {len(aa)} row called different" in text, text
    assert "called different, a false positive" in text
    bias = (aa["ratio"].iloc[0] - 1) * 100
    low = (aa["ratio_ci_low"].iloc[0] - 1) * 100
    assert f"{bias:+.1f} % (graph, interval {low:+.1f} %" in text  # the bias with its interval
    assert f"{aa['ratio'].iloc[0]:.3f}x" in text
    # judged at the headline's own level too: the planted bias is more than it allows
    level = 1 - tabs["duets"]["ci_level"].iloc[0]
    assert f"At the headline's own level ({level:.3g}): 1 of 1" in text
    assert "more than it allows" in text


def test_aa_at_the_headlines_level_says_how_little_one_row_can_show():
    (m,) = duet_checks.duet_checks(tables(family(aa_bias=0.0)))
    text = next(c for c in m["checks"] if c.kind == "aa").text
    assert "0 of 1 A/A p-values at or below it" in text and "can only fail grossly" in text


def test_aa_without_bias_is_no_false_positive():
    tabs = tables(family(aa_bias=0.0))
    (m,) = duet_checks.duet_checks(tabs)
    check = next(c for c in m["checks"] if c.kind == "aa")
    assert check.cls == "ok" and "0 of 1 row called different" in check.text
    assert "false positive" not in check.text


def test_health_check_names_the_round_that_moved():
    tabs = tables(family(moved_round=2))
    rounds = tabs["duet_rounds"]
    (m,) = duet_checks.duet_checks(tabs)
    text = next(c for c in m["checks"] if c.kind == "rounds").text
    moved = rounds[rounds["moved"]]
    assert 2 in set(moved["round"])
    stated = re.search(r"graph: (\d+) of (\d+) rounds moved", text)
    assert stated and (int(stated[1]), int(stated[2])) == (len(moved), len(rounds)), text
    for r in moved.itertuples():
        assert f"round {r.round} ({(math.exp(r.shift) - 1) * 100:+.1f} %" in text


def test_health_check_quiet_says_none():
    tabs = tables(family())
    rounds = tabs["duet_rounds"]
    (m,) = duet_checks.duet_checks(tabs)
    text = next(c for c in m["checks"] if c.kind == "rounds").text
    if not rounds["moved"].any():
        assert f"graph: none of {len(rounds)} rounds moved" in text


@pytest.mark.parametrize("tabs", [{}, {"duets_aa": pd.DataFrame(),
                                        "duet_rounds": pd.DataFrame()},
                                  {"duets_aa": pd.DataFrame(columns=duets.COLUMNS),
                                   "duet_rounds": pd.DataFrame(columns=duet_rounds.COLUMNS)}])
def test_older_runs_say_nothing(tabs):
    assert duet_checks.duet_checks(tabs) == []
    assert duet_checks.markdown(tabs) == []


def test_aa_rows_are_never_versions():
    records = family(aa_bias=0.3)
    tabs = tables(records)
    found = claims(tabs, 0.10, "TF 1.14.0")
    ids = [i for c in found["items"] for i in c.row_ids]
    assert ids and not any(":tf1.14:" in i for i in ids)
    graph = next(c for c in found["items"] if c.question == "graph")
    assert len(graph.rows) == len(tabs["duets"])
    # an older duets table that still held the A/A row: not a version either
    mixed = dict(tabs, duets=pd.concat([tabs["duets"], tabs["duets_aa"]], ignore_index=True))
    graph = next(c for c in claims(mixed, 0.10, "TF 1.14.0")["items"] if c.question == "graph")
    assert len(graph.rows) == len(tabs["duets"])


def test_published_results_page_states_the_tables():
    tables_dir = REPO / "docs" / "tables"
    if not (tables_dir / "duet_rounds.csv").is_file():
        pytest.skip("no published health check")
    page = (REPO / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    rounds = pd.read_csv(tables_dir / "duet_rounds.csv")
    aa = pd.read_csv(tables_dir / "duets_aa.csv")
    if rounds.empty and aa.empty:
        assert "## The duets' own checks" not in page
        return
    lines = page.split("## The duets' own checks", 1)[1].split("\n## ", 1)[0]
    for (machine, mode), part in rounds.groupby(["machine", "mode"]):
        n_moved = int(part["moved"].sum())
        line = next(ln for ln in lines.splitlines() if machine in ln and "Health" in ln)
        want = f"{mode}: {n_moved} of {len(part)} rounds moved" if n_moved else \
            f"{mode}: none of {len(part)} rounds moved"
        assert want in line, (want, line)
    assert ("A/A (" in lines) == (not aa.empty)
