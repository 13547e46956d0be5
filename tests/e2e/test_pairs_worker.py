"""Pairs in one process with a real framework, run as the workflow runs them: the planner
(driver/study/duetplan.py plan_pairs) plans the pair, supervise_duet.py (rule run_duet) starts
the real worker (run_cell.py --serve in the TF 2.21 env's Python) and writes the pair's file,
and the pairs table (driver/tables/duets.py) gives the row its comparison table's name. One
model(x) vs predict pair (both inference steps) and one fit over an epoch vs train_on_batch pair
(a call of several steps against a call of one: the row's ratio is per step). Uses the TF 2.21
venv the study builds (.envs/tf2.21-*); skipped where it is not built."""
import json
import subprocess
import sys

import pytest
from helpers import REPO

from driver.study import duetplan
from driver.tables import duets as duet_tables

pytestmark = pytest.mark.e2e

ENV = sorted(p for p in (REPO / ".envs").glob("tf2.21-*") if (p / "bin" / "python").exists())
STEPS = 10  # fit_epoch's steps per call here (config fit_epoch_steps: 50 in the default study)
RULE = {"kind": "fixed", "iterations": 20, "target_rel": 0.01, "min_samples": 3,
        "max_samples": 20, "budget_s": 0.5, "level": 0.95, "warmup_rel": 0.02,
        "warmup_block_s": 0.05, "warmup_max_s": 1, "min_samples_max_s": 5}
BASE = {"model": "small", "data": "small", "keras": "keras3", "mode": "eager",
        "input": "numpy", "device": "cpu"}


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    if not ENV:
        pytest.skip("the TF 2.21 env is not built here (.envs/tf2.21-*)")
    path = tmp_path_factory.mktemp("envs") / "tf2.21.json"
    path.write_text(json.dumps({"name": "tf2.21", "status": "ok", "framework": "tensorflow",
                                "framework_version": "2.21.0", "env_hash": ENV[-1].name,
                                "python_executable": str(ENV[-1] / "bin" / "python"),
                                "variables": {}}))
    return path


def run_pair(pair, manifest, work, replicate=0):
    """One pair's file, as rule run_duet writes it (its design as plan.py's duet_params)."""
    rule = dict(RULE, steps_per_call=STEPS) if pair.cell["api"] == "fit_epoch" else RULE
    design = {"replicates": 2, "max_replicates": 2, "together": True, "table": pair.table,
              "mix_block": 4}
    out = work / "results" / "duets" / "test" / pair.env / f"{pair.cell_id}.r{replicate}.json"
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "supervise_duet.py"),
         "--cell", json.dumps(pair.cell), "--reference-cell", json.dumps(pair.reference_cell),
         "--rule", json.dumps(rule), "--manifest", str(manifest),
         "--reference-manifest", str(manifest), "--env", pair.env,
         "--reference-env", pair.reference_env, "--machine", "test",
         "--replicate", str(replicate), "--design", json.dumps(design), "--windows", "2",
         "--window-s", "0.4", "--timeout-s", "120", "--foreign-cpu-max-share", "1",
         "--lock", str(work / "lock"), "--out", str(out)],
        cwd=work, capture_output=True, text=True, timeout=150)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    rec = json.loads(out.read_text())
    assert rec["status"] == "ok", (rec.get("reason"), rec.get("log_tail"))
    return rec


def test_a_call_vs_predict_and_a_fit_epoch_pair_run_in_one_real_worker(manifest, tmp_path):
    cells = [("tf2.21", dict(BASE, api=a))
             for a in ("call", "predict", "fit_epoch", "train_on_batch")]
    planned = duetplan.plan_pairs(
        cells, {"tables": ["call_vs_predict", "fit_epoch_vs_train_on_batch"]},
        {"tf2.21": {"framework": "tensorflow", "framework_version": "2.21.0"}})
    assert sorted(d.table for d in planned) == ["call_vs_predict", "fit_epoch_vs_train_on_batch"]
    records = [run_pair(d, manifest, tmp_path) for d in planned]
    by_table = {r["design"]["table"]: r for r in records}
    fit = by_table["fit_epoch_vs_train_on_batch"]
    assert fit["kind"] == "pair" and fit["cell"]["api"] == "fit_epoch"
    # each side per step: a fit over an epoch of STEPS steps is not STEPS times a step of
    # train_on_batch (it would be without the division), nor a tenth of it
    assert 0.2 < fit["left_median_s"] / fit["right_median_s"] < 5
    # both sides sampled: the long calls in blocks of one, the short ones STEPS to a block
    assert fit["left_samples"] >= 2 and fit["right_samples"] >= STEPS * fit["left_samples"] / 2
    call = by_table["call_vs_predict"]
    assert (call["cell"]["api"], call["reference_cell"]["api"]) == ("call", "predict")
    table = duet_tables.duets_table(records, kind="pairs")
    assert sorted(table["table"]) == ["call_vs_predict", "fit_epoch_vs_train_on_batch"]
    assert set(table["cell_id"]) == {d.cell_id for d in planned}
    assert (table["n"] == 1).all() and (table["ratio"] > 0).all()
