"""Checkpoint plan_round: which cells get one more process in an extra round (driver/tables/allocation.py)."""
from driver.study.rulelog import to_rule_log

smk = snakemake  # noqa: F821
to_rule_log(smk)

import json  # noqa: E402
import logging  # noqa: E402

from driver.study.budget import extra_budget_s  # noqa: E402
from driver.tables.aggregate import tabulate  # noqa: E402
from driver.tables.allocation import plan_next_round  # noqa: E402
from driver.tables.duets import load as load_duets  # noqa: E402
from tfspeed.atomic import write_text  # noqa: E402

p = smk.params
result = tabulate(list(smk.input.cells), p.reference_env, p.noisy_threshold, p.level,
                  q=p.q, min_effect=p.min_effect, alpha_equivalence=p.alpha_equivalence)
# the extra rounds' budget: what the first rounds left of the study's time budget, if it has one
budget_s = extra_budget_s(result["records"], p.repeats, p.budget_s, p.time_budget_s,
                          smk.wildcards.machine,
                          duets=load_duets(list(smk.input.duets)))
plan = plan_next_round(result["cells"], result, result["records"], p.repeats, p.max_repeats,
                       budget_s, margin=p.min_effect, alpha_equivalence=p.alpha_equivalence)
plan["round"] = int(smk.wildcards.rep)
logging.getLogger("tfspeed.plan").info(
    "round %s: %d cells, %.0f s predicted of %.0f s left", plan["round"], len(plan["cells"]),
    plan["predicted_s"], plan["left_s"])
write_text(smk.output.plan, json.dumps(plan, indent=1) + "\n")
