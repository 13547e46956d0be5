"""Checkpoint plan_round: which cells get one more process in round `rep`.

Below `repeats` (rounds 1 .. repeats - 1 under a time budget, plan.fixed_round): every cell and
twin, if the round's predicted time fits what the study's budget has left after the paired rows
(their first and second looks) and the rounds before; else none, and the round and every later
one are written as not reached (driver/study/budget.py: next_full_round). From `repeats` on, the
allocation's extra round (driver/tables/allocation.py): the cells of open comparisons.
"""
from driver.study.rulelog import to_rule_log

smk = snakemake  # noqa: F821
to_rule_log(smk)

import json  # noqa: E402
import logging  # noqa: E402

from driver.study.budget import extra_budget_s, next_full_round  # noqa: E402
from driver.tables.aggregate import tabulate  # noqa: E402
from driver.tables.allocation import plan_next_round  # noqa: E402
from driver.tables.duets import load as load_duets  # noqa: E402
from tfspeed.atomic import write_text  # noqa: E402

p = smk.params
rep = int(smk.wildcards.rep)
result = tabulate(list(smk.input.cells), p.reference_env, p.noisy_threshold, p.level,
                  q=p.q, min_effect=p.min_effect, alpha_equivalence=p.alpha_equivalence)
duets = load_duets(list(smk.input.duets))
if rep < p.repeats:
    plan = next_full_round(result["records"], duets, p.every_slot, p.time_budget_s,
                           smk.wildcards.machine)
else:
    # the extra rounds' budget: what the rounds before and the duets left of the time budget
    budget_s = extra_budget_s(result["records"], p.repeats, p.budget_s, p.time_budget_s,
                              smk.wildcards.machine, duets=duets)
    plan = plan_next_round(result["cells"], result, result["records"], p.repeats,
                           p.max_repeats, budget_s, margin=p.min_effect,
                           alpha_equivalence=p.alpha_equivalence)
plan["round"] = rep
logging.getLogger("tfspeed.plan").info(
    "round %s: %d cells, %.0f s predicted of %.0f s left", plan["round"], len(plan["cells"]),
    plan["predicted_s"], plan["left_s"])
write_text(smk.output.plan, json.dumps(plan, indent=1) + "\n")
