# The machine probe: a short calibration run before any cell of the study (driver/study/probe.py).
# It stops the study when the machine is not the one that wrote the cells under its key.


rule probe_machine:
    input:
        unpack(probe_inputs),
    output:
        probe=layout.PROBE_PATTERN,
    log:
        "logs/probe/{machine}.log",
    conda:
        probe_env_file
    resources:
        timing_slot=1,
    params:
        driver=DRIVER_PYTHON,
        script=str(REPO / "scripts" / "probe_machine.py"),
        stamp=probe_stamp,
        cells=lambda wildcards: probe_cells(),
        env=PROBE_ENV,
        manifest=lambda wildcards, input: (
            "--conda" if USE_CONDA else "--manifest %s" % input.manifest
        ),
        processes=PROBE["processes"],
        min_change=PROBE["min_change"],
        force=config["force_machine"],
        timeout=config["cell_timeout_s"],
        memory=config["cell_memory_mb"],
        threads=config["threads"],
        foreign=config["foreign_cpu_max_share"],
        lock=default_lock_path(),
    shell:
        "{params.driver} {params.script} --machine {wildcards.machine} --env {params.env}"
        " {params.manifest} --cells {params.cells:q} --processes {params.processes}"
        " --min-change {params.min_change} --force {params.force}"
        " --timeout-s {params.timeout} --memory-mb {params.memory} --threads {params.threads}"
        " --foreign-cpu-max-share {params.foreign} --lock {params.lock:q}"
        " --study-stamp {params.stamp} --out {output.probe} > {log}"
