# What aggregation wrote (tables, processes' samples, facts) -> one self-contained HTML report.
from driver.report.bottom_line import previous_tables

# config previous_results: an earlier run's tables for the bottom line, checked before any job.
try:
    PREVIOUS_TABLES = previous_tables(config.get("previous_results"), os.getcwd())
except ValueError as err:
    raise WorkflowError(str(err))


rule render_report:
    input:
        cells_csv=layout.CELLS_CSV,
        tables=expand(layout.TABLE_PATTERN, table=TABLES),
        processes=layout.PROCESSES_JSON,
        facts=layout.FACTS_JSON,
        template=str(REPO / "report" / "template.html.j2"),
        script=str(REPO / "report" / "report.js"),
        style=sorted(str(p) for p in (REPO / "report").glob("*.css")),
        partials=sorted(str(p) for p in (REPO / "report").rglob("_*.html.j2")),
    output:
        html=report(
            layout.REPORT,
            caption="../report/report.rst",
            category="Report",
            labels={"page": "study report"},
        ),
    log:
        "logs/render_report/report.log",
    conda:
        "envs/driver.yaml"
    params:
        machine=MACHINE,
        config=config,
        selfbench=layout.SELFBENCH,
        previous_tables=PREVIOUS_TABLES,
    script:
        "../scripts/render_report.py"
