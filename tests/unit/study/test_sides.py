"""Cells whose absolute times come from a duet's sides (driver/study/sides.py): which cells the
plan takes so, that they run no process of their own, and the cells table's rows pooled from the
sides of real aggregation (driver/tables/aggregate.py)."""
import json
import math

import numpy as np
import pytest
from support.cellfiles import run, write_cell, write_processes

from driver.study import sides
from driver.tables.aggregate import SIDES
from tfspeed import cells as tfcells

CELL = {"model": "small", "data": "small", "keras": "tf.keras", "api": "train_on_batch",
        "input": "numpy", "device": "cpu"}


def cid(mode, **axes):
    return tfcells.cell_id(dict(CELL, mode=mode, **axes))


def test_a_cell_is_taken_only_as_the_side_of_exactly_one_duet_row():
    ref_g, ref_e = cid("graph"), cid("eager")
    rows = [("tf2.3", ref_g, "tf1.14", ref_g, False),  # headline duets
            ("tf2.21", ref_g, "tf1.14", ref_g, False),
            ("tf2.21", ref_e, "tf1.14", ref_e, False),
            ("tf2.3", ref_e, "tf1.14", ref_e, False),
            ("tf1.14", ref_g, "tf1.14", ref_g, False),  # A/A: the reference twice
            ("tf2.21", cid("eager", input="tfdata"), "tf2.21", ref_e, True),  # pair
            ("tf2.21", cid("graph", api="fit"), "tf2.21", cid("graph", api="predict"), True)]
    taken = sides.single_sides(rows)
    # one row's left side; the reference env's cells are sides of many rows; a duet side
    # that a pair also times has processes of two designs; a pair's own cells are not taken
    assert taken == {("tf2.3", ref_g), ("tf2.21", ref_g), ("tf2.3", ref_e)}
    # the same row twice (its replicates) is one row
    assert sides.single_sides(rows + rows[:1]) == taken


def _duet_file(root, env, cell, replicate, medians, first_call=0.4, status="ok"):
    """A duet file as scripts/supervise_duet.py writes it (the keys sides.py reads)."""
    ref = dict(cell, keras="tf.keras")
    windows = [[m * (1 + 0.002 * (i - 5)) for i in range(11)] for m in medians]
    doc = {"machine": "xeon-2c", "env": env, "cell": cell, "reference_env": "tf1.14",
           "reference_cell": ref, "replicate": replicate, "status": status, "reason": "",
           "kind": "duet", "design": {"replicates": 4, "max_replicates": 4},
           "started_utc": "2026-11-22T10:%02d:30+00:00" % replicate,
           "left_framework_version": "2.21.0", "right_framework_version": "1.14.0",
           "left_median_s": medians[0], "right_median_s": 0.02, "log_ratio": 0.1,
           "left_windows_s": windows, "right_windows_s": [[0.02] * 11] * len(medians),
           "ready": {"left": {"first_call_s": first_call, "warmup_calls": 20,
                              "warmup_stopped_by": "stable"},
                     "right": {"first_call_s": 0.3, "warmup_calls": 20,
                               "warmup_stopped_by": "stable"}},
           "provenance": {"machine": {"cpu_model": "Intel(R) Xeon(R) Processor"},
                          "left_env": {"framework": "tensorflow", "python": "3.11.9"}},
           "cpu_window": {"foreign_cpu_share": 0.01}, "foreign_cpu_flag": False}
    path = root / "duets" / env / f"{tfcells.cell_id(cell)}.r{replicate}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    return path


def test_a_side_cell_is_pooled_from_its_rows_replicates(tmp_path):
    """The cell's estimate is the study's model over one process per replicate (each side's
    median; no block effect for a lone cell): the geometric mean of the side medians."""
    cells = write_processes(tmp_path / "cells", "tf1.14", 0.02, k=3)
    cell = dict(CELL, mode="eager")
    medians = [0.010, 0.011, 0.012, 0.0105]
    duets = [_duet_file(tmp_path, "tf2.21", cell, r, [m] * 6, first_call=0.3 + 0.1 * r)
             for r, m in enumerate(medians)]
    # a pair file with the same cell as a side: never a source of the cell's processes
    pair = json.loads(duets[0].read_text())
    pair.update(design={"together": True}, left_windows_s=[[1.0] * 11] * 6, replicate=9)
    pair_path = tmp_path / "duets" / "pair.json"
    pair_path.write_text(json.dumps(pair))
    key = ["tf2.21", tfcells.cell_id(cell)]
    frames, _, _ = run(tmp_path, cells, duet_files=duets + [pair_path], sides_as_cells=[key],
                       allocation={"repeats": 3, "max_repeats": 6, "budget_s": 0})
    row = frames["cells"].set_index(["env", "cell_id"]).loc[tuple(key)]
    assert row["stopped_by"] == sides.DUET and row["allocation"] == SIDES
    assert row["n_repeats"] == 4 and row["status"] == "ok"
    assert row["median_s"] == pytest.approx(math.exp(np.mean(np.log(medians))), rel=1e-9)
    assert row["first_call_s"] == pytest.approx(np.median([0.3, 0.4, 0.5, 0.6]))
    assert row["between_sd"] == pytest.approx(np.std(np.log(medians), ddof=1), rel=1e-6)
    # the processes table holds the cells' own processes only (a duet's are in its table)
    assert set(frames["processes"]["env"]) == {"tf1.14"}
    # without the key, the cell is not in the cells table
    frames, _, _ = run(tmp_path, cells, duet_files=duets)
    assert tuple(key) not in set(zip(frames["cells"]["env"], frames["cells"]["cell_id"]))


def test_a_cell_with_processes_of_its_own_keeps_them(tmp_path):
    cell = dict(CELL, mode="eager")
    own = [write_cell(tmp_path / "cells", "tf2.21", median=0.03, repeat=r, mode="eager")
           for r in range(3)]
    duets = [_duet_file(tmp_path, "tf2.21", cell, r, [0.01] * 6) for r in range(4)]
    frames, _, _ = run(tmp_path, own, duet_files=duets,
                       sides_as_cells=[["tf2.21", tfcells.cell_id(cell)]])
    row = frames["cells"].set_index("env").loc["tf2.21"]
    assert row["median_s"] == pytest.approx(0.03) and row["n_repeats"] == 3
    assert row["stopped_by"] != sides.DUET


def test_a_failed_duet_is_a_failed_process_of_its_side_cell(tmp_path):
    cell = dict(CELL, mode="graph")
    duets = [_duet_file(tmp_path, "tf2.3", cell, r, [0.01] * 6) for r in range(3)]
    duets.append(_duet_file(tmp_path, "tf2.3", cell, 3, [0.01] * 6, status="failed"))
    frames, _, _ = run(tmp_path, write_processes(tmp_path / "cells", "tf1.14", 0.02, k=3),
                       duet_files=duets, sides_as_cells="auto")
    row = frames["cells"].set_index("env").loc["tf2.3"]
    assert (row["n_repeats"], row["n_failed_repeats"]) == (3, 1)
