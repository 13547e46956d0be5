"""Aggregation (driver/tables/aggregate.py and the modules it runs): cell files -> cells.csv and the
comparison tables; the seed's % and its sign conventions, pairing, pooling, the rule script.

Cell files are synthetic (tests/support/cellfiles.py).
"""

import json
import logging
import runpy
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cellfiles import BASE, MACHINE, SCRIPT, VERSIONS, run, samples_around, write_cell, write_processes

from driver.tables import comparisons, registry, summaries
from tfspeed import cells as tfcells

# --- the seed's % and its sign conventions, through the tables ---------------------------------


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
    assert table.at[0, "verdict"] == "undecided" and pd.isna(table.at[0, "ratio_ci_low"])


def test_equal_cells_are_equivalent_not_different(tmp_path):
    root = tmp_path / "cells"
    files = [*write_processes(root, "tf2.0", 0.020, k=5, spread=0.004, mode="graph"),
             *write_processes(root, "tf2.0", 0.020, k=5, spread=0.004, mode="eager")]
    table = run(tmp_path, files)[0]["graph_vs_eager"]
    assert table.at[0, "verdict"] == "equivalent" and not table.at[0, "significant"]


# --- pairing ------------------------------------------------------------------------------------

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
    # the reference: TensorFlow's fastest ok cell of the model, data and task, the same on
    # every row, never a row of its own
    cells = grid_case[0]["cells"]
    tf = cells[(cells["machine"] == MACHINE) & (cells["device"] == "cpu")
               & (cells["framework"] == "tensorflow") & (cells["status"] == "ok")]
    fastest = tf.loc[tf["median_s"].idxmin()]
    assert set(zip(cpu["right_env"], cpu["right_cell_id"])) == {
        (fastest["env"], fastest["cell_id"])}
    assert cpu["right_median_s"].to_numpy() == pytest.approx(fastest["median_s"], rel=1e-2)
    assert not ((cpu["left_env"] == fastest["env"])
                & (cpu["left_cell_id"] == fastest["cell_id"])).any()
    assert (cpu.loc[cpu["left_framework"] == "tensorflow", "ratio"] >= 1.0).all()
    torch = cpu[cpu["left_framework"] == "torch"].set_index("left_mode")
    assert set(torch.index) == {"eager", "compile"}
    assert torch.at["compile", "ratio"] == pytest.approx(0.003 / fastest["median_s"], rel=1e-3)
    assert torch.at["eager", "ratio"] == pytest.approx(0.004 / fastest["median_s"], rel=1e-3)
    # one row per env and mode: each the fastest of its cells
    assert not cpu.duplicated(["left_env", "left_mode"]).any()
    for row in cpu.to_dict("records"):
        same = cells[(cells["machine"] == MACHINE) & (cells["env"] == row["left_env"])
                     & (cells["mode"] == row["left_mode"]) & (cells["device"] == "cpu")
                     & (cells["status"] == "ok")]
        assert row["left_median_s"] == pytest.approx(same["median_s"].min())


def test_frameworks_reference_is_tfs_fastest_cell_per_task(tmp_path):
    """A planted case: TF's fastest training cell is TF 1.14 graph (5 ms), not the eager custom
    loop (20 ms) the table used to measure against; inference has its own reference."""
    root = tmp_path / "cells"
    files = [write_cell(root, "tf1.14", mode="graph", median=0.005),
             write_cell(root, "tf2.21", keras="keras3", mode="eager", api="custom_loop",
                        median=0.020),
             write_cell(root, "tf2.21", keras="tf_keras", mode="graph", median=0.006),
             write_cell(root, "torch2.13", keras="none", mode="eager", api="custom_loop",
                        median=0.008),
             write_cell(root, "tf2.21", keras="keras3", mode="eager", api="call", median=0.001),
             write_cell(root, "torch2.13", keras="none", mode="eager", api="call",
                        median=0.002)]
    table = run(tmp_path, files)[0]["frameworks"]
    train = table[table["left_api"].isin(["custom_loop", "train_on_batch"])]
    assert set(zip(train["right_env"], train["right_mode"], train["right_api"])) == {
        ("tf1.14", "graph", "train_on_batch")}
    got = dict(zip(zip(train["left_env"], train["left_mode"]), train["ratio"]))
    assert got == {("tf2.21", "eager"): pytest.approx(4.0, rel=1e-3),
                   ("tf2.21", "graph"): pytest.approx(1.2, rel=1e-3),
                   ("torch2.13", "eager"): pytest.approx(1.6, rel=1e-3)}
    infer = table[table["left_api"] == "call"]
    assert list(zip(infer["left_env"], infer["right_env"], infer["right_api"])) == [
        ("torch2.13", "tf2.21", "call")]
    assert infer["ratio"].iloc[0] == pytest.approx(2.0, rel=1e-3)


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
        input=types.SimpleNamespace(cells=[str(p) for p in mine], others=[str(theirs)],
                                    orders=[], duets=[]),
        output=types.SimpleNamespace(
            cells_csv=str(out / "cells.csv"), xlsx=str(tmp_path / "results" / "study.xlsx"),
            tables=[str(out / f"{n}.csv") for n in registry.NAMES],
            processes=str(out / "processes.json"), facts=str(out / "facts.json")),
        log=[str(tmp_path / "logs" / "tabulate.log")],
        params=types.SimpleNamespace(machine=MACHINE, q=0.05, min_effect=0.05, spike_factor=2.0,
                                     alpha_equivalence=0.05, sides_as_cells=[],
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
    # the reference is TF's fastest matmul (tf2.21 graph, 10 ms), never NumPy alone
    assert set(zip(frameworks["right_env"], frameworks["right_mode"])) == {("tf2.21", "graph")}
    assert ("tf2.21", "graph") not in frameworks.index
    assert frameworks.loc[("torch2.13", "eager"), "ratio"] == pytest.approx(0.6, rel=1e-3)
    assert frameworks.loc[("tf2.21", "numpy"), "pct"] == pytest.approx(-200.0)
    assert frameworks.loc[("tf1.14", "graph"), "ratio"] == pytest.approx(2.0, rel=1e-3)
    assert "matmul + numpy + TF 2.21.0 + NumPy + CPU" in set(result["guidance"]["configuration"])
