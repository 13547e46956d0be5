"""The check behind config duets.sides_as_cells (driver/tables/sides_agreement.py): sides that
time a cell as its own processes do agree; sides planted a margin off are found to differ."""
import math

import numpy as np
import pytest

from driver.tables.sides_agreement import AGREE, DIFFER, UNDECIDED, agreement
from tfspeed import cells as tfcells

CELL = {"model": "small", "data": "small", "keras": "tf.keras", "mode": "graph",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}


def _study(bias, n_cells=24, sd=0.08, seed=1, pair=False):
    """n_cells TF 2.x cells, each with 3 own processes and a duet row (or a pair) of 4
    replicates against tf1.14 whose sides run `bias` times the own processes' time."""
    rng = np.random.default_rng(seed)
    cells, duets = [], []
    for k in range(n_cells):
        env, true = f"tf2.{k}", 0.01 * math.exp(0.3 * rng.standard_normal())
        cid = tfcells.cell_id(CELL)
        for r in range(3):
            m = true * math.exp(sd * rng.standard_normal())
            cells.append({"machine": "m", "env": env, "cell_id": cid, "repeat": r,
                          "status": "ok", "samples_s": [m * 0.99, m, m * 1.01]})
        for r in range(4):
            m = true * bias * math.exp(sd * rng.standard_normal())
            duets.append({"machine": "m", "env": env, "cell": CELL,
                          # a pair's other cell lives in its env, a duet's in tf1.14
                          "reference_env": env if pair else "tf1.14",
                          "reference_cell": dict(CELL, input="tfdata") if pair else CELL,
                          "replicate": r, "status": "ok",
                          "design": {"together": pair}, "left_windows_s": [[m] * 5] * 6,
                          "right_windows_s": [[0.01] * 5] * 6,
                          "ready": {"left": {"first_call_s": 0.3},
                                    "right": {"first_call_s": 0.3}}})
    return cells, duets


def test_sides_that_time_as_own_processes_agree():
    res = agreement(*_study(1.0))
    assert res["verdict"] == AGREE and res["cells"] == 24 and not res["off_one"]
    # an offset inside the margin still agrees, and is said beside it
    small = agreement(*_study(1.06, sd=0.02))
    assert small["verdict"] == AGREE and small["off_one"]
    assert res["ratio"] == pytest.approx(1.0, abs=0.05)


@pytest.mark.parametrize("bias", [1.10, 1 / 1.10])
def test_sides_planted_a_margin_off_differ(bias):
    """A side biased by the margin (10 %) either way is found: never `agree`."""
    res = agreement(*_study(bias))
    assert res["verdict"] == DIFFER
    assert res["ci_test"][0] < math.log(bias) < res["ci_test"][1]


def test_pairs_are_checked_apart_and_too_few_cells_decide_nothing():
    cells, duets = _study(1.0, pair=True)
    assert agreement(cells, duets)["cells"] == 0  # no duet file: nothing for the duets' sides
    assert agreement(cells, duets, pairs=True)["verdict"] == AGREE
    few = agreement(*_study(1.0, n_cells=2))
    assert few["verdict"] == UNDECIDED and few["cells"] == 2
