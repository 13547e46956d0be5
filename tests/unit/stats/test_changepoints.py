"""driver/stats/changepoints.py: a planted step is found at its release with its size inside the
CI; a flat series at the measured noise gets false change points at the nominal rate (binomial
CIs over many simulated series), and the rate check fails a detector miscalibrated by 2x."""
import math

import numpy as np
import pytest
from scipy import stats as sps

from driver.stats import changepoints as cp

SIGMA = 0.04  # between-process sd of log medians of the published default run (about 4 %)
N_VERSIONS, K = 22, 4  # TF 1.14 .. 2.21 at the default's processes per cell


def series(rng, n=N_VERSIONS, k=K, sigma=SIGMA, steps=(), base=0.010):
    """n versions of k process log medians; steps: (index, ratio) planted from that version on."""
    level = np.full(n, math.log(base))
    for index, ratio in steps:
        level[index:] += math.log(ratio)
    return [rng.normal(mu, sigma, k) for mu in level]


def flat_rate(alpha, n_series=800, seed=1, detect_alpha=None):
    rng = np.random.default_rng(seed)
    hits = sum(bool(cp.segment(series(rng), alpha=detect_alpha or alpha)["change_points"])
               for _ in range(n_series))
    return hits, n_series


def test_planted_step_found_at_its_release_with_size_inside_ci():
    rng = np.random.default_rng(2019)
    found = cp.segment(series(rng, steps=[(9, 1.25)]))
    assert [c["index"] for c in found["change_points"]] == [9]
    step = found["change_points"][0]
    assert step["ratio_ci_low"] < 1.25 < step["ratio_ci_high"]
    assert step["after_level_s"] / step["before_level_s"] == pytest.approx(step["ratio"])


def test_two_steps_up_and_down_and_coverage_of_step_size():
    """Over many series with a 1.3x step up at 5 and a 1/1.2 step down at 15: both found at
    their places in nearly all, other (false) change points in about the nominal share of
    series or fewer, and the planted sizes inside the 95 % CIs at the nominal rate."""
    rng = np.random.default_rng(11)
    n, both, extra, covered, total = 300, 0, 0, 0, 0
    for _ in range(n):
        found = cp.segment(series(rng, steps=[(5, 1.3), (15, 1 / 1.2)]))
        points = {c["index"]: c for c in found["change_points"]}
        extra += bool(set(points) - {5, 15})
        if {5, 15} <= set(points):
            both += 1
            for index, ratio in ((5, 1.3), (15, 1 / 1.2)):
                total += 1
                covered += points[index]["ratio_ci_low"] < ratio < points[index]["ratio_ci_high"]
    assert both >= 0.98 * n
    assert sps.binomtest(extra, n).proportion_ci(0.99).low <= 0.05
    # the intervals are simultaneous over every step the segmentation could report, so a
    # clear step's interval covers at least at the nominal rate
    ci = sps.binomtest(covered, total).proportion_ci(0.99)
    assert ci.high >= 0.95


def brute_max_abs_z(means, k):
    """max |z| over every pair of adjacent segments [a, b), [b, c), written out plainly."""
    n, best = len(means), 0.0
    for a in range(n - 1):
        for b in range(a + 1, n):
            for c in range(b + 1, n + 1):
                ka, kc = k[a:b].sum(), k[b:c].sum()
                left = (k[a:b] * means[a:b]).sum() / ka
                right = (k[b:c] * means[b:c]).sum() / kc
                best = max(best, abs(right - left) / math.sqrt(1 / ka + 1 / kc))
    return best


@pytest.mark.parametrize("counts", [(3, 3, 4, 3, 3, 5), (4,) * 8])
def test_step_critical_is_simultaneous_over_every_reportable_step(counts):
    """Flat series (sigma known, so df large): max |z| over every adjacent-segment step, by a
    brute-force loop, exceeds the critical value in about 1 - level of series (binomial CI); a
    plain t quantile, the selection's own interval, is exceeded far more often (the check fails
    it)."""
    k = np.array(counts, dtype=float)
    crit = cp.step_critical(counts, 100000, 0.95)
    rng = np.random.default_rng(7)
    zs = [brute_max_abs_z(rng.standard_normal(k.size) / np.sqrt(k), k) for _ in range(1500)]
    beyond = sum(z > crit for z in zs)
    ci = sps.binomtest(beyond, len(zs)).proportion_ci(0.99)
    assert ci.low <= 0.05 <= ci.high, (beyond, crit)
    plain = sum(z > sps.norm.ppf(0.975) for z in zs)
    assert sps.binomtest(plain, len(zs)).proportion_ci(0.99).low > 0.05
    # the set holds every split of the whole series, so the bar is never below the penalty's
    assert crit ** 2 >= cp.penalty(tuple(counts), 100000, 0.05)


def test_a_step_barely_over_the_penalty_can_have_an_interval_holding_one():
    """Not the selection's own interval: of the steps found in series with a small planted step
    (near the detection limit), some intervals include 1; with the plain t interval none could,
    since the penalty exceeds t^2."""
    rng = np.random.default_rng(5)
    found = [c for _ in range(200)
             for c in cp.segment(series(rng, steps=[(11, 1.06)]))["change_points"]]
    assert found
    assert any(c["ratio_ci_low"] <= 1.0 <= c["ratio_ci_high"] for c in found)


def test_flat_series_false_change_points_at_nominal_rate():
    hits, n = flat_rate(0.05)
    ci = sps.binomtest(hits, n).proportion_ci(0.99)
    assert ci.low <= 0.05 <= ci.high, (hits, n)


def test_rate_check_fails_a_detector_miscalibrated_by_two():
    """The same check on a detector whose penalty is set for twice the nominal rate (0.10 for a
    stated 0.05) rejects it: the check can fail."""
    hits, n = flat_rate(0.05, detect_alpha=0.10)
    ci = sps.binomtest(hits, n).proportion_ci(0.99)
    assert not ci.low <= 0.05 <= ci.high, (hits, n)


def test_uneven_process_counts_weigh_by_processes():
    """One version with 1 process among versions with 4: still calibrated (its SE is sigma/1)."""
    rng = np.random.default_rng(3)
    hits = 0
    for _ in range(500):
        s = series(rng, n=10)
        s[4] = s[4][:1]
        hits += bool(cp.segment(s)["change_points"])
    ci = sps.binomtest(hits, 500).proportion_ci(0.99)
    assert ci.low <= 0.05 <= ci.high, hits


def test_short_or_spreadless_series_are_not_segmented():
    assert cp.segment([[0.0, 0.1], [0.0, 0.1]])["reason"] == "fewer than 3 versions"
    assert cp.segment([[0.0], [1.0], [2.0]])["reason"].startswith("too few processes")
    with pytest.raises(ValueError, match="at least one process"):
        cp.segment([[0.0, 0.1], [], [0.2, 0.3]])


def test_weighted_cost_matches_numpy():
    rng = np.random.default_rng(0)
    m, k = rng.normal(size=8), rng.integers(1, 5, size=8).astype(float)
    cost = cp.WeightedL2(sigma=0.5).fit(np.column_stack([m, k]))
    mean = (k[2:6] * m[2:6]).sum() / k[2:6].sum()
    assert cost.error(2, 6) == pytest.approx((k[2:6] * (m[2:6] - mean) ** 2).sum() / 0.25)
