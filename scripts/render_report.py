"""Rule render_report: what aggregation wrote -> results/report.html (driver/render.py)."""
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115 - the rule's log first

import logging  # noqa: E402

from driver.render import render  # noqa: E402

handler = logging.StreamHandler(sys.stderr)
handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
logging.getLogger("tfspeed").addHandler(handler)
logging.getLogger("tfspeed").setLevel(logging.INFO)
smk = snakemake  # noqa: F821
render(cells_csv=smk.input.cells_csv, tables=list(smk.input.tables),
       processes_json=smk.input.processes, facts_json=smk.input.facts,
       template=smk.input.template, out_html=smk.output.html, machine=smk.params.machine,
       config=dict(smk.params.config), selfbench_path=smk.params.selfbench)
