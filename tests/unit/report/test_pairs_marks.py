"""The report's comparison rows that a pair in one process answers (driver/report/sections/
pairs.py: mark_paired): the pair's verdict in place of the cells', marked descriptive and
counted apart; the pairs section names the tables of several value pairs (keras_vs_tfkeras) by
their rows' own sides and says how many cells' rows its pairs answer."""
import math

import pandas as pd
from helpers import REPO

from driver.report import render
from driver.stats import verdicts
from driver.tables import duets
from tfspeed.cells import cell_id

TEMPLATE = REPO / "report" / "template.html.j2"
BASE = {"model": "small", "data": "small", "keras": "keras3", "mode": "eager",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}


def pair_records(left, right, shift, table, n=6, sd=0.01):
    return [{"machine": "m", "env": "tf2.21", "cell": left, "reference_env": "tf2.21",
             "reference_cell": right, "replicate": rep, "status": "ok", "kind": "pair",
             "design": {"replicates": n, "together": True, "table": table},
             "log_ratio": shift + sd * (-1) ** rep, "left_median_s": 0.01 * math.exp(shift),
             "right_median_s": 0.01, "wall_s": 5.0, "reason": ""} for rep in range(n)]


def cells_row(left, right, factor, verdict, **extra):
    shared = {a: left[a] for a in left if a != factor}
    return {"machine": "m", "env": "tf2.21", "framework_version": "2.21.0", **shared,
            f"left_{factor}": left[factor], f"right_{factor}": right[factor],
            "left_cell_id": cell_id(left), "right_cell_id": cell_id(right), "ratio": 1.2,
            "pct": -17.0, "ratio_ci_low": 0.9, "ratio_ci_high": 1.6, "ci_level": 0.95,
            "verdict": verdict, "left_median_s": 0.012, "right_median_s": 0.01,
            "p_adjusted": 0.3, **extra}


def test_cells_rows_a_pair_answers_are_descriptive_with_the_pairs_verdict():
    keras3, tf_keras = BASE, dict(BASE, keras="tf_keras")
    epoch, tob = dict(BASE, api="fit_epoch"), BASE
    recs = (pair_records(keras3, tf_keras, 0.4, "keras_vs_tfkeras")
            + pair_records(epoch, tob, -0.3, "fit_epoch_vs_train_on_batch"))
    tabs = {"pairs": duets.duets_table(recs, kind="pairs")}
    assert set(tabs["pairs"]["verdict"].map(verdicts.norm_code)) == {
        verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER}
    # the cells' rows: one each that a pair answers, one (tfdata) that none does
    tabs["keras_vs_tfkeras"] = pd.DataFrame([
        cells_row(keras3, tf_keras, "keras", "undecided"),
        cells_row(dict(keras3, input="tfdata"), dict(tf_keras, input="tfdata"), "keras",
                  "undecided")])
    tabs["fit_epoch_vs_train_on_batch"] = pd.DataFrame([cells_row(epoch, tob, "api",
                                                                  "left_faster")])
    ctx = render.build_context(pd.DataFrame(), tabs, {}, {}, "m", {})
    assert not {"tables", "pairs"} & set(ctx["errors"]), ctx["errors"]
    groups = {g["name"]: g["main"] for g in ctx["tables"]["groups"]}
    keras_view = groups["keras_vs_tfkeras"]
    first, second = (row[0]["text"] for row in keras_view["full"]["rows"])
    assert first.startswith("descriptive (a pair in one process answers this: "
                            "the first-named slower, ")
    assert second == "undecided"  # no pair answers the tfdata row: its own verdict stays
    assert keras_view["paired"] == 1 and keras_view["counts"] == {"undecided": 1}
    assert keras_view["digest"].endswith("; 1 more descriptive (pairs in one process answer "
                                         "them)")
    epoch_view = groups["fit_epoch_vs_train_on_batch"]
    (only,) = epoch_view["full"]["rows"]
    assert only[0]["text"].startswith("descriptive (a pair in one process answers this: "
                                      "fit_epoch faster, ")
    assert only[0]["title"] == "the cells' own verdict: faster"
    assert epoch_view["counts"] == {}
    html = render.render_html(ctx, TEMPLATE)
    part = html[html.index('<section id="pairs"'):]
    part = part[:part.index("</section>")]
    assert "left: the first-named, right: the other" in part
    assert "keras3 vs tf_keras" in part and "fit_epoch vs train_on_batch" in part
    assert ("These pairs answer 1 of the 2 cells' rows of table <code>keras_vs_tfkeras</code>"
            in part)
    # without a pairs table nothing is marked
    bare = render.build_context(pd.DataFrame(), {k: v for k, v in tabs.items() if k != "pairs"},
                                {}, {}, "m", {})
    view = next(g for g in bare["tables"]["groups"] if g["name"] == "keras_vs_tfkeras")["main"]
    assert "paired" not in view and view["full"]["rows"][0][0]["text"] == "undecided"
