"""Pure functions of the study's plan: env specs, which cells exist, ids, model FLOPs."""
from pathlib import Path

import pytest
import yaml

from driver import envspec
from tfspeed import cells, models

REPO = Path(__file__).resolve().parent.parent
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
