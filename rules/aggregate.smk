# All cell files -> the tidy table of cells, the comparison tables and the workbook.


rule tabulate_cells:
    input:
        cells=cell_files(),
        others=other_machine_cells,
    output:
        cells_csv=report(
            "results/tables/cells.csv",
            caption="../report/cells.rst",
            category="Tables",
            labels={"table": "cells"},
        ),
        xlsx=report(
            "results/study.xlsx",
            caption="../report/workbook.rst",
            category="Tables",
            labels={"table": "workbook"},
        ),
        tables=report(
            expand("results/tables/{table}.csv", table=TABLES),
            caption="../report/tables.rst",
            category="Comparisons",
        ),
    log:
        "logs/tabulate_cells/tabulate.log",
    conda:
        "../envs/workflow/driver.yaml"
    params:
        machine=MACHINE,
        reference_env=config["reference_env"],
        noisy_threshold=config.get("noisy_threshold", 0.1),
        level=config["stop"].get("level", 0.95),
        config=config,
    script:
        "../scripts/aggregate.py"
