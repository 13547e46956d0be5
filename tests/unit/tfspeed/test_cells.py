"""Pure functions of the study's plan: env specs, which cells exist, ids, model FLOPs."""
from pathlib import Path

import pytest
import yaml

from driver.study import envspec
from tfspeed import cells, models

REPO = Path(__file__).resolve().parents[3]
ENV_FILES = sorted((REPO / "envs").glob("*.yaml"))


def facts(pins, python="3.7", variables=None):
    return envspec.describe("x", python, pins, [], [], variables or {})


TF114 = facts({"tensorflow": "1.14.0", "keras": "2.2.5"})
TF20 = facts({"tensorflow": "2.0.0", "keras": "2.3.1"})
TF215 = facts({"tensorflow": "2.15.1", "keras": "2.15.0"}, "3.11")
TF221 = facts({"tensorflow-cpu": "2.21.0", "keras": "3.15.0", "tf-keras": "2.21.0"}, "3.12")
JAX = facts({"keras": "3.15.0", "jax": "0.10.2"}, "3.12", {"KERAS_BACKEND": "jax"})
TORCH = facts({"torch": "2.13.0"}, "3.11")


def cell(**axes):
    base = dict(model="small", data="small", keras="tf.keras", mode="eager",
                api="train_on_batch", input="numpy", device="cpu")
    base.update(axes)
    return base


@pytest.mark.parametrize("path", ENV_FILES, ids=lambda p: p.stem)
def test_every_env_file_is_a_pinned_conda_env(path):
    doc = yaml.safe_load(path.read_text())
    spec = envspec.parse_spec(path.stem, doc, str(path))
    assert spec["python"].count(".") == 1
    assert spec["framework"] in ("tensorflow", "torch", "jax")
    assert spec["flavours"]
    assert set(doc) <= {"name", "channels", "dependencies", "variables"}


def test_flavours_follow_the_pins():
    assert TF114["flavours"] == ["keras", "tf.keras", "tf.python.keras"]
    assert TF215["flavours"] == ["tf.keras", "tf.python.keras"]  # keras 2.15 is tf.keras itself
    assert TF221["flavours"] == ["keras3", "tf_keras"]
    assert JAX["framework"] == "jax" and JAX["flavours"] == ["keras3"]
    assert TORCH["framework"] == "torch"


def test_spec_errors_name_the_file():
    with pytest.raises(envspec.SpecError, match="envs/bad.yaml.*python"):
        envspec.parse_spec("bad", {"dependencies": ["pip", {"pip": ["a==1"]}]}, "envs/bad.yaml")
    with pytest.raises(envspec.SpecError, match="not pinned exactly"):
        envspec.parse_spec("bad", {"dependencies": ["python=3.7", {"pip": ["numpy>=1"]}]},
                           "envs/bad.yaml")
    with pytest.raises(envspec.SpecError, match="not a conda environment file"):
        envspec.parse_spec("bad", ["just", "a", "list"], "envs/bad.yaml")


@pytest.mark.parametrize("env, axes, exists", [
    (TF114, dict(keras="keras", mode="graph"), True),
    (TF114, dict(keras="keras", mode="eager"), False),  # placeholders need graph mode on TF 1
    (TF114, dict(keras="keras", mode="graph", input="tfdata"), False),
    (TF114, dict(mode="run_eagerly"), False),
    (TF114, dict(api="custom_loop", mode="function"), False),
    (TF20, dict(keras="keras", mode="eager"), True),  # Keras 2.3.1 runs eagerly on TF 2
    (TF215, dict(mode="xla"), True),
    (TF221, dict(keras="keras3", mode="graph"), False),  # Keras 3 has no v1 graph mode
    (TF221, dict(keras="tf_keras", mode="graph"), True),
    (TF221, dict(keras="tf.keras"), False),  # tf.keras is Keras 3 there: flavour keras3
    (TF221, dict(keras="keras3", api="custom_loop", mode="xla"), True),
    (TF221, dict(device="gpu"), False),  # a CPU build
    (TF114, dict(model="large", data="small"), False),
    (JAX, dict(keras="keras3", input="tfdata"), False),
    (JAX, dict(keras="keras3", api="fit"), True),
    (TORCH, dict(keras="none", api="custom_loop", mode="compile"), True),
    (TORCH, dict(keras="none", api="fit"), False),
])
def test_which_cells_exist(env, axes, exists):
    assert (cells.why_not(env, cell(**axes)) is None) == exists


def test_expand_grid_only_yields_cells_that_exist():
    grid = {"pairs": [["small", "small"]]}
    found = cells.expand_grid(TF114, grid)
    assert found and all(cells.why_not(TF114, c) is None for c in found)
    keys = {cells.cell_id(c) for c in found}
    assert len(keys) == len(found)
    assert "small-small.keras.graph.fit.numpy.cpu" in keys


def test_cell_id_round_trip():
    for keras in cells.KERAS:
        c = cell(keras=keras, api="train_on_batch", model="fault_segfault")
        assert cells.parse_cell_id(cells.cell_id(c)) == c


def test_seed_leaves_out_large_model_on_small_data():
    assert not models.output_length_ok("large", "small")
    assert models.output_length_ok("large", "medium")
    assert models.output_length_ok("medium", "small")


# --- inference (the seventh factor) and the other seeds' systems -----------------------------

@pytest.mark.parametrize("env, axes, exists", [
    (TF114, dict(api="call", mode="graph"), True),  # the plain session.run of the output
    (TF114, dict(api="call", mode="eager"), True),
    (TF114, dict(api="call", mode="function"), False),  # tf.function: TF 2 Keras models
    (TF114, dict(api="call", keras="keras", mode="graph"), True),
    (TF20, dict(api="call", keras="keras", mode="eager"), False),
    (TF114, dict(api="predict", mode="graph"), True),
    (TF114, dict(api="predict", input="tfdata"), False),  # the same numpy array everywhere
    (TF20, dict(api="call", mode="function"), True),
    (TF20, dict(api="call", mode="xla"), False),  # jit_compile needs TF >= 2.5
    (TF20, dict(api="predict", mode="function"), False),  # predict compiles its own function
    (TF20, dict(api="call", mode="run_eagerly"), False),  # a compile() option
    (TF20, dict(api="predict", mode="run_eagerly"), True),
    (TF215, dict(api="predict_on_batch", mode="xla"), True),
    (TF221, dict(api="call", keras="keras3", mode="xla"), True),
    (TF221, dict(api="call", keras="keras3", mode="graph"), False),  # no v1 graph mode
    (TF221, dict(api="inference_mode", keras="keras3"), False),  # PyTorch's
    (JAX, dict(api="predict", keras="keras3"), True),
    (JAX, dict(api="call", keras="keras3", mode="run_eagerly"), False),
    (TORCH, dict(api="call", keras="none", mode="torchscript"), True),
    (TORCH, dict(api="inference_mode", keras="none", mode="compile"), True),
    (TORCH, dict(api="predict", keras="none"), False),  # PyTorch has no predict
    (TF221, dict(model="cnn2d", data="mnist", keras="keras3", api="call"), True),
    (TF221, dict(model="cnn2d", data="mnist", keras="keras3", api="fit"), False),
    (TF221, dict(model="cnn2d", data="small", keras="keras3", api="call"), False),
    (TORCH, dict(model="cnn2d", data="mnist", keras="none", api="call"), True),
    (TF221, dict(model="lstm", data="tiny", keras="keras3", api="custom_loop"), True),
    (TORCH, dict(model="lstm", data="tiny", keras="none", api="custom_loop"), True),
    (TF20, dict(model="mlp784", data="mnist784", api="fit"), True),
    (TF114, dict(model="mlp784", data="mnist784", api="fit"), False),  # a TF 2 case
    (TORCH, dict(model="mlp784", data="mnist784", keras="none", api="custom_loop"), False),
    (TF221, dict(model="xsquared", data="scalar", keras="none", api="gradient",
                 mode="function"), True),
    (TF114, dict(model="xsquared", data="scalar", keras="none", api="gradient",
                 mode="function"), False),
    (TF114, dict(model="xsquared", data="scalar", keras="none", api="gradient",
                 mode="graph"), True),
    (TF221, dict(model="xsquared", data="scalar", keras="keras3", api="gradient"), False),
    (TF221, dict(model="small", keras="keras3", api="gradient"), False),
    (TORCH, dict(model="xsquared", data="scalar", keras="none", api="gradient"), False),
])
def test_which_new_cells_exist(env, axes, exists):
    assert (cells.why_not(env, cell(**axes)) is None) == exists


def test_every_refusal_says_why():
    refused = cells.why_not(TORCH, cell(api="predict", keras="none"))
    assert "no predict" in refused
    assert "numpy" in cells.why_not(TF221, cell(api="call", keras="keras3", input="tfdata"))


def test_task_of_every_api():
    assert {a: cells.task(a) for a in cells.APIS} == {
        "train_on_batch": "train", "fit": "train", "fit_epoch": "train", "custom_loop": "train",
        "call": "infer",
        "inference_mode": "infer", "predict": "infer", "predict_on_batch": "infer",
        "matmul": "micro", "gradient": "micro"}


def test_new_cell_ids_round_trip():
    for api in cells.APIS:
        c = cell(api=api, model="cnn2d", data="mnist")
        assert cells.parse_cell_id(cells.cell_id(c)) == c


def test_cnn2d_flops_by_hand():
    # 28x28x1 -> Conv2D 32 3x3 (26x26) -> pool (13x13) -> Conv2D 64 3x3 (11x11) -> pool (5x5)
    # -> 1600 features -> Dense 10; batch 32; 2 FLOPs per multiply-add
    conv1 = 2 * 32 * 26 * 26 * 3 * 3 * 1 * 32
    conv2 = 2 * 32 * 11 * 11 * 3 * 3 * 32 * 64
    dense = 2 * 32 * 5 * 5 * 64 * 10
    assert models.forward_flops("cnn2d", "mnist") == conv1 + conv2 + dense
    assert models.step_flops("cnn2d", "mnist", "call") == conv1 + conv2 + dense


def test_inference_flops_are_the_forward_pass_only():
    forward = models.forward_flops("small", "small")
    for api in ("call", "inference_mode", "predict", "predict_on_batch"):
        assert models.step_flops("small", "small", api) == forward
    assert models.step_flops("small", "small", "fit") == models.train_flops("small", "small")
    assert models.step_flops("matmul", "matmul", "matmul") == 2 * 1000 ** 3
    assert models.step_flops("xsquared", "scalar", "gradient") is None
    assert models.step_flops("fault_hang", "small", "fit") is None


def test_seed001_dense_net_and_lstm_flops_by_hand():
    d1, d2 = 2 * 100 * 784 * 128, 2 * 100 * 128 * 10
    assert models.forward_flops("mlp784", "mnist784") == d1 + d2
    # the question's LSTM on tiny data (32x14x30): BiLSTM 512 (1024 features out), LSTM 512 on
    # them (512 out), Conv1D 128x400 stride 4 'same' (14 -> 4 steps, the padding computed too),
    # Flatten (4 x 128 = 512), Dense 256, 128, 64, 1
    bi = 2 * 2 * 32 * 14 * 4 * 512 * (30 + 512)
    lstm = 2 * 32 * 14 * 4 * 512 * (1024 + 512)
    conv = 2 * 32 * 4 * 400 * 512 * 128
    dense = 2 * 32 * (512 * 256 + 256 * 128 + 128 * 64 + 64 * 1)
    assert models.forward_flops("lstm", "tiny") == bi + lstm + conv + dense


def test_own_data_pairs():
    assert models.output_length_ok("cnn2d", "mnist")
    assert not models.output_length_ok("cnn2d", "small")
    assert not models.output_length_ok("small", "mnist")
    assert models.output_length_ok("lstm", "tiny")
    assert not models.output_length_ok("medium", "tiny")  # its valid convolutions leave nothing
