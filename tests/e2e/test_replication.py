"""Replication end to end with real cells: rounds of processes, twin cells for A/A calibration
and an extra round planned by the checkpoint plan_round (driver/tables/allocation.py)."""
import json

import pandas as pd
import pytest
from helpers import quick_config, snakemake, write_config

pytestmark = pytest.mark.e2e


def two_cells_with_a_twin(tmp_path, **changes):
    """A study of two TF 2.21 cells in two rounds, one of them with a twin, run by Snakemake;
    its work folder, cells folder and machine keys (the machine's, then its twin key's)."""
    config = quick_config(
        envs=["tf2.21"], reference_env="tf2.21", repeats=2, twins=1,
        grids=[{"name": "two", "envs": ["tf2.21"], "pairs": [["small", "small"]],
                "keras": ["keras3"], "modes": ["eager"], "apis": ["train_on_batch", "fit"],
                "inputs": ["numpy"], "devices": ["cpu"]}], **changes)
    work = tmp_path / "work"
    snakemake(work, write_config(tmp_path / "c.yaml", config), "--cores", "2", check=True)
    cells_root = work / "results" / "cells"
    machines = sorted(p.name for p in cells_root.iterdir() if p.is_dir())
    assert len(machines) == 2 and machines[1] == machines[0] + ".twin"
    return work, cells_root, machines


def test_rounds_twins_and_an_extra_round(tmp_path):
    work, cells_root, machines = two_cells_with_a_twin(
        tmp_path, allocation={"max_repeats": 3, "budget_s": 600},
        time_budget_min=None)  # the fixed budget
    # two rounds of every cell, the twin in both; the plan of round 2 chose from what was open
    plan = json.loads((work / "results" / "rounds" / machines[0] / "round2.json").read_text())
    assert plan["round"] == 2 and plan["left_s"] <= 600
    # a planned twin cell (a third element "twin") lands under the twin machine
    third = sorted(p.name for m in machines for p in (cells_root / m / "tf2.21").glob("*.r2.json"))
    assert len(third) == len(plan["cells"])
    planned_twins = sum(1 for c in plan["cells"] if c[2:] == ["twin"])
    assert len(list((cells_root / machines[1] / "tf2.21").glob("*.r2.json"))) == planned_twins
    cells = pd.read_csv(work / "results" / "tables" / "cells.csv")
    main = cells[cells.machine == machines[0]]
    assert set(main.n_repeats) <= {2, 3} and main.allocation.notna().all()
    assert (main[main.n_repeats == 2].allocation != "budget").all()
    twins = pd.read_csv(work / "results" / "tables" / "twins.csv")
    assert len(twins) == 1 and twins.verdict.iloc[0] in (
        "left_faster", "right_faster", "equivalent", "undecided")
    # twins are in no other table
    gve = pd.read_csv(work / "results" / "tables" / "fit_vs_train_on_batch.csv")
    assert set(gve.machine) == {machines[0]}


def test_under_a_time_budget_twins_start_in_round_1(tmp_path):
    """Round 0 of a budgeted study holds no twin (one process a side decides nothing); round 1,
    which the budget reaches here, holds the twin beside every cell's second process."""
    work, cells_root, machines = two_cells_with_a_twin(
        tmp_path, allocation={"max_repeats": 2, "budget_s": 0}, time_budget_min=30,
        duets={"modes": []}, pairs={"tables": []})
    twin_files = sorted(p.name for p in (cells_root / machines[1] / "tf2.21").glob("*.json"))
    assert len(twin_files) == 1 and twin_files[0].endswith(".r1.json")
    main_files = list((cells_root / machines[0] / "tf2.21").glob("*.json"))
    assert sorted(p.name[-8:] for p in main_files) == [".r0.json", ".r0.json", ".r1.json",
                                                       ".r1.json"]
    twins = pd.read_csv(work / "results" / "tables" / "twins.csv")
    assert len(twins) == 1 and twins.n_left.iloc[0] == 1 and twins.n_right.iloc[0] == 2
