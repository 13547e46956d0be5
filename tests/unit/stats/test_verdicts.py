"""Process-level estimates and verdicts on synthetic data with known answers (driver/stats/verdicts.py).

Each simulated process's median is the cell's true time times exp(N(0, between_sd)): what fresh
processes of one cell look like on a shared machine (between_sd 0.12 is this project's measured
worst case; 0.05 a quiet machine)."""
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from driver.stats import verdicts as v

RNG = np.random.default_rng(20261122)


def processes(true_s, k, between_sd, rng=RNG):
    return true_s * np.exp(rng.normal(0.0, between_sd, k))


def simulate_pairs(ratio, k, between_sd, n_pairs, rng):
    rows = []
    for _ in range(n_pairs):
        left = v.log_medians(processes(0.010 * ratio, k, between_sd, rng))
        right = v.log_medians(processes(0.010, k, between_sd, rng))
        rows.append(v.welch(left, right))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("k", [3, 5])
def test_aa_pairs_are_called_different_at_most_at_the_nominal_rate(k):
    """The same cell twice (A/A), 2000 pairs, BH over all of them and also per pair (q = 0.05
    on one test is alpha = 0.05): with 2000 pairs the 95 % Clopper-Pearson upper bound for a true
    rate of 5 % is about 6 %, so 0.065 leaves room for chance but not for a broken test."""
    rng = np.random.default_rng(k)
    df = simulate_pairs(1.0, k, 0.12, 2000, rng)
    single = np.mean([v.verdict(lo, hi, p) in (v.LEFT_FASTER, v.RIGHT_FASTER)
                      for lo, hi, p in zip(df.ratio_ci_low, df.ratio_ci_high, df.p)])
    assert single <= 0.065
    decided = v.decide(df)
    study_wide = decided.verdict.isin([v.LEFT_FASTER, v.RIGHT_FASTER]).mean()
    assert study_wide <= single  # BH over many true nulls is stricter still


def test_a_planted_20_percent_effect_is_found():
    rng = np.random.default_rng(1)
    df = v.decide(simulate_pairs(1.2, 5, 0.05, 400, rng))
    power = (df.verdict == v.RIGHT_FASTER).mean()  # left is 1.2x slower: right faster
    assert power >= 0.9
    assert (df.verdict == v.LEFT_FASTER).sum() == 0  # never the wrong way round


def test_samples_within_a_process_do_not_make_a_verdict():
    """One process per side: however many samples it holds, no CI and no verdict."""
    out = v.welch(v.log_medians([0.010]), v.log_medians([0.020]))
    assert math.isnan(out["ratio_ci_low"]) and out["ratio"] == pytest.approx(0.5)
    assert v.verdict(out["ratio_ci_low"], out["ratio_ci_high"], out["p"]) == v.INCONCLUSIVE


def test_welch_matches_scipy():
    left, right = np.log([1.0, 1.1, 0.95, 1.05]), np.log([1.3, 1.2, 1.4])
    out = v.welch(left, right)
    assert out["p"] == pytest.approx(sps.ttest_ind(left, right, equal_var=False).pvalue)
    res = sps.ttest_ind(left, right, equal_var=False)
    lo, hi = res.confidence_interval(0.95)
    assert out["ratio_ci_low"] == pytest.approx(math.exp(lo))
    assert out["ratio_ci_high"] == pytest.approx(math.exp(hi))


def test_bh_matches_scipy_and_skips_missing():
    p = [0.001, 0.04, 0.03, float("nan"), 0.2, 0.5]
    got = v.bh_adjust(p)
    want = sps.false_discovery_control([0.001, 0.04, 0.03, 0.2, 0.5])
    assert np.isnan(got[3])
    np.testing.assert_allclose(np.delete(got, 3), want)


def test_equivalence_needs_the_whole_ci_inside_the_band():
    assert v.verdict(0.97, 1.03, 0.5, min_effect=0.05) == v.EQUIVALENT
    assert v.verdict(0.94, 1.03, 0.5, min_effect=0.05) == v.INCONCLUSIVE
    assert v.verdict(0.90, 0.93, 0.001) == v.LEFT_FASTER
    # significant, but the CI lies inside the margin: the row is equivalent, never "faster"
    assert v.verdict(1.02, 1.04, 0.001, min_effect=0.05) == v.EQUIVALENT
    assert v.verdict(1.02, 1.07, 0.001, min_effect=0.05) == v.RIGHT_FASTER  # reaches beyond it
    # significant before adjustment, not after: no discovery, and too wide to be equivalent
    assert v.verdict(0.80, 0.99, 0.2) == v.INCONCLUSIVE


def test_cell_estimate_is_the_geometric_mean_with_a_t_interval():
    est = v.cell_estimate([0.010, 0.012, 0.011])
    logs = np.log([0.010, 0.012, 0.011])
    assert est["estimate_s"] == pytest.approx(math.exp(logs.mean()))
    lo, hi = sps.t.interval(0.95, 2, loc=logs.mean(), scale=sps.sem(logs))
    assert est["ci_low_s"] == pytest.approx(math.exp(lo))
    assert est["ci_high_s"] == pytest.approx(math.exp(hi))
    assert est["between_sd"] == pytest.approx(logs.std(ddof=1))
    one = v.cell_estimate([0.01])
    assert one["k"] == 1 and math.isnan(one["ci_low_s"])


def test_paired_removes_what_rounds_share():
    """A drift that both sides share, round by round, hides a 3 % effect from Welch but not from
    the paired analysis."""
    drift = np.log(np.linspace(1.0, 1.4, 6))
    left = np.log(0.0103) + drift + RNG.normal(0, 0.003, 6)
    right = np.log(0.0100) + drift + RNG.normal(0, 0.003, 6)
    assert v.paired(left, right)["p"] < 0.01
    assert v.welch(left, right)["p"] > 0.3


def test_minimum_detectable_effect_shrinks_with_processes():
    three, ten = v.mde(0.12, 3), v.mde(0.12, 10)
    assert 1.0 < ten < three
    assert math.isnan(v.mde(0.12, 1))


def test_the_undecided_code_and_older_tables_codes():
    """One word, one code: an undecided row's code is "undecided" (tables written before said
    "inconclusive"; readers map it, and the words show it as undecided)."""
    assert v.UNDECIDED == v.INCONCLUSIVE == "undecided"
    assert v.VERDICTS == ("left_faster", "right_faster", "equivalent", "undecided")
    assert v.norm_code("inconclusive") == v.UNDECIDED
    assert v.norm_code("Right faster") == v.RIGHT_FASTER
    assert v.norm_code("not significant") == v.UNDECIDED
    assert v.norm_code(float("nan")) == v.UNDECIDED and v.norm_code(None) == v.UNDECIDED
    for code in v.VERDICTS:
        assert v.norm_code(code) == code
    assert v.words("inconclusive") == v.WORDS[v.UNDECIDED]
    assert v.verdict(1.2, 1.3, 0.5) == "undecided"
    from driver.report import answer  # the report's reader of a table's verdicts

    assert answer.norm_verdict("inconclusive") == answer.norm_verdict("undecided") == v.UNDECIDED


def test_fcr_alpha_makes_the_interval_exclude_1_exactly_when_bh_calls():
    rng = np.random.default_rng(3)
    for _ in range(20):
        z = np.concatenate([rng.normal(0, 1, 40), rng.normal(3, 1, 10)])
        p = 2 * sps.norm.sf(np.abs(z))
        adj = v.bh_adjust(p)
        alpha, r = v.fcr_alpha(adj, 0.05)
        assert r == int((adj <= 0.05).sum())
        excludes = np.abs(z) > sps.norm.ppf(1 - alpha / 2)
        assert (excludes == (adj <= 0.05)).all()
    assert v.fcr_alpha([np.nan, np.nan])[0] != v.fcr_alpha([np.nan, np.nan])[0]  # NaN: no test
    assert v.fcr_alpha([0.5, 0.9], 0.05) == (0.025, 0)  # none called: the first step, q / m
