"""A user's own model and data (config `models` / `data`): refusals naming the layer, the new
layers' FLOPs checked by hand on small cases, the seed's models untouched."""
import pytest

from tfspeed import models, usermodels


@pytest.fixture(autouse=True)
def clean_registry():
    """Each test registers into the models module; put it back as it was afterwards."""
    saved = models.snapshot()
    yield
    models.restore(saved)


TOKENS = {"batch": 2, "shape": [5], "input": "tokens", "target": "sparse"}
ENCODER = {"layers": [["embedding", 50, 8], ["encoder", 2, 4, 16], "gap", ["dense", 3, "softmax"]],
           "loss": "sparse_categorical_crossentropy", "optimizer": "adam",
           "learning_rate": 0.001}


def register(model, data, name="mine", data_name="seqs"):
    usermodels.register({name: model}, {data_name: data})
    return name, data_name


def refusal(model=None, data=None):
    with pytest.raises(usermodels.ModelError) as info:
        usermodels.register({"mine": model} if model else {}, {"seqs": data} if data else {})
    return str(info.value)


def test_unknown_layer_is_refused_naming_it():
    text = refusal(dict(ENCODER, layers=[["embedding", 50, 8], ["transformer", 2], "gap",
                                         ["dense", 3, "softmax"]]))
    assert "models.mine.layers[1]" in text and "unknown layer 'transformer'" in text
    assert "encoder" in text  # the known layers are listed


def test_wrong_arity_and_bad_arguments_are_refused():
    text = refusal(dict(ENCODER, layers=[["embedding", 50], "gap", ["dense", 3, "softmax"]]))
    assert "layers[0]" in text and "takes 2 arguments (vocabulary, dim), got 1" in text
    text = refusal(dict(ENCODER, layers=[["embedding", 50, 8], ["conv1d", 4, 3, 1, "full"], "gap",
                                         ["dense", 3, "softmax"]]))
    assert "layers[1]" in text and "padding" in text and "'full'" in text
    text = refusal(dict(ENCODER, layers=[["embedding", 50, 8], ["gru", -4], "gap",
                                         ["dense", 3, "softmax"]]))
    assert "units must be a positive integer, got -4" in text
    text = refusal(dict(ENCODER, layers=[["dropout", 1.5], ["dense", 3, "softmax"]]))
    assert "rate must be a number in [0, 1)" in text
    assert "got 'softmax'" in refusal(dict(ENCODER, layers=[["conv2d", 4, 3, "softmax"], "gap",
                                                             ["dense", 3, "softmax"]]))
    assert "a layer is a list" in refusal(dict(ENCODER, layers=[{"dense": 3}]))


def test_impossible_shapes_are_refused_naming_the_layer():
    name, data = register(dict(ENCODER, layers=[["embedding", 50, 8], ["conv1d", 4, 9, 1, "valid"],
                                                 "gap", ["dense", 3, "softmax"]]), TOKENS)
    why = usermodels.pair_error(name, data)
    assert "models.mine.layers[1] (conv1d 4 9 1 valid)" in why and "impossible shape" in why
    assert not models.output_length_ok(name, data)
    # an image layer on sequences: wrong rank
    name, data = register(dict(ENCODER, layers=[["conv2d", 4, 3, "relu"], "flatten",
                                                 ["dense", 1, "sigmoid"]],
                                loss="binary_crossentropy"),
                          {"batch": 2, "shape": [10, 3], "target": "binary"})
    why = usermodels.pair_error(name, data)
    assert "layers[0] (conv2d 4 3 relu)" in why and "rank 3" in why and "[10, 3]" in why
    # token data without an embedding first, and an embedding that is not first
    name, data = register(dict(ENCODER, layers=[["gru", 4], "gap", ["dense", 3, "softmax"]]),
                          TOKENS)
    assert "needs an embedding as the first layer" in usermodels.pair_error(name, data)
    name, data = register(dict(ENCODER, layers=[["dense", 4, "relu"], ["embedding", 9, 4], "gap",
                                                 ["dense", 3, "softmax"]]),
                          dict(TOKENS, input="float", shape=[5, 2]))
    assert "must be the first layer" in usermodels.pair_error(name, data)


def test_one_output_per_sample():
    name, data = register({"layers": [["gru", 4], ["dense", 1, "sigmoid"]]},
                          {"batch": 2, "shape": [6, 3], "target": "binary"})
    why = usermodels.pair_error(name, data)
    assert "layers[1] (dense 1 sigmoid) outputs shape [6, 1] per sample" in why


def test_loss_and_target_must_agree_with_the_last_layer():
    text = refusal(dict(ENCODER, layers=[["embedding", 50, 8], "gap", ["dense", 3, "sigmoid"]]))
    assert "layers[2] (dense 3 sigmoid)" in text and "softmax" in text
    text = refusal(dict(ENCODER, loss="hinge"))
    assert "models.mine.loss" in text and "hinge" in text
    text = refusal(dict(ENCODER, optimizer="lamb"))
    assert "models.mine.optimizer" in text
    name, data = register(ENCODER, dict(TOKENS, target="binary"))
    assert "binary targets" in usermodels.pair_error(name, data)
    assert "data.seqs" in refusal(data={"batch": 0, "shape": [5]})
    assert "data.seqs.input" in refusal(data=dict(TOKENS, input="images"))


def test_builtin_names_cannot_be_taken():
    assert "built-in model" in str(pytest.raises(
        usermodels.ModelError, usermodels.register, {"small": ENCODER}, {}).value)
    assert "built-in data" in str(pytest.raises(
        usermodels.ModelError, usermodels.register, {}, {"mnist": TOKENS}).value)


def test_encoder_flops_by_hand():
    """Batch 2, 5 tokens, dim 8, 2 heads of key_dim 4, feed-forward 16, 3 classes."""
    name, data = register(ENCODER, TOKENS)
    assert usermodels.pair_error(name, data) is None
    b, n, d, h, k, ff = 2, 5, 8, 2, 4, 16
    projections = 3 * 2 * b * n * d * (h * k)  # Q, K, V
    scores = 2 * b * h * n * n * k  # QK^T
    weighted = 2 * b * h * n * n * k  # softmax(.) V
    out = 2 * b * n * (h * k) * d
    feed = 2 * b * n * d * ff + 2 * b * n * ff * d
    head = 2 * b * d * 3
    assert models.layer_flops(name, data) == [
        ("embedding", 0), ("encoder", projections + scores + weighted + out + feed),
        ("dense", head)]
    forward = projections + scores + weighted + out + feed + head
    assert models.step_flops(name, data, "call") == forward
    # the embedding's input is the data: no input gradient to subtract, and it adds nothing
    assert models.step_flops(name, data, "fit") == 3 * forward


def test_gru_mha_norm_flops_by_hand():
    name, data = register({"layers": [["gru", 3], "batchnorm", ["mha", 2, 2], "layernorm", "gap",
                                      ["dense", 1, "sigmoid"]], "loss": "binary_crossentropy"},
                          {"batch": 4, "shape": [6, 5], "target": "binary"})
    gru = 2 * 4 * 6 * 3 * 3 * (5 + 3)  # 3 gates of (input 5 + recurrent 3) x 3 units, 6 steps
    mha = 3 * 2 * 4 * 6 * 3 * 4 + 2 * 2 * 4 * 2 * 6 * 6 * 2 + 2 * 4 * 6 * 4 * 3
    dense = 2 * 4 * 3 * 1
    assert models.layer_flops(name, data) == [("gru", gru), ("mha", mha), ("dense", dense)]
    assert models.train_flops(name, data) == 3 * (gru + mha + dense) - gru


def test_conv3d_flops_and_shape_by_hand():
    name, data = register({"layers": [["conv3d", 4, 3, "relu"], "gap", ["dense", 1, None]],
                           "loss": "mse", "optimizer": "sgd", "learning_rate": 0.01},
                          {"batch": 2, "shape": [5, 6, 7, 2], "target": "regression"})
    # valid padding: 3 x 4 x 5 voxels out, 27 taps x 2 channels x 4 filters each
    conv = 2 * 2 * (3 * 4 * 5) * 27 * 2 * 4
    assert models.layer_flops(name, data) == [("conv3d", conv), ("dense", 2 * 2 * 4 * 1)]
    assert usermodels.output_shape(models.MODELS[name], models.DATA[data][1:], False) == (1,)
    assert models.TRAINING[name] == ("sgd", 0.01, "mse")


def test_seed_models_keep_their_flops():
    """The new layer kinds leave the seed's formulas alone (hand values as in test_cells)."""
    small = 2 * 32 * 35 * 40 * 30 * 128 + 2 * 32 * 128 * 64 + 2 * 32 * 64 * 1
    assert models.forward_flops("small", "small") == small
    assert models.output_length_ok("medium", "small") and not models.output_length_ok(
        "large", "small")


def test_payload_travels_and_registers_again():
    name, data = register(ENCODER, TOKENS)
    spec = usermodels.payload(name, data)
    assert spec == {"models": {"mine": ENCODER}, "data": {"seqs": TOKENS}}
    assert usermodels.payload("small", "small") is None
    # a fresh process registers from the cell's spec (same description: no refusal)
    usermodels.register_cell({"model": name, "data": data, "spec": spec})
    assert models.DATA["seqs"] == (2, 5) and models.DATA_INPUT["seqs"] == "tokens"


def env_facts(name):
    """The plan's facts of a real env file (envs/<name>.yaml), as the workflow reads them."""
    from pathlib import Path

    import yaml

    from driver.study import envspec

    path = Path(__file__).resolve().parents[3] / "envs" / ("%s.yaml" % name)
    return envspec.parse_spec(name, yaml.safe_load(path.read_text()))


def test_a_layer_a_keras_lacks_makes_only_its_cells_impossible_at_plan_time():
    """A user model with multi-head attention: TF 1.14's tf.keras and standalone Keras have no
    MultiHeadAttention, so their cells are never planned and why_not names the layer; Keras 3,
    tf_keras and PyTorch cells of the same model are planned."""
    from tfspeed import cells

    name, data = register(ENCODER, TOKENS)
    grid = {"pairs": [[name, data]], "modes": ["eager", "graph"],
            "apis": ["train_on_batch", "custom_loop"], "inputs": ["numpy"], "devices": ["cpu"]}
    tf114, tf221, torch = env_facts("tf1.14"), env_facts("tf2.21"), env_facts("torch2.13")
    for keras in ("tf.keras", "keras"):
        cell = dict(model=name, data=data, keras=keras, mode="graph", api="train_on_batch",
                    input="numpy", device="cpu")
        reason = cells.why_not(tf114, cell)
        assert reason and "layer 1 (encoder)" in reason and "MultiHeadAttention" in reason, reason
    assert cells.expand_grid(tf114, dict(grid, keras="all")) == []
    planned = {(c["keras"], c["api"]) for c in cells.expand_grid(tf221, dict(grid, keras="all"))}
    assert {("keras3", "train_on_batch"), ("tf_keras", "train_on_batch")} <= planned
    assert cells.expand_grid(torch, dict(grid, keras=["none"]))
    # tf.keras has it from TF 2.4; the private tensorflow.python.keras lost it from TF 2.10
    tf23, tf24, tf28, tf211 = (env_facts(e) for e in ("tf2.3", "tf2.4", "tf2.8", "tf2.11"))
    cell = dict(model=name, data=data, keras="tf.keras", mode="eager", api="train_on_batch",
                input="numpy", device="cpu")
    assert "MultiHeadAttention" in cells.why_not(tf23, cell)
    assert cells.why_not(tf24, cell) is None and cells.why_not(tf28, cell) is None
    assert cells.why_not(tf24, dict(cell, keras="tf.python.keras")) is None
    # the private copy in TF 2.8 has MultiHeadAttention but no LayerNormalization
    assert "LayerNormalization" in cells.why_not(tf28, dict(cell, keras="tf.python.keras"))
    assert "MultiHeadAttention" in cells.why_not(tf211, dict(cell, keras="tf.python.keras"))


def test_models_without_the_new_layers_plan_as_before():
    from tfspeed import cells

    name, data = register({"layers": [["embedding", 50, 8], ["gru", 8], "gap",
                                      ["dense", 3, "softmax"]],
                           "loss": "sparse_categorical_crossentropy"}, TOKENS)
    tf114 = env_facts("tf1.14")
    cell = dict(model=name, data=data, keras="keras", mode="graph", api="train_on_batch",
                input="numpy", device="cpu")
    assert usermodels.layer_why_not(tf114, cell) is None
    assert usermodels.layer_why_not(tf114, dict(cell, model="small", data="small")) is None
    assert cells.why_not(tf114, dict(cell, keras="tf.keras")) is None  # planned


PROBE = """
import json, sys, warnings
warnings.filterwarnings("ignore")
import tensorflow as tf
flavour, names = sys.argv[1], json.loads(sys.argv[2])
if flavour == "keras":
    import keras
elif flavour == "tf.keras":
    keras = tf.keras
else:
    from tensorflow.python import keras
print(json.dumps({n: hasattr(keras.layers, n) for n in names}))
"""


@pytest.mark.parametrize("env", ["tf1.14", "tf2.3", "tf2.8", "tf2.11"])
def test_the_plan_time_layer_spans_match_the_real_frameworks(env):
    """KERAS_LAYER_SPANS against hasattr(keras.layers, ...) in the built env (results/envs/):
    the plan refuses a cell exactly where its Keras lacks the class."""
    import glob
    import json
    import os
    import subprocess
    from pathlib import Path

    from tfspeed.versions import version_tuple

    repo = Path(__file__).resolve().parents[3]
    built = [json.loads(Path(p).read_text())
             for p in glob.glob(str(repo / "results" / "envs" / "*" / ("%s.json" % env)))]
    built = [b for b in built if b.get("status") == "ok"
             and os.path.exists(b.get("python_executable") or "")]
    if not built:
        pytest.skip("env %s is not built here" % env)
    facts = built[0]
    version = version_tuple(facts["framework_version"])
    for flavour in ("keras", "tf.keras", "tf.python.keras"):
        if flavour not in facts["flavours"]:
            continue
        names = sorted({n for (f, n) in usermodels.KERAS_LAYER_SPANS if f == flavour})
        out = subprocess.run([facts["python_executable"], "-c", PROBE, flavour, json.dumps(names)],
                             capture_output=True, text=True, timeout=300,
                             env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
        assert out.returncode == 0, out.stderr[-2000:]
        has = json.loads(out.stdout.strip().splitlines()[-1])
        for name in names:
            span = usermodels.KERAS_LAYER_SPANS[(flavour, name)]
            assert usermodels._has(span, version) == has[name], (env, flavour, name)
