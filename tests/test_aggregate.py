"""Aggregation (driver/tables/aggregate.py and the modules it runs): cell files -> cells.csv, the comparison
tables and the workbook.

Cell files are synthetic but shaped like supervise_cell.py's (same keys, same layout on disk), with
samples built so that each cell's median is known exactly: 21 samples spread symmetrically by
+-1 % around it.
"""

import json
import logging
import runpy
import sys
import types
from pathlib import Path

import numpy as np
import openpyxl
import pandas as pd
import pytest

from driver.report import source_table as seedtable
from driver.study import layout, record
from driver.tables import aggregate as tab
from driver.tables import comparisons, registry, summaries
from driver.tables import source_layout as seedview
from driver.tables.ordering import env_order
from tfspeed import cells as tfcells
from tfspeed import models as tfmodels
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


def write_processes(root, env, median, k=3, spread=0.01, **axes):
    """k processes of one cell whose medians spread by +-`spread` around `median`."""
    return [write_cell(root, env, median=median * (1.0 + spread * (i - (k - 1) / 2)), repeat=i,
                       **axes) for i in range(k)]


def run(tmp_path, files, reference_env="tf1.14", **kwargs):
    out = tmp_path / "out"
    tables = {name: out / "tables" / f"{name}.csv" for name in registry.NAMES}
    result = tab.tabulate(files, reference_env, kwargs.pop("noisy_threshold", 0.1),
                          kwargs.pop("level", 0.95), config={"reference_env": reference_env},
                          **kwargs)
    tab.write_outputs(result, out / "tables" / "cells.csv", tables, out / "study.xlsx",
                      out / "tables" / "processes.json", out / "tables" / "facts.json")
    return tab.frames(result), out, tables


# --- the seed's % and its sign conventions, through the tables ---------------------------------

@pytest.fixture
def seed_case(tmp_path):
    """TF1 graph 10 ms / eager 30 ms; TF2 graph 20 ms / eager 15 ms (tf.keras, numpy, tob)."""
    root = tmp_path / "cells"
    files = [
        *write_processes(root, "tf1.14", 0.010, mode="graph"),
        *write_processes(root, "tf1.14", 0.030, mode="eager"),
        *write_processes(root, "tf2.0", 0.020, mode="graph"),
        *write_processes(root, "tf2.0", 0.015, mode="eager"),
    ]
    return run(tmp_path, files)


def test_tf2_vs_tf1_pct_sign(seed_case):
    table = seed_case[0]["tf2_vs_tf1"].set_index("mode")
    # graph: TF2 20 ms vs TF1 10 ms: TF2 slower, 20/10 = 2 -> -100 %
    assert table.at["graph", "pct"] == pytest.approx(-100.0, rel=1e-3)
    assert table.at["graph", "ratio"] == pytest.approx(2.0, rel=1e-3)
    # eager: TF2 15 ms vs TF1 30 ms: TF2 faster, 30/15 = 2 -> +100 %
    assert table.at["eager", "pct"] == pytest.approx(100.0, rel=1e-3)
    assert table.at["eager", "ratio"] == pytest.approx(0.5, rel=1e-3)
    assert (table["left_env"] == "tf2.0").all() and (table["right_env"] == "tf1.14").all()
    assert table.at["eager", "left_median_s"] == pytest.approx(0.015, rel=1e-3)
    assert table.at["eager", "right_median_s"] == pytest.approx(0.030, rel=1e-3)
    assert (table["n_left"] == 3).all() and (table["n_right"] == 3).all()  # processes
    assert table["significant"].all()
    assert (table["ratio_ci_low"] <= table["ratio"]).all()
    assert (table["ratio"] <= table["ratio_ci_high"]).all()
    assert set(table["verdict"]) == {"left_faster", "right_faster"}
    assert (table["p_adjusted"] >= table["p"]).all()


def test_graph_vs_eager_pct_sign(seed_case):
    table = seed_case[0]["graph_vs_eager"].set_index("env")
    # TF1: graph 10 ms vs eager 30 ms: graph faster, 30/10 = 3 -> +200 %
    assert table.at["tf1.14", "pct"] == pytest.approx(200.0, rel=1e-3)
    # TF2: graph 20 ms vs eager 15 ms: graph slower, 20/15 -> -33.33 %
    assert table.at["tf2.0", "pct"] == pytest.approx(-100.0 / 3.0, rel=1e-3)
    assert (table["left_mode"] == "graph").all() and (table["right_mode"] == "eager").all()


def test_csv_matches_and_reads_back(seed_case):
    _, out, tables = seed_case
    df = pd.read_csv(tables["graph_vs_eager"])
    for col in ["machine", "env", "left_mode", "right_mode", "left_median_s", "right_median_s",
                "pct", "ratio", "ratio_ci_low", "ratio_ci_high", "significant", "verdict", "p",
                "p_adjusted"]:
        assert col in df.columns
    assert df["significant"].dtype == bool
    assert sorted(df["pct"].round(1)) == [-33.3, 200.0]


def test_one_process_per_side_gives_no_verdict(tmp_path):
    """However many samples one process holds, it is one process: no CI, no verdict."""
    root = tmp_path / "cells"
    files = [write_cell(root, "tf2.0", mode="graph", median=0.010),
             write_cell(root, "tf2.0", mode="eager", median=0.030)]
    table = run(tmp_path, files)[0]["graph_vs_eager"]
    assert len(table) == 1 and not table.at[0, "significant"]
    assert table.at[0, "verdict"] == "inconclusive" and pd.isna(table.at[0, "ratio_ci_low"])


def test_equal_cells_are_equivalent_not_different(tmp_path):
    root = tmp_path / "cells"
    files = [*write_processes(root, "tf2.0", 0.020, k=5, spread=0.004, mode="graph"),
             *write_processes(root, "tf2.0", 0.020, k=5, spread=0.004, mode="eager")]
    table = run(tmp_path, files)[0]["graph_vs_eager"]
    assert table.at[0, "verdict"] == "equivalent" and not table.at[0, "significant"]


# --- pairing ------------------------------------------------------------------------------------

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


@pytest.fixture(scope="module")
def grid_case(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("grid")
    files = grid(tmp_path / "cells")
    return run(tmp_path, files) + (files,)


def test_every_pair_differs_in_one_factor(grid_case):
    result = grid_case[0]
    cells = result["cells"].set_index(["machine", "env", "cell_id"])
    checked = 0
    for name, (factor, left_value, right_value) in registry.FACTOR_TABLES.items():
        table = result[name]
        for row in table.to_dict("records"):
            left_env = row.get("left_env", row.get("env"))
            right_env = row.get("right_env", row.get("env"))
            left = cells.loc[(row["machine"], left_env, row["left_cell_id"])]
            right = cells.loc[(row["machine"], right_env, row["right_cell_id"])]
            assert left["status"] == right["status"] == "ok"
            differ = {a for a in tfcells.AXES if left[a] != right[a]}
            if left_env != right_env:
                differ.add("env")
            if name == "tf2_vs_tf1":
                assert right_env == "tf1.14" and left_env != "tf1.14"
                assert left["framework_version"].startswith("2.")
                assert differ <= {"env", "keras"} and "env" in differ
                if "keras" in differ:  # only where tf.keras became Keras 3 (TF >= 2.16)
                    assert right["keras"] == "tf.keras"
                    assert left["keras"] in ("keras3", "tf_keras") and left_env == "tf2.21"
            else:
                assert differ == {factor}, (name, row)
                if left_value is not None:
                    assert (left[factor], right[factor]) == (left_value, right_value)
                else:
                    assert (left[factor], right[factor]) in comparisons.KERAS_PAIRS
            assert row["left_median_s"] == pytest.approx(left["median_s"])
            assert row["right_median_s"] == pytest.approx(right["median_s"])
            checked += 1
    assert checked > 100


def test_pairs_are_complete(grid_case):
    """Every ok graph cell whose eager twin is ok appears in graph_vs_eager, once."""
    result = grid_case[0]
    ok = result["cells"][result["cells"]["status"] == "ok"]
    keys = ["machine", "env", "model", "data", "keras", "api", "input", "device"]
    both = ok[ok["mode"] == "graph"].merge(ok[ok["mode"] == "eager"], on=keys)
    table = result["graph_vs_eager"]
    assert len(table) == len(both) > 0
    assert not table.duplicated(["left_cell_id", "env", "machine"]).any()


def test_tf2_vs_tf1_keras_flavours(grid_case):
    table = grid_case[0]["tf2_vs_tf1"]
    pairs = set(zip(table["left_env"], table["left_keras"], table["right_keras"]))
    # standalone keras: TF 2.0 (Keras 2.3.1) vs TF 1.14 (Keras 2.2.5), graph only on TF1
    assert ("tf2.0", "keras", "keras") in pairs
    assert set(table.loc[table["left_keras"] == "keras", "mode"]) == {"graph"}
    # TF 2.15 has tf.keras: its tf_keras cells are not compared with TF1's tf.keras
    assert ("tf2.15", "tf.keras", "tf.keras") in pairs
    assert ("tf2.15", "tf_keras", "tf.keras") not in pairs
    # TF 2.21: tf.keras is Keras 3; keras3 and tf_keras both stand for it
    assert ("tf2.21", "keras3", "tf.keras") in pairs
    assert ("tf2.21", "tf_keras", "tf.keras") in pairs
    assert not any(e == "tf2.21" and k == "keras" for e, _, k in pairs)
    assert "tf1.14" not in set(table["left_env"])
    assert "torch2.13" not in set(table["left_env"]) | set(table["right_env"])
    # both machines, never across them
    assert set(table["machine"]) == {MACHINE, "epyc-4c-a100"}


def test_keras_table_pairs(grid_case):
    table = grid_case[0]["keras_vs_tfkeras"]
    pairs = set(zip(table["left_keras"], table["right_keras"]))
    assert pairs == set(comparisons.KERAS_PAIRS)
    assert set(table.loc[table["left_keras"] == "keras3", "env"]) == {"tf2.21"}


def test_gpu_table_only_where_both_exist(grid_case):
    table = grid_case[0]["gpu_vs_cpu"]
    assert len(table) > 0
    assert set(table["machine"]) == {"epyc-4c-a100"}
    assert set(zip(table["left_device"], table["right_device"])) == {("gpu", "cpu")}


def test_frameworks_table(grid_case):
    table = grid_case[0]["frameworks"]
    cpu = table[(table["machine"] == MACHINE) & (table["device"] == "cpu")]
    # the reference: newest TF 2 env, Keras 3 (tf.keras there), eager, custom loop
    assert set(zip(cpu["right_env"], cpu["right_keras"], cpu["right_api"])) == {
        ("tf2.21", "keras3", "custom_loop")}
    torch = cpu[cpu["left_framework"] == "torch"].set_index("left_mode")
    assert set(torch.index) == {"eager", "compile"}
    assert torch.at["compile", "pct"] == pytest.approx(100.0)  # 3 ms vs 6 ms
    assert torch.at["eager", "ratio"] == pytest.approx(4.0 / 6.0)
    # one row per env and mode: each the fastest of its cells
    assert not cpu.duplicated(["left_env", "left_mode"]).any()
    cells = grid_case[0]["cells"]
    for row in cpu.to_dict("records"):
        same = cells[(cells["machine"] == MACHINE) & (cells["env"] == row["left_env"])
                     & (cells["mode"] == row["left_mode"]) & (cells["device"] == "cpu")
                     & (cells["status"] == "ok")]
        assert row["left_median_s"] == pytest.approx(same["median_s"].min())


def test_frameworks_best_vs_best(tmp_path):
    """Each framework's fastest cell vs TensorFlow's fastest, per task; verdicts in the study's
    one Benjamini-Hochberg family; the report lays the rows out without testing anything."""
    from driver.report import split
    from driver.stats import verdicts

    root = tmp_path / "cells"
    files = [
        *write_processes(root, "tf2.21", 0.010, keras="keras3", api="custom_loop"),
        *write_processes(root, "tf2.21", 0.008, keras="keras3", mode="function",
                         api="custom_loop"),
        *write_processes(root, "tf1.14", 0.009, mode="graph"),
        *write_processes(root, "tf2.21", 0.001, keras="keras3", api="call"),
        *write_processes(root, "torch2.13", 0.004, keras="none", api="custom_loop"),
        *write_processes(root, "torch2.13", 0.006, keras="none", mode="compile",
                         api="custom_loop"),
        *write_processes(root, "torch2.13", 0.002, keras="none", api="call"),
    ]
    result = run(tmp_path, files)[0]
    best = result["frameworks_best"].set_index("task")
    assert sorted(best.index) == ["infer", "train"]
    train, infer = best.loc["train"], best.loc["infer"]
    assert (train["left_family"], train["left_mode"], train["right_family"],
            train["right_env"], train["right_mode"]) == (
        "PyTorch", "eager", "TensorFlow", "tf2.21", "function")
    assert train["ratio"] == pytest.approx(0.5, rel=1e-6)
    assert train["verdict"] == verdicts.LEFT_FASTER
    assert (infer["left_api"], infer["right_api"]) == ("call", "call")
    assert infer["ratio"] == pytest.approx(2.0, rel=1e-6)
    assert infer["verdict"] == verdicts.RIGHT_FASTER
    # one family: BH over every comparison row of the study gives the tables' adjusted p-values
    names = [n for n in registry.COMPARISONS if len(result[n])]
    assert "frameworks_best" in names
    p = pd.concat([result[n]["p"] for n in names]).to_numpy(dtype=float)
    adjusted = pd.concat([result[n]["p_adjusted"] for n in names]).to_numpy(dtype=float)
    np.testing.assert_allclose(adjusted, verdicts.bh_adjust(p))
    view = split.best_vs_best(result["frameworks_best"], 0.05)
    wins = {r[7]["text"] for r in view["rows"]}
    assert wins == {"PyTorch, 2.00x as fast", "TensorFlow, 2.00x as fast"}
    assert "frameworks_best" not in {g["name"] for g in split.split_views(result)}


# --- cells --------------------------------------------------------------------------------------

def test_every_cell_in_cells_csv(grid_case):
    _, out, _, files = grid_case
    df = pd.read_csv(out / "tables" / "cells.csv")
    docs = [json.loads(Path(f).read_text()) for f in files]
    assert len(df) == len(docs)
    have = set(zip(df["machine"], df["env"], df["cell_id"]))
    for doc in docs:
        assert (doc["machine"], doc["env"], doc["cell_id"]) in have
    for col in ["machine", "env", "framework", "framework_version", "python", "keras",
                "keras_version", "mode", "api", "input", "device", "model", "data", "status",
                "reason", "n_samples", "n_repeats", "median_s", "ci_low_s", "ci_high_s",
                "first_call_s", "mean_s", "sd_s", "iqr_s", "min_s", "noisy", "drift",
                "drift_ratio", "between_sd", "within_ci_rel", "retraces", "flops_per_step",
                "achieved_flops", "efficiency", "stopped_by", "cell_id"]:
        assert col in df.columns, col
    bad = df[df["status"] != "ok"]
    assert set(bad["status"]) == {"failed", "skipped"}
    assert bad["reason"].notna().all() and (bad["reason"].str.len() > 0).all()
    assert bad["median_s"].isna().all()
    good = df[df["status"] == "ok"]
    assert good["median_s"].notna().all() and (good["n_samples"] == 21).all()
    # one process per cell here: no process-level CI
    assert good["ci_low_s"].isna().all() and good["ci_high_s"].isna().all()


def test_envs_in_version_order(grid_case):
    result = grid_case[0]
    versions = result["versions"]
    env_cols = [c for c in versions.columns if c in VERSIONS]
    assert env_cols == ["tf1.14", "tf2.0", "tf2.15", "tf2.21", "torch2.13"]
    assert list(pd.read_csv(grid_case[1] / "tables" / "versions.csv").columns)[:8] == \
        summaries.VERSION_INDEX
    row = versions.dropna(subset=["tf1.14", "tf2.0"]).iloc[0]
    assert row["fastest_env"] in ("tf1.14", "tf2.0", "tf2.15", "tf2.21")


def test_repeats_pooled(tmp_path):
    root = tmp_path / "cells"
    a, b = samples_around(0.010), samples_around(0.012)
    files = [write_cell(root, "tf2.0", samples=a, repeat=0),
             write_cell(root, "tf2.0", samples=b, repeat=1),
             write_cell(root, "tf2.0", status="failed", repeat=2,
                        reason="timed out after 900 s (cell_timeout_s)"),
             write_cell(root, "tf2.0", mode="graph", status="failed", repeat=0),
             write_cell(root, "tf2.0", mode="graph", status="failed", repeat=1)]
    cells = run(tmp_path, files)[0]["cells"].set_index("mode")
    eager = cells.loc["eager"]
    assert eager["status"] == "ok"
    assert eager["n_repeats"] == 2 and eager["n_failed_repeats"] == 1
    assert eager["n_samples"] == 42
    # the cell estimate: geometric mean of the processes' medians, sd of their logs
    assert eager["median_s"] == pytest.approx((0.010 * 0.012) ** 0.5)
    assert eager["between_sd"] == pytest.approx(np.log(0.012 / 0.010) / 2 ** 0.5)
    assert eager["ci_low_s"] < 0.010 and eager["ci_high_s"] > 0.012
    assert "1 of 3 repeats" in eager["reason"] and "timed out" in eager["reason"]
    graph = cells.loc["graph"]
    assert graph["status"] == "failed" and graph["reason"] == "ValueError: boom"
    assert graph["n_repeats"] == 0 and graph["n_failed_repeats"] == 2


def test_efficiency_against_the_machines_fastest_matmul(tmp_path):
    root = tmp_path / "results" / "cells"
    files = [write_cell(root, "tf2.0", median=0.02)]
    row = run(tmp_path, files)[0]["cells"].iloc[0]
    assert row["achieved_flops"] == pytest.approx(1033777152 / 0.02)
    assert pd.isna(row["efficiency"])  # no matmul cell: no attainable peak known
    matmul = dict(model="matmul", data="matmul", keras="none", api="matmul", input="numpy")
    files += [write_cell(root, "tf2.0", median=0.05, mode="numpy", **matmul),
              write_cell(root, "tf2.0", median=0.025, mode="eager", **matmul)]
    cells = run(tmp_path, files)[0]["cells"].set_index("cell_id")
    peak = 1033777152 / 0.025  # write_cell gives every cell the small model's FLOPs
    small = cells.loc[tfcells.cell_id(BASE)]
    assert small["peak_flops"] == pytest.approx(peak)
    assert small["efficiency"] == pytest.approx((1033777152 / 0.02) / peak)


# --- bad files ----------------------------------------------------------------------------------

def test_truncated_file_names_the_file(tmp_path):
    root = tmp_path / "cells"
    good = write_cell(root, "tf2.0")
    bad = write_cell(root, "tf2.0", mode="graph")
    bad.write_text(bad.read_text()[:200])
    with pytest.raises(record.CellFileError, match=bad.name) as info:
        run(tmp_path, [good, bad])
    assert str(bad) in str(info.value)
    assert not (tmp_path / "out" / "study.xlsx").exists()


@pytest.mark.parametrize("breakage, where", [
    (lambda d: d.pop("samples_s"), "samples_s"),  # ok without samples
    (lambda d: d.update(mode="turbo"), "mode"),
    (lambda d: d.update(samples_s=[0.01, -0.02, 0.01]), "samples_s/1"),
    (lambda d: d.update(schema_version=99), "schema_version"),
    (lambda d: d.update(status="failed", reason=""), "reason"),
])
def test_schema_invalid_file_names_the_file(tmp_path, breakage, where):
    root = tmp_path / "cells"
    path = write_cell(root, "tf2.0")
    doc = json.loads(path.read_text())
    breakage(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(record.CellFileError) as info:
        run(tmp_path, [path])
    assert str(path) in str(info.value)
    assert where in str(info.value) or "required" in str(info.value)


def test_file_at_the_wrong_place_is_rejected(tmp_path):
    root = tmp_path / "cells"
    path = write_cell(root, "tf2.0")
    moved = root / MACHINE / "tf2.3" / path.name
    moved.parent.mkdir()
    path.rename(moved)
    with pytest.raises(record.CellFileError, match="env"):
        run(tmp_path, [moved])


def test_schema_accepts_real_shapes(tmp_path):
    """A failed cell of an env that did not build (framework null, no python) is valid."""
    root = tmp_path / "cells"
    path = write_cell(root, "tf2.3", status="failed", reason="env build failed: pip")
    doc = json.loads(path.read_text())
    doc.update(framework=None, framework_version=None, flops_per_step=None)
    path.write_text(json.dumps(doc))
    assert record.read_cell_file(path)["framework"] is None


# --- other machines -----------------------------------------------------------------------------

def test_other_machine_files(tmp_path):
    root = tmp_path / "cells"
    mine = write_cell(root, "tf2.0")
    theirs = write_cell(root, "tf2.0", machine="other")
    (theirs.parent / (".cell-abc.json")).write_text("{")  # a runner's temporary file
    (theirs.parent / ("." + theirs.name + ".x1.tmp")).write_text("{")
    (root / "other" / "round0.done").write_text("")
    found = layout.other_machine_files(str(root), MACHINE, "all")
    assert found == [str(theirs)]
    assert layout.other_machine_files(str(root), MACHINE, ["other"]) == [str(theirs)]
    assert layout.other_machine_files(str(root), MACHINE, []) == []
    assert str(mine) not in layout.other_machine_files(str(root), MACHINE, [MACHINE, "other"])


# --- guidance and the seed view -----------------------------------------------------------------

def test_guidance_lists(tmp_path):
    root = tmp_path / "cells"
    files = [
        *write_processes(root, "tf2.0", 0.0100, mode="graph"),  # fastest
        *write_processes(root, "tf2.0", 0.0100, mode="eager", api="fit"),  # tie: DO
        *write_processes(root, "tf2.0", 0.0150, mode="eager"),  # 1.5x: neither
        *write_processes(root, "tf2.0", 0.0210, mode="run_eagerly"),  # 2.1x: DONT
        *write_processes(root, "tf2.0", 0.0500, keras="tf.python.keras"),  # 5x: DONT
    ]
    guide = run(tmp_path, files)[0]["guidance"]
    assert list(guide["list"]) == ["DO", "DO", "DONT", "DONT"]
    assert list(guide["ratio_to_fastest"]) == pytest.approx([1.0, 1.0, 5.0, 2.1], rel=1e-3)
    assert guide.loc[2, "configuration"] == \
        "train_on_batch() + numpy + tf.python.keras + TF 2.0.0 + Eager + CPU"
    assert "fit() + numpy + tf.keras + TF 2.0.0 + Eager + CPU" in set(guide["configuration"])


def test_seed_view(seed_case):
    view = seed_case[0]["seed_view"]
    assert len(view) == 1
    row = view.iloc[0]
    assert row["tf1.14 Graph s/iter"] == pytest.approx(0.010, rel=1e-3)
    assert row["tf2.0 Eager s/iter"] == pytest.approx(0.015, rel=1e-3)
    assert row["TF2 vs TF1 % tf2.0 Graph"] == pytest.approx(-100.0, rel=1e-3)
    assert row["TF2 vs TF1 % tf2.0 Eager"] == pytest.approx(100.0, rel=1e-3)
    assert row["GvE % tf1.14"] == pytest.approx(200.0, rel=1e-3)
    assert row["GvE % tf2.0"] == pytest.approx(-100.0 / 3.0, rel=1e-3)
    assert row[seedview.VERDICT_PREFIX + "GvE % tf2.0"] == "right_faster"  # eager faster
    assert row[seedview.VERDICT_PREFIX + "TF2 vs TF1 % tf2.0 Eager"] == "left_faster"


def test_seed_view_shows_one_tf2_env_the_seeds(grid_case):
    """One TF 2 env beside the reference: the one with the most same-flavour pairs (tf2.0 has
    keras, tf.keras and tf.python.keras like tf1.14; tf2.15 tf.keras only; tf2.21 none)."""
    result = grid_case[0]
    view = result["seed_view"]
    assert seedview.seed_tf2_env(result["cells"], result, "tf1.14", env_order(result["cells"])) == "tf2.0"
    envs = {c.split(" ")[0] for c in view.columns if c.endswith("s/iter")}
    assert envs == {"tf1.14", "tf2.0"}
    assert not any("tf2.15" in c or "tf2.21" in c for c in view.columns)
    assert len(view.columns) <= len(seedview.SEED_INDEX) + 8 + 4  # 8 values, 4 verdicts


def _blocks_in_seed_order(view):
    """Each block's rows are together, model x data in the seed's order."""
    keys = [tuple(r) for r in view[seedview.BLOCK].itertuples(index=False)]
    seen, previous = set(), None
    for key in keys:
        if key != previous:
            assert key not in seen, f"block {key} split"
            seen.add(key)
            previous = key
    order = {m: i for i, m in enumerate(tfmodels.MODELS)}
    data = {d: i for i, d in enumerate(tfmodels.DATA)}
    for _, part in view.groupby(seedview.BLOCK, sort=False):
        ranks = [(order[m], data[d]) for m, d in zip(part["model"], part["data"])]
        assert ranks == sorted(ranks)
    return len(seen)


def test_seed_view_block_layout(tmp_path):
    """The seed's blocks: rows model x data within each configuration, no column empty for the
    whole sheet, and a TF 1 column never holds a cell of another Keras flavour: keras3 /
    tf_keras rows leave it blank and show their % in a column labelled 'vs TF 1 tf.keras'."""
    root = tmp_path / "cells"
    rng = np.random.default_rng(7)
    files = []
    sizes = [("small", "small"), ("small", "medium"), ("medium", "small"), ("medium", "medium")]
    for model, data in sizes:
        for mode in ("graph", "eager"):
            for api in ("train_on_batch", "fit"):
                axes = dict(model=model, data=data, mode=mode, api=api)
                files += write_processes(root, "tf1.14", float(rng.uniform(0.01, 0.03)),
                                         keras="tf.keras", **axes)
                files += write_processes(root, "tf2.21", float(rng.uniform(0.01, 0.03)),
                                         keras="tf_keras", **axes)
                if mode == "eager":
                    files += write_processes(root, "tf2.21", float(rng.uniform(0.01, 0.03)),
                                             keras="keras3", **axes)
    files.append(write_cell(root, "tf2.21", keras="none", model="matmul", data="matmul",
                            api="matmul", mode="eager", median=0.01))
    result = run(tmp_path, files)[0]
    view = result["seed_view"]
    assert _blocks_in_seed_order(view) == 6  # tf.keras, tf_keras, keras3 x 2 APIs
    assert set(view["model"]) == {"small", "medium"}  # no matmul: not a seed model
    values = [c for c in view.columns if c not in seedview.SEED_INDEX]
    assert all(view[c].notna().any() for c in values), "a column empty for the whole sheet"
    # TF 1 columns: only tf1.14's own cell of the row's flavour
    cells = result["cells"].set_index(["env", "keras", "mode", "api", "model", "data"])
    for row in view.to_dict("records"):
        for mode in ("graph", "eager"):
            got = row[seedview.time_col("tf1.14", mode)]
            key = ("tf1.14", row["keras"], mode, row["api"], row["model"], row["data"])
            if row["keras"] in ("keras3", "tf_keras"):
                assert pd.isna(got), row
            else:
                assert got == pytest.approx(cells.loc[key, "median_s"])
    # the cross-flavour %: explicitly labelled, equal to tf2_vs_tf1's, with a note
    assert "TF2 vs TF1 % tf2.21 Graph" not in view.columns  # no same-flavour pair exists
    cross = seedview.tf2_vs_tf1_col("tf2.21", "eager", "tf.keras")
    assert cross == "TF2 vs TF1 % tf2.21 Eager vs TF 1 tf.keras"
    tf2 = result["tf2_vs_tf1"].set_index(["left_keras", "mode", "api", "model", "data"])
    keras3 = view[view["keras"] == "keras3"]
    assert len(keras3) == 8
    for row in keras3.to_dict("records"):
        want = tf2.loc[("keras3", "eager", row["api"], row["model"], row["data"])]
        assert row[cross] == pytest.approx(want["pct"])
        assert row[seedview.VERDICT_PREFIX + cross] == want["verdict"]
        assert "no keras3 in tf1.14" in row["note"] and "tf.keras" in row["note"]
    assert view.loc[view["keras"] == "tf.keras", "note"].isna().all()
    assert view.loc[view["keras"] == "tf.keras", cross].isna().all()
    # the report's blocks: the same blocks, the note under the caption, no empty column
    blocks = seedtable.seed_blocks(result["cells"], result, "tf1.14", env_order(result["cells"]))
    assert len(blocks) == 6
    for block in blocks:
        labels = [c["label"] for c in block["table"]["columns"]]
        assert labels[:2] == ["model", "data"] and "note" not in labels
        assert len(block["table"]["rows"]) == 4
        for j in range(2, len(labels)):
            assert any(r[j]["text"] not in ("", "–") for r in block["table"]["rows"]), labels[j]
        if "keras3" in block["title"] or "tf_keras" in block["title"]:
            assert "tf1.14 Graph ms" not in labels and "tf1.14 Eager ms" not in labels
            assert "no " in block["title"]


# --- files and the workbook ---------------------------------------------------------------------

def test_every_table_written_even_empty(seed_case):
    _, out, tables = seed_case
    for name, path in tables.items():
        df = pd.read_csv(path)
        assert len(df.columns) > 0, name
    assert len(pd.read_csv(tables["gpu_vs_cpu"])) == 0
    assert "left_median_s" in pd.read_csv(tables["gpu_vs_cpu"]).columns


def test_workbook(grid_case):
    path = grid_case[1] / "study.xlsx"
    book = openpyxl.load_workbook(path)
    expected = {"about", "seed_view", "cells", *registry.NAMES}
    assert expected <= set(book.sheetnames)
    assert book.sheetnames[0] == "about"
    sheet = book["tf2_vs_tf1"]
    header = [c.value for c in sheet[1]]
    assert "left_median_ms" in header and "pct" in header and "significant" in header
    assert sheet.freeze_panes == "A2"
    pct_col = header.index("pct") + 1
    assert "0.0" in sheet.cell(row=2, column=pct_col).number_format
    ms_col = header.index("left_median_ms") + 1
    assert sheet.cell(row=2, column=ms_col).number_format.startswith("0.00")
    cells = pd.read_csv(grid_case[1] / "tables" / "cells.csv")
    first = cells.dropna(subset=["median_s"]).iloc[0]
    xl = pd.read_excel(path, sheet_name="cells")
    assert xl.dropna(subset=["median_ms"]).iloc[0]["median_ms"] == \
        pytest.approx(first["median_s"] * 1000)
    assert len(sheet.conditional_formatting) >= 2
    about = pd.read_excel(path, sheet_name="about")
    text = " ".join(about["text"].dropna().astype(str))
    assert "longer/shorter" in text and "+ if TF2 is faster" in text and "Graph is faster" in text
    assert "reference_env: tf1.14" in text
    seed = book["seed_view"]
    seed_header = [c.value for c in seed[1]]
    assert not any(str(h).startswith(seedview.VERDICT_PREFIX) for h in seed_header)
    assert "left_cell_id" not in header  # the CSV keeps the ids, the workbook the axes
    assert pd.read_csv(grid_case[1] / "tables" / "tf2_vs_tf1.csv")["left_cell_id"].notna().all()


def test_workbook_greys_non_significant(tmp_path):
    root = tmp_path / "cells"
    rng = np.random.default_rng(3)
    noisy = [list(0.02 * (1 + 0.05 * rng.standard_normal(40)).clip(0.5)) for _ in range(2)]
    files = [write_cell(root, "tf2.0", mode="graph", samples=noisy[0]),
             write_cell(root, "tf2.0", mode="eager", samples=noisy[1]),
             *write_processes(root, "tf1.14", 0.010, mode="graph"),
             *write_processes(root, "tf1.14", 0.030, mode="eager")]
    _, out, _ = run(tmp_path, files)
    book = openpyxl.load_workbook(out / "study.xlsx")
    seed = book["seed_view"]
    header = [c.value for c in seed[1]]
    tf1 = seed.cell(row=2, column=header.index("GvE % tf1.14") + 1)
    tf2 = seed.cell(row=2, column=header.index("GvE % tf2.0") + 1)
    assert tf1.value == pytest.approx(200.0, rel=1e-3)
    assert tf1.fill.fgColor.rgb.endswith("C6EFCE")  # significant, graph faster: green
    assert tf2.font.color.rgb.endswith("9A9A9A")  # not significant: grey
    gve = book["graph_vs_eager"]
    rules = [r for rng_ in gve.conditional_formatting for r in rng_.rules]
    assert any("NOT(" in (r.formula or [""])[0] for r in rules)


def test_script_survives_snakemake_preamble():
    """Snakemake's script directive writes its preamble (code) above the script's source."""
    compile("import sys; snakemake = None\n" + SCRIPT.read_text(), str(SCRIPT), "exec")


def test_snakemake_entry(tmp_path):
    """The script as Snakemake runs it: inputs, params and outputs by name, stderr to the log."""
    root = tmp_path / "results" / "cells"
    mine = [write_cell(root, "tf1.14", mode="graph", median=0.01),
            write_cell(root, "tf2.0", mode="graph", median=0.02)]
    theirs = write_cell(root, "tf2.0", mode="graph", median=0.03, machine="other")
    out = tmp_path / "results" / "tables"
    smk = types.SimpleNamespace(
        input=types.SimpleNamespace(cells=[str(p) for p in mine], others=[str(theirs)]),
        output=types.SimpleNamespace(
            cells_csv=str(out / "cells.csv"), xlsx=str(tmp_path / "results" / "study.xlsx"),
            tables=[str(out / f"{n}.csv") for n in registry.NAMES],
            processes=str(out / "processes.json"), facts=str(out / "facts.json")),
        log=[str(tmp_path / "logs" / "tabulate.log")],
        params=types.SimpleNamespace(machine=MACHINE, q=0.05, min_effect=0.05, spike_factor=2.0,
                                     allocation={"repeats": 1, "max_repeats": 8,
                                                 "budget_s": 0},
                                     reference_env="tf1.14", noisy_threshold=0.1, level=0.95,
                                     config={"machine": "auto", "reference_env": "tf1.14"}))
    (tmp_path / "logs").mkdir()
    stderr = sys.stderr
    logger = logging.getLogger("tfspeed")
    copy = tmp_path / ".snakemake" / "scripts" / "tmpabc.tabulate_cells.py"  # as Snakemake runs it
    copy.parent.mkdir(parents=True)
    copy.write_text(SCRIPT.read_text())
    try:
        runpy.run_path(str(copy), init_globals={"snakemake": smk})
    finally:
        for handler in logger.handlers[:]:
            logger.removeHandler(handler)
        sys.stderr.close()
        sys.stderr = stderr
    cells = pd.read_csv(out / "cells.csv")
    assert set(cells["machine"]) == {MACHINE, "other"}
    assert len(pd.read_csv(out / "tf2_vs_tf1.csv")) == 1  # not across machines
    assert "cells" in (tmp_path / "logs" / "tabulate.log").read_text()


def test_workbook_colours_significant_seed_view(seed_case):
    book = openpyxl.load_workbook(seed_case[1] / "study.xlsx")
    seed = book["seed_view"]
    header = [c.value for c in seed[1]]
    slower = seed.cell(row=2, column=header.index("GvE % tf2.0") + 1)  # graph slower: red
    faster = seed.cell(row=2, column=header.index("TF2 vs TF1 % tf2.0 Eager") + 1)
    assert slower.value == pytest.approx(-100.0 / 3.0)
    assert slower.fill.fgColor.rgb.endswith("FFC7CE")
    assert faster.fill.fgColor.rgb.endswith("C6EFCE")
    assert '"%"' in faster.number_format


def test_matmul_cells(tmp_path):
    """Seed 004's micro-case: no Keras, its own API and a NumPy baseline mode."""
    root = tmp_path / "cells"
    mm = dict(model="matmul", data="matmul", keras="none", api="matmul")
    files = [write_cell(root, "tf1.14", mode="graph", median=0.020, **mm),
             write_cell(root, "tf2.21", mode="graph", median=0.010, **mm),
             write_cell(root, "tf2.21", mode="eager", median=0.012, **mm),
             write_cell(root, "tf2.21", mode="numpy", median=0.030, **mm),
             write_cell(root, "torch2.13", mode="eager", median=0.006, **mm)]
    result = run(tmp_path, files)[0]
    tf2 = result["tf2_vs_tf1"]
    assert list(zip(tf2["left_keras"], tf2["right_keras"], tf2["pct"])) == \
        [("none", "none", pytest.approx(100.0))]
    frameworks = result["frameworks"].set_index(["left_env", "left_mode"])
    assert set(frameworks["right_api"]) == {"matmul"}
    assert set(frameworks["right_mode"]) == {"eager"}
    assert frameworks.loc[("torch2.13", "eager"), "pct"] == pytest.approx(100.0)
    assert frameworks.loc[("tf2.21", "numpy"), "pct"] == pytest.approx(-150.0)
    assert "matmul + numpy + TF 2.21.0 + NumPy + CPU" in set(result["guidance"]["configuration"])
