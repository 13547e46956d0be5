"""Synthetic cell files shaped like supervise_cell.py's (same keys, same layout on disk), and the
real aggregation run on them; shared by the unit tests of the study, tables and report layers.

Each cell's median is known exactly: 21 samples spread symmetrically by +-1 % around it.
"""

import json
import math
from pathlib import Path

import numpy as np

from driver.tables import aggregate as tab
from driver.tables import registry
from tfspeed import cells as tfcells
from tfspeed import stats

SCRIPT = Path(tab.__file__).resolve().parents[2] / "tabulate_cells.py"
MACHINE = "xeon-2c"
VERSIONS = {"tf1.14": "1.14.0", "tf1.15": "1.15.5", "tf2.0": "2.0.0", "tf2.3": "2.3.4",
            "tf2.15": "2.15.1", "tf2.21": "2.21.0", "torch2.13": "2.13.0"}
FRAMEWORKS = {"torch2.13": "torch"}
BASE = {"model": "small", "data": "small", "keras": "tf.keras", "mode": "eager",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}


def samples_around(median, n=21):
    """n (odd) samples whose median is exactly `median`, spread +-1 %."""
    half = n // 2
    return [median * (1.0 + 0.001 * (i - half)) for i in range(n)]


def write_cell(root, env, status="ok", median=0.02, repeat=0, machine=MACHINE, samples=None,
               reason=None, **axes):
    """Write one cell file where supervise_cell.py would, with the keys it writes."""
    cell = dict(BASE, **axes)
    cid = tfcells.cell_id(cell)
    version = VERSIONS.get(env, "2.21.0")
    doc = {
        "schema_version": 1, "cell_id": cid, "env": env, "machine": machine, "repeat": repeat,
        "framework": FRAMEWORKS.get(env, "tensorflow"), "framework_version": version,
        "started_utc": "2026-11-22T10:%02d:00+00:00" % repeat, "flops_per_step": 1033777152,
        **cell,
        "provenance": {
            "machine": {"cpu_model": "Intel(R) Xeon(R) Processor", "cpu_count": 2, "gpus": None},
            "env": {"framework": "tensorflow", "framework_version": version, "status": "ok",
                    "spec_hash": "0123456789abcdef"},
            "slurm_job_id": None, "limits": {"cell_timeout_s": 900, "cell_memory_mb": 16000},
            "load_before": [0.5, 0.4, 0.3], "load_after": [1.0, 0.6, 0.4], "peak_rss_mb": 600.0,
            "cell_wall_s": 9.5,
        },
        "status": status,
    }
    if status == "ok":
        samples = samples_around(median) if samples is None else samples
        doc.update({
            "reason": "", "python": "3.11.9", "python_executable": "/envs/x/bin/python",
            "numpy_version": "1.26.4", "first_call_s": 0.5, "samples_s": samples,
            "stopped_by": "count", "timed_wall_s": sum(samples),
            "traces_after_first_call": 1, "retraces_during_timing": 0,
            "loss_first": 0.69, "loss_last": 0.6,
            "rule": {"kind": "fixed", "iterations": len(samples), "level": 0.95},
            "summary": stats.summarize(samples),
            "framework_facts": {"keras_version": "2.15.0", "optimizer": "Adam", "build_s": 0.2},
        })
    else:
        doc.update(reason=reason or "ValueError: boom", log_tail="Traceback ...\nValueError")
    path = Path(root) / machine / env / ("%s.r%d.json" % (cid, repeat))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1))
    return path


def write_processes(root, env, median, k=3, spread=0.01, orthogonal=False, **axes):
    """k processes of one cell whose medians spread by +-`spread` around `median`, rising with
    the round; orthogonal=True: a U-shaped pattern of the same size, uncorrelated with the rising
    one (two cells that are not one pair moving together, blocks.compare_paired)."""
    linear = [i - (k - 1) / 2 for i in range(k)]
    devs = linear
    if orthogonal:
        quad = [x * x for x in linear]
        quad = [x - sum(quad) / k for x in quad]
        norm = math.sqrt(sum(x * x for x in linear) / sum(x * x for x in quad))
        devs = [x * norm for x in quad]
    return [write_cell(root, env, median=median * (1.0 + spread * devs[i]), repeat=i, **axes)
            for i in range(k)]


def run(tmp_path, files, reference_env="tf1.14", **kwargs):
    out = tmp_path / "out"
    tables = {name: out / "tables" / f"{name}.csv" for name in registry.NAMES}
    result = tab.tabulate(files, reference_env, kwargs.pop("noisy_threshold", 0.1),
                          kwargs.pop("level", 0.95), config={"reference_env": reference_env},
                          **kwargs)
    tab.write_outputs(result, out / "tables" / "cells.csv", tables, out / "study.xlsx",
                      out / "tables" / "processes.json", out / "tables" / "facts.json")
    return tab.frames(result), out, tables




def grid(root):
    """A study-like grid: every factor in several envs, a few failed/skipped cells, 2 machines."""
    files = []
    rng = np.random.default_rng(1)
    flavours = {"tf1.14": ["keras", "tf.keras", "tf.python.keras"],
                "tf2.0": ["keras", "tf.keras", "tf.python.keras"],
                "tf2.15": ["tf.keras", "tf_keras"], "tf2.21": ["keras3", "tf_keras"]}
    for machine in (MACHINE, "epyc-4c-a100"):
        for env, kerases in flavours.items():
            for keras in kerases:
                for mode in ("eager", "graph", "run_eagerly"):
                    if keras == "keras3" and mode == "graph":
                        continue
                    if mode == "run_eagerly" and env.startswith("tf1"):
                        continue
                    if keras == "keras" and env == "tf1.14" and mode != "graph":
                        continue
                    for api in ("train_on_batch", "fit"):
                        for inp in ("numpy", "tfdata"):
                            if keras == "keras" and inp == "tfdata":
                                continue
                            for device in ("cpu", "gpu") if machine != MACHINE else ("cpu",):
                                axes = dict(keras=keras, mode=mode, api=api, input=inp,
                                            device=device)
                                median = float(rng.uniform(0.005, 0.05))
                                status = "ok"
                                if rng.uniform() < 0.08:
                                    status = "failed"
                                elif keras == "tf.python.keras" and api == "fit" and \
                                        inp == "tfdata":
                                    status = "skipped"
                                files.append(write_cell(root, env, status=status, median=median,
                                                        machine=machine, **axes))
    files.append(write_cell(root, "torch2.13", keras="none", mode="eager", api="custom_loop",
                            median=0.004))
    files.append(write_cell(root, "torch2.13", keras="none", mode="compile", api="custom_loop",
                            median=0.003))
    files.append(write_cell(root, "tf2.21", keras="keras3", mode="eager", api="custom_loop",
                            median=0.006))
    return files

