"""A user's own model, described in a config file of their own (outside config.yaml): it runs end
to end in TF (Keras 3) and PyTorch, a Keras without its layers has no cells planned, and its
report names the model; malformed descriptions stop the study before any job."""
import copy
import json

import pandas as pd
import pytest
import yaml
from helpers import REPO, snakemake, write_config

pytestmark = pytest.mark.e2e

PRESET = REPO / "presets" / "own_model.yaml"


def cell_records(work):
    return [json.loads(p.read_text()) for p in (work / "results" / "cells").rglob("*.json")]


def own_config(**changes):
    """The template preset, made small: few steps, one process, TF 1.14, TF 2.21 and PyTorch."""
    config = yaml.safe_load(PRESET.read_text())
    config.update(envs=["tf1.14", "tf2.21", "torch2.13"], reference_env="tf1.14", repeats=1,
                  stop={"rule": "fixed", "iterations": 6})
    config["data"]["tokens"].update(batch=8, shape=[16])
    config["grids"] = [
        {"name": "own_tf", "envs": ["tf1.14", "tf2.21"], "pairs": [["encoder_classifier", "tokens"]],
         "keras": ["tf.keras", "keras3"], "modes": ["eager", "graph"],
         "apis": ["train_on_batch", "custom_loop"], "inputs": ["numpy"]},
        {"name": "own_torch", "envs": ["torch2.13"], "pairs": [["encoder_classifier", "tokens"]],
         "keras": ["none"], "modes": ["eager"], "apis": ["custom_loop", "call"],
         "inputs": ["numpy"]},
    ]
    config.update(changes)
    return config


def test_own_model_runs_end_to_end_and_the_report_names_it(tmp_path):
    cfg = write_config(tmp_path / "my_model.yaml", own_config())
    work = tmp_path / "work"
    snakemake(work, cfg, "--cores", "2", check=True)
    cells = pd.read_csv(work / "results/tables/cells.csv")
    assert set(cells.model) == {"encoder_classifier"} and set(cells.data) == {"tokens"}
    ok = cells[cells.status == "ok"]
    # Keras 3 on TF 2.21 (fit-less train_on_batch and a custom loop) and PyTorch ran it
    assert {("tf2.21", "train_on_batch"), ("tf2.21", "custom_loop"),
            ("torch2.13", "custom_loop"), ("torch2.13", "call")} <= set(zip(ok.env, ok.api)), \
        cells[["env", "cell_id", "status", "reason"]]
    # TF 1.14's tf.keras has no MultiHeadAttention: only its cells are impossible, at plan time
    # (tfspeed.cells.why_not names the layer; tests/unit/tfspeed/test_usermodels.py), so none ran
    tf1 = cells[cells.env == "tf1.14"]
    assert tf1.empty, tf1[["cell_id", "status", "reason"]]
    # FLOPs per step from the description: batch 8, 16 tokens, dim 32, 2 heads x 16, ff 64
    b, n, d, h, k, ff, classes = 8, 16, 32, 2, 16, 64, 4
    forward = (3 * 2 * b * n * d * h * k + 2 * 2 * b * h * n * n * k + 2 * b * n * h * k * d
               + 2 * 2 * b * n * d * ff + 2 * b * d * classes)
    flops = dict(zip(ok.api, ok.flops_per_step))
    assert flops["call"] == forward and flops["custom_loop"] == 3 * forward
    assert ok.median_s.gt(0).all()
    # same model, same function: each framework's build with the seeded weights gives the NumPy
    # pass's outputs (after the timed window; recorded in the cell file)
    records = cell_records(work)
    checked = [r for r in records if r["status"] == "ok"]
    assert len(checked) == len(ok)
    for r in checked:
        assert r["same_function"]["match"] is True, (r["cell_id"], r["same_function"])
    # ... and cells.csv carries it (a mismatch would be listed in the report's failures section)
    assert (ok.same_function == "match").all(), ok[["cell_id", "same_function"]]
    assert (ok.same_function_max_diff <= ok.same_function_tolerance).all()
    report = (work / "results/report.html").read_text()
    assert "encoder_classifier" in report
    assert "Same model, different function" not in report
    assert (work / "results/study.xlsx").stat().st_size > 0


BAD_LAYERS = {
    "unknown layer": ([["embedding", 2000, 32], ["transformer", 2, 16], "gap",
                       ["dense", 4, "softmax"]],
                      ["models.encoder_classifier.layers[1]", "unknown layer 'transformer'"]),
    "wrong arity": ([["embedding", 2000, 32], ["encoder", 2, 16], "gap", ["dense", 4, "softmax"]],
                    ["layers[1]", "encoder takes 3 arguments"]),
    "impossible shape": ([["embedding", 2000, 32], ["conv1d", 8, 80, 1, "valid"], "gap",
                          ["dense", 4, "softmax"]],
                         ["layers[1] (conv1d 8 80 1 valid)", "impossible shape"]),
}


@pytest.mark.parametrize("case", sorted(BAD_LAYERS))
def test_malformed_model_stops_before_any_job(tmp_path, case):
    layers, words = BAD_LAYERS[case]
    config = own_config()
    config["models"] = copy.deepcopy(config["models"])
    config["models"]["encoder_classifier"]["layers"] = layers
    cfg = write_config(tmp_path / "bad_model.yaml", config)
    proc = snakemake(tmp_path / "work", cfg, "--cores", "1")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    for word in words:
        assert word in out, "expected %r in the error:\n%s" % (word, out[-3000:])
    assert not (tmp_path / "work" / "results").exists(), "a job ran before the config was checked"


def test_quick_study_holds_each_new_layer_kind(quick_run):
    """tests/quick.yaml: one cell of each layer kind beyond the seed's in TF 1.14 (tf.keras, v1
    graph), TF 2.21 and JAX (Keras 3) and PyTorch, where the framework has the layer; each ran and
    computes the NumPy pass's function with the seeded weights."""
    work, _ = quick_run
    records = {(r["env"], r["model"]): r for r in cell_records(work)
               if r["model"].startswith("q_")}
    want = {(env, model) for env in ("tf1.14", "tf2.21", "keras3-jax", "torch2.13")
            for model in ("q_rnn", "q_conv3d")}
    want |= {(env, "q_attention") for env in ("tf2.21", "keras3-jax", "torch2.13")}
    assert set(records) == want
    for key, r in records.items():
        assert r["status"] == "ok", (key, r["reason"])
        assert r["same_function"]["match"] is True, (key, r["same_function"])
        assert r["flops_per_step"] > 0, key


def test_generator_and_sequence_inputs_run(tmp_path):
    """Inputs beyond numpy and tf.data: a Python generator and a Sequence (PyDataset in Keras 3)
    feed train_on_batch and fit in TF 1.14 (tf.keras, v1 graph), TF 2.21 and JAX (Keras 3)."""
    config = yaml.safe_load((REPO / "tests" / "quick.yaml").read_text())
    config.update(envs=["tf1.14", "tf2.21", "keras3-jax"], stop={"rule": "fixed", "iterations": 6})
    config["grids"] = [
        {"name": "inputs_tf1", "envs": ["tf1.14"], "pairs": [["small", "small"]],
         "keras": ["tf.keras"], "modes": ["graph"], "apis": ["train_on_batch"],
         "inputs": ["generator", "sequence"]},
        {"name": "inputs_keras3", "envs": ["tf2.21", "keras3-jax"], "pairs": [["small", "small"]],
         "keras": ["keras3"], "modes": ["eager"], "apis": ["fit"],
         "inputs": ["generator", "sequence"]},
    ]
    work = tmp_path / "work"
    snakemake(work, write_config(tmp_path / "inputs.yaml", config), "--cores", "2", check=True)
    cells = pd.read_csv(work / "results/tables/cells.csv")
    assert (cells.status == "ok").all(), cells[["env", "cell_id", "reason"]]
    assert set(zip(cells.env, cells.api, cells.input)) == {
        (env, api, kind) for env, api in (("tf1.14", "train_on_batch"), ("tf2.21", "fit"),
                                          ("keras3-jax", "fit"))
        for kind in ("generator", "sequence")}
    assert (cells.median_s > 0).all()


BUILDERS = '''
"""Test builders: a functional model with a custom layer and two branches, and one that raises."""


def build(keras, data):
    class Scale(keras.layers.Layer):
        def build(self, input_shape):
            self.scale = self.add_weight(name="scale", shape=(int(input_shape[-1]),),
                                         initializer="ones", trainable=True)
            super(Scale, self).build(input_shape)

        def call(self, x):
            return x * self.scale

        def compute_output_shape(self, input_shape):
            return input_shape

    inputs = keras.layers.Input(shape=tuple(data.shape))
    left = keras.layers.Conv1D(4, 3, padding="same", activation="relu")(inputs)
    right = Scale()(keras.layers.Conv1D(4, 1)(inputs))
    x = keras.layers.GlobalAveragePooling1D()(keras.layers.Concatenate()([left, right]))
    return keras.models.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(x))


def broken(keras, data):
    raise RuntimeError("no model today")
'''


def test_a_builder_runs_in_every_keras_flavour_and_a_failing_one_fails_its_cells(tmp_path):
    """A model as Python code (config `builder`, docs/own-model.md) in every Keras flavour of
    the core envs: TF 1.14's tf.keras and standalone Keras, TF 2.15's tf.keras, TF 2.21's
    tf_keras and Keras 3, Keras 3 on JAX and on torch: the good builder's cells are ok through
    the factor grid, the failing builder's are written as failed with the error's last line,
    naming file, function and env; the study goes on and reports. The preset's pairs in one
    process run for the builder's model (its code travels with both sides of each pair), and
    the report's answer for the model ("Your model") names the fastest way as the pairs table
    decides it."""
    (tmp_path / "my_model.py").write_text(BUILDERS)
    config = yaml.safe_load((REPO / "presets" / "own_model_python.yaml").read_text())
    config.update(envs=["tf1.14", "tf2.15", "tf2.21", "keras3-jax", "keras3-torch"],
                  reference_env="tf1.14", repeats=1, stop={"rule": "fixed", "iterations": 4})
    config["models"] = {"mine": {"builder": "my_model.py:build", "iterations": 4},
                        "broken": {"builder": "my_model.py:broken"}}
    config["data"] = {"seqs": {"batch": 4, "shape": [16, 3], "target": "binary"}}
    config["grids"] = [
        {"name": "own_code", "envs": ["tf2.21"], "pairs": [["mine", "seqs"]],
         "keras": ["tf_keras", "keras3"], "modes": ["eager", "graph"],
         "apis": ["train_on_batch", "fit", "predict"], "inputs": ["numpy"]},
        # the failing builder in a few cells, none of which pair in the tables below
        {"name": "own_broken", "envs": ["tf2.21"], "pairs": [["broken", "seqs"]],
         "keras": ["tf_keras"], "modes": ["eager", "graph"], "apis": ["train_on_batch", "predict"],
         "inputs": ["numpy"]},
        # TF 1.14's tf.keras and standalone Keras 2.2, TF 2.15's tf.keras (Keras 2)
        {"name": "own_tf1", "envs": ["tf1.14"], "pairs": [["mine", "seqs"]],
         "keras": ["tf.keras", "keras"], "modes": ["graph"], "apis": ["train_on_batch", "fit"],
         "inputs": ["numpy"]},
        {"name": "own_tf215", "envs": ["tf2.15"], "pairs": [["mine", "seqs"]],
         "keras": ["tf.keras"], "modes": ["eager", "graph"], "apis": ["train_on_batch"],
         "inputs": ["numpy"]},
        # Keras 3 on JAX and on torch: the builder's model there, joined to TF's ways by duets
        {"name": "own_jax", "envs": ["keras3-jax", "keras3-torch"], "pairs": [["mine", "seqs"]],
         "keras": ["keras3"], "modes": ["eager"], "apis": ["train_on_batch"],
         "inputs": ["numpy"]},
        # tf.function against eager for the builder's model (the preset's compiled_vs_eager)
        {"name": "own_compiled", "envs": ["tf2.21"], "pairs": [["mine", "seqs"]],
         "keras": ["tf_keras"], "modes": ["eager", "function"], "apis": ["custom_loop"],
         "inputs": ["numpy"]},
    ]
    # the preset's pairs, two of its tables, small: two replicates of short windows, one look
    assert config["pairs"]["tables"]
    assert "compiled_vs_eager" in config["pairs"]["tables"]
    config["pairs"] = dict(config["pairs"], tables=["fit_vs_train_on_batch", "keras_vs_tfkeras",
                                                    "compiled_vs_eager"], aa=False)
    # the model across envs and modes in duets of its own (no headline), as the preset has them
    assert config["duets"]["models"] and config["duets"]["headline"] is False
    assert config["duets"]["frameworks"]["ways"]
    config["duets"] = {"modes": ["graph", "eager"], "headline": False,
                       "models": [["mine", "seqs"]], "replicates": 2, "max_replicates": 2,
                       "windows": 2, "window_s": 0.05,
                       "frameworks": {"against": config["duets"]["frameworks"]["against"],
                                      "ways": [{"env": e, "mode": "eager",
                                                "api": "train_on_batch"}
                                               for e in ("keras3-jax", "keras3-torch")]}}
    work = tmp_path / "work"
    snakemake(work, write_config(tmp_path / "mine.yaml", config), "--cores", "2", check=True)
    cells = pd.read_csv(work / "results/tables/cells.csv")
    good, bad = cells[cells.model == "mine"], cells[cells.model == "broken"]
    # tf_keras eager and graph, Keras 3 eager (it has no graph mode), each api; tf.keras graph
    assert set(zip(good.env, good.keras, good["mode"], good.api)) == {
        ("tf2.21", k, m, a)
        for k, m in (("tf_keras", "eager"), ("tf_keras", "graph"), ("keras3", "eager"))
        for a in ("train_on_batch", "fit", "predict")} | {
        ("tf1.14", k, "graph", a) for k in ("tf.keras", "keras")
        for a in ("train_on_batch", "fit")} | {
        ("tf2.15", "tf.keras", m, "train_on_batch") for m in ("eager", "graph")} | {
        (e, "keras3", "eager", "train_on_batch") for e in ("keras3-jax", "keras3-torch")} | {
        ("tf2.21", "tf_keras", m, "custom_loop") for m in ("eager", "function")}
    assert (good.status == "ok").all(), good[["cell_id", "status", "reason"]]
    assert len(bad) == 4 and set(bad.keras) == {"tf_keras"}
    assert (bad.status == "failed").all()
    for reason in bad.reason:
        assert reason.startswith("my_model.py:broken in TF 2.21"), reason
        assert reason.endswith("failed: RuntimeError: no model today (my_model.py line 26)")
    records = cell_records(work)
    source_hash = {r["user_code"]["models.mine.builder"]["sha256"] for r in records
                   if r["model"] == "mine"}
    assert len(source_hash) == 1 and len(source_hash.pop()) == 64
    report = (work / "results/report.html").read_text()
    assert "mine" in report
    # the pairs of the builder's model ran in both envs, each side built from the builder's code
    pairs = pd.read_csv(work / "results/tables/pairs.csv")
    mine = pairs[pairs.left_cell_id.str.startswith("mine-")]
    assert set(zip(mine.env, mine["mode"], mine.table)) == {
        ("tf2.21", "eager", "fit_vs_train_on_batch"), ("tf2.21", "graph", "fit_vs_train_on_batch"),
        ("tf1.14", "graph", "fit_vs_train_on_batch"), ("tf2.21", "eager", "keras_vs_tfkeras"),
        ("tf1.14", "graph", "keras_vs_tfkeras"), ("tf2.21", "function", "compiled_vs_eager")}
    compiled = mine[mine.table == "compiled_vs_eager"].iloc[0]
    assert (compiled.left_cell_id, compiled.right_cell_id) == (
        "mine-seqs.tf_keras.function.custom_loop.numpy.cpu",
        "mine-seqs.tf_keras.eager.custom_loop.numpy.cpu")
    assert (mine.n == 2).all() and mine.ratio.gt(0).all(), mine[["cell_id", "n", "reason"]]
    # the answer for the model: recomputed here from the study's own tables, it is the page's
    from driver.report.sections import own_answer

    frameworks = pd.read_csv(work / "results/tables/frameworks.csv")
    best = own_answer.paired_best(pairs, "mine", "train")
    # one group of ways per env and mode its pairs join; the custom loop's tf.function and eager
    # ways in a group of their own (no pair joins a custom loop to train_on_batch)
    assert {frozenset(tuple(x) for x in b["settings"]) for b in best} == {
        frozenset({("tf2.21", "eager")}), frozenset({("tf2.21", "graph")}),
        frozenset({("tf1.14", "graph")}), frozenset({("tf2.21", "eager"), ("tf2.21", "function")})}
    # the duets of the model across envs and modes: TF 2.21's tf_keras graph, Keras 3 and
    # tf_keras eager against TF 1.14, and TF 1.14's graph against its eager; no headline row
    own = pd.read_csv(work / "results/tables/duets_own.csv")
    assert sorted(zip(own.env, own["mode"], own.keras)) == [
        ("tf1.14", "graph", "tf.keras"), ("tf2.15", "eager", "tf.keras"),
        ("tf2.15", "graph", "tf.keras"), ("tf2.21", "eager", "keras3"),
        ("tf2.21", "eager", "tf_keras"), ("tf2.21", "graph", "tf_keras")]
    assert (own.n == 2).all(), own[["cell_id", "n", "reason"]]
    assert pd.read_csv(work / "results/tables/duets.csv").empty
    # Keras 3 on JAX against Keras 3 on TF 2.21 (the preset's duets.frameworks), in duets
    others = pd.read_csv(work / "results/tables/duets_frameworks.csv").sort_values("env")
    assert list(others.env) == ["keras3-jax", "keras3-torch"]
    assert set(others.right_env) == {"tf2.21"}
    assert set(others.left_cell_id) == {"mine-seqs.keras3.eager.train_on_batch.numpy.cpu"}
    assert (others.n == 2).all() and others.ratio.gt(0).all(), others.reason.tolist()
    # with them, the pairs' groups of every env and mode join into one graph of paired rows,
    # JAX's way among them
    duets = pd.concat([own, others], ignore_index=True)
    joined = sorted(own_answer.paired_best(pairs, "mine", "train", duets),
                    key=lambda b: -len(b["settings"]))
    assert len(joined) == 2 and {tuple(x) for x in joined[1]["settings"]} == {
        ("tf2.21", "eager"), ("tf2.21", "function")}
    assert {tuple(x) for x in joined[0]["settings"]} >= {
        ("tf2.21", "eager"), ("tf2.21", "graph"), ("tf1.14", "graph"), ("keras3-jax", "eager"),
        ("keras3-torch", "eager"), ("tf2.15", "eager"), ("tf2.15", "graph")}
    text = own_answer.lead(pairs, frameworks, "mine", "train", 10.0, duets=duets)
    assert text.startswith("The fastest way to train mine here is %s" % joined[0]["way"]), text
    section = report[report.index('<section id="own_answer"'):].replace("&#39;", "'")
    assert text.replace("±", "&plusmn;") in section or text in section, (text, section[:3000])


def test_a_missing_builder_function_stops_before_any_job(tmp_path):
    (tmp_path / "my_model.py").write_text(BUILDERS)
    config = yaml.safe_load((REPO / "presets" / "own_model_python.yaml").read_text())
    config["models"]["my_net"]["builder"] = "my_model.py:biuld"
    config["models"].pop("mobilenet")
    config["grids"] = [g for g in config["grids"] if g["name"] != "inference"]
    proc = snakemake(tmp_path / "work", write_config(tmp_path / "bad.yaml", config), "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "config error at 'models.my_net.builder'" in out, out[-3000:]
    assert "my_model.py has no function 'biuld'" in out, out[-3000:]


def test_the_presets_example_builders_run_on_a_tiny_study(tmp_path):
    """The builders shipped with presets/own_model_python.yaml (presets/examples/my_model.py: the
    two-branch model with a custom layer, and keras.applications' MobileNetV2 without weights)
    train and predict in TF 2.21's Keras 3 and tf_keras and in Keras 3 on JAX, few steps, one
    process each: every cell ok, each from the example file's code."""
    config = yaml.safe_load((REPO / "presets" / "own_model_python.yaml").read_text())
    example = REPO / "presets" / "examples" / "my_model.py"
    for model in config["models"].values():
        model["builder"] = f"{example}:{model['builder'].split(':')[1]}"
        model["iterations"] = 3
    config["data"]["seqs"].update(batch=4, shape=[32, 4])
    config["data"]["images"].update(batch=2)
    config.update(envs=["tf2.21", "keras3-jax"], reference_env="tf2.21", repeats=1, twins=0,
                  stop={"rule": "fixed", "iterations": 3}, duets={"modes": []},
                  pairs={"tables": []}, probe={"processes": 0}, time_budget_min=None,
                  allocation={"budget_s": 0})
    config["grids"] = [
        {"name": "examples", "envs": ["tf2.21", "keras3-jax"],
         "pairs": [["my_net", "seqs"], ["mobilenet", "images"]], "keras": ["tf_keras", "keras3"],
         "modes": ["eager"], "apis": ["train_on_batch", "predict"], "inputs": ["numpy"]}]
    work = tmp_path / "work"
    snakemake(work, write_config(tmp_path / "examples.yaml", config), "--cores", "2",
              check=True)
    cells = pd.read_csv(work / "results/tables/cells.csv")
    assert set(zip(cells.env, cells.keras, cells.model, cells.api)) == {
        (e, k, m, a) for e, k in (("tf2.21", "tf_keras"), ("tf2.21", "keras3"),
                                  ("keras3-jax", "keras3"))
        for m in ("my_net", "mobilenet") for a in ("train_on_batch", "predict")}
    assert (cells.status == "ok").all(), cells[["cell_id", "status", "reason"]]
    assert cells.median_s.gt(0).all()
    code = {r["user_code"][f"models.{r['model']}.builder"]["sha256"] for r in cell_records(work)}
    assert len(code) == 1  # both models from the one example file
