"""The answer for a user's own model (driver/report/sections/own_answer.py), recomputed here from
planted rows: pairs in one process (pair files of planted log ratios, turned into the pairs
table by the study's own code, driver/tables/duets.py) decide the ways inside an env and mode;
the cells' frameworks rows only say, descriptively, which env and mode holds the fastest way,
and are never called fastest, as fast or to avoid."""
import math
import re

import pandas as pd

from driver.report.sections import own_answer as own
from driver.tables.duets import duets_table
from tfspeed.cells import cell_id


def cell(keras, mode, api, model="mine"):
    return {"model": model, "data": "seqs", "keras": keras, "mode": mode, "api": api,
            "input": "numpy", "device": "cpu"}


def pair_files(env, left, right, table, logs):
    """One pair's files (supervise_duet.py's record, `kind` pair), one per replicate."""
    return [{"machine": "m", "env": env, "reference_env": env, "cell": left,
             "reference_cell": right, "kind": "pair", "status": "ok", "replicate": i,
             "design": {"together": True, "table": table, "replicates": len(logs),
                        "max_replicates": len(logs)},
             "log_ratio": x, "left_median_s": math.exp(x) * 0.01, "right_median_s": 0.01}
            for i, x in enumerate(logs)]


def around(value, spread, n=6):
    """n log ratios around log(value), a known spread, mean exactly log(value)."""
    steps = [spread * (i - (n - 1) / 2) for i in range(n)]
    return [math.log(value) + s for s in steps]


A, B = cell("keras3", "eager", "train_on_batch"), cell("keras3", "eager", "fit")
C, D = cell("tf_keras", "eager", "train_on_batch"), cell("tf_keras", "eager", "fit")
E, F = cell("tf.keras", "graph", "train_on_batch"), cell("tf.keras", "graph", "fit")
P = cell("keras3", "eager", "predict")
PAIRS = duets_table(
    pair_files("tf2.21", B, A, "fit_vs_train_on_batch", around(1.5, 0.01))
    + pair_files("tf2.21", D, C, "fit_vs_train_on_batch", around(1.5, 0.01))
    + pair_files("tf2.21", A, C, "keras_vs_tfkeras", around(0.98, 0.005))
    + pair_files("tf1.14", F, E, "fit_vs_train_on_batch", around(1.05, 0.2))
    + pair_files("tf2.21", P, cell("tf_keras", "eager", "predict"), "keras_vs_tfkeras",
                 around(1.4, 0.01))
    + pair_files("tf2.21", A, A, None, around(1.0, 0.01))  # an A/A row: no way compared
    + pair_files("tf2.21", cell("keras3", "eager", "fit", "other"),
                 cell("keras3", "eager", "train_on_batch", "other"), "fit_vs_train_on_batch",
                 around(0.5, 0.01)),
    kind="pairs")


def fw(env, keras, mode, api, ratio, low, high, verdict, model="mine"):
    """A frameworks row (cells): the fastest cell of an env and mode against TF's fastest."""
    out = {"machine": "m", "model": model, "data": "seqs", "device": "cpu", "ratio": ratio,
           "ratio_ci_low": low, "ratio_ci_high": high, "verdict": verdict}
    for side, values in (("left", (env, keras, mode, api, "numpy")),
                         ("right", ("tf2.21", "keras3", "eager", "train_on_batch", "numpy"))):
        for key, value in zip(("env", "keras", "mode", "api", "input"), values):
            out[f"{side}_{key}"] = value
    out["left_cell_id"] = cell_id(cell(keras, mode, api, model))
    out["right_cell_id"] = cell_id(A)
    return out


CELLS = pd.DataFrame([
    fw("tf1.14", "tf.keras", "graph", "train_on_batch", 1.20, 1.05, 1.37, "right_faster"),
    fw("tf2.21", "tf_keras", "graph", "train_on_batch", 1.01, 0.95, 1.07, "equivalent"),
])


def test_pairs_table_as_planted():
    """The planted rows as the study's pairs table judges them (the premise of the rest)."""
    mine = {(r["env"], r["left_cell_id"], r["right_cell_id"]): r["verdict"]
            for r in PAIRS.to_dict("records")}
    assert mine[("tf2.21", cell_id(B), cell_id(A))] == "right_faster"
    assert mine[("tf2.21", cell_id(A), cell_id(C))] == "equivalent"
    assert mine[("tf1.14", cell_id(F), cell_id(E))] == "undecided"


def test_the_fastest_way_is_chained_from_the_pairs():
    best = {(b["env"], b["mode"]): b for b in own.paired_best(PAIRS, "mine", "train")}
    assert set(best) == {("tf2.21", "eager"), ("tf1.14", "graph")}
    eager = best[("tf2.21", "eager")]
    # keras3 train_on_batch: 0.98 of tf_keras's, each 1.5 times faster than its fit
    assert eager["way"] == "keras3, eager, train_on_batch, numpy in tf2.21"
    others = {o["way"]: o for o in eager["others"]}
    c = others["tf_keras, eager, train_on_batch, numpy in tf2.21"]
    assert c["design"] == "pair" and math.isclose(c["ratio"], 1 / 0.98, rel_tol=1e-9)
    b = others["keras3, eager, fit, numpy in tf2.21"]
    assert b["design"] == "pair" and math.isclose(b["ratio"], 1.5, rel_tol=1e-9)
    # tf_keras fit meets keras3 train_on_batch in no pair: a chain of two (either way round)
    d = others["tf_keras, eager, fit, numpy in tf2.21"]
    assert d["design"] == "derived" and d["n_pairs"] == 2
    assert best[("tf1.14", "graph")]["way"] == "tf.keras, graph, train_on_batch, numpy in tf1.14"


def test_the_paragraph_recomputed_from_the_rows():
    got = own.answer(PAIRS, CELLS, "mine", "train", 10)
    text = got["text"]
    assert text.startswith("The fastest way to train mine here is keras3, eager, train_on_batch, "
                           "numpy in tf2.21; as fast within ±10 %: tf_keras, eager, "
                           "train_on_batch, numpy in tf2.21 (1.02x [")
    first = text[:text.index(").") + 2]
    # the ones to avoid, slowest first, each with its design: the chain's ratio is 1.5 / 0.98
    avoid = re.search(r"; avoid: (.*) \(pairs in one process within tf2.21, eager; which env "
                      r"and mode holds it is descriptive: the cells put it first\)\.", text)
    assert avoid, text
    items = avoid.group(1).split("); ")
    assert items[0].startswith("tf_keras, eager, fit, numpy in tf2.21 (1.53x [")
    assert items[0].endswith("derived from 2 pairs")
    assert items[1].startswith("keras3, eager, fit, numpy in tf2.21 (1.50x [")
    assert items[1].endswith("a pair)")
    assert "1.5" in first and "tf1.14" not in first
    # the other env and mode with pairs, and what the run did not decide
    assert " In tf1.14, graph the pairs put tf.keras, graph, train_on_batch, numpy in tf1.14 " \
           "first." in text
    undecided = text[text.index("Not decided by this run: "):]
    assert undecided.startswith("Not decided by this run: tf.keras, graph, fit, numpy in tf1.14 "
                                "(1.05x [")
    assert "a pair) against tf.keras, graph, train_on_batch, numpy in tf1.14" in undecided
    assert "descriptive, counted apart" in undecided
    assert got["paired"] == 3 and got["derived"] == 1 and got["descriptive"] == 2
    assert "other" not in text and "predict" not in text  # another model, another task


def test_a_cells_only_row_is_never_fastest_as_fast_or_to_avoid():
    """Rows of the cells alone (frameworks): even where the cells call an env and mode
    equivalent to, or faster than, TensorFlow's best, the paragraph names them only in its
    descriptive clause, with the cells' own verdict, and counts them apart."""
    cells = pd.concat([CELLS, pd.DataFrame([
        fw("keras3-jax", "keras3", "eager", "fit", 0.80, 0.70, 0.90, "left_faster")])])
    got = own.answer(PAIRS, cells, "mine", "train", 10)
    text = got["text"]
    decided, rest = text.split("Not decided by this run: ")
    for cells_only in ("in tf2.21 (1.01x", "graph, train_on_batch, numpy in tf2.21",
                       "in keras3-jax"):
        assert cells_only not in decided, (cells_only, decided)
    assert "keras3, eager, fit, numpy in keras3-jax (0.80x [0.70–0.90], the cells' verdict: faster)" \
        in rest
    assert "tf_keras, graph, train_on_batch, numpy in tf2.21 (1.01x [0.95–1.07], the cells' " \
           "verdict: equivalent)" in rest
    # the fastest way stays the pairs' one; that the cells put another env first is said
    assert text.startswith("The fastest way to train mine here is keras3, eager, train_on_batch")
    assert "the cells put keras3-jax, eager first" in decided
    assert got["descriptive"] == 3


def test_without_pairs_nothing_is_decided_and_the_cells_are_descriptive():
    text = own.lead(PAIRS.iloc[0:0], CELLS, "mine", "train", 10)
    assert text.startswith("No paired row decides how to train mine here")
    assert "fastest way" not in text and "as fast" not in text and "avoid" not in text.lower()
    assert "the cells' verdict: slower" in text
    assert own.lead(PAIRS, CELLS, "absent", "train", 10) is None
    assert own.lead(pd.DataFrame(), pd.DataFrame(), "mine", "train", 10) is None


def test_inference_has_its_own_paragraph():
    text = own.lead(PAIRS, CELLS, "mine", "infer", 10)
    assert text.startswith("The fastest way to predict with mine here is tf_keras, eager, "
                           "predict, numpy in tf2.21; avoid: keras3, eager, predict, numpy in "
                           "tf2.21 (1.40x [")


def test_the_page_has_the_section_only_for_a_study_of_its_own_model():
    """An OPTIONAL section: no 'Your model' in the navigation of a seed study; with a model of
    the user's and its pairs rows, the section and its paragraph are on the page."""
    from helpers import REPO

    from driver.report import render

    tables = {"frameworks": CELLS, "pairs": PAIRS}
    seed = render.build_context(pd.DataFrame(), tables, {}, {}, "m", {})
    assert "own_answer" not in [s["id"] for s in seed["sections"]]
    ctx = render.build_context(pd.DataFrame(), tables, {}, {}, "m",
                               {"models": {"mine": {"builder": "my_model.py:build"}}})
    assert "own_answer" in [s["id"] for s in ctx["sections"]]
    html = render.render_html(ctx, REPO / "report" / "template.html.j2")
    section = html[html.index('<section id="own_answer"'):]
    assert ctx["own_answer"]["leads"][0]["text"] in section.replace("&#39;", "'")
    assert '<a href="#own_answer">Your model</a>' in html


def test_the_reports_machine_only_and_rows_without_an_interval():
    """A study of two machines: the paragraph chains the report machine's pairs only. A pair of
    one replicate (no se) still places its ways, with no interval and undecided."""
    from driver.report.data import ReportData

    other = PAIRS.assign(machine="x", log_ratio=-PAIRS["log_ratio"], ratio=1 / PAIRS["ratio"])
    config = {"models": {"mine": {}}, "min_effect": 0.1}
    data = ReportData(cells=pd.DataFrame(), machine="m", config=config,
                      tabs={"pairs": pd.concat([PAIRS, other]), "frameworks": CELLS})
    train = [x for x in own.build(data)["leads"] if x["task"] == "train"][0]
    assert train["text"] == own.lead(PAIRS, CELLS, "mine", "train", 10)
    one = duets_table(pair_files("tf2.21", D, A, "fit_vs_train_on_batch", [math.log(2.0)])
                      + pair_files("tf2.21", B, D, "keras_vs_tfkeras", around(1.0, 0.01))
                      + pair_files("tf2.21", C, A, "keras_vs_tfkeras", around(1.1, 0.3)),
                      kind="pairs")
    text = own.lead(one, CELLS, "mine", "train", 10)
    assert "tf_keras, eager, fit, numpy in tf2.21 (2.00x [no interval], a pair)" in text
    assert "keras3, eager, fit, numpy in tf2.21 (2.00x [no interval], derived from 2 pairs)" \
        in text


def duet_files(env, left, ref_env, right, logs):
    """One own-model duet's files (supervise_duet.py's record, design `own`), one a replicate."""
    return [{"machine": "m", "env": env, "reference_env": ref_env, "cell": left,
             "reference_cell": right, "kind": "duet", "status": "ok", "replicate": i,
             "design": {"own": True, "replicates": len(logs), "max_replicates": len(logs)},
             "log_ratio": x, "left_median_s": math.exp(x) * 0.01, "right_median_s": 0.01}
            for i, x in enumerate(logs)]


E_EAGER = cell("tf.keras", "eager", "train_on_batch")
# TF 2.21 Keras 3 eager against TF 1.14 eager: 0.8x; TF 1.14 graph against TF 1.14 eager: 0.5x
OWN = duets_table(
    duet_files("tf2.21", A, "tf1.14", E_EAGER, around(0.8, 0.01))
    + duet_files("tf1.14", E, "tf1.14", E_EAGER, around(0.5, 0.01)), kind="duets_own")


def test_duets_join_the_envs_and_modes_into_one_answer_from_paired_rows():
    """With the duets_own table, the ways of TF 2.21 eager and TF 1.14 graph meet in one graph:
    TF 1.14 graph train_on_batch is 0.5 / 0.8 = 0.625x TF 2.21 Keras 3 eager, so it is the
    fastest way, decided by paired rows (a chain through two duets), not by the cells (which
    put it 1.20x slower); the cells' clause names no env and mode the paired rows join."""
    assert set(OWN["cell_id"].str.contains("~")) == {True, False}  # the modes row joins two ids
    best = own.paired_best(PAIRS, "mine", "train", OWN)
    top = max(best, key=lambda b: len(b["settings"]))
    assert top["way"] == own.way_of(cell_id(E), "tf1.14")
    assert {tuple(s) for s in top["settings"]} == {("tf2.21", "eager"), ("tf1.14", "graph"),
                                                   ("tf1.14", "eager")}
    got = own.answer(PAIRS, CELLS, "mine", "train", 10.0, duets=OWN)
    text = got["text"]
    assert text.startswith("The fastest way to train mine here is %s" % top["way"]), text
    assert got["fastest"]["way"] == top["way"]
    against = {o["cell_id"]: o for o in got["fastest"]["others"]}  # judged in answer()
    keras3 = against[own.node("tf2.21", cell_id(A))]
    assert keras3["design"] == "derived" and keras3["duets"] == 2
    assert math.isclose(keras3["ratio"], 0.8 / 0.5, rel_tol=1e-6)
    assert keras3["verdict"] == "right_faster"  # slower than the fastest: to avoid
    assert "avoid: " in text and "derived from 2 paired rows, 2 of them duets" in text
    # the env and mode no paired row joins (TF 2.21 graph: cells only) stays descriptive
    assert "no paired row joins them to the fastest way" in text
    assert "tf_keras, graph, train_on_batch, numpy in tf2.21 (1.01x" in text
    assert "tf.keras, graph, train_on_batch, numpy in tf1.14 (1.20x" not in text
    # without the duets, the same rows give one answer per env and mode, as before
    assert "no paired design compares your model" in own.answer(
        PAIRS, CELLS, "mine", "train", 10.0)["text"]
