# One job per cell and repeat: a fresh process of the env's Python, under the machine's timing lock.


rule run_cell:
    input:
        unpack(cell_inputs),
    output:
        cell=layout.CELL_PATTERN,
    log:
        "logs/run_cell/{machine}/{env}/{cell}.r{rep}.log",
    # the round's planned order (driver/study/order.py): its position 0 runs first
    priority: cell_priority
    conda:
        env_file
    resources:
        timing_slot=1,
    params:
        driver=DRIVER_PYTHON,
        script=str(REPO / "scripts" / "supervise_cell.py"),
        cell=cell_params,
        rule=rule_params,
        manifest=manifest_arg,
        timeout=config["cell_timeout_s"],
        memory=config["cell_memory_mb"],
        threads=config["threads"],
        foreign=config["foreign_cpu_max_share"],
        lock=default_lock_path(),
    shell:
        "{params.driver} {params.script} --cell {params.cell:q} --rule {params.rule:q}"
        " {params.manifest} --env {wildcards.env} --machine {wildcards.machine}"
        " --repeat {wildcards.rep} --timeout-s {params.timeout} --memory-mb {params.memory}"
        " --threads {params.threads} --foreign-cpu-max-share {params.foreign}"
        " --lock {params.lock:q} --out {output.cell} > {log} 2>&1"


rule finish_round:
    input:
        cells=lambda wildcards: cell_files(int(wildcards.rep), wildcards.machine),
    output:
        done=touch(layout.ROUND_PATTERN),
    log:
        "logs/finish_round/{machine}/round{rep}.log",
    conda:
        "envs/driver.yaml"
    shell:
        "echo round {wildcards.rep} done > {log}"


checkpoint plan_round:
    input:
        cells=files_before_round,
    output:
        plan=layout.PLAN_PATTERN,
    log:
        "logs/plan_round/{machine}/round{rep}.log",
    conda:
        "envs/driver.yaml"
    params:
        reference_env=config["reference_env"],
        noisy_threshold=config["noisy_threshold"],
        level=config["stop"]["level"],
        q=config["fdr_q"],
        min_effect=config["min_effect"],
        alpha_equivalence=config["equivalence_alpha"],
        repeats=REPEATS,
        max_repeats=ALLOCATION["max_repeats"],
        budget_s=ALLOCATION["budget_s"],
        time_budget_s=TIME_BUDGET_S,
    script:
        "../scripts/plan_round.py"


rule plan_order:
    input:
        plan=extra_round_plan,
    output:
        order=layout.ORDER_PATTERN,
    log:
        "logs/plan_order/{machine}/order{rep}.log",
    conda:
        "envs/driver.yaml"
    params:
        plan=round_plan,
    script:
        "../scripts/write_order.py"
