"""The framework catalogue (tfspeed/frameworks.py), the backends that declare which cells they run
(tfspeed/backends/), and the config schema's axis values, which must be the code's."""
from pathlib import Path

import pytest
import yaml

from driver.study import envspec
from tfspeed import backends, cells, frameworks

SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "config.schema.yaml"


def test_every_backend_declares_what_it_runs():
    for name in backends.all_names():
        mod = backends.module(name)
        assert callable(getattr(mod, "claims", callable)), name
        if not hasattr(mod, "prepare"):  # a hook-only module (backends/jax.py) claims no cell
            assert not mod.claims(cell(keras="none", api="custom_loop")), name
            continue
        assert callable(mod.why_not) and callable(mod.prepare), name


def test_every_framework_has_a_backend_and_its_own_order():
    for fw in frameworks.CATALOGUE:
        assert fw.backends and all(backends.module(b) for b in fw.backends), fw.name
        assert backends.names(fw.name)[:2] == backends.MICRO_CASES
    assert sorted(f.order for f in frameworks.CATALOGUE) == list(range(len(frameworks.CATALOGUE)))
    assert cells.MODES[-1] == "numpy" and set(cells.MODES) == {
        m for f in frameworks.CATALOGUE for m in f.modes + f.matmul_modes}


def test_every_framework_has_its_hooks_and_facts():
    """What the rest of the code looks up in the catalogue (no framework named elsewhere): the own
    backend's matmul hook, the import name, the GPU query, a switch per mode it names."""
    for fw in frameworks.CATALOGUE:
        assert callable(backends.hook(fw.name, "matmul")), fw.name
        assert fw.module and "print(" in fw.gpu_query and fw.env_prefix and fw.tag, fw.name
        assert set(fw.switches) <= set(fw.modes), fw.name


def cell(**axes):
    return dict({"model": "small", "data": "small", "keras": "tf.keras", "mode": "eager",
                 "api": "fit", "input": "numpy", "device": "cpu"}, **axes)


@pytest.mark.parametrize("axes, framework, backend", [
    (dict(model="matmul", data="matmul", api="matmul", keras="none"), "torch", "matmul"),
    (dict(model="xsquared", data="scalar", api="gradient", keras="none"), "tensorflow", "gradient"),
    (dict(keras="keras3"), "jax", "keras3"),
    (dict(keras="keras3"), "tensorflow", "tf"),  # tf.keras is Keras 3 from TF 2.16
    (dict(keras="none", api="custom_loop"), "torch", "torch"),
])
def test_load_looks_the_backend_up(axes, framework, backend):
    assert backends.load(cell(**axes), framework).__name__ == "tfspeed.backends." + backend


def test_a_framework_without_a_backend_is_unsupported_and_has_no_cells():
    with pytest.raises(backends.Unsupported, match="mxnet"):
        backends.load(cell(), "mxnet")
    env = {"framework": "mxnet", "framework_version": "1.9", "flavours": ["none"], "build": "cpu"}
    assert cells.why_not(env, cell(keras="none")) == "framework mxnet has no cells"


def test_env_files_name_their_framework_by_the_catalogues_pins():
    for pins, want in [({"torch": "2.1", "jax": "0.4"}, ("torch", "2.1")),
                       ({"tf-nightly-cpu": "2.20", "torch": "2.1"}, ("tensorflow", "2.20")),
                       ({"jax": "0.4.30"}, ("jax", "0.4.30")), ({"numpy": "1.26"}, (None, None))]:
        facts = envspec.describe("x", "3.11", pins, [], [], {})
        assert (facts["framework"], facts["framework_version"]) == want, pins


def test_config_schema_enums_are_the_codes():
    """The grid's axis values in schemas/config.schema.yaml are tfspeed.cells' (the cell file
    schema checks the shape only and leaves the values to tfspeed.cells)."""
    grid = yaml.safe_load(SCHEMA.read_text())["$defs"]["grid"]["properties"]
    for key, values in [("keras", cells.KERAS), ("modes", cells.MODES), ("apis", cells.APIS),
                        ("inputs", cells.INPUTS), ("devices", cells.DEVICES)]:
        listed = grid[key]["oneOf"][1]["items"]["enum"]
        assert listed == list(values), key


def test_hints_are_the_frameworks_own():
    """build_env's and gpucheck's hints come from the framework's own backend (hooks)."""
    torch_hint = backends.hook("torch", "import_hint")
    assert "2.13.0 is not a CPU build" in torch_hint({"torch": "2.13.0"}, "cpu")
    assert torch_hint({"torch": "2.13.0+cpu"}, "cpu") is None
    assert torch_hint({"torch": "2.13.0"}, "gpu") is None
    assert backends.hook("jax", "import_hint") is None and backends.hook("mxnet", "gpu_hint") is None
    tf_hint = backends.hook("tensorflow", "gpu_hint")
    assert "TF before 2.14" in tf_hint("2.13.1") and "tensorflow[and-cuda]" in tf_hint("2.14.0")


def test_a_served_worker_clears_what_its_framework_holds():
    """run_cell.py --serve asks the framework's own backend before a rebuild (TF: the Keras
    session; a Keras-less cell and a framework without the hook: nothing)."""
    assert backends.hook("tensorflow", "clear_session")(cell(keras="none")) is None
    assert backends.hook("torch", "clear_session") is None
