"""A real TensorFlow cell leaves nothing in the temp folder of the process that starts it: TF's
autograph writes a `__autograph_generated_file*.py` per converted function through `tempfile`
(run_cell.py alone leaves them, which this test shows first, so it can fail), and the supervisor
points the worker's TMPDIR at results/scratch/..., removed when the worker ends."""
import json
import os
import subprocess
import sys

import pytest
from helpers import REPO

pytestmark = pytest.mark.e2e

# tf_keras's train_on_batch in eager mode: Keras 2 converts its train function with autograph
CELL = {"model": "small", "data": "small", "keras": "tf_keras", "mode": "eager",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}
RULE = {"kind": "fixed", "iterations": 5, "target_rel": 0.01, "min_samples": 3, "max_samples": 10,
        "budget_s": 0.5, "level": 0.95, "warmup_rel": 0.02, "warmup_block_s": 0.05,
        "warmup_max_s": 1, "min_samples_max_s": 5}


def test_a_tf_cell_leaves_no_autograph_files_behind(quick_run, tmp_path):
    work, _ = quick_run
    manifest_path = next((work / "results" / "envs").glob("*/tf2.21.json"))
    python = json.loads(manifest_path.read_text())["python_executable"]
    alone, supervised = tmp_path / "alone", tmp_path / "supervised"
    alone.mkdir()
    supervised.mkdir()
    subprocess.run([python, str(REPO / "scripts" / "run_cell.py"), "--cell", json.dumps(CELL),
                    "--rule", json.dumps(RULE), "--framework", "tensorflow",
                    "--foreign-cpu-max-share", "1", "--out", str(tmp_path / "alone.json")],
                   env=dict(os.environ, TMPDIR=str(alone)), check=True, capture_output=True,
                   timeout=600)
    assert any(p.name.startswith("__autograph_generated_file") for p in alone.iterdir()), (
        "the cell no longer writes autograph files: pick a cell that does")
    study = tmp_path / "study"
    study.mkdir()
    out = study / "results" / "cells" / "test" / "tf2.21" / "c.r0.json"
    subprocess.run([sys.executable, str(REPO / "scripts" / "supervise_cell.py"), "--cell",
                    json.dumps(CELL), "--rule", json.dumps(RULE), "--manifest", str(manifest_path),
                    "--env", "tf2.21", "--machine", "test", "--foreign-cpu-max-share", "1",
                    "--lock", str(tmp_path / "lock"), "--out", str(out)],
                   env=dict(os.environ, TMPDIR=str(supervised)), cwd=study,
                   check=True, capture_output=True, timeout=600)
    record = json.loads(out.read_text())
    assert record["status"] == "ok", (record.get("reason"), record.get("log_tail"))
    assert not list(supervised.iterdir()), sorted(p.name for p in supervised.iterdir())
    assert not (study / "results" / "scratch").exists()


def test_a_forked_tf_cell_is_a_child_of_its_envs_helper_and_leaves_no_autograph_files(
        quick_run, tmp_path):
    """config cell_workers: fork: the supervisor starts the env's fork helper (the duets' kind),
    the cell runs in a child of it, says so (process_origin, provenance.worker), and its
    autograph files go to its own scratch folder as a fresh cell's do; a second cell of the env
    is forked from the same helper, which had forked one child before."""
    from driver.study import forkserver

    work, _ = quick_run
    manifest_path = next((work / "results" / "envs").glob("*/tf2.21.json"))
    study = tmp_path / "study"
    study.mkdir()
    supervised = tmp_path / "supervised"
    supervised.mkdir()
    records = []
    try:
        for rep in (0, 1):
            out = study / "results" / "cells" / "test" / "tf2.21" / ("c.r%d.json" % rep)
            subprocess.run([sys.executable, str(REPO / "scripts" / "supervise_cell.py"),
                            "--cell", json.dumps(CELL), "--rule", json.dumps(RULE),
                            "--manifest", str(manifest_path), "--env", "tf2.21", "--machine",
                            "test", "--repeat", str(rep), "--foreign-cpu-max-share", "1",
                            "--workers", "fork", "--lock", str(tmp_path / "lock"),
                            "--out", str(out)],
                           env=dict(os.environ, TMPDIR=str(supervised)), cwd=study,
                           check=True, capture_output=True, timeout=600)
            records.append(json.loads(out.read_text()))
    finally:
        helpers = study / "results" / "scratch" / "test" / "helpers"
        stopped = forkserver.stop_helpers(str(helpers))
    for rec in records:
        assert rec["status"] == "ok", (rec.get("reason"), rec.get("log_tail"))
        assert rec["process_origin"] == "fork", rec["provenance"]["worker"]
        assert rec["provenance"]["worker"]["helper_import_s"] > 0
    workers = [rec["provenance"]["worker"] for rec in records]
    assert workers[0]["helper_pid"] == workers[1]["helper_pid"] and stopped == [
        workers[0]["helper_pid"]]
    assert [w["helper_children_before"] for w in workers] == [0, 1]
    assert not list(supervised.iterdir()), sorted(p.name for p in supervised.iterdir())
    assert not (study / "results" / "scratch" / "test" / "cells").exists()
