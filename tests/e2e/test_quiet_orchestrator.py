"""Snakemake's own CPU stays flat after a checkpoint (issue 53 item 4; driver/study/scheduling.py).

A workflow in the study's pattern: timing jobs that each take the one timing slot, a checkpoint
that reads them, and as many jobs again that an input function finds through the checkpoint, run
under the workflow's profile (greedy scheduler, the timing slot). Snakemake's scheduler starts one
re-evaluation timer per pass and each timer's pass starts another, so without
`quiet_reevaluation` the loop wakes more often with every job that ends. The test runs the pattern
both ways at once and samples each Snakemake process's own CPU (utime + stime of /proc/<pid>/stat,
which other processes' load does not add to) while the post-checkpoint jobs run.

The run uses Snakemake's default job rate timespan, 1 s, not the profile's 10 s: the chains then
wake the loop ten times as often, so a test-sized run (seconds, not the study's hours) shows the
growth that the study's duets met. docs/runs/2026-11-28-amd-epyc-2c-quiet-orchestrator.md has the
same measurement under the profile's own timespan.
"""
import os
import subprocess
import time
from pathlib import Path

import pytest
from helpers import REPO, SNAKEMAKE

pytestmark = pytest.mark.e2e

JOBS = 100  # before the checkpoint, and as many after it
SNAKEFILE = """\
import json
import sys

sys.path.insert(0, {scripts!r})
from driver.study import scheduling

if config["quiet"]:
    scheduling.quiet_reevaluation()


rule all:
    input:
        "done.txt",


rule pre:
    output:
        "pre/{{i}}.txt",
    resources:
        timing_slot=1,
    shell:
        "sleep 0.2; echo {{wildcards.i}} > {{output}}"


checkpoint plan:
    input:
        expand("pre/{{i}}.txt", i=range({jobs})),
    output:
        "plan.json",
    run:
        json.dump(list(range({jobs})), open(output[0], "w"))


rule post:
    input:
        "plan.json",
    output:
        "post/{{i}}.txt",
    resources:
        timing_slot=1,
    shell:
        "sleep 0.2; echo {{wildcards.i}} > {{output}}"


def post_inputs(wildcards):
    with open(checkpoints.plan.get().output[0]) as handle:
        return expand("post/{{i}}.txt", i=json.load(handle))


rule finish:
    input:
        post_inputs,
    output:
        "done.txt",
    shell:
        "touch {{output}}"
"""


def own_cpu_s(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Run:
    def __init__(self, workdir, quiet):
        workdir.mkdir()
        (workdir / "Snakefile").write_text(SNAKEFILE.format(scripts=str(REPO / "scripts"),
                                                            jobs=JOBS))
        self.workdir, self.window = workdir, {}
        self.proc = subprocess.Popen(
            [SNAKEMAKE, "--workflow-profile", str(REPO / "profiles" / "default"),
             "--max-jobs-per-timespan", "10000/1s", "--quiet", "--config", f"quiet={quiet}"],
            cwd=workdir, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

    def sample(self):
        """Mark the post-checkpoint window's ends: its first and its last job's output."""
        post = self.workdir / "post"
        done = len(list(post.iterdir())) if post.is_dir() else 0
        for mark, reached in (("first", done >= 1), ("last", done >= JOBS)):
            if reached and mark not in self.window:
                self.window[mark] = (time.monotonic(), own_cpu_s(self.proc.pid))

    def cores(self):
        (t0, c0), (t1, c1) = self.window["first"], self.window["last"]
        return (c1 - c0) / (t1 - t0)


def test_snakemake_stays_quiet_after_a_checkpoint(tmp_path):
    runs = {quiet: Run(tmp_path / f"quiet-{quiet}", quiet) for quiet in (False, True)}
    deadline = time.monotonic() + 240
    while any(len(r.window) < 2 for r in runs.values()) and time.monotonic() < deadline:
        for r in runs.values():
            if r.proc.poll() is None:
                r.sample()
        time.sleep(0.1)
    for r in runs.values():
        _, err = r.proc.communicate(timeout=60)
        assert r.proc.returncode == 0, err[-4000:]
    old, new = runs[False].cores(), runs[True].cores()
    print(f"Snakemake's own CPU after the checkpoint: {old:.3f} cores as it was, {new:.3f} quiet")
    assert old > 0.05 > new, (old, new)


def test_the_workflow_keeps_one_timer():
    assert "\nscheduling.quiet_reevaluation()\n" in (REPO / "rules" / "common.smk").read_text()
