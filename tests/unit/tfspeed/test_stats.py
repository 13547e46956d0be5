"""tfspeed.stats: known answers, coverage by simulation, drift detection and its false positives."""

import ast
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tfspeed import stats

STATS_PY = Path(stats.__file__)


def test_stats_imports_only_stdlib_and_numpy():
    # The module runs in every cell environment (TF 1.14 on Python 3.7): no scipy, no pandas.
    allowed = {"__future__", "collections", "functools", "math", "numpy"}
    tree = ast.parse(STATS_PY.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module.split(".")[0])
    assert names <= allowed, names - allowed


# --- median CI: exact ranks ---------------------------------------------------------------------

@pytest.mark.parametrize("n, level, expected", [
    # n=10: P(X<=1) = (1+10)/1024, coverage of ranks (2, 9) = 1 - 22/1024 = 0.978515625;
    # ranks (3, 8) would need P(X<=2) = 56/1024, coverage 1 - 112/1024 = 0.89 < 0.95.
    (10, 0.95, (2, 9, 1 - 22 / 1024)),
    # n=20: P(X<=5) = (1+20+190+1140+4845+15504)/2^20 = 21700/2^20, so k=6 covers
    # 1 - 43400/2^20 = 0.9586; k=7 adds C(20,6)=38760: 2*60460/2^20 = 0.115 > 0.05.
    (20, 0.95, (6, 15, 1 - 43400 / 2 ** 20)),
    # n=6: (min, max) covers 1 - 2/64 = 0.96875 >= 0.95, nothing narrower does.
    (6, 0.95, (1, 6, 1 - 2 / 64)),
    # n=5: (min, max) covers only 1 - 2/32 = 0.9375: too few for 95 %, reported as such.
    (5, 0.95, (1, 5, 1 - 2 / 32)),
    # An exact dyadic boundary: n=3 at 75 % is (min, max) with coverage exactly 0.75.
    (3, 0.75, (1, 3, 0.75)),
    # n=10 at 99 %: k=2 would cover 0.9785 < 0.99, so (min, max), 1 - 2/1024.
    (10, 0.99, (1, 10, 1 - 2 / 1024)),
])
def test_median_ci_ranks_known(n, level, expected):
    lo, hi, coverage = stats.median_ci_ranks(n, level)
    assert (lo, hi) == expected[:2]
    assert coverage == pytest.approx(expected[2], abs=1e-12)


def test_median_ci_values_and_small_n():
    x = [10.0, 1.0, 9.0, 2.0, 8.0, 3.0, 7.0, 4.0, 6.0, 5.0]
    assert stats.median_ci(x) == (2.0, 9.0)  # ranks 2 and 9 of 1..10
    assert stats.median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)  # too few: (min, max)
    assert stats.median_ci([4.2]) == (4.2, 4.2)


def test_median_ci_large_n_matches_normal_approximation():
    # For large n the lower rank tends to n/2 - z * sqrt(n) / 2 (z = 1.96): 500000 - 980.
    lo, hi, coverage = stats.median_ci_ranks(10 ** 6, 0.95)
    assert abs(lo - (500000 - 980)) <= 2 and hi == 10 ** 6 - lo + 1
    assert 0.95 <= coverage < 0.9505


def test_median_ci_matches_scipy_quantile_test():
    scipy_stats = pytest.importorskip("scipy.stats")
    if not hasattr(scipy_stats, "quantile_test"):
        pytest.skip("scipy without quantile_test")
    rng = np.random.RandomState(3)
    for n in list(range(6, 80)) + [101, 500, 2001]:
        x = rng.lognormal(size=n)
        for level in (0.9, 0.95, 0.99):
            ci = scipy_stats.quantile_test(x, q=np.median(x), p=0.5).confidence_interval(level)
            if math.isfinite(ci.low):
                assert stats.median_ci(x, level) == (ci.low, ci.high), (n, level)


def test_median_ci_coverage_by_simulation():
    # For continuous data the interval's true coverage is exactly the binomial one returned with
    # the ranks (0.9572 at n=30), whatever the distribution: check it on a skewed one.
    n, draws = 30, 2000
    true_median = math.log(2.0)  # of Exp(1)
    rng = np.random.RandomState(12345)
    hits = 0
    for _ in range(draws):
        lo, hi = stats.median_ci(rng.exponential(size=n))
        hits += lo <= true_median <= hi
    expected = stats.median_ci_ranks(n, 0.95)[2]
    tolerance = 4 * math.sqrt(expected * (1 - expected) / draws)  # ~0.018
    assert abs(hits / draws - expected) < tolerance


@pytest.mark.parametrize("level", [0.0, 1.0, -0.5, 95])
def test_bad_level(level):
    with pytest.raises(ValueError):
        stats.median_ci([1.0, 2.0, 3.0], level)


def test_bad_samples():
    with pytest.raises(ValueError):
        stats.summarize([])
    with pytest.raises(ValueError):
        stats.summarize([1.0, float("nan")])


# --- summarize ----------------------------------------------------------------------------------

KEYS = {"n", "median_s", "mean_s", "sd_s", "iqr_s", "min_s", "max_s", "ci_low_s", "ci_high_s",
        "ci_level", "ci_rel_halfwidth", "noisy", "drift", "drift_p", "drift_tau", "drift_ratio"}


@pytest.mark.parametrize("n", [1, 2, 3, 4, 9, 10, 11, 200])
def test_summarize_is_plain_json_without_nan(n):
    s = stats.summarize(np.linspace(1.0, 2.0, n) if n > 1 else [1.5])
    assert set(s) == KEYS
    text = json.dumps(s, allow_nan=False)  # raises on NaN/inf
    for value in s.values():
        assert value is None or type(value) in (int, float, bool)
    assert json.loads(text)["n"] == n


def test_summarize_known_values():
    x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0]
    s = stats.summarize(x)
    assert s["median_s"] == 5.5 and s["mean_s"] == 5.5
    assert s["sd_s"] == pytest.approx(math.sqrt(55 / 6))  # sum of squared deviations 82.5 / 9
    assert s["iqr_s"] == pytest.approx(7.75 - 3.25)  # linear-interpolated quartiles
    assert (s["min_s"], s["max_s"]) == (1.0, 10.0)
    assert (s["ci_low_s"], s["ci_high_s"], s["ci_level"]) == (2.0, 9.0, 0.95)
    assert s["ci_rel_halfwidth"] == pytest.approx(3.5 / 5.5)
    assert s["drift_ratio"] == pytest.approx(9.5 / 1.5)  # medians of [9, 10] and [1, 2]


def test_summarize_single_sample():
    s = stats.summarize([0.25])
    assert s["sd_s"] is None and s["drift_p"] is None and s["drift_ratio"] is None
    assert (s["ci_low_s"], s["ci_high_s"], s["ci_rel_halfwidth"]) == (0.25, 0.25, 0.0)
    assert s["noisy"] is False and s["drift"] is False


def test_noisy_flag():
    rng = np.random.RandomState(0)
    quiet = 1.0 + rng.uniform(-0.01, 0.01, size=500)  # IQR/median ~ 0.01
    loud = 1.0 + rng.uniform(-0.2, 0.2, size=500)  # IQR/median ~ 0.2
    assert stats.summarize(quiet)["noisy"] is False
    assert stats.summarize(loud)["noisy"] is True
    assert stats.summarize(loud, noisy_threshold=0.3)["noisy"] is False


# --- drift --------------------------------------------------------------------------------------

def test_trend_test_known_answer():
    # Strictly increasing, n=10: S = 45 pairs, Var(S) = 10*9*25/18 = 125,
    # z = (45 - 1)/sqrt(125) = 3.9355, p = erfc(z / sqrt 2) = 8.30e-5, tau = 1.
    tau, p = stats.trend_test(np.arange(10.0))
    assert tau == 1.0
    assert p == pytest.approx(math.erfc(44 / math.sqrt(125) / math.sqrt(2)))
    assert p == pytest.approx(8.30e-5, rel=1e-2)
    tau, p = stats.trend_test(np.arange(10.0)[::-1])
    assert tau == -1.0


def test_trend_test_ties_match_scipy_tau_b():
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = np.random.RandomState(7)
    x = np.round(rng.normal(size=300) + np.linspace(0, 0.5, 300), 1)  # many ties
    tau, p = stats.trend_test(x)
    ref = scipy_stats.kendalltau(np.arange(x.size), x)
    assert tau == pytest.approx(ref.statistic, rel=1e-12)
    # scipy's asymptotic p has no continuity correction; ours does, so only close.
    assert p == pytest.approx(ref.pvalue, rel=0.05)


def test_trend_test_undefined():
    assert stats.trend_test([1.0] * 50) == (None, None)  # all tied
    assert stats.trend_test(np.arange(9.0)) == (None, None)  # too short for the normal approx.


def test_planted_trend_detected():
    # The seed's rising stem plot: times creep up 20 % over the run, under 2 % noise.
    rng = np.random.RandomState(1)
    n = 200
    x = 0.010 * (1.0 + 0.2 * np.arange(n) / n) * (1.0 + 0.02 * rng.standard_normal(n))
    s = stats.summarize(x)
    assert s["drift"] is True
    assert s["drift_p"] < 1e-10 and s["drift_tau"] > 0.5
    assert s["drift_ratio"] == pytest.approx(1.15, abs=0.03)


def test_shuffled_trend_not_detected():
    rng = np.random.RandomState(2)
    n = 200
    x = 0.010 * (1.0 + 0.2 * np.arange(n) / n) * (1.0 + 0.02 * rng.standard_normal(n))
    rng.shuffle(x)
    assert stats.summarize(x)["drift"] is False


def test_drift_false_positive_rate():
    # i.i.d. skewed times, as from a steady machine: at p < 0.01 plus the 5 % effect gate, drift
    # should almost never fire; allow 2 %.
    rng = np.random.RandomState(2024)
    draws = 400
    flagged = sum(stats.summarize(rng.lognormal(-4.0, 0.3, size=200))["drift"]
                  for _ in range(draws))
    assert flagged / draws < 0.02


def test_tiny_significant_trend_is_not_drift():
    # 1 % creep over 3000 samples with 0.1 % noise: overwhelmingly significant, practically nil.
    rng = np.random.RandomState(4)
    n = 3000
    x = 1.0 + 0.01 * np.arange(n) / n + 0.001 * rng.standard_normal(n)
    s = stats.summarize(x)
    assert s["drift_p"] < 1e-10
    assert s["drift"] is False


def test_trend_on_long_runs_uses_blocks():
    rng = np.random.RandomState(5)
    n = 3 * stats.TREND_MAX_POINTS + 7  # blocks of 4, the last one partial
    steady = rng.lognormal(-4.0, 0.2, size=n)
    rising = steady * (1.0 + 0.3 * np.arange(n) / n)
    assert stats.summarize(rising)["drift"] is True
    assert stats.summarize(steady)["drift"] is False


# --- adaptive stopping --------------------------------------------------------------------------

def test_adaptive_done_constant_samples():
    assert stats.adaptive_done([0.01] * 10) is True
    assert stats.adaptive_done([0.01] * 9) is False  # below min_samples
    # Enough samples by min_samples but too few for a 95 % CI: never done.
    assert stats.adaptive_done([0.01] * 5, min_samples=1) is False


def test_adaptive_done_noisy_samples():
    rng = np.random.RandomState(6)
    noisy = list(rng.lognormal(-4.0, 0.5, size=50))
    assert stats.adaptive_done(noisy) is False
    assert stats.adaptive_done(noisy, target_rel=0.5) is True


def test_adaptive_done_agrees_with_summarize():
    rng = np.random.RandomState(8)
    for n in (10, 11, 57, 400, 4001):
        x = rng.lognormal(-4.0, 0.05, size=n)
        half = stats.summarize(x)["ci_rel_halfwidth"]
        assert stats.adaptive_done(x, target_rel=half * 1.0001) is True
        assert stats.adaptive_done(x, target_rel=half * 0.9999) is False
