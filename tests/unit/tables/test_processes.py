"""The processes table (driver/tables/processes.py): one row per real cell file, with its planned
position from the round's plan and its start rank; order_followed says whether a plan held."""
import json
from pathlib import Path

import pandas as pd

from driver.study import layout, record
from driver.study.order import Slot, plan_document, plan_order
from driver.tables.processes import PROCESS_COLUMNS, load_orders, order_followed, processes_table

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "cells"


def real_records():
    files = sorted(FIXTURES.glob("*/*/*.r*.json"))
    assert len(files) >= 20
    return record.load_cells(files)


def plan_by_start(records, machine, reverse=False):
    """A plan document whose order is the records' start order (or its reverse)."""
    ordered = sorted(records, key=lambda r: r["started_utc"], reverse=reverse)
    slots = [Slot(r["env"], r["cell_id"], layout.is_twin(r["machine"])) for r in ordered]
    return plan_document(slots, machine, "tf1.14", 3, 0)


def test_one_row_per_real_cell_file_with_its_figures():
    records = real_records()
    df = processes_table(records)
    assert list(df.columns) == PROCESS_COLUMNS
    assert len(df) == len(records)
    ok = df[df["status"] == "ok"]
    by_key = {(r["env"], r["cell_id"]): r for r in records}
    for row in ok.head(5).to_dict("records"):
        rec = by_key[(row["env"], row["cell_id"])]
        assert row["median_s"] == rec["summary"]["median_s"]
        assert row["process_wall_s"] == rec["provenance"]["cell_wall_s"]
        assert row["warmup_calls"] == rec.get("warmup_calls")
        assert row["process_origin"] == "fresh"
    assert df["position"].isna().all()  # no plan given: no positions
    assert sorted(df["start_rank"]) == list(range(len(df)))


def test_positions_come_from_the_plan_and_a_followed_plan_says_so(tmp_path):
    records = real_records()
    machine = records[0]["machine"]
    path = tmp_path / "order0.json"
    path.write_text(json.dumps(plan_by_start(records, machine)))
    df = processes_table(records, load_orders([path, tmp_path / "missing.json"]))
    assert df["position"].notna().all() and (df["order_seed"] == 3).all()
    assert (df["position"].astype(int) == df["start_rank"]).all()
    followed = order_followed(df).iloc[0]
    assert followed["at_planned_rank"] == len(df) and followed["spearman"] == 1.0


def test_a_plan_not_followed_is_seen(tmp_path):
    records = real_records()
    machine = records[0]["machine"]
    df = processes_table(records, {(machine, 0): plan_by_start(records, machine, reverse=True)})
    followed = order_followed(df).iloc[0]
    assert followed["spearman"] < -0.9
    assert followed["at_planned_rank"] <= 1


def test_twin_processes_are_matched_to_their_twin_slot():
    records = [r for r in real_records() if r["status"] == "ok"][:4]
    machine = records[0]["machine"]
    twin = dict(records[0], machine=layout.twin_key(machine),
                started_utc=pd.Timestamp(records[0]["started_utc"]).isoformat())
    slots = [Slot(r["env"], r["cell_id"]) for r in records] + [
        Slot(twin["env"], twin["cell_id"], True)]
    plan = plan_document(plan_order(slots, "tf1.14", 1, 0), machine, "tf1.14", 1, 0)
    df = processes_table(records + [twin], {(machine, 0): plan})
    row = df[df["twin"]].iloc[0]
    assert row["machine"] == machine
    want = next(e["position"] for e in plan["order"] if e["twin"])
    assert row["position"] == want
