"""The not_decided table: the paired rows a run left undecided, and what more time would decide.

Two kinds of row, per machine (docs/design.md "One budget"):
- `not reached`: a paired row open after the first look whose second look did not fit the
  time budget (scripts/plan_duets.py lists them), or a round of the cells that did not fit
  (paired_table "cells", cell_id "round r", scripts/plan_round.py; for round 0, the processes
  the budget did not reach, from their cell records); `replicates` and `minutes`
  are what that look (or round) costs at this run's measured times, and `command` is the run's
  continuation: the same study with the budget plus every not-reached row's minutes (finished
  duets and cells are kept);
- `open after the second look`: the design's replicates ran and the row is still undecided;
  `replicates` is about how many more would decide it if its measured mean and spread held (the
  difference test's half-width below its distance from 1, or the equivalence test's half-width
  below its distance to the margin, normal quantiles: a guide, not a promise), `minutes` their
  cost; more replicates than the design's `max_replicates` need a study planned with more.
A release (duets_releases, derived from two headline rows) still undecided is listed too, its
`cell_id` naming the earlier env: `not reached` when the plan chose it for the second look of its
two rows and the budget did not reach it (`replicates`, `minutes`: its rows' second looks not run),
else `open after the second look` with about how many replicates per row would decide it (its se
as sqrt(n) times the spread of one replicate). Its minutes are not counted again in the
continuation's budget where a row of its own is listed. The graph-vs-eager rows
(duets_graph_vs_eager) are decided by their rows and are not listed. Rows of the A/A families are
listed too: they are the procedure's own check.
"""
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd
from scipy import stats as sps

from driver.stats import verdicts
from driver.study import layout

COLUMNS = ["machine", "paired_table", "table", "env", "cell_id", "state", "n", "n_max", "sd_log",
           "ratio", "replicates", "minutes", "chance", "command"]
FAMILIES = ("duets", "pairs", "duets_aa", "pairs_aa", "duets_modes", "duets_own",
            "duets_frameworks")
NOT_REACHED, STILL_OPEN = "not reached", "open after the second look"
RELEASES = "duets_releases"


def replicates_to_decide(mean: float, sd: float, margin: float, alpha: float = 0.05,
                         alpha_eq: float = 0.05, cap: int = 1000) -> int | None:
    """About how many replicates in all would decide a row of this mean and spread (log ratios):
    outside the margin the difference test's half-width must fall below |mean|, inside it the
    equivalence test's below the distance to the margin. None when it cannot be said (no spread,
    or a mean on the margin, or more than `cap`)."""
    if not (sd > 0 and math.isfinite(mean)):
        return None
    bound = math.log1p(margin)
    distance = abs(mean) if abs(mean) >= bound else bound - abs(mean)
    z = sps.norm.ppf(1 - alpha / 2) if abs(mean) >= bound else sps.norm.ppf(1 - alpha_eq)
    if distance <= 0:
        return None
    n = math.ceil((z * sd / distance) ** 2)
    return int(n) if n <= cap else None


def _round0_not_reached(machine: str, records: Iterable[Mapping]) -> list[dict]:
    """Round 0's cell processes of `machine` (twins too) that the time budget did not reach, as
    one round (supervise_cell.py writes each as skipped and `not_reached`, with the cost of the
    process it did not start): [] when none."""
    late = [((r.get("time_budget") or {}).get("cell_process") or {}).get("seconds")
            for r in records if r.get("not_reached") and r.get("repeat") == 0
            and layout.base_machine(r["machine"]) == machine]
    if not late:
        return []
    seconds = [float(s) for s in late if s is not None and math.isfinite(float(s))]
    return [{"round": 0, "processes": len(late), "minutes": sum(seconds) / 60.0}]


def read_plans(machines: Iterable[str], records: Iterable[Mapping] = ()) -> dict:
    """Each machine's second-look plan (results/duet_plans/<machine>.json), where it exists, with
    `rounds`: its cells' rounds that were not reached: round 0's processes the budget did not
    reach (among the cell `records`) and the later rounds' plans (results/rounds/<machine>/)."""
    records = list(records)
    plans = {}
    for machine in machines:
        path = Path(layout.DUET_PLAN_PATTERN.format(machine=machine))
        if path.exists():
            plans[machine] = json.loads(path.read_text())
        rounds = _round0_not_reached(machine, records)
        for found in sorted(Path(layout.PLAN_PATTERN.format(machine=machine, rep=0)).parent
                            .glob("round*.json")):
            plan = json.loads(found.read_text())
            if plan.get("not_reached"):
                rounds.append(dict(plan["not_reached"], round=plan.get("round")))
        if rounds:
            plans.setdefault(machine, {})["rounds"] = rounds
    return plans


def continuation(plan: Mapping, extra_s: float, spent_s: float = 0.0) -> str | None:
    """The command that continues a machine's run: a budget of what it has spent (or its budget,
    if more: the first looks and round 0 always run, so a run may spend more) plus `extra_s`."""
    budget = (plan.get("budget") or {}).get("time_budget_s")
    if not budget or extra_s <= 0:
        return None
    minutes = int(math.ceil(max(float(budget), float(spent_s)) / 60.0 + extra_s / 60.0))
    return f'make study ARGS="--config time_budget_min={minutes}"'


def not_decided_table(tables: Mapping[str, pd.DataFrame], plans: Mapping[str, Mapping],
                      min_effect: float = 0.10, alpha_equivalence: float = 0.05,
                      q: float = 0.05, spent: Mapping[str, float] | None = None) -> pd.DataFrame:
    """One row per undecided paired row (see the module docstring); `spent`: each machine's
    seconds spent so far (driver/study/budget.py: spent_s), for the continuation's budget."""
    out = []
    for machine, plan in plans.items():
        for cells_round in plan.get("rounds") or []:
            out.append({"machine": machine, "paired_table": "cells", "table": None, "env": None,
                        "cell_id": "round %d" % cells_round["round"], "state": NOT_REACHED,
                        "n": math.nan, "n_max": math.nan, "sd_log": math.nan, "ratio": math.nan,
                        "replicates": cells_round["processes"],
                        "minutes": cells_round["minutes"], "chance": math.nan, "command": None})
    for family in FAMILIES:
        table = tables.get(family)
        if table is None or table.empty:
            continue
        for _, row in table.iterrows():
            if verdicts.norm_code(row["verdict"]) != verdicts.UNDECIDED:
                continue
            machine = row["machine"]
            plan = plans.get(layout.base_machine(machine)) or {}
            reached = {(r["env"], r["cell_id"]): r for r in plan.get("not_reached") or []
                       if r.get("family") != RELEASES}
            base = {"machine": machine, "paired_table": family, "table": row.get("table"),
                    "env": row["env"], "cell_id": row["cell_id"], "n": row["n"],
                    "n_max": row["n_max"], "sd_log": row["sd_log"], "ratio": row["ratio"]}
            wall = float(row["wall_s"]) if row["wall_s"] == row["wall_s"] else math.nan
            key = (row["env"], row["cell_id"])
            if key in reached and row["n"] < row["n_max"]:
                left = reached[key]
                out.append(dict(base, state=NOT_REACHED, replicates=int(row["n_max"] - row["n"]),
                                minutes=left["cost_s"] / 60.0, chance=left.get("chance"),
                                command=None))
                continue
            need = replicates_to_decide(row["log_ratio"], row["sd_log"], min_effect, q,
                                        alpha_equivalence)
            more = None if need is None else max(0, need - int(row["n"]))
            out.append(dict(base, state=STILL_OPEN, replicates=more,
                            minutes=math.nan if more is None else more * wall / 60.0,
                            chance=math.nan, command=None))
    out.extend(_releases(tables.get("duets_releases"), tables.get("duets"), plans, min_effect,
                         alpha_equivalence, q))
    # one command per machine: its budget with every not-reached row's minutes (paired rows and
    # the cells' rounds; the rounds' plans are rewritten by the continuation too), a release's
    # only where its rows are not listed themselves
    for machine, plan in plans.items():
        mine = [r for r in out if layout.base_machine(r["machine"]) == machine
                and r["state"] == NOT_REACHED]
        listed = {(r["env"], r["cell_id"]) for r in mine if r["paired_table"] != RELEASES}
        minutes = sum(float(r["minutes"]) for r in mine if r["paired_table"] != RELEASES)
        minutes += sum(float(r["minutes"]) for r in mine if r["paired_table"] == RELEASES
                       and not any(tuple(s) in listed for s in r.get("_sides") or []))
        command = continuation(plan, 60.0 * minutes, (spent or {}).get(machine, 0.0))
        for r in mine:
            r["command"] = command
    return pd.DataFrame(out, columns=COLUMNS)



def _sides(duets: pd.DataFrame | None) -> dict:
    """{(machine, env, mode, api, input, keras): (n, n_max, wall_s, cell_id)} of the duets
    table's rows."""
    if duets is None or duets.empty:
        return {}
    return {tuple(r.get(k) for k in ("machine", "env", "mode", "api", "input", "keras")):
            (r["n"], r["n_max"], r["wall_s"], r["cell_id"]) for r in duets.to_dict("records")}


def _releases(table: pd.DataFrame | None, duets: pd.DataFrame | None,
              plans: Mapping[str, Mapping], min_effect: float, alpha_equivalence: float,
              q: float) -> list[dict]:
    """The undecided releases' rows of the not_decided table (module docstring). A release one of
    whose rows stopped short of its design's `n_max` is `not reached` (the plan's item gives its
    minutes; a plan without releases, its rows' missing duets at their own duet time)."""
    out = []
    if table is None or table.empty:
        return out
    sides = _sides(duets)
    for _, row in table.iterrows():
        if verdicts.norm_code(row["verdict"]) != verdicts.UNDECIDED:
            continue
        machine = row["machine"]
        plan = plans.get(layout.base_machine(machine)) or {}
        items = {(r["env"], r.get("against"), r.get("mode")): r
                 for r in plan.get("not_reached") or [] if r.get("family") == RELEASES}
        n = int(min(row["left_n"], row["right_n"]))
        sd = float(row["se_log"]) * math.sqrt(n) if row["se_log"] == row["se_log"] else math.nan
        base = {"machine": machine, "paired_table": RELEASES, "table": RELEASES,
                "env": row["left_env"], "cell_id": "%s against %s" % (row["mode"],
                                                                      row["right_env"]),
                "n": n, "n_max": math.nan, "sd_log": sd, "ratio": row["ratio"]}
        item = items.get((row["left_env"], row["right_env"], row["mode"]))
        both = [sides.get((machine, row.get(f"{s}_env"), row.get("mode"), row.get("api"),
                           row.get("input"), row.get(f"{s}_keras"))) for s in ("left", "right")]
        short = [(n_max - got) * wall for got, n_max, wall, _ in filter(None, both)
                 if got < n_max]
        if (item is not None and float(item.get("cost_s") or 0) > 0) or short:
            n_max = (int(item["n_max"]) if item is not None and item.get("n_max")
                     else max(int(b[1]) for b in both if b))
            minutes = (float(item["cost_s"]) / 60.0 if item is not None
                       else sum(short) / 60.0)
            out.append(dict(base, state=NOT_REACHED, n_max=n_max, replicates=n_max - n,
                            minutes=minutes, chance=(item or {}).get("chance", math.nan),
                            command=None, _sides=(item or {}).get("sides") or [
                                [row[f"{s}_env"], b[3]] for s, b in zip(("left", "right"), both)
                                if b]))
            continue
        need = replicates_to_decide(row["log_ratio"], sd, min_effect, q, alpha_equivalence)
        out.append(dict(base, state=STILL_OPEN,
                        replicates=None if need is None else max(0, need - n),
                        minutes=math.nan, chance=math.nan, command=None))
    return out
