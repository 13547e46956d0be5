"""One budget that holds, and a run that continues (docs/design.md "One budget"): a study whose
time budget is spent by the paired rows' first look starts no cell process of round 0, and leaves
no room for the duets' second look nor the cells' second round; it lists them all as not reached,
with the minutes and the command that would reach them; running that command continues the same
run: round 0's cells run, the not-reached rows get their second look, the cells their second
round, and no finished duet or cell is run again. The second look's checkpoint runs after round
0's cells, so it plans with what they cost rather than a prediction."""
import json
import shlex

import pandas as pd
import pytest
from helpers import quick_config, snakemake, write_config

pytestmark = pytest.mark.e2e


def config(budget_min):
    return quick_config(
        envs=["tf1.14", "tf2.21"], probe={"processes": 0}, twins=0, repeats=2,
        duets={"modes": ["graph", "eager"], "api": "train_on_batch", "replicates": 2, "max_replicates": 3,
               "aa": False, "graph_vs_eager": 0, "windows": 2, "window_s": 0.05},
        pairs={"tables": []}, models={}, data={}, time_budget_min=budget_min,
        grids=[{"name": "g", "envs": ["tf1.14", "tf2.21"], "pairs": [["small", "small"]],
                "keras": ["tf.keras", "tf_keras"], "modes": ["graph"],
                "apis": ["train_on_batch"], "inputs": ["numpy"], "devices": "all"}])


def timed_files(work):
    return {p: p.stat().st_mtime_ns for folder in ("duets", "cells")
            for p in (work / "results" / folder).rglob("*.json")}


def test_a_run_beyond_its_budget_says_what_is_left_and_its_command_continues_it(tmp_path):
    work = tmp_path / "study"
    first = write_config(tmp_path / "small.yaml", config(0.01))
    snakemake(work, first, "--cores", "2", check=True)
    left = pd.read_csv(work / "results/tables/not_decided.csv")
    reached = left[left.state == "not reached"]
    # nothing fits 0.6 s of budget: every row open after its first look (two replicates, df 1,
    # seldom decide) is listed, and the cells' round 0 (both processes) and round 1
    duets = pd.read_csv(work / "results/tables/duets.csv")
    still = duets[(duets.n < duets.n_max) & (duets.verdict == "undecided")]
    rows = reached[reached.paired_table == "duets"]
    assert sorted(rows.env + rows.cell_id) == sorted(still.env + still.cell_id)
    assert (rows.replicates == 1).all() and (reached.minutes > 0).all()
    cells = reached[reached.paired_table == "cells"]
    assert list(cells.cell_id) == ["round 0", "round 1"] and list(cells.replicates) == [2, 2]
    assert not list((work / "results/cells").rglob("*.r1.json"))
    round0 = sorted((work / "results/cells").rglob("*.r0.json"))
    late = [json.loads(p.read_text()) for p in round0]
    assert len(late) == 2 and all(r["status"] == "skipped" and r["not_reached"] for r in late)
    assert all("not reached" in r["reason"] and "cell_wall_s" not in r["provenance"]
               for r in late)  # never started
    table = pd.read_csv(work / "results/tables/cells.csv")
    assert set(table.status) == {"skipped"}
    # the checkpoint ran after round 0: no cell to count, the duets' workers price one
    [plan] = (work / "results/duet_plans").glob("*.json")
    budget = json.loads(plan.read_text())["budget"]
    assert budget["first_round_cells_reserved_s"] == 0
    assert budget["cell_process"]["source"] == "duets"
    assert plan.stat().st_mtime_ns > max(p.stat().st_mtime_ns for p in round0)
    command = reached.command.iloc[0]
    assert (reached.command == command).all()
    assert command.startswith('make study ARGS="--config time_budget_min=')
    finished = {p: t for p, t in timed_files(work).items() if p not in round0}
    # the command's --config on the same study (make study ARGS="..." is snakemake ... ARGS);
    # its minutes are predictions, so a run may leave some not reached: its own command goes on
    budgets = []
    for _ in range(3):
        args = shlex.split(shlex.split(command)[2].split("=", 1)[1])
        budgets.append(float(args[1].split("=", 1)[1]))
        snakemake(work, first, "--cores", "2", *args, check=True)
        again = pd.read_csv(work / "results/tables/not_decided.csv")
        late = again[again.state == "not reached"]
        if late.empty:
            break
        command = late.command.iloc[0]
    assert late.empty and budgets == sorted(set(budgets))
    after = timed_files(work)
    assert all(after[p] == t for p, t in finished.items())  # nothing finished ran again
    assert all(json.loads(p.read_text())["status"] == "ok" for p in round0)
    added = sorted(str(p.relative_to(work / "results")) for p in set(after) - set(finished)
                   if p not in round0)
    # each not-reached duets row's third replicate and the two cells' second round
    assert [a.split("/")[0] + a[-8:] for a in added] == \
        ["cells.r1.json"] * 2 + ["duets.r2.json"] * len(rows)
