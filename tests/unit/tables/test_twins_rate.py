"""The twins' A/A rate (driver/tables/twins_rate.py): Clopper-Pearson against scipy, and a planted
miscalibration that the figure must show."""
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from driver.tables.twins_rate import threshold_of, twins_rate


def test_interval_is_clopper_pearson():
    p = [0.001, 0.2, 0.004, 0.5, 0.9, 0.03] * 4
    row = twins_rate(pd.DataFrame({"p": p}), threshold=0.005, level=0.95).iloc[0]
    assert row["pairs"] == 24 and row["called_different"] == 8
    ref = stats.binomtest(8, 24).proportion_ci(0.95, method="exact")
    assert row["ci_low"] == pytest.approx(ref.low) and row["ci_high"] == pytest.approx(ref.high)
    assert not row["nominal_inside_ci"]  # 8 of 24 at 0.005


def test_no_pairs_gives_a_blank_row():
    row = twins_rate(pd.DataFrame({"p": []}), threshold=0.01).iloc[0]
    assert row["pairs"] == 0 and row["rate"] is None


def test_threshold_from_the_tables_else_the_fallback():
    assert threshold_of(pd.DataFrame({"p": [0.1], "p_threshold": [0.004]}), 0.05) == 0.004
    assert threshold_of(pd.DataFrame({"p": [0.1]}), 0.05) == 0.05


def simulated_twins(pairs, k, run_sd, rng):
    """Twin pairs of k processes a side with a shared between-process sd of 0.05 and, per side,
    a shared offset of sd `run_sd` that the within-cell spread does not see (a method that
    leaves a level of variance out: miscalibrated when run_sd > 0)."""
    rows = []
    for _ in range(pairs):
        a = rng.normal(rng.normal(0, run_sd), 0.05, k)
        b = rng.normal(rng.normal(0, run_sd), 0.05, k)
        rows.append({"p": stats.ttest_ind(a, b, equal_var=False).pvalue})  # Welch
    return pd.DataFrame(rows)


def test_a_calibrated_method_passes_and_a_planted_miscalibration_fails():
    rng = np.random.default_rng(1)
    threshold = 0.05
    good = twins_rate(simulated_twins(240, 4, 0.0, rng), threshold).iloc[0]
    assert good["nominal_inside_ci"]
    # an offset of sd 0.05 per side, unseen by the within-cell spread: A/A rate ~ 0.3
    bad = twins_rate(simulated_twins(240, 4, 0.05, rng), threshold).iloc[0]
    assert bad["rate"] > 0.15 and not bad["nominal_inside_ci"]
    # at the default's 24 pairs the same miscalibration is seen most of the time
    fails = sum(not twins_rate(simulated_twins(24, 4, 0.05, rng), threshold).iloc[0][
        "nominal_inside_ci"] for _ in range(40))
    assert fails >= 24


def test_the_figure_states_its_power_and_the_power_is_right():
    """fails_if_*: the chance the figure fails under intervals too narrow, checked by simulation
    (pairs with z-statistics of sd `factor`, the figure computed as the table does)."""
    from scipy.stats import norm

    from driver.tables.twins_rate import power

    n, thr = 24, 0.02
    rng = np.random.default_rng(5)
    for factor in (1.5, 2.0):
        fails = 0
        for _ in range(600):
            p = 2 * norm.sf(np.abs(rng.normal(0, factor, n)))
            row = twins_rate(pd.DataFrame({"p": p}), thr).iloc[0]
            fails += not row["nominal_inside_ci"]
        assert fails / 600 == pytest.approx(power(n, thr, factor), abs=0.05)
    assert power(n, thr, 1.0) < 0.1  # calibrated: it rarely fails
    row = twins_rate(pd.DataFrame({"p": [0.5] * n}), thr).iloc[0]
    assert row["fails_if_2x_narrow"] == pytest.approx(power(n, thr, 2.0))
