"""Checkpoint plan_round: which cells get one more process in an extra round (driver/allocation.py)."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 - the rule's log first

import json  # noqa: E402
import logging  # noqa: E402

from driver.allocation import plan_next_round  # noqa: E402
from driver.tabulate import tabulate  # noqa: E402
from tfspeed.atomic import write_text  # noqa: E402

handler = logging.StreamHandler(sys.stderr)
handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
logging.getLogger("tfspeed").addHandler(handler)
logging.getLogger("tfspeed").setLevel(logging.INFO)
log = logging.getLogger("tfspeed.plan")
smk = snakemake  # noqa: F821
p = smk.params
result = tabulate(list(smk.input.cells), p.reference_env, p.noisy_threshold, p.level,
                  q=p.q, min_effect=p.min_effect)
plan = plan_next_round(result["cells"], result, result["records"], p.repeats, p.max_repeats,
                       p.budget_s)
plan["round"] = int(smk.wildcards.rep)
log.info("round %s: %d cells, %.0f s predicted of %.0f s left", plan["round"],
             len(plan["cells"]), plan["predicted_s"], plan["left_s"])
write_text(smk.output.plan, json.dumps(plan, indent=1) + "\n")
