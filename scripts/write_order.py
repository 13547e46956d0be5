"""Rule plan_order: a round's planned order (driver/study/order.py, computed by the study plan,
driver/study/plan.py),
written to results/rounds/<machine>/order<rep>.json before the round's cells run."""
from driver.study.rulelog import to_rule_log

smk = snakemake  # noqa: F821
to_rule_log(smk)

import json  # noqa: E402
import logging  # noqa: E402

from tfspeed.atomic import write_text  # noqa: E402

plan = smk.params.plan
logging.getLogger("tfspeed.order").info("round %s: %d processes, seed %s", plan["round"],
                                        len(plan["order"]), plan["seed"])
write_text(smk.output.order, json.dumps(plan, indent=1) + "\n")
