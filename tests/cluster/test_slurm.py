"""The study on a real SLURM cluster: a single node on localhost (tests/slurm_cluster.py).

A small cut of the quick preset runs twice, through `--executor slurm --workflow-profile
profiles/slurm` and locally (`--cores 2`), into two temporary working directories. Envs build into
the repository's .envs/ (as `make quick` does), so both runs reuse venvs built before.

Checks: every cell ran as a SLURM job of its own (the job id in the cell's provenance is one that
slurmctld ran and completed, and Snakemake's SLURM log for it names the cell), and the SLURM run
leaves the same results as the local run: the same files, the same cell statuses, the same fields.

Needs `slurm-wlm` and `munge` (apt-get; .ci/run installs them) and root; skipped without the
binaries. About 3 to 4 minutes when the envs exist.
"""
import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest
import slurm_cluster
import yaml
from helpers import REPO, SNAKEMAKE, quick_config, write_config

pytestmark = pytest.mark.slurm

RUN_TIMEOUT_S = 1800  # generous: a fresh machine builds the envs in the first run


@pytest.fixture(scope="module")
def cluster():
    missing = slurm_cluster.missing_binaries()
    if missing:
        pytest.skip("SLURM/munge not installed (%s): apt-get install slurm-wlm munge"
                    % ", ".join(missing))
    c = slurm_cluster.SlurmCluster()
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def study_config(tmp_path_factory):
    """tests/quick.yaml cut down to its two TF envs and three cells: TF 1.14 tf.keras eager and
    graph, TF 2.21 Keras 3 eager (fit on numpy data, small model, small data); the same stop rule
    and limits."""
    config = quick_config(envs=["tf1.14", "tf2.21"], reference_env="tf1.14")
    config["grids"] = [{
        "name": "slurm",
        "envs": "all",
        "pairs": [["small", "small"]],
        "keras": ["tf.keras", "keras3"],
        "modes": ["eager", "graph"],
        "apis": ["fit"],
        "inputs": ["numpy"],
        "devices": "all",
    }]
    return write_config(tmp_path_factory.mktemp("config") / "slurm_quick.yaml", config)


def snakemake(args, workdir, env, log):
    """Run snakemake from the repository; output to `log`. Returns (exit status, seconds)."""
    env = dict(env, PATH=str(Path(SNAKEMAKE).parent) + os.pathsep + env.get("PATH", ""))
    started = time.monotonic()
    with open(log, "w") as handle:
        proc = subprocess.run([SNAKEMAKE, "--directory", str(workdir)] + args, cwd=REPO,
                              env=env, stdout=handle, stderr=subprocess.STDOUT,
                              timeout=RUN_TIMEOUT_S)
    return proc.returncode, time.monotonic() - started


def tail(path, lines=120):
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no %s)" % path


def slurm_job_logs(workdir, lines=40):
    out = []
    for path in sorted((workdir / ".snakemake" / "slurm_logs").rglob("*.log")):
        out.append("----- %s\n%s" % (path, tail(path, lines)))
    return "\n".join(out) or "(no SLURM job logs)"


def results(workdir):
    """Every file under results/, relative to it; the probe's folder is named by the time it ran
    (machines/<key>/probes/<UTC stamp>/), so that name reads <stamp>. The fork helpers' logs
    (scratch/<machine>/helpers/<helper>.log) are left out: a helper lives within one Snakemake
    process, and each SLURM job is one, so the SLURM run starts a helper per job where the local
    run starts one per env; their count and names say how the run was spread, not what it found."""
    root = workdir / "results"
    return sorted(re.sub(r"/probes/\d{8}T\d{6}Z/", "/probes/<stamp>/", str(p.relative_to(root)))
                  for p in root.rglob("*")
                  if p.is_file() and not re.match(r"scratch/[^/]+/helpers/", str(p.relative_to(root))))


def weight(cell, modes_weight):
    """Duets per replicate round of a row: duets.graph_vs_eager for the reference's graph cell
    against its eager cell (<graph id>~<eager id>), 1 for every other row."""
    sides = cell.split("~")
    return modes_weight if len(sides) == 2 and sides[0].replace(".graph.", ".eager.") == \
        sides[1] and sides[0] != sides[1] else 1


def second_look_files(files, first_look, modes_weight=1):
    """The duet files of replicates past the first look (duets/<machine>/<env>/<cell>.r<k>.json,
    k >= duets.replicates times the row's weight)."""
    out = []
    for f in files:
        if not f.startswith("duets/"):
            continue
        cell = re.sub(r"\.r\d+\.json$", "", f.rsplit("/", 1)[1])
        if int(re.search(r"\.r(\d+)\.json$", f).group(1)) >= first_look * weight(
                cell, modes_weight):
            out.append(f)
    return sorted(out)


def planned_second_look(workdir, first_look, most, modes_weight=1):
    """The second-look duet files a run's plans ask for: replicates first_look .. most - 1 (times
    the row's weight) of each row its plan (results/duet_plans/<machine>.json) left open."""
    out = []
    for plan in (workdir / "results" / "duet_plans").glob("*.json"):
        for env, cell in json.loads(plan.read_text())["open"]:
            w = weight(cell, modes_weight)
            out += ["duets/%s/%s/%s.r%d.json" % (plan.stem, env, cell, k)
                    for k in range(first_look * w, most * w)]
    return sorted(out)


def cell_files(workdir):
    root = workdir / "results" / "cells"
    return {str(p.relative_to(root)): json.loads(p.read_text())
            for p in sorted(root.rglob("*.json"))}


def keys(doc, depth=2):
    """The structure of a JSON document: its keys down to `depth`, as paths."""
    out = set()
    if isinstance(doc, dict) and depth:
        for key, value in doc.items():
            out.add(key)
            out.update("%s.%s" % (key, sub) for sub in keys(value, depth - 1))
    return out


def test_quick_preset_on_slurm_matches_local_run(cluster, study_config, tmp_path):
    env = cluster.env()  # no SLURM_* of an outer job; SLURM_CONF is the default path
    local_dir, slurm_dir = tmp_path / "local", tmp_path / "slurm"
    common = ["--configfile", str(study_config)]

    # The local run first: on a fresh machine it builds the envs, and the SLURM run reuses them.
    rc, local_s = snakemake(["--cores", "2"] + common, local_dir, env, tmp_path / "local.log")
    assert rc == 0, "local run failed:\n" + tail(tmp_path / "local.log")

    slurm_args = [
        "--executor", "slurm", "--workflow-profile", str(REPO / "profiles" / "slurm"),
        # no accounting database here: job states come from squeue (MinJobAge=600 s)
        "--slurm-status-command", "squeue",
        "--slurm-init-seconds-before-status-checks", "2",
        "--slurm-keep-successful-logs",
        "--jobs", "20",
        "--latency-wait", "10",
    ] + common
    rc, slurm_s = snakemake(slurm_args, slurm_dir, env, tmp_path / "slurm.log")
    diagnostics = "\n".join([
        "===== snakemake (SLURM run) output", tail(tmp_path / "slurm.log"),
        "===== SLURM job logs", slurm_job_logs(slurm_dir),
        "===== squeue", repr(cluster.jobs()),
        "===== daemons", cluster.logs(40),
    ])
    print("local run %.0f s, SLURM run %.0f s" % (local_s, slurm_s))
    assert rc == 0, "SLURM run failed\n" + diagnostics

    # Same results: the same files (cells, env manifests, round marker, tables, workbook, report),
    # but the second look's duets: which rows get them depends on what the first look measured,
    # so each run must hold exactly the ones its own plan (duet_plans/<machine>.json) asks for.
    duets = yaml.safe_load(study_config.read_text())["duets"]
    first_look, most = duets["replicates"], duets.get("max_replicates") or duets["replicates"]
    modes_weight = duets.get("graph_vs_eager", yaml.safe_load(
        (REPO / "config.yaml").read_text())["duets"]["graph_vs_eager"])  # the default's
    local_files, slurm_files = results(local_dir), results(slurm_dir)
    for workdir, files in ((local_dir, local_files), (slurm_dir, slurm_files)):
        later = second_look_files(files, first_look, modes_weight)
        assert later == planned_second_look(workdir, first_look, most, modes_weight), (
            workdir, later)
        files[:] = [f for f in files if f not in later]
    only = {"local run only": sorted(set(local_files) - set(slurm_files)),
            "SLURM run only": sorted(set(slurm_files) - set(local_files))}
    assert slurm_files == local_files, "%r\n%s" % (only, diagnostics)
    for target in ("tables/cells.csv", "study.xlsx", "report.html"):
        assert target in slurm_files

    # The probe ran as the cells do (a whole node, their memory): its cells are ok, and it recorded
    # the machine's reference.
    probe = json.loads(next((slurm_dir / "results" / "machines").glob("*/probe.latest.json"))
                       .read_text())
    assert probe["verdict"] != "stop" and not probe["failed"], probe
    assert any(f.endswith("/probe.json") for f in slurm_files), slurm_files

    local_cells, slurm_cells = cell_files(local_dir), cell_files(slurm_dir)
    assert len(slurm_cells) >= 3 and set(slurm_cells) == set(local_cells)
    for name, cell in slurm_cells.items():
        other = local_cells[name]
        assert cell["status"] == other["status"], (name, cell.get("reason"), other.get("reason"))
        assert keys(cell) == keys(other), name

    # Each cell ran as a SLURM job of its own, one that slurmctld ran to completion for this
    # Snakemake run (the plugin names every job after the run's id), on the whole node ...
    jobs = cluster.jobs()
    run_id = re.search(r"SLURM run ID: (\S+)", (tmp_path / "slurm.log").read_text()).group(1)
    job_ids = {}
    for name, cell in slurm_cells.items():
        job_id = cell["provenance"].get("slurm_job_id")
        assert job_id and re.fullmatch(r"\d+", str(job_id)), (name, job_id)
        job_ids[name] = str(job_id)
        assert local_cells[name]["provenance"].get("slurm_job_id") is None, name
    assert len(set(job_ids.values())) == len(job_ids), "two cells in one SLURM job: %s" % job_ids
    for name, job_id in job_ids.items():
        state, job_name, cpus = jobs.get(job_id, ("not in squeue", "", 0))
        assert state == "COMPLETED", (name, job_id, state, diagnostics)
        assert job_name == run_id, (name, job_id, job_name, run_id)
        assert cpus == cluster.cpus, (name, job_id, cpus, "not the whole node (--exclusive)")

    # ... with Snakemake's log of that job under .snakemake/slurm_logs/rule_run_cell/, which
    # shows the job step (srun) that ran the cell asking for every CPU of the node.
    logs = {p.stem: p for p in (slurm_dir / ".snakemake" / "slurm_logs" / "rule_run_cell")
            .rglob("*.log")}
    for name, job_id in job_ids.items():
        assert job_id in logs, (name, job_id, sorted(logs))
        text = logs[job_id].read_text(errors="replace")
        cell_id = name.split("/")[-1][: -len(".r0.json")]
        assert cell_id in text, (name, logs[job_id])
        assert "cpus_per_task=%d" % cluster.cpus in text, (name, logs[job_id])

    # One SLURM job per Snakemake job, all of them completed.
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+)",
                           (tmp_path / "slurm.log").read_text())
    assert len(submitted) == len(set(submitted)) >= len(slurm_cells)
    assert all(jobs.get(j, ("",))[0] == "COMPLETED" for j in submitted), jobs
    assert all(jobs[j][1] == run_id for j in submitted), jobs
