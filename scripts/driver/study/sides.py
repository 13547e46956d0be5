"""Cells whose absolute times come from a duet's sides, not from processes of their own.

A duet replicate runs a fresh worker per side, and each worker times its cell and records its
median, samples, first call and warm-up (results/duets/). So a cell that is a side of a duet row
already has one fresh process per replicate of that row. With config `duets.sides_as_cells`
such a cell gets no cell process of its own; its row of the cells table is pooled from those
sides (`side_records`), marked by `stopped_by` ("duet sides"). Only a cell that is a side of
exactly one paired row is taken so: the reference env's cells (a side of every headline row) and
a cell that a pair also times would be pooled from processes that are not one row's replicates,
and an A/A row's cell is both of its sides, so these keep their own processes. A pair's sides
are never taken: one worker times both of its cells in turns. The key is off by default: the
duets' window and round 0's can sit apart on a noisy machine (driver/tables/sides_agreement.py
and `make sides-check` measure it; docs/design.md, "Absolute times from the duets' sides").
"""
from collections import Counter
from collections.abc import Iterable, Mapping

from tfspeed.cells import AXES, cell_id
from tfspeed.models import step_flops

DUET = "duet sides"  # cells.csv `stopped_by` of a cell pooled from a duet's sides


def row_sides(rows: Iterable[tuple]) -> Counter:
    """(env, cell_id) -> how many distinct paired rows it is a side of; rows: (left env, left
    cell_id, right env, right cell_id, pair) each. An A/A row counts its one cell twice."""
    counts: Counter = Counter()
    for left_env, left_id, right_env, right_id, _ in set(rows):
        counts[(left_env, left_id)] += 1
        counts[(right_env, right_id)] += 1
    return counts


def single_sides(rows: Iterable[tuple], pairs: bool = False) -> set[tuple]:
    """The (env, cell_id) that are a side of exactly one paired row, a duet's (never an A/A
    row's); pairs=True: a pair's instead (driver/tables/sides_agreement.py checks both)."""
    rows = list(rows)
    kind = {side for r in rows if r[4] == pairs for side in ((r[0], r[1]), (r[2], r[3]))}
    return {key for key, n in row_sides(rows).items() if n == 1 and key in kind}


def planned_rows(duets) -> list[tuple]:
    """The sides of planned duets and pairs (driver/study/duetplan.py `Duet`)."""
    return [(d.env, cell_id(d.cell), d.reference_env, cell_id(d.reference_cell), d.together)
            for d in duets]


def record_rows(records: Iterable[Mapping]) -> list[tuple]:
    """The sides of the rows of duet files (driver/tables/duets.py `load`)."""
    return [(r["env"], cell_id(r["cell"]), r["reference_env"], cell_id(r["reference_cell"]),
             is_pair(r)) for r in records]


def is_pair(rec: Mapping) -> bool:
    """A pair's file (one worker timed both cells), not a duet's."""
    return bool((rec.get("design") or {}).get("together"))


def _env_cell(rec: Mapping, which: str) -> tuple[str, dict]:
    """A duet file's env and cell on its `which` side ("left": the row's, "right": the other)."""
    return (rec["env"], rec["cell"]) if which == "left" else (rec["reference_env"],
                                                              rec["reference_cell"])


def _side(rec: Mapping, which: str) -> dict:
    """One side of one duet (or pair) file as a cell file's record (the fields pooling reads)."""
    left = which == "left"
    env, cell = _env_cell(rec, which)
    prov = rec.get("provenance") or {}
    env_prov = prov.get("left_env" if left else "right_env") or {}
    ready = (rec.get("ready") or {}).get(which) or {}
    windows = rec.get(f"{which}_windows_s") or []
    return {
        "machine": rec["machine"], "env": env, "cell_id": cell_id(cell),
        # a side's process is the row's replicate: its own time block (not a cell round)
        "repeat": "%s%d" % ("p" if is_pair(rec) else "d", int(rec["replicate"])),
        "status": rec["status"], "reason": rec.get("reason") or "",
        "framework": env_prov.get("framework"),
        "framework_version": rec.get(f"{which}_framework_version"),
        "python": env_prov.get("python"),
        "provenance": {"machine": prov.get("machine") or {},
                       "peak_rss_mb": (rec.get("peak_rss_mb") or {}).get(which)},
        "started_utc": rec.get("started_utc"),
        "flops_per_step": step_flops(cell["model"], cell["data"], cell["api"]),
        "samples_s": [float(x) for window in windows for x in window],
        "first_call_s": ready.get("first_call_s"),
        "warmup_calls": ready.get("warmup_calls"),
        "warmup_stopped_by": ready.get("warmup_stopped_by"),
        "cpu_window": rec.get("cpu_window") or {},
        "foreign_cpu_flag": bool(rec.get("foreign_cpu_flag")),
        "steps_per_call": 1,
        "stopped_by": "pair sides" if is_pair(rec) else DUET,
        **{axis: cell[axis] for axis in AXES},
    }


def side_records(duet_records: Iterable[Mapping], keys: Iterable[Iterable],
                 pairs: bool = False) -> list[dict]:
    """Cell records, one per replicate, of the cells `keys` ([env, cell_id] each, the plan's
    `sides_as_cells`) from the duet files (pairs=True: the pair files, for the check) that have
    them as a side. A side whose file failed is a failed process of the cell; an ok side without
    samples is left out."""
    wanted = {tuple(k) for k in keys}
    out = []
    for rec in duet_records:
        if is_pair(rec) != pairs:
            continue
        for which in ("left", "right"):
            env, cell = _env_cell(rec, which)
            if (env, cell_id(cell)) not in wanted:
                continue
            side = _side(rec, which)
            if side["status"] == "ok" and (not side["samples_s"]
                                           or side["first_call_s"] is None):
                continue
            out.append(side)
    return out
