"""Checkpoint plan_duets: the duets' second look, the rows still open after the first look.

Reads the first `duets.replicates` duets of every row, analyses them as the duets table does (with
the two-look levels of driver/stats/sequential.py, so that stopping a decided row costs no size),
and writes the rows still undecided (A/A rows included: they are planned as headline rows are,
or they would not check the procedure). Snakemake then runs their remaining duets
(rules/common.smk: all_duet_files).
"""
from driver.study.rulelog import to_rule_log

smk = snakemake  # noqa: F821
to_rule_log(smk)

import json  # noqa: E402
import logging  # noqa: E402

from driver.tables.duets import load as load_duets  # noqa: E402
from driver.tables.duets import open_rows  # noqa: E402
from tfspeed.atomic import write_text  # noqa: E402

p = smk.params
records = load_duets(list(smk.input.duets))
rows = open_rows(records, level=p.level, q=p.q, min_effect=p.min_effect,
                 alpha_equivalence=p.alpha_equivalence)
logging.getLogger("tfspeed.plan").info("duets' second look: %d rows still open", len(rows))
write_text(smk.output.plan, json.dumps({"open": rows}, indent=1) + "\n")
