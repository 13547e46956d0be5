"""A user's model as Python code (config `builder`) and data from a file or function: the driver's
checks name the file and the key without importing the code or TF; the code travels with the cell
(text and hash); in the cell's process a builder that fails or returns what the study cannot time
is a BuilderError naming file, function and env (tested here with a stand-in Keras: no TF)."""
import copy
import sys
import types

import numpy as np
import pytest

from tfspeed import models, usermodels
from tfspeed.backends import kerasdata, kerasnet

GOOD = '''
import os

def build(keras, data):
    return keras.models.Model(data, keras.units)

def make_batch(data):
    import numpy as np
    return np.zeros((data.batch,) + tuple(data.shape), "float32")

def raises(keras, data):
    return 1 / 0

def needs_package(keras, data):
    import tfspeed_no_such_package_51
    return tfspeed_no_such_package_51

def not_a_model(keras, data):
    return "a string"
'''


@pytest.fixture(autouse=True)
def clean_registry():
    saved = models.snapshot()
    yield
    models.restore(saved)
    kerasdata._USER_BATCHES.clear()


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A config folder holding my_model.py, named on the command line as Snakemake's is."""
    (tmp_path / "my_model.py").write_text(GOOD)
    monkeypatch.setattr(sys, "argv", ["snakemake", "--cores", "1", "--configfile",
                                      str(tmp_path / "mine.yaml"), "-n"])
    return tmp_path


SEQS = {"batch": 4, "shape": [6, 2], "target": "binary"}


def register(model, data=None):
    usermodels.register({"mine": copy.deepcopy(model)},
                        {"seqs": copy.deepcopy(data or SEQS)})


def refusal(model=None, data=None):
    with pytest.raises(usermodels.ModelError) as info:
        usermodels.register({"mine": model} if model else {}, {"seqs": data} if data else {})
    return info.value


def test_config_dirs_are_the_command_lines_config_folders(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["snakemake", "--configfile", "/a/b/c.yaml", "--cores", "2",
                                      "--configfiles=/d/e.yaml"])
    assert usermodels.config_dirs() == ["/d", "/a/b"]
    monkeypatch.setattr(sys, "argv", ["snakemake", "--configfile", "rel/c.yaml"])
    monkeypatch.setenv("PWD", str(tmp_path))
    assert usermodels.config_dirs() == [str(tmp_path / "rel")]
    monkeypatch.setattr(sys, "argv", ["pytest"])
    assert usermodels.config_dirs()[-1].endswith("presets")


def test_a_missing_builder_file_is_refused_naming_key_and_file(folder):
    error = refusal({"builder": "nowhere.py:build"})
    assert error.where == "models.mine.builder"
    assert "builder file nowhere.py does not exist" in error.message
    assert str(folder) in error.message


def test_a_missing_function_is_refused_naming_file_and_function(folder):
    error = refusal({"builder": "my_model.py:buld"})
    assert error.where == "models.mine.builder"
    assert "my_model.py has no function 'buld'" in error.message
    assert "build" in error.message and "make_batch" in error.message  # what it has
    assert "tensorflow" not in sys.modules  # found in the syntax tree, nothing imported


def test_a_syntax_error_is_refused_with_its_line(folder):
    (folder / "broken.py").write_text("def build(keras, data):\n    return (\n")
    error = refusal({"builder": "broken.py:build"})
    assert "broken.py line" in error.message and "syntax error" in error.message


def test_malformed_builder_values_are_refused(folder):
    assert "'file.py:function'" in refusal({"builder": "my_model.py"}).message
    assert "not a function name" in refusal({"builder": "my_model.py:2x"}).message
    assert "layers or a builder" in refusal({"builder": "my_model.py:build",
                                             "layers": [["dense", 1, "sigmoid"]]}).message


def test_an_absolute_path_and_a_module_beside_the_config_resolve(folder):
    register({"builder": "%s:build" % (folder / "my_model.py")})
    found = models.user_description("models", "mine")["builder"]
    assert found["file"] == str(folder / "my_model.py") and found["function"] == "build"
    models.restore(models.snapshot())
    register({"builder": "my_model:build"})
    found = models.user_description("models", "mine")["builder"]
    assert found["module"] == "my_model" and found["root"] == str(folder)


def test_the_code_travels_with_the_cell_and_its_hash_names_an_edit(folder):
    register({"builder": "my_model.py:build"})
    spec = usermodels.payload("mine", "seqs")
    builder = spec["models"]["mine"]["builder"]
    assert builder["source"] == GOOD and len(builder["sha256"]) == 64
    # the cell's process registers it again from the spec alone: no file needed there
    (folder / "my_model.py").unlink()
    usermodels.register_cell({"spec": copy.deepcopy(spec)})
    assert usermodels.built_by_code("mine")
    assert usermodels.provenance({"spec": spec})["models.mine.builder"]["sha256"] == \
        builder["sha256"]
    # an edited file is a new text and a new hash: new cell parameters, so Snakemake reruns it
    (folder / "my_model.py").write_text(GOOD + "\n# edited\n")
    register({"builder": "my_model.py:build"})
    assert usermodels.payload("mine", "seqs")["models"]["mine"]["builder"]["sha256"] != \
        builder["sha256"]
    # a text that does not match its hash is refused
    bad = copy.deepcopy(spec)
    bad["models"]["mine"]["builder"]["source"] += "x = 1\n"
    with pytest.raises(usermodels.ModelError, match="does not match its hash"):
        usermodels.register_cell({"spec": bad})


def test_builder_models_have_no_layer_checks_flops_or_torch_cells(folder):
    register({"builder": "my_model.py:build", "loss": "binary_crossentropy"})
    assert usermodels.pair_error("mine", "seqs") is None
    assert models.step_flops("mine", "seqs", "fit") is None
    env = {"framework": "torch", "framework_version": "2.13.0"}
    assert "no cells without Keras" in usermodels.layer_why_not(env, {"model": "mine",
                                                                      "keras": "none"})
    # the loss must still match the data's targets
    usermodels.register({"mine2": {"builder": "my_model.py:build", "loss": "mse"}}, {})
    assert "regression targets" in usermodels.pair_error("mine2", "seqs")


# ------------------------------------------------------------------------------ data files

def test_a_data_file_gives_the_shape_and_input_kind(folder):
    np.savez(folder / "batch.npz", x=np.zeros((5, 7), "int64"), y=np.ones(5))
    register({"layers": [["embedding", 10, 4], "gap", ["dense", 1, "sigmoid"]]},
             {"file": "batch.npz", "target": "binary"})
    assert models.DATA["seqs"] == (5, 7) and models.DATA_INPUT["seqs"] == "tokens"
    x, y = kerasdata.make_data("mine", "seqs")
    assert x.dtype == np.int32 and x.shape == (5, 7) and y.shape == (5, 1) and y.sum() == 5


@pytest.mark.parametrize("case", ["missing", "no x", "corrupt", "y length", "rank", "batch"])
def test_a_bad_data_file_is_refused_naming_it(folder, case):
    path = folder / ("d.npy" if case in ("corrupt", "rank") else "d.npz")
    data = {"file": path.name}
    if case == "no x":
        np.savez(path, inputs=np.zeros((2, 3)))
    elif case == "corrupt":
        path.write_bytes(b"not numpy")
    elif case == "y length":
        np.savez(path, x=np.zeros((4, 3)), y=np.zeros(3))
    elif case == "rank":
        np.save(path, np.zeros(4))
    elif case == "batch":
        np.savez(path, x=np.zeros((4, 3)))
        data["batch"] = 8
    error = refusal(data=data)
    assert error.where.startswith("data.seqs."), error
    words = {"missing": "does not exist", "no x": "holds no array x (it holds: inputs)",
             "corrupt": "cannot be read as numpy arrays", "y length": "one target per sample",
             "rank": "needs a batch axis", "batch": "8, but d.npz holds 4"}[case]
    assert words in error.message, error.message
    assert case == "missing" or path.name in error.message


def test_a_data_file_changed_after_planning_is_refused_in_the_cell(folder):
    np.save(folder / "d.npy", np.zeros((2, 3), "float32"))
    register({"layers": [["dense", 1, "sigmoid"]]}, {"file": "d.npy"})
    np.save(folder / "d.npy", np.ones((2, 3), "float32"))
    with pytest.raises(usermodels.BuilderError, match="changed since the study was planned"):
        kerasdata.make_data("mine", "seqs")


def test_a_data_function_returns_the_batch_it_declares(folder):
    register({"layers": [["dense", 1, "sigmoid"]]},
             {"builder": "my_model.py:make_batch", "batch": 4, "shape": [6, 2]})
    x, y = kerasdata.make_data("mine", "seqs")
    assert x.shape == (4, 6, 2) and y.shape == (4, 1)
    # a function that returns another shape than the config says fails the cell, naming both
    (folder / "my_model.py").write_text(GOOD.replace("tuple(data.shape)", "(6, 3)"))
    register({"layers": [["dense", 1, "sigmoid"]]},
             {"builder": "my_model.py:make_batch", "batch": 4, "shape": [6, 2]})
    with pytest.raises(usermodels.BuilderError, match=r"returned x of shape \[4, 6, 3\]; the "
                       r"data says batch and shape \[4, 6, 2\]"):
        kerasdata.make_data("mine", "seqs")


# ------------------------------------------------------------ in the cell's process (no TF)

class FakeModel(object):
    def __init__(self, data, units):
        self.output_shape = (data.batch, units)
        self.outputs = [None]


def fake_keras(units=1):
    return types.SimpleNamespace(__name__="fakekeras", __version__="0.1",
                                 models=types.SimpleNamespace(Model=FakeModel), units=units)


def built(folder, function, units=1, loss="binary_crossentropy", data=None):
    register({"builder": "my_model.py:%s" % function, "loss": loss}, data)
    return kerasnet.build_model(fake_keras(units), "mine", "seqs")


def test_a_good_builder_returns_its_model(folder):
    net = built(folder, "build")
    assert isinstance(net, FakeModel) and net.output_shape == (4, 1)


def test_a_builder_that_raises_names_file_function_env_and_line(folder):
    with pytest.raises(usermodels.BuilderError) as info:
        built(folder, "raises")
    text = str(info.value)
    assert text.startswith("my_model.py:raises in ") and "fakekeras 0.1" in text
    assert "Python %d.%d" % sys.version_info[:2] in text
    assert text.endswith("failed: ZeroDivisionError: division by zero (my_model.py line 12)")


def test_a_missing_package_is_named(folder):
    with pytest.raises(usermodels.BuilderError) as info:
        built(folder, "needs_package")
    assert "needs the package 'tfspeed_no_such_package_51', which this env does not have" \
        in str(info.value)


def test_a_return_that_is_not_a_keras_model_is_refused(folder):
    with pytest.raises(usermodels.BuilderError, match=r"returned str, not a model of this Keras"):
        built(folder, "not_a_model")


def test_an_output_that_does_not_fit_the_targets_is_refused(folder):
    with pytest.raises(usermodels.BuilderError, match=r"output has shape \[4, 3\], which does "
                       r"not fit binary targets: it needs \(batch, 1\)"):
        built(folder, "build", units=3)
    models.restore(models.snapshot())
    kerasdata._USER_BATCHES.clear()
    sparse = dict(SEQS, target="sparse", classes=5)
    with pytest.raises(usermodels.BuilderError, match="units >= the 5 classes"):
        built(folder, "build", units=3, loss="sparse_categorical_crossentropy", data=sparse)
