"""driver/stats/pooled.py: the seed's % with both sign conventions, pooling repeats descriptively
(verdicts: test_verdicts.py)."""

import json

import numpy as np
import pytest

from driver.stats import pooled as compare
from tfspeed import stats

# --- the seed's % -------------------------------------------------------------------------------

@pytest.mark.parametrize("left, right, expected", [
    (1.0, 2.0, 100.0),  # left twice as fast: longer/shorter = 2, (2 - 1) * 100, + (left faster)
    (3.0, 2.0, -50.0),  # left slower: 3/2 = 1.5, (1.5 - 1) * 100, - (left slower)
    (2.0, 2.0, 0.0),
    (0.5, 0.6, 20.0),  # 0.6/0.5 = 1.2
    (0.6, 0.5, -20.0),
])
def test_seed_pct(left, right, expected):
    assert compare.seed_pct(left, right) == pytest.approx(expected)


def test_seed_pct_sign_conventions():
    # "TF2 vs TF1: + if TF2 is faster": TF2 is the left side.
    tf2, tf1 = 0.8, 1.0
    assert compare.seed_pct(tf2, tf1) == pytest.approx(25.0)
    # "GvE: + if Graph is faster": here Graph is slower, so the % is negative.
    graph, eager = 1.3, 1.0
    assert compare.seed_pct(graph, eager) == pytest.approx(-30.0)
    # Swapping sides flips the sign and keeps the magnitude.
    assert compare.seed_pct(tf1, tf2) == -compare.seed_pct(tf2, tf1)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_seed_pct_rejects_bad_times(bad):
    with pytest.raises(ValueError):
        compare.seed_pct(bad, 1.0)


# --- pooled repeats -----------------------------------------------------------------------------

def test_pooled_summary_between_spread():
    rng = np.random.default_rng(12)
    repeats = [m * (1.0 + 0.01 * rng.standard_normal(101)) for m in (1.0, 1.1, 1.2)]
    p = compare.pooled_summary(repeats)
    assert p["n"] == 303 and p["n_repeats"] == 3
    assert p["per_process_medians"] == pytest.approx([1.0, 1.1, 1.2], abs=0.01)
    # (1.2 - 1.0) / 1.1, up to the noise in each median
    assert p["between_rel_spread"] == pytest.approx(0.2 / 1.1, abs=0.02)
    assert p["repeat_drift"] == [False, False, False]
    json.dumps(p, allow_nan=False)


def test_pooled_summary_ci_agrees_with_stats():
    rng = np.random.default_rng(13)
    repeats = [rng.lognormal(-4.0, 0.2, size=n) for n in (40, 60, 55)]
    p = compare.pooled_summary(repeats)
    pooled = np.concatenate(repeats)
    assert (p["ci_low_s"], p["ci_high_s"]) == stats.median_ci(pooled)
    assert p["median_s"] == stats.summarize(pooled)["median_s"]


def test_pooled_summary_tiny_falls_back():
    p = compare.pooled_summary([[1.0, 2.0], [3.0]])
    assert (p["ci_low_s"], p["ci_high_s"]) == (1.0, 3.0)
    assert p["ci_method"].startswith("order statistics")
    assert p["between_rel_spread"] == pytest.approx((3.0 - 1.5) / 2.25)


def test_pooled_summary_rejects_empty():
    with pytest.raises(ValueError):
        compare.pooled_summary([])
    with pytest.raises(ValueError):
        compare.pooled_summary([[1.0], []])
