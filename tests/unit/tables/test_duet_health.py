"""A/A duets in their own table, the second look's open rows, and the health check that finds a
replicate round that moved every row (driver/tables/duets.py, duet_rounds.py)."""
import math

import numpy as np

from driver.tables import duet_rounds, duets

CELL = {"model": "small", "data": "small", "keras": "tf.keras", "mode": "graph",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}


def recs(log_ratios, env="tf2.9", design=None):
    out = []
    for i, x in enumerate(log_ratios):
        out.append({"machine": "m", "env": env, "cell": dict(CELL), "reference_env": "tf1.14",
                    "reference_cell": dict(CELL), "replicate": i, "status": "ok",
                    "log_ratio": float(x), "left_median_s": 0.007 * math.exp(x),
                    "right_median_s": 0.007, "window_log_ratios": [x, x], "wall_s": 6.0,
                    "reason": "", "design": design or {}})
    return out


def test_aa_rows_have_their_own_table():
    data = recs([0.01, -0.01, 0.02, 0.0]) + recs([0.2, 0.22, 0.19, 0.21], env="tf1.14")
    head = duets.duets_table(data)
    aa = duets.duets_table(data, aa=True)
    assert list(head["env"]) == ["tf2.9"] and list(aa["env"]) == ["tf1.14"]
    # the planted order bias of the A/A row is found: called different
    assert aa.iloc[0]["verdict"] in ("left_faster", "right_faster")


def test_second_look_levels_and_open_rows():
    design = {"replicates": 4, "max_replicates": 10}
    decided = recs([0.30, 0.31, 0.29, 0.30], env="tf2.1", design=design)
    open_ = recs([0.12, -0.05, 0.20, 0.02], env="tf2.2", design=design)
    table = duets.duets_table(decided + open_)
    row = table.set_index("env").loc["tf2.2"]
    assert row["p"] > row["p_look"]  # the sequential p is the stricter one
    assert (row["n_look1"], row["n_max"]) == (4, 10)
    assert duets.open_rows(decided + open_) == [["tf2.2", duets.cell_id(CELL)]]
    # without the design (older files): one look, p unchanged
    plain = duets.duets_table(recs([0.12, -0.05, 0.20, 0.02]))
    assert plain.iloc[0]["p"] == plain.iloc[0]["p_look"]


def _family(shift_round=None, shift=0.0, rows=12, rounds=4, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for k in range(rows):
        x = rng.normal(0.05 * (k % 3), 0.03, rounds)
        if shift_round is not None:
            x[shift_round] += shift
        out += recs(x, env="tf2.%d" % k)
    return out


def test_health_check_finds_a_round_that_moved_every_row():
    data = _family(shift_round=2, shift=0.06)
    table = duet_rounds.duet_rounds(duets.duets_table(data), data)
    moved = table[table["moved"]]
    assert 2 in set(moved["round"])
    biggest = table.loc[table["shift"].abs().idxmax()]
    assert biggest["round"] == 2 and biggest["shift"] > 0.03 and biggest["p_round"] < 0.001


def test_health_check_quiet_without_a_shift():
    """Over 40 planted families with no round effect the check flags at about its size."""
    flagged = 0
    for seed in range(40):
        data = _family(seed=seed)
        table = duet_rounds.duet_rounds(duets.duets_table(data), data)
        flagged += bool(table["moved"].any())
    assert flagged <= 6  # size 0.05 per family: 6 of 40 has probability < 0.02
