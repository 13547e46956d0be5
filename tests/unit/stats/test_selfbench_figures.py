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
