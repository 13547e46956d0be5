# One job per cell and repeat: a new process of the env's Python (forked from its helper, or
# fresh: config cell_workers), under the machine's timing lock.


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
        memory_mb=config["cell_memory_mb"],
        threads=config["threads"],
        foreign=config["foreign_cpu_max_share"],
        workers=config["cell_workers"],
        lock=default_lock_path(),
    shell:
        "{params.driver} {params.script} --cell {params.cell:q} --rule {params.rule:q}"
        " {params.manifest} --env {wildcards.env} --machine {wildcards.machine}"
        " --repeat {wildcards.rep} --timeout-s {params.timeout} --memory-mb {params.memory_mb}"
        " --threads {params.threads} --foreign-cpu-max-share {params.foreign}"
        " --workers {params.workers} --lock {params.lock:q} --out {output.cell} > {log} 2>&1"


# One duet of the headline: a worker of each side, taking turns window by window.
rule run_duet:
    input:
        unpack(duet_inputs),
    output:
        duet=layout.DUET_PATTERN,
    log:
        "logs/run_duet/{machine}/{env}/{cell}.r{rep}.log",
    # replicate r of every duet before replicate r + 1 of any; all before the first cell
    priority: duet_priority
    conda:
        # runs on the workflow's own Python; each worker on its env's (venv mode only)
        "envs/driver.yaml"
    resources:
        timing_slot=1,
    params:
        driver=DRIVER_PYTHON,
        script=str(REPO / "scripts" / "supervise_duet.py"),
        duet=duet_params,
        windows=DUETS["windows"],
        window_s=DUETS["window_s"],
        timeout=config["cell_timeout_s"],
        threads=config["threads"],
        foreign=config["foreign_cpu_max_share"],
        memory_mb=config["cell_memory_mb"],
        lock=default_lock_path(),
    shell:
        "{params.driver} {params.script} --cell {params.duet[cell]:q}"
        " --reference-cell {params.duet[reference_cell]:q} --rule {params.duet[rule]:q}"
        " --manifest {input.manifest} --reference-manifest {input.reference_manifest}"
        " --env {wildcards.env} --reference-env {params.duet[reference_env]}"
        " --machine {wildcards.machine} --replicate {wildcards.rep} --design {params.duet[design]:q}"
        " --windows {params.windows} --window-s {params.window_s}"
        " --timeout-s {params.timeout} --threads {params.threads}"
        " --foreign-cpu-max-share {params.foreign} --memory-mb {params.memory_mb}"
        " --lock {params.lock:q} --out {output.duet} > {log} 2>&1"


# The second look at the duets: which rows are still open after the first `replicates` duets.
# With a time budget it waits for round 0 of the cells too, so that it plans with what the first
# looks of everything actually cost on this machine (driver/tables/second_look.py).
checkpoint plan_duets:
    input:
        duets=lambda wildcards: PLAN.duet_files(wildcards.machine),
        cells=lambda wildcards: second_look_cells(wildcards.machine),
    output:
        plan=layout.DUET_PLAN_PATTERN,
    log:
        "logs/plan_duets/{machine}.log",
    conda:
        "envs/driver.yaml"
    params:
        q=config["fdr_q"],
        level=config["stop"]["level"],
        min_effect=config["min_effect"],
        alpha_equivalence=config["equivalence_alpha"],
        # one budget for the whole study: the first rounds' cells are counted (done) or reserved
        time_budget_s=TIME_BUDGET_S,
        first_round_cells=lambda wildcards: first_round_cell_files(wildcards.machine),
        sampling_s=config["stop"]["budget_s"],
    script:
        "../scripts/plan_duets.py"


# The paired rows' first look is done: with a time budget, round 0's cells run after it.
rule first_look:
    input:
        duets=lambda wildcards: PLAN.duet_files(wildcards.machine),
    output:
        done=touch(layout.FIRST_LOOK_PATTERN),
    log:
        "logs/first_look/{machine}.log",
    conda:
        "envs/driver.yaml"
    shell:
        "echo first look done > {log}"


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
        # the duets' time counts against time_budget_min (driver/study/budget.py)
        duets=lambda wildcards: duet_files(wildcards.machine),
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
        # a round below `repeats` (time budget only): all of these, or none
        every_slot=lambda wildcards: PLAN.slot_keys(
            PLAN.first_round_slots(int(wildcards.rep))
        ),
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
