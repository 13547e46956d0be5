"""A study sized by time: config `time_budget_min` is the time the whole study may take on one
machine after its env builds (docs/design.md "One budget"), spent in this order of priority:

1. the first look of every paired row (the headline's duets, the pairs, their A/A rows) and
   round 0 of the cells (every cell's first process): always run;
2. the paired rows' second look: the open rows closest to a decision per second, while they fit
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
from collections.abc import Iterable, Mapping
from statistics import median

from driver.study import layout


def first_rounds_s(records: Iterable[Mapping], repeats: int, machine: str | None = None) -> float:
    """Seconds of cell processes (their wall time, twins included) in rounds 0 .. repeats-1, of
    `machine` (its base key) or of every machine."""
    return float(sum((r.get("provenance") or {}).get("cell_wall_s") or 0.0 for r in records
                     if r["repeat"] < repeats
                     and (machine is None or layout.base_machine(r["machine"]) == machine)))


def duets_s(duets: Iterable[Mapping], machine: str | None = None) -> float:
    """Seconds of duets (their wall time, failed ones too), of `machine` or of every machine."""
    return float(sum(d.get("wall_s") or 0.0 for d in duets
                     if machine is None or layout.base_machine(d["machine"]) == machine))


def extra_budget_s(records: Iterable[Mapping], repeats: int, allocation_budget_s: float,
                   time_budget_s: float | None, machine: str | None = None,
                   duets: Iterable[Mapping] = ()) -> float:
    """Seconds the extra rounds may spend in all (see the module docstring)."""
    if allocation_budget_s <= 0:
        return 0.0
    if time_budget_s is None:
        return float(allocation_budget_s)
    spent = first_rounds_s(records, repeats, machine) + duets_s(duets, machine)
    return max(0.0, float(time_budget_s) - spent)


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
    (its processes at this machine's median cell process, plus the orchestrator's gap between
    jobs) fits what the budget has left after every cell process and duet so far; else none,
    with the processes and minutes the round would have taken (the report's "not reached")."""
    duets = [d for d in duets if machine is None or layout.base_machine(d["machine"]) == machine]
    mine = [r for r in records if machine is None or layout.base_machine(r["machine"]) == machine]
    walls = sorted(float((r.get("provenance") or {}).get("cell_wall_s") or 0.0) for r in mine)
    walls = [w for w in walls if w > 0]
    gap = job_gap_s(duets, mine)
    each = (walls[len(walls) // 2] if walls else 0.0) + gap
    spent = spent_s(mine, duets)
    left = max(0.0, float(time_budget_s) - spent)
    predicted = each * len(every_slot)
    if predicted <= left:
        return {"cells": list(every_slot), "spent_s": spent, "left_s": left,
                "predicted_s": predicted}
    return {"cells": [], "spent_s": spent, "left_s": left, "predicted_s": predicted,
            "not_reached": {"processes": len(every_slot), "minutes": predicted / 60.0}}
