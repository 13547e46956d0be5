# Realise each env file: a venv keyed by the file's hash (default), or conda with --sdm conda.


rule build_env:
    input:
        spec=env_file,
    output:
        manifest=layout.MANIFEST_PATTERN,
    log:
        "logs/build_env/{machine}/{env}.log",
    conda:
        # the builder runs on the workflow's own Python; the env it builds is the spec itself
        "envs/driver.yaml"
    params:
        driver=DRIVER_PYTHON,
        script=str(REPO / "scripts" / "build_env.py"),
        env_root=lambda wildcards: str(REPO / config["env_root"]),
        installer=config["installer"],
        interpreters=json.dumps(config["interpreters"]),
        sources=json.dumps(package_sources(config["package_sources"])),
        lock=default_lock_path(),
    shell:
        "{params.driver} {params.script} --spec {input.spec} --env-root {params.env_root:q}"
        " --installer {params.installer} --interpreters {params.interpreters:q}"
        " --package-sources {params.sources:q}"
        " --lock {params.lock:q} --out {output.manifest} > {log} 2>&1"
