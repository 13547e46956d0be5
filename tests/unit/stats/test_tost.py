"""Verdicts that decide (driver/stats/verdicts.py, driver/stats/moderated.py): the equivalence
test against statsmodels' TOST, the bound every row carries, the BH threshold against
statsmodels' multipletests, and the verdict logic on known cases."""
import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttost_ind

from driver.stats import moderated, verdicts


def _compare(a, b, margin=0.10, alpha=0.05):
    return moderated.compare(a.mean(), a.var(ddof=1), a.size - 1, a.size, b.mean(),
                             b.var(ddof=1), b.size - 1, b.size, margin=margin,
                             alpha_equivalence=alpha)


def test_tost_matches_statsmodels():
    """d0 = 0 (each cell's own variance): TOST on log medians is statsmodels' ttost_ind with
    unequal variances and bounds +-log(1 + margin)."""
    rng = np.random.default_rng(11)
    for shift in (0.0, 0.03, 0.08, 0.12, -0.05):
        a, b = rng.normal(shift, 0.04, 5), rng.normal(0, 0.06, 7)
        m = math.log1p(0.10)
        p_ref = ttost_ind(a, b, -m, m, usevar="unequal")[0]
        assert _compare(a, b)["p_equivalent"] == pytest.approx(p_ref, rel=1e-9)


def test_equivalent_iff_the_90_percent_ci_lies_inside_the_margin():
    rng = np.random.default_rng(12)
    for _ in range(200):
        a, b = rng.normal(rng.normal(0, 0.06), 0.03, 4), rng.normal(0, 0.03, 4)
        out = _compare(a, b)
        ci90 = moderated.compare(a.mean(), a.var(ddof=1), 3, 4, b.mean(), b.var(ddof=1), 3, 4,
                                 level=0.90)
        inside = (math.log(ci90["ratio_ci_low"]) > -math.log1p(0.1)
                  and math.log(ci90["ratio_ci_high"]) < math.log1p(0.1))
        assert (out["p_equivalent"] <= 0.05) == inside
        # the bound: the larger |end| of that CI, in %, symmetric in log
        ends = [abs(math.log(ci90["ratio_ci_low"])), abs(math.log(ci90["ratio_ci_high"]))]
        assert out["bound_pct"] == pytest.approx(100 * math.expm1(max(ends)))
        assert (out["bound_pct"] < 10.0) == inside


def test_bh_threshold_is_the_largest_rejected_p():
    rng = np.random.default_rng(13)
    p = np.concatenate([rng.uniform(0, 1, 80), rng.uniform(0, 0.002, 40)])
    reject = multipletests(p, alpha=0.05, method="fdr_bh")[0]
    assert verdicts.bh_threshold(p, 0.05) == p[reject].max()
    nulls = rng.uniform(0.2, 1, 50)
    assert verdicts.bh_threshold(nulls, 0.05) == pytest.approx(0.05 / 50)


@pytest.mark.parametrize("lo,hi,p_adj,p_eq,expected", [
    (1.02, 1.04, 0.001, 0.0001, verdicts.EQUIVALENT),    # significant but inside the margin
    (0.85, 0.95, 0.001, 0.40, verdicts.LEFT_FASTER),
    (1.05, 1.30, 0.010, 0.70, verdicts.RIGHT_FASTER),     # reaches into the band: still faster
    (0.97, 1.08, 0.400, 0.04, verdicts.EQUIVALENT),
    (0.90, 1.12, 0.400, 0.20, verdicts.INCONCLUSIVE),
    (1.01, 1.20, 0.070, 0.50, verdicts.INCONCLUSIVE),     # excludes 1, not a BH discovery
    (math.nan, math.nan, math.nan, math.nan, verdicts.INCONCLUSIVE),
])
def test_verdict_logic(lo, hi, p_adj, p_eq, expected):
    assert verdicts.verdict(lo, hi, p_adj, q=0.05, min_effect=0.10, p_equivalent=p_eq,
                            alpha_equivalence=0.05) == expected


def test_decide_adds_threshold_and_keeps_one_family():
    rows = pd.DataFrame({"ratio_ci_low": [0.5, 0.9, 1.02], "ratio_ci_high": [0.7, 1.2, 1.05],
                         "p": [1e-6, 0.5, 0.01], "p_equivalent": [0.9, 0.3, 0.01]})
    out = verdicts.decide(rows, q=0.05, min_effect=0.10)
    assert list(out["verdict"]) == [verdicts.LEFT_FASTER, verdicts.INCONCLUSIVE,
                                    verdicts.EQUIVALENT]
    assert out["p_threshold"].iloc[0] == 0.01
    np.testing.assert_allclose(out["p_adjusted"], multipletests(rows["p"], method="fdr_bh")[1])


def test_mde_at_the_threshold_and_df():
    """The power behind mde: a simulated Welch test at the stated threshold detects the mde
    ratio about 80 % of the time; with the pooled df it is statsmodels' TTestIndPower."""
    sd, k, alpha = 0.05, 4, 0.03
    ratio = verdicts.mde(sd, k, alpha=alpha, df=2 * k - 2)
    assert ratio == pytest.approx(verdicts.mde(sd, k, alpha=alpha), rel=1e-4)
    rng = np.random.default_rng(14)
    a = rng.normal(math.log(ratio), sd, (20000, k))
    b = rng.normal(0, sd, (20000, k))
    t = (a.mean(1) - b.mean(1)) / np.sqrt((a.var(1, ddof=1) + b.var(1, ddof=1)) / k)
    from scipy import stats as sps

    power = float((np.abs(t) > sps.t.ppf(1 - alpha / 2, 2 * k - 2)).mean())
    assert power == pytest.approx(0.80, abs=0.015)
    assert verdicts.mde(sd, k, alpha=alpha, df=20) < ratio  # more df: a smaller mde
