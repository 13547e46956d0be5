"""Spend processes where a decision boundary is still inside a comparison's CI.

Every cell runs in `repeats` processes (rounds 0 .. repeats-1). After that, round after round, the
cells of comparisons that are still *open* get one more process each, as long as they have fewer
than `max_repeats` and the extra rounds' predicted cost (each cell's median process wall time)
fits what is left of `budget_s` (seconds of cell processes beyond the first `repeats` rounds).

Open is a matter of precision alone, never of the estimate: a comparison is open while the
half-width of its equivalence CI (the (1 - 2 alpha) CI of the ratio, driver/stats/moderated.py)
is wider than half the margin (PRECISION), and more processes can still bring it under the
margin: the half-width, shrunk as 1/sqrt(n) to max_repeats processes a side, would be narrower
than the margin. A comparison without a CI (a side with one process) is open. (An earlier rule
stopped when the CI lay inside or wholly beyond the margin: a decision on the estimate, which
doubled the equivalence test's size; tests/unit/stats/test_design_sim.py keeps it as the
control.) Cells go first whose open comparisons
have the widest CI relative to the margin, after the cells with the fewest processes.

Why not chase verdicts: extra processes for comparisons that are "undecided" until they turn
significant is optional stopping (the A/A false-positive rate grows with every look). Here a null
comparison stops getting processes only when its CI is narrow enough, whatever it says, so both
the difference test and the equivalence test keep their nominal rates at the final look
(tests/unit/stats/test_design_sim.py simulates the whole design and checks both). Twins are
allocated like every other comparison, so they see the same
allocation as the study's real comparisons.

The plan is a pure function of the cell files so far, so a rerun plans the same rounds.
"""
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from driver.study import layout
from driver.tables.registry import REGISTRY

SETTLED, MAX_REPEATS, BUDGET, NOT_ALLOCATED = "settled", "max_repeats", "budget", "off"
# Open at the study's end with processes and budget to spare: the last extra round was planned
# before the cell's comparison opened (another cell's process moved it), so no round was left.
NO_ROUND_LEFT = "no_round_left"
# Settled: the equivalence CI's half-width is at most this share of the margin, whatever the
# estimate (then rows within half the margin of 1 can be called equivalent, and rows beyond
# 1.5 margins different).
PRECISION = 0.5
TOO_WIDE = "too_wide"  # open, but too wide to settle even at max_repeats
_TOO_WIDE = -1.0


# The comparisons that allocation settles: those the registry marks `chased` (twins included: they
# calibrate what the real comparisons get). Best-of picks and machines are reported, not chased.
def chased() -> list[str]:
    return [t.name for t in REGISTRY if t.chased]


def open_score(ratio: float, se_log: float, df: float, n_min: float, margin: float,
               alpha_equivalence: float, max_repeats: int) -> float | None:
    """None when a comparison is settled by its precision alone (its equivalence CI's half-width
    at most PRECISION x the margin, whatever the ratio); -1 when it cannot reach the margin by
    max_repeats processes a side; else the CI's half-width over the margin (wider first). inf
    for a comparison without a CI. `ratio` is accepted and ignored: the rule must not look at
    the estimate (tests/unit/stats/test_design_sim.py shows why)."""
    if any(not isinstance(v, (int, float)) or math.isnan(v) for v in (ratio, se_log, df)):
        return math.inf
    m = math.log1p(margin)
    d = math.log(ratio)
    tq = float(sps.norm.ppf(1 - alpha_equivalence) if math.isinf(df)
               else sps.t.ppf(1 - alpha_equivalence, df))
    half = tq * se_log
    del d  # the estimate takes no part: stopping on it is optional stopping (TOST size 2x)
    if half <= PRECISION * m:
        return None
    if n_min and n_min < max_repeats and half * math.sqrt(n_min / max_repeats) >= m:
        return _TOO_WIDE  # too wide to settle even at max_repeats: processes there tell nothing
    return half / m


def open_cells(tables: Mapping[str, pd.DataFrame], margin: float = 0.10,
               alpha_equivalence: float = 0.05, max_repeats: int = 8) -> dict[tuple, float]:
    """(machine, env, cell_id) -> the largest open_score of its open comparisons (-1: all of
    them too wide to settle)."""
    out: dict[tuple, float] = {}
    for name in chased():
        df = tables.get(name)
        if df is None or df.empty or "se_log" not in df.columns:
            continue
        for rec in df.to_dict("records"):
            n_min = np.nanmin([rec.get("n_left", np.nan), rec.get("n_right", np.nan)])
            score = open_score(rec["ratio"], rec["se_log"], rec["df"], float(n_min), margin,
                               alpha_equivalence, max_repeats)
            if score is None:
                continue
            for side in ("left", "right"):
                machine = rec.get(f"{side}_machine", rec.get("machine"))
                if name == "twins" and side == "left":
                    machine = layout.twin_key(machine)
                env = rec.get(f"{side}_env", rec.get("env"))
                key = (machine, env, rec[f"{side}_cell_id"])
                out[key] = max(out.get(key, -1.0), score)
    return out


def spent_extra_s(records, repeats: int) -> float:
    """Seconds of cell processes beyond the first `repeats` rounds."""
    return float(sum((r.get("provenance") or {}).get("cell_wall_s") or 0.0
                     for r in records if r["repeat"] >= repeats))


def plan_next_round(cells: pd.DataFrame, tables: Mapping[str, pd.DataFrame], records,
                    repeats: int, max_repeats: int, budget_s: float, margin: float = 0.10,
                    alpha_equivalence: float = 0.05) -> dict:
    """{"cells": [[env, cell_id] (or [env, cell_id, "twin"] for a twin process), ...] for the
    next round, "spent_s", "left_s", "predicted_s"}: the cells of open comparisons under
    max_repeats (twins included), fewest processes first, then the widest CI relative to the
    margin, as many as the budget's remainder pays for."""
    spent = spent_extra_s(records, repeats)
    left = max(0.0, budget_s - spent)
    scores = open_cells(tables, margin, alpha_equivalence, max_repeats)
    status = stop_reasons(cells, tables, records, repeats, max_repeats, budget_s, margin,
                          alpha_equivalence, scores=scores)
    ok = cells[cells["status"] == "ok"].copy()
    ok["_key"] = list(zip(ok["machine"], ok["env"], ok["cell_id"]))
    wanted = ok[ok["_key"].map(lambda k: status.get(k, SETTLED) is None)]
    wanted = wanted.assign(_score=wanted["_key"].map(scores).astype(float))
    wanted = wanted.sort_values(["n_repeats", "_score"], ascending=[True, False])
    chosen, cost = [], 0.0
    for rec in wanted.to_dict("records"):
        price = float(rec.get("process_wall_s") or 0.0)
        if cost + price > left:
            continue
        chosen.append([rec["env"], rec["cell_id"]] + (["twin"] if layout.is_twin(rec["machine"])
                                                      else []))
        cost += price
    return {"cells": chosen, "spent_s": spent, "left_s": left, "predicted_s": cost}


def stop_reasons(cells: pd.DataFrame, tables: Mapping[str, pd.DataFrame], records,
                 repeats: int, max_repeats: int, budget_s: float, margin: float = 0.10,
                 alpha_equivalence: float = 0.05, scores: Mapping | None = None,
                 allocated: bool | None = None, final: bool = False) -> dict:
    """(machine, env, cell_id) -> why a cell gets no more processes (SETTLED, TOO_WIDE,
    MAX_REPEATS, BUDGET, NOT_ALLOCATED), or None while it still may get one. `allocated`: whether
    the study allocates extra rounds at all (config allocation.budget_s > 0); by default, whether
    `budget_s` is above 0. With it given, a budget of 0 is one the time budget used up (BUDGET),
    not an allocation turned off. `final`: every round has run (the study's tables), so a cell
    that still may get one says NO_ROUND_LEFT instead of None."""
    allocated = budget_s > 0 if allocated is None else allocated
    still_open = open_cells(tables, margin, alpha_equivalence, max_repeats) \
        if scores is None else scores
    left = budget_s - spent_extra_s(records, repeats)
    out = {}
    for rec in cells[cells["status"] == "ok"].to_dict("records"):
        key = (rec["machine"], rec["env"], rec["cell_id"])
        if key not in still_open:
            out[key] = SETTLED
        elif still_open[key] == _TOO_WIDE:
            out[key] = TOO_WIDE
        elif not allocated or max_repeats <= repeats:
            out[key] = NOT_ALLOCATED
        elif rec["n_repeats"] >= max_repeats:
            out[key] = MAX_REPEATS
        elif budget_s <= 0 or float(rec.get("process_wall_s") or 0.0) > left:
            out[key] = BUDGET
        else:
            out[key] = NO_ROUND_LEFT if final else None
    return out
