"""Report sentences whose count or range the review found over other rows (issue 44, C13-C21),
each recomputed from the rows it covers: the AVOID range over every version it names, a change
point whose interval reaches 1 not called a sure step, the history's count of configurations
without a panel, the most common number of cells per version, the Keras of both sides of a
release row, and a forest plot's rows and versions told apart."""
import math

import numpy as np
import pandas as pd
from test_guidance_rules import _cell, _g

from driver.report import coverage, forest, guidance, releases


def test_avoid_range_covers_every_version_it_names():
    """AVOID in 2.0 and 2.2, undecided about 2x in 2.1 (inside the range): the printed ratios
    and intervals cover all three, and 2.1 is named as undecided."""
    rows = [dict(_g("2.0.0", "DONT", 3.00, mode="eager"), ratio_ci_low=2.5, ratio_ci_high=3.5),
            dict(_g("2.1.0", "neither", 2.05, mode="eager"), ratio_ci_low=1.9,
                 ratio_ci_high=2.2),
            dict(_g("2.2.0", "DONT", 2.50, mode="eager"), ratio_ci_low=2.1, ratio_ci_high=2.9)]
    cells = pd.DataFrame([_cell(v, mode="eager") for v in ("2.0.0", "2.1.0", "2.2.0")])
    (block,) = guidance.rules(pd.DataFrame(rows), cells)
    (rule,) = block["dont"]
    df = pd.DataFrame(rows)
    assert rule["where"].startswith("TF 2.0.0–2.2.0")
    want = (f"{df['ratio_to_fastest'].min():.2f}–{df['ratio_to_fastest'].max():.2f}x "
            f"(intervals {df['ratio_ci_low'].min():.2f}–{df['ratio_ci_high'].max():.2f}x)")
    assert rule["ratio"] == want
    assert [o.split(":")[0] for o in rule["open"]] == ["2.1.0"]


def cp(lo, hi, ratio=1.14, direction="slower"):
    return {"machine": "m", "line": "TensorFlow", "model": "small", "data": "small",
            "keras": "tf.keras", "mode": "graph", "api": "train_on_batch", "input": "numpy",
            "device": "cpu", "before_env": "tf1.15", "after_env": "tf2.0", "ratio": ratio,
            "ratio_ci_low": lo, "ratio_ci_high": hi, "direction": direction,
            "before_level_s": 0.005, "after_level_s": 0.0057, "alpha": 0.05}


def test_a_change_point_whose_interval_reaches_one_is_not_a_sure_step():
    view = releases.changepoint_view(pd.DataFrame([cp(0.983, 1.32), cp(1.05, 1.25)]),
                                     ["tf1.15", "tf2.0"])
    steps = [row[-1]["text"] if isinstance(row[-1], dict) and "text" in row[-1] else
             str(row[-1]) for row in view["table"]["rows"]]
    assert sum("not sure" in s for s in steps) == 1
    assert view["n_unsure"] == 1 and view["n_found"] == 2


def test_release_rows_name_the_keras_of_both_sides():
    both = {"keras": "tf.keras", "left_keras": "tf_keras", "right_keras": "tf_keras"}
    assert releases.keras_label(both) == "tf_keras"
    assert releases.keras_label(dict(both, right_keras="tf.keras")) == "tf.keras → tf_keras"
    assert releases.keras_label({"keras": "tf.keras"}) == "tf.keras"


def test_history_counts_configurations_without_a_panel_on_the_study_machines():
    rows = []
    for machine in ("m", "m.twin"):
        envs = ["tf1.14", "tf2.0", "tf2.1"] if machine == "m" else ["tf2.0"]
        for env in envs:
            for api in ("train_on_batch", "fit"):
                rows.append({"machine": machine, "model": "small", "data": "small",
                             "keras": "tf.keras", "mode": "graph",
                             "api": api if env != "tf2.1" or api == "fit" else "fit",
                             "input": "numpy", "device": "cpu", "env": env,
                             "framework": "tensorflow", "framework_version": env[2:]})
    df = pd.DataFrame(rows)
    main = df[df["machine"] == "m"]
    counts = main.groupby(forest.HISTORY_KEYS)["env"].nunique()
    assert forest.fewer_versions(df, 3) == int((counts < 3).sum()) == 1


def test_the_most_common_cells_per_version_is_what_the_counts_say():
    counts = [2] * 10 + [3] * 7 + [4] * 7
    text = coverage.common_count(counts)
    tally = pd.Series(counts).value_counts()
    value = max(v for v in tally.index if tally[v] == tally.max())
    k = int(tally[value])
    assert text == f"{k} of {len(counts)} versions hold {value} ok cells"
    assert float(np.median(counts)) == 3.0


def test_forest_label_says_rows_and_versions():
    rows = [{"label": v, "version": v.split(" ")[0], "ratio": r, "lo": r * 0.98,
             "hi": r * 1.02, "eq_lo": math.nan, "eq_hi": math.nan, "verdict": "right_faster",
             "head": True, "standin": False}
            for v, r in (("2.16.2 keras3", 1.03), ("2.16.2 tf_keras", 1.66), ("2.17.1", 1.6))]
    svg = forest.forest_svg({"title": "eager", "rows": rows}, 0.10, "TF 1.14.0")
    assert "of 3 rows (2 versions)" in svg
