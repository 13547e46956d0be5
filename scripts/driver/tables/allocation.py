"""Spend processes where verdicts are still open.

Every cell runs in `repeats` processes (rounds 0 .. repeats-1). After that, round after round, the
cells that sit in at least one comparison whose verdict is still `inconclusive` get one more
process each, as long as they have fewer than `max_repeats` and the extra rounds' predicted cost
(each cell's median process wall time) fits what is left of `budget_s` (seconds of cell processes
beyond the first `repeats` rounds). A fixed hour then buys the most verdicts: processes go to the
comparisons that need them, not to the ones already settled.

The plan is a pure function of the cell files so far, so a rerun plans the same rounds.
"""
from collections.abc import Mapping

import pandas as pd

from driver.study import layout
from driver.tables.registry import COMPARISONS

SETTLED, MAX_REPEATS, BUDGET, NOT_ALLOCATED = "settled", "max_repeats", "budget", "off"


# The one-factor comparisons: what allocation settles. Frameworks (best-of picks), machines and
# twins (calibration) are reported, not chased.
CHASED = [n for n in COMPARISONS
          if n not in ("frameworks", "frameworks_best", "machines", "twins")]


def open_cells(tables: Mapping[str, pd.DataFrame]) -> set[tuple]:
    """(machine, env, cell_id) of every cell in an inconclusive one-factor comparison."""
    out = set()
    for name in CHASED:
        df = tables.get(name)
        if df is None or df.empty or "verdict" not in df.columns:
            continue
        for rec in df[df["verdict"] == "inconclusive"].to_dict("records"):
            for side in ("left", "right"):
                machine = rec.get(f"{side}_machine", rec.get("machine"))
                env = rec.get(f"{side}_env", rec.get("env"))
                out.add((machine, env, rec[f"{side}_cell_id"]))
    return out


def spent_extra_s(records, repeats: int) -> float:
    """Seconds of cell processes beyond the first `repeats` rounds."""
    return float(sum((r.get("provenance") or {}).get("cell_wall_s") or 0.0
                     for r in records if r["repeat"] >= repeats))


def plan_next_round(cells: pd.DataFrame, tables: Mapping[str, pd.DataFrame], records,
                    repeats: int, max_repeats: int, budget_s: float) -> dict:
    """{"cells": [[env, cell_id], ...] for the next round, "spent_s", "left_s", "why"}: the open
    cells under max_repeats, cheapest information first (fewest processes, then widest CI), as
    many as the budget's remainder pays for."""
    spent = spent_extra_s(records, repeats)
    left = max(0.0, budget_s - spent)
    status = stop_reasons(cells, tables, records, repeats, max_repeats, budget_s)
    ok = cells[(cells["status"] == "ok") & ~cells["machine"].map(layout.is_twin)].copy()
    ok["_key"] = list(zip(ok["machine"], ok["env"], ok["cell_id"]))
    wanted = ok[ok["_key"].map(lambda k: status.get(k) is None)]
    wanted = wanted.assign(_width=(wanted["ci_high_s"] - wanted["ci_low_s"]) / wanted["median_s"])
    wanted = wanted.sort_values(["n_repeats", "_width"], ascending=[True, False],
                                na_position="first")
    chosen, cost = [], 0.0
    for rec in wanted.to_dict("records"):
        price = float(rec.get("process_wall_s") or 0.0)
        if cost + price > left:
            continue
        chosen.append([rec["env"], rec["cell_id"]])
        cost += price
    return {"cells": chosen, "spent_s": spent, "left_s": left, "predicted_s": cost}


def stop_reasons(cells: pd.DataFrame, tables: Mapping[str, pd.DataFrame], records,
                 repeats: int, max_repeats: int, budget_s: float) -> dict:
    """(machine, env, cell_id) -> why a cell gets no more processes (SETTLED, MAX_REPEATS,
    BUDGET, NOT_ALLOCATED), or None while it still may get one."""
    still_open = open_cells(tables)
    left = budget_s - spent_extra_s(records, repeats)
    out = {}
    for rec in cells[cells["status"] == "ok"].to_dict("records"):
        key = (rec["machine"], rec["env"], rec["cell_id"])
        if key not in still_open:
            out[key] = SETTLED
        elif budget_s <= 0 or max_repeats <= repeats:
            out[key] = NOT_ALLOCATED
        elif rec["n_repeats"] >= max_repeats:
            out[key] = MAX_REPEATS
        elif float(rec.get("process_wall_s") or 0.0) > left:
            out[key] = BUDGET
        else:
            out[key] = None
    return out
