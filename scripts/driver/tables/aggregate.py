"""Aggregation: all cell files -> results/tables/*.csv (the tidy table of cells, the comparison
and summary tables of the registry), the report's bundle beside them, and results/study.xlsx.

1. Reads every cell file through driver/study/record.py (validated; a bad file stops the rule with an
   error naming it: a silently dropped cell would make a table lie by omission).
2. Pools the repeats of each cell (driver/tables/pooling.py): one row per (machine, env, cell).
3. Pairs ok cells that differ in one factor (driver/tables/comparisons.py) and builds the summaries.
4. Writes the CSVs (seconds, as measured), processes.json and facts.json for the report, and the
   workbook for people (milliseconds, formatted).
"""
import datetime
import logging
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from driver.study import layout, record
from driver.study.budget import extra_budget_s, spent_s
from driver.study.sides import record_rows, side_records, single_sides
from driver.tables import bundle, facts
from driver.tables.allocation import stop_reasons
from driver.tables.comparisons import build_tables
from driver.tables.duet_rounds import duet_rounds
from driver.tables.duets import FAMILIES as DUET_FAMILIES
from driver.tables.duets import duets_table
from driver.tables.duets import load as load_duets
from driver.tables.duets_graph_vs_eager import duets_graph_vs_eager_table
from driver.tables.duets_releases import duets_releases_table
from driver.tables.machines_compared import machines_compared_table
from driver.tables.not_decided import not_decided_table, read_plans
from driver.tables.ordering import env_order
from driver.tables.pooling import apply_machine_peaks, pool_cells
from driver.tables.processes import load_orders, processes_table
from driver.tables.registry import NAMES
from driver.tables.source_layout import seed_view
from driver.tables.workbook import about_frame, workbook_sheets, write_workbook

log = logging.getLogger("tfspeed.aggregate")
# cells.csv `allocation` of a cell pooled from a duet row's sides: that row's replicates
SIDES = "duet_row"


def tabulate(cell_files: Iterable[Path | str], reference_env: str, noisy_threshold: float,
             level: float, config: Mapping | None = None, q: float = 0.05,
             min_effect: float = 0.10, allocation: Mapping | None = None,
             now: datetime.datetime | None = None, spike_factor: float = 2.0,
             orders: Iterable[Path | str] = (), alpha_equivalence: float = 0.05,
             duet_files: Iterable[Path | str] = (), sides_as_cells: Iterable = ()) -> dict:
    """Everything aggregation computes, in memory: {"cells", <table>..., "seed_view", "about",
    "records", "files", "env_order"}. allocation: {"repeats", "max_repeats", "budget_s"}, to say
    per cell why it got no more processes (cells.csv `allocation`). orders: the rounds' plan
    files (results/rounds/<machine>/order<round>.json), for the processes table's positions.
    duet_files: the headline's duets (results/duets/, driver/tables/duets.py). sides_as_cells:
    [env, cell_id] of the cells whose rows come from the paired rows' sides (the plan's,
    driver/study/sides.py), or "auto": every cell that is a side of exactly one row of the duet
    files (a results folder tabulated again); a cell with cell files of its own keeps them."""
    files = [Path(f) for f in cell_files]
    log.info("reading %d cell files", len(files))
    records = record.load_cells(files)
    duet_records = load_duets(duet_files)
    if sides_as_cells == "auto":
        sides_as_cells = single_sides(record_rows(duet_records))
    own = {(r["machine"], r["env"], r["cell_id"]) for r in records}
    taken = [r for r in side_records(duet_records, sides_as_cells)
             if (r["machine"], r["env"], r["cell_id"]) not in own]
    cells, logs = pool_cells(records + taken, level=level, noisy_threshold=noisy_threshold,
                             spike_factor=spike_factor)
    cells = apply_machine_peaks(cells)
    cells = add_same_function(cells, records)
    log.info("%d cells (%s)", len(cells), cells["status"].value_counts().to_dict())
    if not cells.empty and reference_env not in set(cells["env"]):
        log.warning("reference env %r has no cells: tf2_vs_tf1 is empty", reference_env)
    tables = build_tables(cells, logs, reference_env, level=level, q=q, min_effect=min_effect,
                          alpha_equivalence=alpha_equivalence)
    tables["processes"] = processes_table(records, load_orders(orders))
    for name in DUET_FAMILIES:  # duets, duets_aa, pairs, pairs_aa: each its own table
        tables[name] = duets_table(duet_records, level=level, q=q, min_effect=min_effect,
                                   alpha_equivalence=alpha_equivalence, kind=name)
    tables["duet_rounds"] = duet_rounds(tables["duets"], duet_records)
    tables["duets_releases"] = duets_releases_table(
        tables["duets"], q=q, min_effect=min_effect, alpha_equivalence=alpha_equivalence)
    tables["duets_graph_vs_eager"] = duets_graph_vs_eager_table(
        tables["duets"], tables["duets_modes"], q=q, min_effect=min_effect,
        alpha_equivalence=alpha_equivalence)
    tables["machines_compared"] = machines_compared_table(
        tables["duets"], q=q, min_effect=min_effect, alpha_equivalence=alpha_equivalence)
    duet_machines = {layout.base_machine(d["machine"]) for d in duet_records}
    tables["not_decided"] = not_decided_table(
        tables, read_plans(duet_machines, records), min_effect=min_effect,
        alpha_equivalence=alpha_equivalence, q=q,
        spent={m: spent_s(records, duet_records, m) for m in duet_machines})
    if allocation and not cells.empty:
        budget = extra_budget_s(records, allocation["repeats"], allocation["budget_s"],
                                allocation.get("time_budget_s"), allocation.get("machine"),
                                duets=duet_records)
        why = stop_reasons(cells, tables, records, allocation["repeats"],
                           allocation["max_repeats"], budget,
                           margin=min_effect, alpha_equivalence=alpha_equivalence,
                           allocated=allocation["budget_s"] > 0, final=True)
        sided = {(r["machine"], r["env"], r["cell_id"]) for r in taken}
        cells["allocation"] = [SIDES if k in sided else why.get(k) for k in
                               zip(cells["machine"], cells["env"], cells["cell_id"])]
    envs = env_order(cells) if not cells.empty else []
    seed = seed_view(cells, tables, reference_env, envs)
    about = about_frame(cells, reference_env, level, noisy_threshold, config,
                        now or datetime.datetime.now(datetime.timezone.utc))
    return {"cells": cells, **tables, "seed_view": seed, "about": about, "records": records,
            "files": [str(f) for f in files], "env_order": envs, "duet_records": duet_records}


SAME_FUNCTION_COLUMNS = ("same_function", "same_function_max_diff", "same_function_tolerance")


def add_same_function(cells: pd.DataFrame, records: Iterable[dict]) -> pd.DataFrame:
    """The same-function check of a user's model (tfspeed/samefunction.py, the cell file's
    `same_function`) per cell: `same_function` is match, mismatch (some process's outputs differ
    from the NumPy pass beyond the tolerance) or error (the check could not run; the first error),
    empty where no process checked; the largest difference over its processes and the tolerance.
    The columns exist only in a study whose cell files carry the check (one with a user's model),
    so the seed's tables keep their columns."""
    checks: dict[tuple, list[dict]] = {}
    for rec in records:
        found = rec.get("same_function")
        if isinstance(found, Mapping):
            checks.setdefault((rec["machine"], rec["env"], rec["cell_id"]), []).append(found)
    if not checks or cells.empty:
        return cells
    rows = []
    for key in zip(cells["machine"], cells["env"], cells["cell_id"]):
        found = checks.get(key, [])
        diffs = [c["max_abs_diff"] for c in found
                 if isinstance(c.get("max_abs_diff"), (int, float))]
        errors = [str(c.get("error")) for c in found if c.get("error")]
        if any(c.get("match") is False for c in found):
            verdict = "mismatch"
        elif errors:
            verdict = "error: " + errors[0]
        elif found:
            verdict = "match"
        else:
            verdict = None
        tolerances = [c["tolerance"] for c in found
                      if isinstance(c.get("tolerance"), (int, float))]
        rows.append((verdict, max(diffs) if diffs else None,
                     min(tolerances) if tolerances else None))
    out = cells.copy()
    for i, name in enumerate(SAME_FUNCTION_COLUMNS):
        out[name] = [row[i] for row in rows]
    return out


def write_outputs(result: dict, out_csv, out_tables: Mapping[str, Path | str], out_xlsx,
                  processes_json, facts_json) -> None:
    """Every output file, each written atomically; tables named in `out_tables` only."""
    unknown = set(out_tables) - set(NAMES)
    if unknown:
        raise ValueError(f"unknown tables {sorted(unknown)}; known: {NAMES}")
    bundle.write_table(result["cells"], out_csv)
    for name, path in out_tables.items():
        bundle.write_table(result[name], path)
        log.info("%s: %d rows -> %s", name, len(result[name]), path)
    facts.write_bundle(result["records"], result["files"], processes_json, facts_json,
                       env_order=result["env_order"], duets=result.get("duet_records", ()))
    tables = {name: result[name] for name in NAMES}
    Path(out_xlsx).parent.mkdir(parents=True, exist_ok=True)
    write_workbook(out_xlsx, workbook_sheets(tables, result["cells"], result["seed_view"],
                                             result["about"]))
    log.info("workbook -> %s", out_xlsx)


def frames(result: dict) -> dict[str, pd.DataFrame]:
    """The tables of a result (what tests compare), without the bundle's raw parts."""
    return {k: v for k, v in result.items() if isinstance(v, pd.DataFrame)}
