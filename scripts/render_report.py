"""Rule render_report: what aggregation wrote -> results/report.html (driver/report/render.py)."""
from driver.study.rulelog import to_rule_log

smk = snakemake  # noqa: F821
to_rule_log(smk)

from driver.report.render import render  # noqa: E402

render(cells_csv=smk.input.cells_csv, tables=list(smk.input.tables),
       processes_json=smk.input.processes, facts_json=smk.input.facts,
       template=smk.input.template, out_html=smk.output.html, machine=smk.params.machine,
       config=dict(smk.params.config), selfbench_path=smk.params.selfbench,
       previous_tables=smk.params.previous_tables)
