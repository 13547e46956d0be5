"""The duets' two looks (driver/stats/sequential.py): the maps keep a row's size over both looks,
the naive rule (each look at the nominal level) does not, and the maps are the identity for one
look. The size figures are binomial rates over simulated null rows, with their CIs."""
import numpy as np
import pytest
from scipy import stats as sps

from driver.stats import sequential


def test_one_look_is_the_identity():
    lk = sequential.looks(4, 4)
    assert not lk.sequential
    p = np.array([0.001, 0.04, 0.5])
    assert np.allclose(lk.two_sided(p), p) and np.allclose(lk.one_sided(p), p)
    assert float(lk.nominal_two_sided(0.05)) == 0.05


def test_maps_are_monotone_and_stricter_than_nominal():
    lk = sequential.looks(4, 10)
    p = np.linspace(0.001, 0.2, 50)
    f = lk.two_sided(p)
    assert np.all(np.diff(f) >= 0) and np.all(f >= p)
    m = float(lk.nominal_two_sided(0.05))
    assert 0.02 < m < 0.05  # Pocock's two-look constant for z is 0.0294
    assert float(lk.two_sided(m)) == pytest.approx(0.05, abs=0.002)


@pytest.mark.parametrize("n1,n2", [(4, 10), (2, 3)])
def test_two_looks_keep_the_size_and_the_naive_rule_does_not(n1, n2):
    a = 0.05
    good = sequential.simulate_size(n1, n2, a=a, margin=1.0, rows=20000, seed=11)
    naive = sequential.simulate_size(n1, n2, a=a, margin=1.0, rows=20000, seed=11,
                                     use_maps=False)
    for kind in ("different", "equivalent"):
        assert good[kind]["ci_low"] <= a, (kind, good[kind])  # at most its size
        assert good[kind]["rate"] > 0.6 * a  # and not a test that never rejects
        # the planted miscalibration (each look at a) fails: its CI lies above a
        assert naive[kind]["ci_low"] > a, (kind, naive[kind])


def test_bad_design_is_refused():
    with pytest.raises(ValueError, match="replicates"):
        sequential.Looks(4, 3)


def test_map_agrees_with_a_direct_simulation():
    """F(m) is the probability that either look's p is <= m, checked with scipy's t test on an
    independent draw."""
    lk = sequential.looks(4, 10)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((20000, 10))
    p1 = sps.ttest_1samp(x[:, :4], 0.0, axis=1).pvalue
    p2 = sps.ttest_1samp(x, 0.0, axis=1).pvalue
    m = float(lk.nominal_two_sided(0.05))
    rate = float(np.mean(np.minimum(p1, p2) <= m))
    ci = sps.binomtest(int(rate * 20000), 20000).proportion_ci()
    assert ci.low <= 0.05 <= ci.high
