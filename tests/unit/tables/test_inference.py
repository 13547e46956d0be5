"""Inference (the seed's seventh factor) through aggregation, and the spike figures.

Synthetic cell files shaped like supervise_cell.py's (test_aggregate.write_cell), each cell's
median known by construction: which cells pair in which table, and that no table sets a training
step against an inference call."""
import numpy as np
import pytest
from test_aggregate import run, write_cell, write_processes

from driver.stats import spikes
from tfspeed.cells import task


@pytest.fixture
def study(tmp_path):
    """tf1.14 tf.keras and tf2.21 keras3: training and inference cells side by side; PyTorch."""
    root = tmp_path / "cells"
    files = []
    for env, keras in (("tf1.14", "tf.keras"), ("tf2.21", "keras3")):
        files += write_processes(root, env, 0.002, keras=keras, api="call")
        files += write_processes(root, env, 0.040, keras=keras, api="predict")
        files += write_processes(root, env, 0.004, keras=keras, api="predict_on_batch")
        files += write_processes(root, env, 0.010, keras=keras, api="train_on_batch")
        files += write_processes(root, env, 0.020, keras=keras, api="fit")
    files += write_processes(root, "tf1.14", 0.001, mode="graph", api="call")
    files += write_processes(root, "tf1.14", 0.003, mode="graph", api="predict")
    files += write_processes(root, "tf1.14", 0.008, mode="graph", api="train_on_batch")
    files += write_processes(root, "torch2.13", 0.0015, keras="none", api="call")
    files += write_processes(root, "torch2.13", 0.0012, keras="none", api="inference_mode")
    files += write_processes(root, "torch2.13", 0.009, keras="none", api="custom_loop")
    return run(tmp_path, files)[0]


def test_call_vs_predict_pairs_call_styles_only(study):
    table = study["call_vs_predict"]
    pairs = set(zip(table["env"], table["mode"], table["left_api"], table["right_api"]))
    assert pairs == {
        ("tf1.14", "eager", "call", "predict"), ("tf1.14", "eager", "call", "predict_on_batch"),
        ("tf1.14", "eager", "predict_on_batch", "predict"), ("tf1.14", "graph", "call", "predict"),
        ("tf2.21", "eager", "call", "predict"), ("tf2.21", "eager", "call", "predict_on_batch"),
        ("tf2.21", "eager", "predict_on_batch", "predict"),
        ("torch2.13", "eager", "inference_mode", "call"),
    }
    row = table[(table.env == "tf2.21") & (table.left_api == "call")
                & (table.right_api == "predict")].iloc[0]
    # model(x) 2 ms vs predict 40 ms: the first-named is faster, so + (40/2 = 20: +1900 %)
    assert row["ratio"] == pytest.approx(0.002 / 0.040, rel=1e-3)
    assert row["pct"] == pytest.approx((0.040 / 0.002 - 1) * 100, rel=1e-3)
    torch = table[table.env == "torch2.13"].iloc[0]
    # inference_mode (left) 1.2 ms is faster than no_grad 1.5 ms: +, 1.5/1.2 = 1.25 -> +25 %
    assert torch["pct"] == pytest.approx((0.0015 / 0.0012 - 1) * 100, rel=1e-3)


def test_no_table_sets_training_against_inference(study):
    for name in ("tf2_vs_tf1", "graph_vs_eager", "numpy_vs_tfdata", "keras_vs_tfkeras",
                 "call_vs_predict", "fit_vs_train_on_batch", "frameworks"):
        table = study[name]
        if "left_api" in table:
            tasks = [(task(a), task(b)) for a, b in zip(table["left_api"], table["right_api"])]
        else:
            tasks = [(task(a), task(a)) for a in table["api"]]
        assert all(a == b for a, b in tasks), name
    fit = study["fit_vs_train_on_batch"]
    assert set(fit["left_api"]) == {"fit"} and set(fit["right_api"]) == {"train_on_batch"}


def test_inference_cells_get_their_tf2_vs_tf1_and_graph_vs_eager_pairs(study):
    tf2 = study["tf2_vs_tf1"]
    inference = tf2[tf2["api"].map(task) == "infer"]
    # keras3 in tf2.21 stands for tf.keras against TF 1's tf.keras, per API
    assert set(inference["api"]) == {"call", "predict", "predict_on_batch"}
    assert set(inference["right_keras"]) == {"tf.keras"}
    gve = study["graph_vs_eager"]
    assert set(gve["api"]) == {"call", "predict", "train_on_batch"}
    call = gve[gve["api"] == "call"].iloc[0]
    assert call["ratio"] == pytest.approx(0.001 / 0.002, rel=1e-3)  # session.run vs model(x)


def test_frameworks_and_guidance_keep_tasks_apart(study):
    frameworks = study["frameworks"]
    torch = frameworks[frameworks["left_env"] == "torch2.13"]
    # each task against TF's fastest cell of that task: graph train_on_batch, graph call
    assert set(zip(torch["left_api"], torch["right_api"], torch["right_mode"])) == {
        ("inference_mode", "call", "graph"), ("custom_loop", "train_on_batch", "graph")}
    guidance = study["guidance"]
    # the fastest inference call (1 ms) is a DO; no training step is measured against it
    do = guidance[guidance["list"] == "DO"]
    assert {task(a) for a in do["api"]} == {"train", "infer"}
    assert list(guidance["task"]) == [task(a) for a in guidance["api"]]
    # training rows first, then inference
    assert guidance["task"].map({"train": 0, "infer": 1}).is_monotonic_increasing
    slow = guidance[(guidance["list"] == "DONT") & (guidance["api"] == "train_on_batch")]
    assert slow.empty  # 8-10 ms training steps are within 2x of the fastest training step


def test_cells_say_their_task(study):
    cells = study["cells"]
    assert dict(zip(cells["api"], cells["task"])) == {
        "call": "infer", "predict": "infer", "predict_on_batch": "infer",
        "inference_mode": "infer", "train_on_batch": "train", "fit": "train",
        "custom_loop": "train"}


# --- spikes -----------------------------------------------------------------------------------

def test_tail_figures_count_samples_over_their_own_process_median():
    quiet = [1.0] * 97 + [5.0] * 3  # 3 spikes at 5x the median
    slow = [2.0] * 100  # a process that is slower throughout: no spike
    got = spikes.tail_figures([quiet, slow], spike_factor=2.0)
    pooled = np.array(quiet + [1.0] * 100)  # ratios to each process's own median
    assert got["spikes"] == 3
    assert got["max_over_median"] == 5.0
    assert got["p95_over_median"] == pytest.approx(np.percentile(pooled, 95))
    assert got["p99_over_median"] == pytest.approx(np.percentile(pooled, 99))
    assert got["p95_over_median"] == 1.0 and got["p99_over_median"] == 5.0
    assert got["spike_factor"] == 2.0
    # a stricter multiple counts fewer: exactly 5x the median is not above 5x
    assert spikes.tail_figures([quiet], spike_factor=5.0)["spikes"] == 0
    assert spikes.tail_figures([quiet], spike_factor=4.9)["spikes"] == 3


def test_tail_figures_without_samples_are_empty():
    got = spikes.tail_figures([[]], spike_factor=3.0)
    assert got["spikes"] is None and got["max_over_median"] is None
    assert got["spike_factor"] == 3.0


def test_spike_columns_in_cells_csv(tmp_path):
    root = tmp_path / "cells"
    base = [0.01] * 50
    files = [write_cell(root, "tf2.21", keras="keras3", api="predict", repeat=0,
                        samples=base[:-2] + [0.05, 0.03]),
             write_cell(root, "tf2.21", keras="keras3", api="predict", repeat=1, samples=base)]
    tables, out, _ = run(tmp_path, files, spike_factor=2.5)
    row = tables["cells"].iloc[0]
    assert row["spikes"] == 2 and row["spike_factor"] == 2.5
    assert row["max_over_median"] == pytest.approx(5.0)
    header = (out / "tables" / "cells.csv").read_text().splitlines()[0].split(",")
    assert set(spikes.COLUMNS) <= set(header)


def test_the_questions_training_claims_ignore_inference_rows(study):
    from driver.report import claims

    judged = {c["claim"]: c for c in claims.claims(study)}
    gve = study["graph_vs_eager"]
    training_rows = int((gve["api"].map(task) != "infer").sum())
    assert 0 < training_rows < len(gve)
    assert judged["Graph is faster than eager"]["n"] == training_rows
