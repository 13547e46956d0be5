"""A study sized by time: config `time_budget_min` is the machine time (minutes of cell processes)
the whole study may take on one machine. The headline's duets (driver/study/duetplan.py) run first
and count against it; the first `repeats` rounds always run in full (every cell needs its
processes); the extra rounds of the allocation (driver/tables/allocation.py, which
chooses where processes go) get what those rounds left of the budget. So a fast machine spends its
spare time where comparisons are still open, and a slow one stops after the first rounds.

Without a time budget (null), the extra rounds get `allocation.budget_s` seconds, as before;
`allocation.budget_s: 0` turns the extra rounds off in both cases.
"""
from collections.abc import Iterable, Mapping

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
