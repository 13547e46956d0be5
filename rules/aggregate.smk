# All cell files -> the tidy table of cells, the registry's tables, the report's bundle, the workbook.


rule tabulate_cells:
    input:
        cells=lambda wildcards: cell_files(),
        others=other_machine_cells,
        orders=lambda wildcards: order_files(),
        duets=lambda wildcards: duet_files(),
    output:
        cells_csv=report(
            layout.CELLS_CSV,
            caption="../report/cells.rst",
            category="Tables",
            labels={"table": "cells"},
        ),
        xlsx=report(
            layout.WORKBOOK,
            caption="../report/workbook.rst",
            category="Tables",
            labels={"table": "workbook"},
        ),
        tables=report(
            expand(layout.TABLE_PATTERN, table=TABLES),
            caption="../report/tables.rst",
            category="Comparisons",
        ),
        processes=layout.PROCESSES_JSON,
        facts=layout.FACTS_JSON,
    log:
        "logs/tabulate_cells/tabulate.log",
    conda:
        "envs/driver.yaml"
    params:
        reference_env=config["reference_env"],
        noisy_threshold=config["noisy_threshold"],
        level=config["stop"]["level"],
        q=config["fdr_q"],
        min_effect=config["min_effect"],
        alpha_equivalence=config["equivalence_alpha"],
        spike_factor=config["spike_factor"],
        allocation=lambda wildcards: {
            "repeats": REPEATS,
            "max_repeats": ALLOCATION["max_repeats"],
            "budget_s": ALLOCATION["budget_s"],
            "time_budget_s": TIME_BUDGET_S,
            "machine": MACHINE,
        },
        sides_as_cells=PLAN.sides_as_cells,
        config=config,
    script:
        "../scripts/tabulate_cells.py"
