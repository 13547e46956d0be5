"""Checkpoint plan_duets: the duets' second look, within the study's time budget.

Reads the first `duets.replicates` duets of every row, analyses them as the duets table does (with
the two-look levels of driver/stats/sequential.py, so that stopping a decided row costs no size),
and finds the rows still undecided (A/A rows included: they are planned as their family's rows
are, or they would not check the procedure). With a time budget (config `time_budget_min`), the
rows get their second look in the study's order of priority while it fits what the first look and
the cells' round 0 (this checkpoint runs after them) leave of the budget
(driver/tables/second_look.py, TIERS): the headline's rows, then the seed's other factors (pairs,
the graph-vs-eager row), then the headline rows behind a release (duets_releases) still open,
whose decision needs both its rows' second look (second_look.release_items), then other
frameworks; within each, the rows closest to a decision per second first (plan_second_look). The others are
written as not reached, with the minutes that would reach them and the command that continues the
run.
Snakemake then runs the chosen rows' remaining duets (rules/common.smk: all_duet_files).
"""
from driver.study.rulelog import to_rule_log

smk = snakemake  # noqa: F821
to_rule_log(smk)

import json  # noqa: E402
import logging  # noqa: E402
import os  # noqa: E402

from driver.study.budget import cell_process_s, spent_s  # noqa: E402
from driver.tables import second_look  # noqa: E402
from driver.tables.duets import load as load_duets  # noqa: E402
from tfspeed.atomic import write_text  # noqa: E402

log = logging.getLogger("tfspeed.plan")
p = smk.params
records = load_duets(list(smk.input.duets))
plan = {"open": [], "not_reached": [], "budget": None}
gap = 0.0
if p.time_budget_s is not None:
    cells = []
    for path in p.first_round_cells:
        if os.path.exists(path):
            with open(path) as handle:
                cells.append(json.load(handle))
    cost = cell_process_s(records, cells, sampling_s=p.sampling_s)
    gap = cost["job_gap_s"]
    spent = spent_s(cells, records)  # the first look's duets and round 0's cells done
    reserved = (len(p.first_round_cells) - len(cells)) * cost["seconds"]
    available = max(0.0, float(p.time_budget_s) - spent - reserved)
rows, releases, costs = second_look.plan_items(records, gap, level=p.level, q=p.q,
                                               min_effect=p.min_effect,
                                               alpha_equivalence=p.alpha_equivalence)
budget_s = float("inf") if p.time_budget_s is None else available
chosen, not_reached, keys = second_look.plan_second_look(rows, releases, costs, budget_s)
if p.time_budget_s is not None:
    # the rows the items not reached would still need, each once
    waiting = {tuple(s) for it in not_reached for s in it["sides"]} - {tuple(k) for k in keys}
    extra_s = sum(costs.get(k, 0.0) for k in waiting)
    plan["budget"] = {"time_budget_s": p.time_budget_s, "spent_s": spent,
                      "first_round_cells_reserved_s": reserved, "cell_process": cost,
                      "available_s": available,
                      "second_look_s": sum(r["cost_s"] for r in chosen),
                      "not_reached_s": extra_s}
plan["open"] = keys
plan["chosen"] = chosen
plan["not_reached"] = not_reached
log.info("duets' second look: %d rows and %d releases still open; %d rows get it; %d items not "
         "reached", len(rows), len(releases), len(keys), len(not_reached))
write_text(smk.output.plan, json.dumps(plan, indent=1, default=float) + "\n")
