"""scripts/selfbench.py's figures on synthetic cell records: A/A halves through the study's model,
the study's per-test threshold from its tables, mde_80 for the 75th-percentile cell."""
import math

import numpy as np
import pandas as pd
import pytest
import selfbench

from driver.stats import calibration, verdicts


def records(rng, cells=60, k=6, tau=0.0):
    """k processes per cell; tau: an offset between the even and odd rounds of each cell that the
    model does not know (an inflated A/A rate)."""
    out = []
    for c in range(cells):
        base, shift = rng.normal(-4, 0.5), rng.normal(0, tau)
        for r in range(k):
            med = math.exp(base + (shift if r % 2 else 0.0) + rng.normal(0, 0.05))
            out.append({"machine": "m", "env": "tf2.0", "cell_id": f"c{c}", "repeat": r,
                        "samples_s": [med * 0.99, med, med * 1.01]})
    return out


def test_aa_halves_are_calibrated_and_an_offset_fails():
    rng = np.random.default_rng(51)
    pairs, fit = selfbench.aa_pairs(records(rng), 3)
    assert len(pairs) == 60 and fit["_prior"]["blocked"]
    ok = calibration.aa_figures(pairs["p"], pairs["ratio_ci_low"], pairs["ratio_ci_high"], 0.05)
    assert ok["aa_rate"]["ok"] and ok["coverage"]["ok"]
    pairs, _ = selfbench.aa_pairs(records(rng, tau=0.08), 3)
    bad = calibration.aa_figures(pairs["p"], pairs["ratio_ci_low"], pairs["ratio_ci_high"], 0.05)
    assert not bad["aa_rate"]["ok"]


def test_study_threshold_and_mde(tmp_path):
    p = [1e-6, 1e-5, 0.004, 0.03, 0.2, 0.6]
    pd.DataFrame({"p": p}).to_csv(tmp_path / "graph_vs_eager.csv", index=False)
    assert selfbench.study_threshold(tmp_path, 0.05) == verdicts.bh_threshold(p, 0.05)
    assert math.isnan(selfbench.study_threshold(tmp_path / "none", 0.05))
    rng = np.random.default_rng(52)
    _, fit = selfbench.aa_pairs(records(rng), 3)
    mde, sd = selfbench.mde_75(fit, 4, 0.03)
    sds = [math.sqrt(v["s2_post"]) for k, v in fit.items() if k != "_prior"]
    assert sd == pytest.approx(np.percentile(sds, 75))
    assert mde > verdicts.mde(sd, 4, alpha=0.05, df=math.inf) > 1.0


def test_decision_figures_count_equivalence_inside_the_margin_and_graph_versions(tmp_path):
    """Rows inside the margin that end equivalent (a row just outside is not counted), and the
    graph-mode TF 2 vs TF 1 train_on_batch versions decided, one headline row per version."""
    pd.DataFrame([
        {"env": "tf2.0", "left_cell_id": "a", "right_cell_id": "b", "ratio": 1.02,
         "verdict": "equivalent"},
        {"env": "tf2.0", "left_cell_id": "c", "right_cell_id": "d", "ratio": 0.95,
         "verdict": "undecided"},
        {"env": "tf2.0", "left_cell_id": "e", "right_cell_id": "f", "ratio": 1.12,
         "verdict": "undecided"},  # outside 1.10: not a row inside the margin
    ]).to_csv(tmp_path / "graph_vs_eager.csv", index=False)
    rows = []
    for env, version, verdict, ratio in (("tf2.0", "2.0.0", "right_faster", 1.3),
                                         ("tf2.1", "2.1.0", "inconclusive", 1.08),  # older code
                                         ("tf2.2", "2.2.0", "equivalent", 0.99)):
        for mode, keras in (("graph", "tf.keras"), ("eager", "tf.keras"), ("graph", "keras3")):
            rows.append({"model": "small", "data": "small", "mode": mode, "api": "train_on_batch",
                         "input": "numpy", "device": "cpu", "left_env": env,
                         "right_env": "tf1.14", "left_framework_version": version,
                         "right_framework_version": "1.14.0", "left_keras": keras,
                         "right_keras": "tf.keras", "ratio": ratio, "verdict": verdict})
    pd.DataFrame(rows).to_csv(tmp_path / "tf2_vs_tf1.csv", index=False)
    d = selfbench.decision_figures(tmp_path, 0.10)
    # inside 1 +- 0.10: graph_vs_eager's 1.02 and 0.95, tf2_vs_tf1's 1.08 and 0.99 rows (x3 each)
    assert d["inside_margin"] == 2 + 6 and d["equivalent"] == 1 + 3
    assert d["equivalent_ci"][0] < 0.5 < d["equivalent_ci"][1]
    g = d["graph_decided"]
    assert g["versions"] == 3 and g["decided"] == 2 and g["undecided"] == ["tf2.1"]


def test_decision_figures_take_the_headline_from_the_duets(tmp_path):
    """With a duets table, the graph versions decided and the share of near-equal rows (within
    5 %) that end equivalent come from it, per mode; Keras 3 eager is the default's row."""
    from driver.tables import bundle

    rows = []
    for env, version, verdict, ratio in (("tf2.0", "2.0.4", "right_faster", 1.3),
                                         ("tf2.1", "2.1.4", "undecided", 1.04),
                                         ("tf2.2", "2.2.3", "equivalent", 0.99)):
        rows.append({"machine": "m", "env": env, "mode": "graph", "api": "train_on_batch",
                     "keras": "tf.keras", "left_framework_version": version, "ratio": ratio,
                     "verdict": verdict})
    rows.append({"machine": "m", "env": "tf2.21", "mode": "eager", "api": "train_on_batch",
                 "keras": "keras3", "left_framework_version": "2.21.0", "ratio": 1.01,
                 "verdict": "equivalent"})
    rows.append({"machine": "m", "env": "tf2.21", "mode": "eager", "api": "train_on_batch",
                 "keras": "tf_keras", "left_framework_version": "2.21.0", "ratio": 1.9,
                 "verdict": "right_faster"})
    bundle.write_table(pd.DataFrame(rows), tmp_path / "duets.csv")
    d = selfbench.decision_figures(tmp_path, 0.10)
    g = d["headline"]["graph"]
    assert (g["decided"], g["versions"], g["undecided"]) == (2, 3, ["tf2.1"])
    assert (g["within_5pct"], g["within_5pct_equivalent"]) == (2, 1)
    assert d["graph_decided"]["decided"] == 2
    e = d["headline"]["eager"]
    assert (e["versions"], e["within_5pct"], e["within_5pct_equivalent"]) == (1, 1, 1)
