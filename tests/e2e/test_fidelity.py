"""A cell measures the CPU that other processes take while it times: a planted CPU hog beside a
real TensorFlow cell raises the cell's flag. Runs the supervisor the way the run_cell rule does."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

pytestmark = pytest.mark.e2e

CELL = {"model": "small", "data": "small", "keras": "keras3", "mode": "eager",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}


def run_cell(manifest, out, foreign_max=0.05):
    rule = {"kind": "adaptive", "iterations": 200, "target_rel": 1e-9, "min_samples": 30,
            "max_samples": 100000, "budget_s": 2.0, "level": 0.95, "warmup_rel": 0.02,
            "warmup_block_s": 0.2, "warmup_max_s": 5, "min_samples_max_s": 30}
    cmd = [sys.executable, str(REPO / "scripts" / "supervise_cell.py"), "--cell", json.dumps(CELL),
           "--rule", json.dumps(rule), "--manifest", str(manifest), "--env", "tf2.21",
           "--machine", "test", "--foreign-cpu-max-share", str(foreign_max), "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    return json.loads(Path(out).read_text())


def test_a_cpu_hog_beside_a_cell_raises_its_flag(quick_run, tmp_path):
    work, _ = quick_run
    manifest = next((work / "results" / "envs").glob("*/tf2.21.json"))
    quiet = run_cell(manifest, tmp_path / "quiet.json")
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = run_cell(manifest, tmp_path / "busy.json")
    finally:
        hog.kill()
        hog.wait()
    assert quiet["status"] == busy["status"] == "ok", (quiet.get("reason"), busy.get("reason"))
    # the hog spins one core for the whole timed window: close to one core of foreign CPU
    assert busy["cpu_window"]["foreign_cpu_share"] > 0.5
    assert busy["foreign_cpu_flag"] is True
    assert quiet["cpu_window"]["foreign_cpu_share"] < busy["cpu_window"]["foreign_cpu_share"] / 3
    # and the cell's own process group is not counted as foreign
    assert busy["cpu_window"]["own_cpu_s"] > 0.5


def test_threads_pinned_on_purpose_are_recorded(quick_run, tmp_path):
    work, _ = quick_run
    manifest = next((work / "results" / "envs").glob("*/tf2.21.json"))
    rule = {"kind": "fixed", "iterations": 5, "target_rel": 0.01, "min_samples": 3,
            "max_samples": 10, "budget_s": 1.0, "level": 0.95, "warmup_rel": 0.02,
            "warmup_block_s": 0.05, "warmup_max_s": 1, "min_samples_max_s": 5}
    out = tmp_path / "pinned.json"
    cmd = [sys.executable, str(REPO / "scripts" / "supervise_cell.py"), "--cell",
           json.dumps(dict(CELL, keras="tf_keras")), "--rule", json.dumps(rule), "--manifest",
           str(manifest), "--env", "tf2.21", "--machine", "test", "--threads", "1",
           "--foreign-cpu-max-share", "0.05", "--out", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, timeout=600)
    record = json.loads(out.read_text())
    assert record["status"] == "ok", record.get("reason")
    assert record["provenance"]["threads_pinned"] == 1 and record["threads"]["pinned"] == 1
    assert record["threads"]["intra_op_threads"] == 1
    assert set(record["threads"]["blas"].values()) <= {1}
