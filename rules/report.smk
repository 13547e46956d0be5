# Tables, cell files and env manifests -> one self-contained HTML report.


rule render_report:
    input:
        cells_csv="results/tables/cells.csv",
        tables=expand("results/tables/{table}.csv", table=TABLES),
        cells=cell_files(),
        others=other_machine_cells,
        template=str(REPO / "report" / "template.html.j2"),
    output:
        html=report(
            "results/report.html",
            caption="../report/report.rst",
            category="Report",
            labels={"page": "study report"},
        ),
    log:
        "logs/render_report/report.log",
    conda:
        "../envs/workflow/driver.yaml"
    params:
        machine=MACHINE,
        config=config,
        selfbench="results/selfbench.json",
    script:
        "../scripts/report.py"
