"""A study sized by time: config `time_budget_min` is the time the whole study may take on one
machine after its env builds (docs/design.md "One budget"), spent in this order of priority:

1. the first look of every paired row (the headline's duets, the pairs, their A/A rows): always
   run; then round 0 of the cells (every cell's first process), each process only while it fits
   what the second look of the headline's open rows (config `duets.before_cells`) leaves: one
   that would end past that is not started (`round0_gate`, `second_look_reserve_s`:
   supervise_cell.py writes its file as skipped and not reached, without timing it);
2. the paired rows' second look in the study's order of priority, the headline's rows first
   (driver/tables/second_look.py, the checkpoint plan_duets, which runs after round 0's cells and
   so counts what they cost);
3. rounds 1 .. repeats - 1 of the cells, each whole round while it fits (`next_full_round`);
4. the allocation's extra rounds (driver/tables/allocation.py) get what is left
   (`extra_budget_s`).
What does not fit is not started; the not_decided table lists it. So a fast machine spends its
spare time where comparisons are still open, and a slow one stops early.

Without a time budget (null), every round below `repeats` runs in full, every open row gets its
second look and the extra rounds get `allocation.budget_s` seconds, as before;
`allocation.budget_s: 0` turns the extra rounds off in both cases.
"""
import datetime
import glob
import hashlib
import json
import math
import os
from collections.abc import Callable, Iterable, Mapping
from statistics import median

from driver.study import layout


def duets_s(duets: Iterable[Mapping], machine: str | None = None) -> float:
    """Seconds of duets (their wall time, failed ones too), of `machine` or of every machine."""
    return float(sum(d.get("wall_s") or 0.0 for d in duets
                     if machine is None or layout.base_machine(d["machine"]) == machine))


def extra_budget_s(records: Iterable[Mapping], repeats: int, allocation_budget_s: float,
                   time_budget_s: float | None, machine: str | None = None,
                   duets: Iterable[Mapping] = ()) -> float:
    """Seconds the extra rounds may spend in all (see the module docstring): what the first
    rounds' cells and the duets left of the time budget, each counted as every planner here
    counts it (`spent_s`: its wall time and the orchestrator's gap after it). The gaps were once
    left out here alone, and an extra round ran past a budget the second look had found spent."""
    if allocation_budget_s <= 0:
        return 0.0
    if time_budget_s is None:
        return float(allocation_budget_s)
    first = [r for r in records if r["repeat"] < repeats]
    return max(0.0, float(time_budget_s) - spent_s(first, duets, machine))


MAX_GAP_S = 5.0


def job_gap_s(duets: Iterable[Mapping], cells: Iterable[Mapping] = ()) -> float:
    """Seconds between one timing job's end and the next one's start (the orchestrator's share of a
    replicate): the median over consecutive timing jobs of this machine (duets and cell
    processes, in the order they started) of the gaps under MAX_GAP_S (a longer one is a pause:
    a checkpoint, an env build, the end of a run); 0 without two."""
    jobs = [(d.get("started_utc"), d.get("wall_s")) for d in duets]
    jobs += [(c.get("started_utc"), (c.get("provenance") or {}).get("cell_wall_s")) for c in cells]
    timed = sorted((datetime.datetime.fromisoformat(t), float(w)) for t, w in jobs
                   if t and w is not None)
    gaps = [(b[0] - a[0]).total_seconds() - a[1] for a, b in zip(timed, timed[1:])]
    gaps = [g for g in gaps if 0 <= g < MAX_GAP_S]
    return float(median(gaps)) if gaps else 0.0


def spent_s(records: Iterable[Mapping], duets: Iterable[Mapping],
            machine: str | None = None) -> float:
    """Seconds of the study's budget spent so far on `machine` (its base key; None: every
    machine): every cell process's and duet's wall time, and the orchestrator's gap after each
    (job_gap_s)."""
    duets = [d for d in duets if machine is None or layout.base_machine(d["machine"]) == machine]
    mine = [r for r in records if machine is None or layout.base_machine(r["machine"]) == machine]
    walls = [float((r.get("provenance") or {}).get("cell_wall_s") or 0.0) for r in mine]
    gap = job_gap_s(duets, mine)
    return sum(walls) + duets_s(duets) + gap * (sum(w > 0 for w in walls) + len(duets))


def next_full_round(records: Iterable[Mapping], duets: Iterable[Mapping], every_slot: list,
                    time_budget_s: float, machine: str | None = None) -> dict:
    """A round below `repeats` under a time budget: every slot when the round's predicted time
    (its processes at this machine's cost of a cell process, `cell_process_s`) fits what the
    budget has left after every cell process and duet so far; else none, with the processes and
    minutes the round would have taken (the report's "not reached")."""
    duets = [d for d in duets if machine is None or layout.base_machine(d["machine"]) == machine]
    mine = [r for r in records if machine is None or layout.base_machine(r["machine"]) == machine]
    cost = cell_process_s(duets, mine)  # the cells' median, or (none ran) the duets' workers'
    each = cost["seconds"] if math.isfinite(cost["seconds"]) else cost["job_gap_s"]
    spent = spent_s(mine, duets)
    left = max(0.0, float(time_budget_s) - spent)
    predicted = each * len(every_slot)
    if predicted <= left:
        return {"cells": list(every_slot), "spent_s": spent, "left_s": left,
                "predicted_s": predicted}
    return {"cells": [], "spent_s": spent, "left_s": left, "predicted_s": predicted,
            "not_reached": {"processes": len(every_slot), "minutes": predicted / 60.0}}


def _side_ready_s(ready: Mapping, worker: Mapping | None = None) -> float | None:
    """A fresh worker's seconds before its first timed window: the import (a forked worker's
    helper paid it once, supervise_duet.py's `workers`; a cell process pays it each time), build,
    first call and warm-up."""
    if not ready:
        return None
    imported = max(float(ready.get("import_s") or 0.0),
                   float((worker or {}).get("helper_import_s") or 0.0))
    return imported + sum(float(ready.get(k) or 0.0) for k in ("build_s", "first_call_s",
                                                                "warmup_s"))


def cell_process_s(duets: Iterable[Mapping], cells: Iterable[Mapping] = (),
                   sampling_s: float = 0.5) -> dict:
    """This machine's cost of one cell process, in seconds, and where it comes from: the median wall
    time of its cells where it has any, else the mean over its duets' sides of what a fresh
    worker takes before timing plus `sampling_s` (config stop.budget_s), which undercounts a
    fresh cell process (its interpreter's start is left out); the job gap on top."""
    duets = [d for d in duets if d.get("status") == "ok"]
    cells = list(cells)
    gap = job_gap_s(duets, cells)
    walls = [float((c.get("provenance") or {}).get("cell_wall_s") or 0) for c in cells]
    walls = [w for w in walls if w > 0]
    if walls:
        return {"seconds": float(median(walls)) + gap, "source": "cells", "n": len(walls),
                "job_gap_s": gap}
    ready = [_side_ready_s((d.get("ready") or {}).get(side), (d.get("workers") or {}).get(side))
             for d in duets for side in ("left", "right")]
    ready = [r for r in ready if r is not None]
    if not ready:
        return {"seconds": math.nan, "source": "none", "n": 0, "job_gap_s": gap}
    return {"seconds": sum(ready) / len(ready) + float(sampling_s) + gap, "source": "duets",
            "n": len(ready), "job_gap_s": gap}


def timing_files(machine: str, results: str = layout.RESULTS) -> tuple[list[dict], list[dict]]:
    """(cell records, duet records) of `machine` (its base key; twins too) under `results`, as the
    files are now: what round0_gate weighs. Unreadable files (one being written) are left out."""
    base = layout.base_machine(machine)
    found = []
    for pattern in (f"{results}/cells/{glob.escape(base)}/*/*.json",
                    f"{results}/cells/{glob.escape(layout.twin_key(base))}/*/*.json",
                    f"{results}/duets/{glob.escape(base)}/*/*.json"):
        for path in sorted(glob.glob(pattern)):
            try:
                with open(path) as handle:
                    found.append((path, json.load(handle)))
            except (OSError, ValueError):
                continue
    duets = os.sep + "duets" + os.sep
    return ([r for p, r in found if duets not in os.sep + p],
            [r for p, r in found if duets in os.sep + p])


def first_look(duets: Iterable[Mapping]) -> list[Mapping]:
    """The duet files of the rows' first look (replicates below the design's `replicates`),
    twins left out: what the checkpoint plan_duets plans the second look from."""
    return [d for d in duets if not layout.is_twin(str(d.get("machine", "")))
            and int(d.get("replicate", 0)) < int((d.get("design") or {}).get("replicates",
                                                                            10 ** 6))]


def row_key(rec: Mapping) -> str:
    """A duet file's row, without the tables' imports: its kind (a duet's A/A row and a pair's
    can time the same cell against itself), env and both cells as written."""
    return "|".join((str(rec.get("kind")), str(rec.get("env")),
                     json.dumps(rec.get("cell"), sort_keys=True),
                     json.dumps(rec.get("reference_cell"), sort_keys=True)))


def second_look_reserve_s(duets: Iterable[Mapping], reserve: Mapping | None, gap_s: float,
                          cache: str | None = None, rows_of: Callable | None = None) -> float:
    """Seconds of the reserved rows' second look not yet run (per row, the replicates it still
    lacks of n_max, at its cost): what round 0 of the cells leaves to them. 0 without a reserve.
    `rows_of(first_look, reserve, gap_s)` computes the rows (the tables' second-look plan,
    driver/tables/second_look.py `reserve_rows`: this layer imports no table; the caller,
    supervise_cell.py, passes it). The rows are computed once per first look and kept in
    `cache` (a JSON file beside round 0's order file): every cell process of round 0 weighs the
    gate, and computing the rows imports the tables (a second or so)."""
    if not reserve or int(reserve.get("tier", -1)) < 0:
        return 0.0
    if rows_of is None:
        raise ValueError("a second-look reserve (tier %s) needs rows_of: the tables' "
                         "second_look.reserve_rows" % reserve.get("tier"))
    duets = [d for d in duets if not layout.is_twin(str(d.get("machine", "")))]
    first = first_look(duets)
    key = sorted(f"{row_key(d)}|{d.get('replicate')}" for d in first)
    key = f"{len(key)}:{_hash_of(key + [json.dumps(dict(reserve), sort_keys=True)])}"
    rows = None
    if cache and os.path.exists(cache):
        try:
            with open(cache) as handle:
                kept = json.load(handle)
            rows = kept["rows"] if kept.get("key") == key else None
        except (OSError, ValueError, KeyError):
            rows = None
    if rows is None:
        rows = rows_of(first, reserve, gap_s)
        if cache:
            from tfspeed.atomic import write_text

            os.makedirs(os.path.dirname(cache) or ".", exist_ok=True)
            write_text(cache, json.dumps({"key": key, "rows": rows}, indent=1) + "\n")
    have: dict[str, int] = {}
    for d in duets:
        have[row_key(d)] = have.get(row_key(d), 0) + 1
    return float(sum(max(0, r["n_max"] - have.get(r["key"], 0)) * r["each_s"] for r in rows))


def _hash_of(items: list[str]) -> str:
    return hashlib.sha256("\n".join(items).encode()).hexdigest()[:16]


def round0_gate(cells: Iterable[Mapping], duets: Iterable[Mapping], time_budget_s: float,
                sampling_s: float = 0.5, machine: str | None = None,
                reserve: Mapping | None = None, cache: str | None = None,
                rows_of: Callable | None = None) -> dict | None:
    """Whether a cell process of round 0 may start under the time budget: None when it would end
    within what the reserved second look leaves of it (what every cell process and duet so far
    spent, plus one cell process at this machine's cost, `cell_process_s`, plus the reserved
    rows' second look still to run, `second_look_reserve_s`), else what the cell's file records
    as not reached: the budget, what was spent, what was reserved and the predicted cost of the
    process (the not_decided table sums those into the minutes and the command that continue
    the run). Files of `machine` (its base key: twins too), or of every machine."""
    mine = lambda r: machine is None or layout.base_machine(r["machine"]) == machine  # noqa: E731
    cells, duets = [c for c in cells if mine(c)], [d for d in duets if mine(d)]
    cost = cell_process_s(duets, cells, sampling_s)
    each = cost["seconds"] if math.isfinite(cost["seconds"]) else 0.0
    spent = spent_s(cells, duets)
    held = second_look_reserve_s(duets, reserve, cost["job_gap_s"], cache, rows_of)
    if spent + each + held <= float(time_budget_s):
        return None
    return {"time_budget_s": float(time_budget_s), "spent_s": spent, "reserved_s": held,
            "cell_process": cost}
