"""measure_fork's F-test of the variance ratio (fork vs fresh log medians): its CI covers the
planted ratio at the stated rate and finds a planted fourfold variance."""
import numpy as np
from measure_fork import f_test
from scipy import stats


def test_ci_covers_a_planted_ratio_at_its_level():
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(400):
        r = f_test(rng.normal(0, 0.1, 20), rng.normal(0, 0.05, 20))
        covered += r["ci_low"] <= 4.0 <= r["ci_high"]
    assert 0.92 <= covered / 400 <= 0.98


def test_p_matches_the_two_sided_f_test_and_finds_a_fourfold_variance():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 0.1, 20), rng.normal(0, 0.05, 20)
    r = f_test(a, b)
    ratio = a.var(ddof=1) / b.var(ddof=1)
    ref = 2 * min(stats.f.cdf(ratio, 19, 19), stats.f.sf(ratio, 19, 19))
    assert abs(r["p"] - ref) < 1e-12 and r["var_ratio"] == ratio
    found = sum(f_test(rng.normal(0, 0.1, 20), rng.normal(0, 0.05, 20))["p"] < 0.05
                for _ in range(200))
    assert found / 200 > 0.8  # power of the F-test at 20 v 20 for a fourfold variance: ~0.87
