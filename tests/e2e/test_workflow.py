"""The workflow end to end with real frameworks, and what it does when things go wrong.

These run Snakemake as a user does, on the quick preset or small variants of it; the venvs are
built once per checkout under .envs/ and reused.
"""
import glob
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest
from helpers import REPO, SNAKEMAKE, quick_config, snakemake, write_config

pytestmark = pytest.mark.e2e


def cell_records(workdir):
    """{"<machine>/<env>/<cell file>": record} of every cell file under workdir."""
    root = Path(workdir) / "results" / "cells"
    return {str(p.relative_to(root)): json.loads(p.read_text()) for p in root.glob("*/*/*.json")
            if not p.name.startswith(".")}


def test_quick_study_outputs(quick_run):
    work, _ = quick_run
    for name in ("results/tables/cells.csv", "results/study.xlsx", "results/report.html"):
        assert (work / name).stat().st_size > 0, name
    table = pd.read_csv(work / "results/tables/cells.csv")
    for column in ("env", "framework", "framework_version", "python", "keras", "mode", "api",
                   "input", "device", "model", "data", "status", "reason", "n_samples",
                   "median_s", "ci_low_s", "ci_high_s", "first_call_s"):
        assert column in table.columns, column
    ok = table[table.status == "ok"]
    assert len(ok) == len(table), table[table.status != "ok"][["cell_id", "reason"]]
    # every factor of the study has both its sides
    assert set(ok.env) >= {"tf1.14", "tf2.21"}
    assert set(ok.keras) >= {"keras", "tf.keras", "tf_keras", "keras3"}
    assert set(ok["mode"]) >= {"eager", "graph", "xla", "function"}
    assert set(ok.api) >= {"train_on_batch", "fit", "custom_loop"}
    assert set(ok.input) == {"numpy", "tfdata", "generator", "sequence"}
    # the inputs beyond numpy and tf.data: one train_on_batch cell each in TF 1.14 (tf.keras, v1
    # graph) and TF 2.21 (Keras 3), each ran (ok above) and timed
    python_inputs = ok[ok.input.isin(["generator", "sequence"])]
    assert set(zip(python_inputs.env, python_inputs.cell_id)) == {
        (env, "small-small.%s.train_on_batch.%s.cpu" % (keras_mode, kind))
        for env, keras_mode in (("tf1.14", "tfkeras.graph"), ("tf2.21", "keras3.eager"))
        for kind in ("generator", "sequence")}
    assert (python_inputs.median_s > 0).all() and (python_inputs.n_samples > 0).all()
    # the other seeds' systems: PyTorch's own loop, Keras 3 on JAX, XLA, seed 004's matmul
    assert set(ok.framework) == {"tensorflow", "torch", "jax"}
    assert not ok[(ok.framework == "jax") & (ok.keras == "keras3")].empty
    assert not ok[(ok.framework == "torch") & (ok.api == "custom_loop")].empty
    assert set(ok[ok.api == "matmul"]["mode"]) == {"numpy", "eager"}
    # inference, the seventh factor, and the other seeds' systems: every new system has its row
    assert set(ok.api) >= {"call", "inference_mode", "predict", "gradient"}
    assert set(ok.task) == {"train", "infer", "micro"}
    cid = set(zip(ok.env, ok.cell_id))
    for key in [("tf1.14", "small-small.tfkeras.graph.call.numpy.cpu"),  # session.run
                ("tf1.14", "cnn2d-mnist.tfkeras.graph.call.numpy.cpu"),  # tf.device('/CPU:0')
                ("tf2.21", "small-small.keras3.eager.predict.numpy.cpu"),
                ("tf2.21", "cnn2d-mnist.keras3.function.call.numpy.cpu"),
                ("torch2.13", "cnn2d-mnist.none.torchscript.call.numpy.cpu"),
                ("torch2.13", "small-small.none.eager.inference_mode.numpy.cpu"),
                ("keras3-jax", "small-small.keras3.eager.predict.numpy.cpu"),
                ("tf2.21", "lstm-tiny.keras3.eager.custom_loop.numpy.cpu"),
                ("torch2.13", "lstm-tiny.none.eager.custom_loop.numpy.cpu"),
                ("tf2.21", "mlp784-mnist784.keras3.eager.fit.numpy.cpu"),
                ("tf2.21", "xsquared-scalar.none.function.gradient.numpy.cpu")]:
        assert key in cid, key
    # inference FLOPs are the forward pass; the spike columns are filled for every ok cell
    infer = ok[ok.task == "infer"].set_index(["env", "cell_id"])
    train = ok[ok.task == "train"].set_index(["env", "cell_id"])
    assert infer.loc[("tf1.14", "small-small.tfkeras.graph.call.numpy.cpu"), "flops_per_step"] < \
        train.loc[("tf1.14", "small-small.tfkeras.graph.train_on_batch.numpy.cpu"),
                  "flops_per_step"]
    assert (ok.p95_over_median >= 1).all() and (ok.max_over_median >= ok.p99_over_median).all()
    assert (ok.spikes >= 0).all()
    # the same seeded model gives the same output whichever way it is called (record: loss_last)
    outputs = {r["cell_id"]: r["loss_last"] for r in cell_records(work).values()
               if r["env"] == "tf1.14" and r["model"] == "small" and r["mode"] == "graph"
               and r["api"] in ("call", "predict")}
    assert len(outputs) == 2 and len({round(v, 5) for v in outputs.values()}) == 1, outputs
    calls = pd.read_csv(work / "results/tables/call_vs_predict.csv")
    assert {("call", "predict"), ("inference_mode", "call")} <= set(
        zip(calls.left_api, calls.right_api))
    gve = pd.read_csv(work / "results/tables/graph_vs_eager.csv")
    assert "call" in set(gve.api)
    fit = pd.read_csv(work / "results/tables/fit_vs_train_on_batch.csv")
    assert set(fit.left_api) == {"fit"} and set(fit.right_api) == {"train_on_batch"}
    # fit over an epoch: one call of fit_epoch_steps (6) steps, its samples per step; in Keras 3
    # a one-step fit() pays fit's set-up in every step, an epoch pays it once: had the runner not
    # divided by the steps, the epoch's "step" (6 steps and the set-up) would be the slower
    epoch = ok[ok.api == "fit_epoch"]
    assert set(zip(epoch.env, epoch.input)) >= {("tf1.14", "numpy"), ("tf1.14", "tfdata"),
                                                 ("tf2.21", "numpy"), ("tf2.21", "tfdata"),
                                                 ("keras3-jax", "numpy")}
    assert (epoch.steps_per_call == 6).all() and (ok[ok.api != "fit_epoch"].steps_per_call == 1).all()
    assert (epoch.n_samples == 2).all()  # the fixed rule's 12 steps are 2 calls of 6
    by_id = ok.set_index(["env", "cell_id"]).median_s
    assert by_id[("tf2.21", "small-small.keras3.eager.fit_epoch.numpy.cpu")] < \
        by_id[("tf2.21", "small-small.keras3.eager.fit.numpy.cpu")]
    fit_epoch = pd.read_csv(work / "results/tables/fit_epoch_vs_train_on_batch.csv")
    assert set(fit_epoch.left_api) == {"fit_epoch"} and set(fit_epoch.right_api) == {
        "train_on_batch"} and len(fit_epoch) >= 5
    assert (ok.median_s > 0).all() and (ok.first_call_s > 0).all()
    # the headline's duets: TF 2.21 (tf_keras in graph; Keras 3 and tf_keras in eager) against
    # TF 1.14's tf.keras, two duets each, both sides timed in turns in live workers
    duets = pd.read_csv(work / "results/tables/duets.csv")
    assert sorted(zip(duets["mode"], duets["keras"])) == [("eager", "keras3"),
                                                          ("eager", "tf_keras"),
                                                          ("graph", "tf_keras")]
    # two duets each, a third for the rows the second look found open (results/duet_plans/)
    plan = json.loads(next((work / "results/duet_plans").glob("*.json")).read_text())
    opened = {(env, cid) for env, cid in plan["open"]}
    aa = pd.read_csv(work / "results/tables/duets_aa.csv")
    for table in (duets, aa):
        want = [3 if (e, c) in opened else 2 for e, c in zip(table["env"], table["cell_id"])]
        assert list(table.n) == want and (table.n_failed == 0).all(), table.reason.tolist()
        assert (table.df == table.n - 1).all() and (table.n_look1 == 2).all()
        assert (table.n_max == 3).all() and (table.p >= table.p_look).all()
    assert (duets.right_env == "tf1.14").all() and (duets.ratio > 0).all()
    assert duets.se_log.notna().all()
    # the A/A rows: TF 1.14 against itself in both modes; the health check's rounds
    assert sorted(aa["mode"]) == ["eager", "graph"] and set(aa["env"]) == {"tf1.14"}
    rounds = pd.read_csv(work / "results/tables/duet_rounds.csv")
    assert set(rounds["mode"]) == {"eager", "graph"} and set(rounds["round"]) >= {0, 1}
    # pairs in one process (tests/quick.yaml `pairs`): TF 1.14's fit vs train_on_batch in
    # graph mode, one worker per replicate, in tables of their own (and the A/A pair)
    pairs = pd.read_csv(work / "results/tables/pairs.csv")
    pairs_aa = pd.read_csv(work / "results/tables/pairs_aa.csv")
    assert len(pairs) == 3 and set(pairs["table"]) == {"fit_vs_train_on_batch"}
    assert set(pairs["env"]) == {"tf1.14"} and set(pairs["mode"]) == {"graph"}
    assert (pairs.left_cell_id.str.contains(".fit.")).all()
    assert (pairs.right_cell_id.str.contains(".train_on_batch.")).all()
    assert len(pairs_aa) == 1 and (pairs_aa.left_cell_id == pairs_aa.right_cell_id).all()
    for table in (pairs, pairs_aa):
        want = [3 if (e, c) in opened else 2 for e, c in zip(table["env"], table["cell_id"])]
        assert list(table.n) == want and (table.n_failed == 0).all(), table.reason.tolist()
    report = (work / "results/report.html").read_text()
    section = report[report.index('<section id="pairs"'):]
    assert "3 rows: fit faster in" in section[:section.index("</section>")]
    # other frameworks against TF 2.21 in duets (tests/quick.yaml duets.frameworks): their own
    # table, never the headline's; the paired line of the page's answer
    fw = pd.read_csv(work / "results/tables/duets_frameworks.csv")
    assert sorted(fw["env"]) == ["keras3-jax", "torch2.13"] and set(fw["right_env"]) == {"tf2.21"}
    assert set(fw["right_cell_id"]) == {"small-small.tf_keras.graph.train_on_batch.numpy.cpu"}
    assert set(fw["api"]) == {"custom_loop", "train_on_batch"} and (fw.ratio > 0).all()
    want = [3 if (e, c) in opened else 2 for e, c in zip(fw["env"], fw["cell_id"])]
    assert list(fw.n) == want and fw.se_log.notna().all(), fw.reason.tolist()
    assert not set(duets["env"]) & {"keras3-jax", "torch2.13"}
    assert 'id="t-best-duets"' in report and "Other frameworks against TensorFlow" in report
    for path in sorted((work / "results/duets").rglob("*.json")):
        duet = json.loads(path.read_text())
        assert duet["status"] == "ok", (path, duet.get("reason"), duet.get("log_tail"))
        # a pair's two cells are interleaved in one stretch: one "window" a side
        windows = 1 if duet["kind"] == "pair" else 2
        assert len(duet["left_windows_s"]) == len(duet["right_windows_s"]) == windows
        assert duet["ready"]["left"]["first_call_s"] > 0
        assert duet["provenance"]["right_env"]["framework_version"] == (
            "2.21.0" if duet["design"].get("frameworks") else "1.14.0")
    # with one process per cell there is no process-level CI (and so no verdict)
    several = ok[ok.n_repeats > 1]
    assert (several.ci_low_s <= several.median_s).all()
    assert (several.median_s <= several.ci_high_s).all()
    assert ok[ok.n_repeats == 1].ci_low_s.isna().all()
    assert (ok[ok.api != "fit_epoch"].n_samples >= 12).all()
    for name, record in cell_records(work).items():
        prov = record["provenance"]
        assert prov["machine"]["cpu_model"], name
        assert prov["env"]["spec_hash"] and prov["env"]["packages"], name
        assert record["python"].count(".") == 2, name
        assert len(record["samples_s"]) == record["summary"]["n"], name
        # threads as users get them: what Snakemake forced is removed, what ran is recorded
        assert prov["thread_env_removed"].get("OMP_NUM_THREADS") == "1", name
        assert prov["threads_pinned"] is None, name
        threads = record["threads"]
        assert threads["os_threads"] >= 1 and threads["pinned"] is None, name
        if os.cpu_count() > 1 and threads["blas"]:
            assert max(threads["blas"].values()) > 1, (name, threads)
        if record["framework"] == "tensorflow" and record["api"] != "matmul":
            assert "intra_op_threads" in threads, name
        # the machine beside the cell, and the orchestrator, over the timed window
        window = record["cpu_window"]
        assert window["foreign_cpu_share"] >= 0 and window["own_cpu_s"] >= 0, name
        # /proc counts CPU in clock ticks (1/100 s): a window of a few ticks must show the cell's
        # own work; a micro-case's 12 calls of 0.2 ms can end inside one tick and read 0
        if window["window_end_unix"] - window["window_start_unix"] > 0.1:
            assert window["own_cpu_s"] > 0, name
        assert isinstance(record["foreign_cpu_flag"], bool), name
        assert prov["orchestrator_cpu"]["window_s"] > 0, name
        # the warm-up rule: stable after two blocks of at least 3 calls (1 where a call is an
        # epoch of steps), or capped by time (a slow cell, such as the LSTM's 10 s steps in Keras
        # 3 eager, spends warmup_max_s in one block)
        medians = record["warmup_block_medians_s"]
        least = record["rule"]["min_block_calls"]
        assert least == (1 if record["api"] == "fit_epoch" else 3), name
        if record["warmup_stopped_by"] == "stable":
            assert record["warmup_calls"] >= 2 * least and len(medians) >= 2, name
            assert medians[-1] >= medians[-2] * (1 - record["rule"]["warmup_rel"]), name
        else:
            assert record["warmup_stopped_by"] == "cap", name
            assert record["warmup_s"] >= record["rule"]["warmup_max_s"], name
            assert record["warmup_calls"] >= least * len(medians) >= least, name


def test_rerun_does_nothing(quick_run):
    work, _ = quick_run
    proc = snakemake(work, REPO / "tests" / "quick.yaml", "-n", check=True)
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_new_env_file_runs_only_its_cells(quick_run, tmp_path):
    """Adding a TF version is adding a file: the new env's cells are planned, nothing else."""
    work, _ = quick_run
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "tf-new.yaml").write_text((REPO / "envs" / "tf2.21.yaml").read_text())
    config = quick_config(env_dirs=["envs", str(extra)])
    config["envs"] = config["envs"] + ["tf-new"]
    proc = snakemake(work, write_config(tmp_path / "c.yaml", config), "-n", check=True)
    planned = [line.split("/")[-2] for line in proc.stdout.splitlines()
               if "output: results/cells/" in line]
    assert planned and set(planned) == {"tf-new"}


def test_faults_are_written_down_and_the_study_completes(tmp_path):
    envs = tmp_path / "envs"
    envs.mkdir()
    (envs / "broken-yaml.yaml").write_text("dependencies: [python=3.7\n  - : :")
    (envs / "no-python.yaml").write_text(
        "dependencies:\n  - python=3.2\n  - pip\n  - pip:\n      - tensorflow==1.14.0\n")
    (envs / "no-such-pin.yaml").write_text(
        "dependencies:\n  - python=3.11\n  - pip\n  - pip:\n      - tensorflow==0.0.1\n")
    config = quick_config(
        env_dirs=["envs", str(envs)], envs=["tf1.14", "broken-yaml", "no-python", "no-such-pin"],
        allow_fault_models=True, cell_timeout_s=20, cell_memory_mb=600,
        grids=[
            {"name": "faults", "envs": ["tf1.14"],
             "pairs": [[m, "small"] for m in ("fault_segfault", "fault_abort", "fault_hang",
                                               "fault_oom", "fault_raise", "fault_xss")],
             "keras": ["tf.keras"], "modes": ["eager"], "apis": ["train_on_batch"],
             "inputs": ["numpy"]},
            {"name": "healthy", "pairs": [["small", "small"]], "keras": ["tf.keras", "none"],
             "modes": ["graph", "eager"], "apis": ["train_on_batch"], "inputs": ["numpy"]},
        ])
    proc = snakemake(tmp_path / "work", write_config(tmp_path / "c.yaml", config), "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-5000:]
    cells = {(r["env"], r["model"], r["mode"]): r for r in cell_records(tmp_path / "work").values()}
    reasons = {key: r["reason"] for key, r in cells.items()}
    assert "SIGSEGV" in reasons[("tf1.14", "fault_segfault", "eager")]
    assert "SIGABRT" in reasons[("tf1.14", "fault_abort", "eager")]
    assert "timed out after 20 s" in reasons[("tf1.14", "fault_hang", "eager")]
    assert "memory limit of 600 MB" in reasons[("tf1.14", "fault_oom", "eager")]
    assert "injected failure" in reasons[("tf1.14", "fault_raise", "eager")]
    for key in [k for k in cells if k[1].startswith("fault")]:
        assert cells[key]["status"] == "failed" and cells[key]["log_tail"] is not None, key
    assert "injected failure" in cells[("tf1.14", "fault_raise", "eager")]["log_tail"]
    assert cells[("tf1.14", "small", "graph")]["status"] == "ok"
    assert cells[("tf1.14", "small", "eager")]["status"] == "ok"
    broken = [r for r in cells.values() if r["env"] == "broken-yaml"]
    assert broken and all("broken-yaml.yaml" in r["reason"] for r in broken)
    nopy = [r for r in cells.values() if r["env"] == "no-python"]
    assert nopy and all("no Python 3.2 found" in r["reason"] for r in nopy)
    nopin = [r for r in cells.values() if r["env"] == "no-such-pin"]
    assert nopin and all("tensorflow==0.0.1" in r["reason"] + r["log_tail"] for r in nopin)
    assert all(r["status"] == "failed" for r in broken + nopy + nopin)
    table = pd.read_csv(tmp_path / "work" / "results/tables/cells.csv")
    assert len(table) == len(cells)
    html = (tmp_path / "work" / "results/report.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html
    assert "SIGSEGV" in html and "no-python" in html


def _valid_results(work):
    """Every result file that exists is whole: the rename is the commit point."""
    found = 0
    for path in glob.glob(str(Path(work) / "results" / "cells" / "*" / "*" / "*.json")):
        json.loads(Path(path).read_text())  # glob skips hidden temp files; the rest must be whole
        found += 1
    return found


def test_kill_minus_nine_mid_study_then_rerun(tmp_path):
    # The probe runs in both runs, but only a tenfold change stops this one: its 2-process probe
    # on a VM can move by half between runs (seen once), and recovery is what is tested here
    # (a moved probe stopping a study: tests/e2e/test_machine_probe.py).
    config = quick_config(envs=["tf1.14"], stop={"rule": "fixed", "iterations": 150},
                          probe={"processes": 2, "min_change": 9.0},
                          grids=[{"name": "g", "pairs": [["small", "small"]],
                                  "keras": ["tf.keras"], "modes": ["eager", "graph"],
                                  "apis": ["train_on_batch", "fit"], "inputs": ["numpy"]}])
    cfg = write_config(tmp_path / "c.yaml", config)
    work = tmp_path / "work"
    cmd = [SNAKEMAKE, "--cores", "2", "--directory", str(work), "--configfile", str(cfg)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and _valid_results(work) < 1:
        time.sleep(0.5)
    time.sleep(2)  # a cell is running now
    os.killpg(proc.pid, signal.SIGKILL)  # Snakemake, the supervisor and the cell process
    proc.wait()
    done_before = {name: r["started_utc"] for name, r in cell_records(work).items()}
    assert 1 <= len(done_before) < 4
    assert _valid_results(work) == len(done_before)
    unlocked = snakemake(work, cfg, "--unlock")
    assert unlocked.returncode == 0, unlocked.stderr[-2000:]
    snakemake(work, cfg, "--cores", "2", check=True)
    after = cell_records(work)
    assert len(after) == 4 and all(r["status"] == "ok" for r in after.values())
    for name, started in done_before.items():
        assert after[name]["started_utc"] == started, "%s ran again" % name


def test_second_study_in_same_directory_is_refused(tmp_path):
    config = quick_config(envs=["tf1.14"], allow_fault_models=True, cell_timeout_s=60,
                          grids=[{"name": "g", "pairs": [["fault_hang", "small"]],
                                  "keras": ["tf.keras"], "modes": ["eager"],
                                  "apis": ["train_on_batch"], "inputs": ["numpy"]}])
    cfg = write_config(tmp_path / "c.yaml", config)
    work = tmp_path / "work"
    cmd = [SNAKEMAKE, "--cores", "1", "--directory", str(work), "--configfile", str(cfg)]
    first = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not glob.glob(str(work / ".snakemake/locks/*")):
            time.sleep(0.3)
        second = snakemake(work, cfg, "--cores", "1")
        assert second.returncode != 0
        assert "cannot be locked" in second.stdout + second.stderr
        assert "--unlock" in second.stdout + second.stderr
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()


def test_gpu_cells_are_skipped_without_a_gpu(tmp_path):
    config = quick_config(envs=["tf1.15-gpu"], reference_env="tf1.15-gpu",
                          grids=[{"name": "g", "pairs": [["small", "small"]],
                                  "keras": ["tf.keras"], "modes": ["graph"],
                                  "apis": ["train_on_batch"], "inputs": ["numpy"],
                                  "devices": ["cpu", "gpu"]}])
    work = tmp_path / "work"
    snakemake(work, write_config(tmp_path / "c.yaml", config), "--cores", "2", check=True)
    cells = {r["device"]: r for r in cell_records(work).values()}
    assert cells["cpu"]["status"] == "ok"
    assert cells["gpu"]["status"] == "skipped"
    assert "no GPU visible" in cells["gpu"]["reason"]


def test_two_machines_in_one_report(quick_run, tmp_path):
    """Cell files copied in from another machine join the tables with machine as a factor."""
    work, _ = quick_run
    other = tmp_path / "work"
    subprocess.run(["cp", "-a", str(work), str(other)], check=True)
    mine = next((other / "results" / "cells").iterdir())
    theirs = mine.parent / "other-box-8c"
    theirs.mkdir()
    for path in mine.glob("*/*.json"):
        record = json.loads(path.read_text())
        record["machine"] = "other-box-8c"
        if "samples_s" in record:  # a slower machine
            record["samples_s"] = [2 * s for s in record["samples_s"]]
            for key in ("median_s", "ci_low_s", "ci_high_s", "mean_s", "min_s"):
                record["summary"][key] *= 2
        target = theirs / path.parent.name / path.name
        target.parent.mkdir(exist_ok=True)
        target.write_text(json.dumps(record))
    snakemake(other, REPO / "tests" / "quick.yaml", "--cores", "2", check=True)
    table = pd.read_csv(other / "results/tables/cells.csv")
    assert set(table.machine) == {mine.name, "other-box-8c"}
    assert len(table) == 2 * len(pd.read_csv(work / "results/tables/cells.csv"))
    graph = pd.read_csv(other / "results/tables/graph_vs_eager.csv")
    assert set(graph.machine) == {mine.name, "other-box-8c"}
    html = (other / "results/report.html").read_text()
    assert "other-box-8c" in html


def test_snakemake_report(quick_run):
    """Snakemake's own report: outputs marked with report(...), captions from report/*.rst."""
    work, _ = quick_run
    out = work / "results" / "snakemake-report.html"
    snakemake(work, REPO / "tests" / "quick.yaml", "--report", str(out), check=True)
    text = out.read_text(errors="replace")
    assert out.stat().st_size > 10000
    assert "cells.csv" in text and "report.html" in text
