"""The planned order holds when Snakemake runs the study: each round's plan is written to
results/rounds/ and the cells start in the plan's order (their records' start times)."""
import json

import pandas as pd
import pytest

pytestmark = pytest.mark.e2e


def test_cells_start_in_their_planned_order(quick_run):
    work, _ = quick_run
    plans = sorted((work / "results" / "rounds").glob("*/order*.json"))
    assert plans, "no round plan written"
    for path in plans:
        plan = json.loads(path.read_text())
        machine, rep = plan["machine"], plan["round"]
        starts = []
        for entry in plan["order"]:
            key = machine + ".twin" if entry["twin"] else machine
            cell = work / "results" / "cells" / key / entry["env"] / (
                "%s.r%d.json" % (entry["cell_id"], rep))
            record = json.loads(cell.read_text())
            starts.append(pd.Timestamp(record["started_utc"]))
        assert len(starts) == len(plan["order"]) >= 20
        late = [(plan["order"][i]["cell_id"], plan["order"][i + 1]["cell_id"])
                for i in range(len(starts) - 1) if starts[i + 1] < starts[i]]
        assert not late, f"{path.name}: started out of planned order: {late[:3]}"
    processes = pd.read_csv(work / "results" / "tables" / "processes.csv")
    planned = processes[processes["position"].notna()]
    assert len(planned) == len(processes)
    assert (planned["position"].astype(int) == planned["start_rank"]).all()
