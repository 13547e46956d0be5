"""The machines_compared table (driver/tables/machines_compared.py): the headline's duets on two
machines side by side and the machine x version interaction.

- the interaction's test is Welch's t on the two machines' log ratios: the same t, df and p as
  scipy.stats.ttest_ind(equal_var=False) on the duets;
- each machine keeps its own row of the duets table (interval, sd, verdict) as it is;
- calibration: with no interaction and machines as unequal in noise as the published ones (sd
  0.05 and 0.015, 4 duets a side), the test calls "differs" at its nominal rate (binomial CI);
  a z test with the same standard error (the planted miscalibration: no t) fails that bound;
  a 15 % interaction is found most of the time;
- a configuration on one machine only keeps its row, without an interaction; twin keys are not
  machines.
"""
import math

import numpy as np
import pandas as pd
import pytest
from duetfiles import duet_records
from scipy import stats as sps

from driver.tables import machines_compared as mc
from driver.tables.duets import duets_table

ROWS = [("tf2.0", "2.0.4", "graph", "tf.keras", 0.10), ("tf2.1", "2.1.4", "graph", "tf.keras", 0.05),
        ("tf2.0", "2.0.4", "eager", "tf.keras", 1.40)]


def _two(shift=0.0, sd=(0.05, 0.015), n=6, rows=ROWS, machines=("amd", "intel")):
    recs = []
    for i, (key, s) in enumerate(zip(machines, sd)):
        moved = [(e, v, m, k, t + (shift if i == 0 and m == "graph" else 0.0))
                 for e, v, m, k, t in rows]
        recs += duet_records(moved, sd=s, n=n, seed=10 + i, machine=key)
    return recs, duets_table(recs)


def test_the_interaction_is_welchs_t_on_the_duets():
    recs, duets = _two(shift=0.2)
    table = mc.machines_compared_table(duets)
    assert len(table) == len(ROWS) and list(table.columns) == mc.COLUMNS
    for _, r in table.iterrows():
        x = [d["log_ratio"] for d in recs if d["machine"] == "amd" and d["env"] == r["env"]
             and d["cell"]["mode"] == r["mode"]]
        y = [d["log_ratio"] for d in recs if d["machine"] == "intel" and d["env"] == r["env"]
             and d["cell"]["mode"] == r["mode"]]
        ref = sps.ttest_ind(x, y, equal_var=False)
        assert r["interaction_p"] == pytest.approx(ref.pvalue, rel=1e-9)
        assert r["interaction_df"] == pytest.approx(ref.df, rel=1e-9)
        assert math.log(r["interaction"]) == pytest.approx(np.mean(x) - np.mean(y))
        ci = ref.confidence_interval(r["interaction_ci_level"])
        assert r["interaction_ci_low"] == pytest.approx(math.exp(ci.low))
        assert r["interaction_ci_high"] == pytest.approx(math.exp(ci.high))
    graph = table[table["mode"] == "graph"]
    assert set(graph["machine_effect"]) == {mc.DIFFERS}
    eager = table[table["mode"] == "eager"]
    assert (eager["interaction_ci_low"] < 1).all() and (eager["interaction_ci_high"] > 1).all()


def test_each_machine_keeps_its_own_row_and_no_combined_ratio():
    _, duets = _two()
    table = mc.machines_compared_table(duets)
    for side, key in (("left", "amd"), ("right", "intel")):
        own = duets[duets["machine"] == key].set_index(["env", "cell_id"])
        for _, r in table.iterrows():
            for c in ("ratio", "ratio_ci_low", "ratio_ci_high", "sd_log", "verdict", "n"):
                assert r[f"{side}_{c}"] == own.loc[(r["env"], r["cell_id"]), c], (side, c)
    # the quieter machine would dominate a precision-weighted mean: the weight says how much
    w = table["fixed_effect_weight_left"]
    expect = table["right_se_log"] ** 2 / (table["left_se_log"] ** 2 + table["right_se_log"] ** 2)
    assert np.allclose(w, expect) and (w < 0.5).all()
    assert not [c for c in table.columns if c.startswith(("combined", "pooled"))]


def test_same_ratio_on_both_machines_is_called_same():
    _, duets = _two(sd=(0.01, 0.01), n=8)
    table = mc.machines_compared_table(duets)
    assert set(table["machine_effect"]) == {mc.SAME}
    band = math.log1p(0.10)  # the default min_effect, symmetric in log
    assert (np.abs(np.log(table[["interaction_tost_ci_low", "interaction_tost_ci_high"]]))
            < band).all(axis=None)
    assert set(table["agreement"]) == {"same"}


def test_one_machine_only_and_twins():
    recs, _ = _two()
    recs += duet_records([("tf2.2", "2.2.3", "graph", "tf.keras", 0.1)], machine="amd", n=4)
    recs += duet_records([("tf2.0", "2.0.4", "graph", "tf.keras", 0.1)], machine="amd.twin",
                         n=4)
    table = mc.machines_compared_table(duets_table(recs))
    assert set(table["left_machine"]) == {"amd"} and set(table["right_machine"]) == {"intel"}
    alone = table[table["env"] == "tf2.2"].iloc[0]
    assert alone["agreement"] == "one machine" and alone["reason"] == "measured on amd only"
    assert math.isnan(alone["interaction"]) and pd.isna(alone["machine_effect"])
    assert mc.machines_compared_table(duets_table(duet_records(ROWS, machine="m"))).empty


def _rate(hits: int, n: int):
    ci = sps.binomtest(hits, n).proportion_ci(0.95, method="exact")
    return hits / n, ci.low, ci.high


def test_calibrated_at_machines_as_unequal_as_the_published_ones():
    """No interaction; sd 0.05 vs 0.015 between duets, 4 duets a side; per-row test at 0.05."""
    rng = np.random.default_rng(7)
    reps, n, alpha = 4000, 4, 0.05
    x = rng.normal(0.0, 0.05, (reps, n))
    y = rng.normal(0.0, 0.015, (reps, n))
    mx, my = x.mean(1), y.mean(1)
    sx, sy = x.std(1, ddof=1) / math.sqrt(n), y.std(1, ddof=1) / math.sqrt(n)
    ours = [mc.welch(a, b, n - 1, c, d, n - 1)[3] for a, b, c, d in zip(mx, sx, my, sy)]
    rate, low, high = _rate(int(np.sum(np.array(ours) <= alpha)), reps)
    assert low <= alpha <= high + 0.005 and high < 0.07, (rate, low, high)
    # planted: a z test with the same standard error (no t): the bound fails
    z = np.abs(mx - my) / np.sqrt(sx ** 2 + sy ** 2)
    rate_z, low_z, _ = _rate(int(np.sum(2 * sps.norm.sf(z) <= alpha)), reps)
    assert low_z > 0.07, rate_z
    # power: a 15 % interaction on 4 duets a side
    x15 = x + math.log(1.15)
    mx15 = x15.mean(1)
    found = [mc.welch(a, b, n - 1, c, d, n - 1)[3] for a, b, c, d in zip(mx15, sx, my, sy)]
    assert np.mean(np.array(found) <= alpha) > 0.5
