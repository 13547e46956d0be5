"""Inputs beyond numpy and tf.data: a Python generator and a keras.utils.Sequence / PyDataset feed
Keras' train_on_batch and fit wherever Keras runs; every other cell with them is not enumerated,
with the reason."""
from driver.study import envspec
from tfspeed import cells


def facts(pins, python="3.7", variables=None):
    return envspec.describe("x", python, pins, [], [], variables or {})


TF114 = facts({"tensorflow": "1.14.0", "keras": "2.2.5"})
TF221 = facts({"tensorflow-cpu": "2.21.0", "keras": "3.15.0", "tf-keras": "2.21.0"}, "3.12")
JAX = facts({"keras": "3.15.0", "jax": "0.10.2"}, "3.12", {"KERAS_BACKEND": "jax"})
TORCH = facts({"torch": "2.13.0"}, "3.11")


def cell(**axes):
    base = dict(model="small", data="small", keras="tf.keras", mode="eager",
                api="train_on_batch", input="generator", device="cpu")
    base.update(axes)
    return base


def test_python_inputs_are_axis_values():
    assert {"generator", "sequence"} <= set(cells.INPUTS)
    assert cells.PYTHON_INPUTS == ("generator", "sequence")


def test_keras_train_on_batch_and_fit_take_them_everywhere():
    for kind in cells.PYTHON_INPUTS:
        for api in ("train_on_batch", "fit"):
            assert cells.why_not(TF114, cell(input=kind, api=api, mode="graph")) is None
            assert cells.why_not(TF114, cell(input=kind, api=api, keras="keras",
                                              mode="graph")) is None
            assert cells.why_not(TF221, cell(input=kind, api=api, keras="keras3")) is None
            assert cells.why_not(JAX, cell(input=kind, api=api, keras="keras3")) is None


def test_other_cells_with_them_say_why_not():
    why = "a generator or Sequence input feeds Keras' train_on_batch and one-step fit"
    assert cells.why_not(TORCH, cell(keras="none", api="custom_loop")) == why
    assert cells.why_not(TF221, cell(keras="keras3", api="custom_loop")) == why
    assert cells.why_not(TF221, cell(keras="keras3", api="predict", input="sequence")) == why
    # fit over an epoch is timed on numpy and tf.data (the seed's inputs), as fit_epoch_step feeds
    assert cells.why_not(TF221, cell(keras="keras3", api="fit_epoch", input="generator")) == why
    # the rules that held before still hold: standalone Keras 2.2 runs in a v1 graph only
    assert cells.why_not(TF114, cell(keras="keras", mode="eager")) is not None


def test_a_grid_with_every_input_enumerates_them_where_they_exist():
    grid = {"pairs": [["small", "small"]], "keras": ["keras3", "none"], "modes": ["eager"],
            "apis": ["train_on_batch", "custom_loop"], "inputs": "all", "devices": ["cpu"]}
    jax = {(c["api"], c["input"]) for c in cells.expand_grid(JAX, grid)}
    assert {("train_on_batch", "generator"), ("train_on_batch", "sequence")} <= jax
    torch = {(c["api"], c["input"]) for c in cells.expand_grid(TORCH, grid)}
    assert torch == {("custom_loop", "numpy")}
