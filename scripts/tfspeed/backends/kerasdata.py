"""The data a Keras cell trains on, shared by every Keras flavour (backends/kerasnet.py builds
the models, backends/kerassteps.py the steps): the seed's batch in float32 (token ids for an
Embedding), its targets by the model's loss, or a user's data file or data function, checked
against what the study planned (the spec a builder is told: DataSpec).
"""
import hashlib

import numpy as np

from .. import usermodels
from ..models import DATA, DATA_INPUT, MODELS, TRAINING, user_description


def make_data(model, data, seed=0):
    """The seed's make_data, in float32 (every framework trains in float32; the seed's float64
    randn would add a cast to every step that differs between frameworks). A user's data file or
    function gives its own batch (and targets, where it has them)."""
    rng = np.random.RandomState(seed)
    shape = DATA[data]
    described = user_description("data", data) or {}
    if described.get("file") or described.get("builder"):
        key = (model, data, id(described))  # read or called once per process
        if key not in _USER_BATCHES:
            _USER_BATCHES[key] = usermodels_data(described, data_spec(model, data))
        x, y = _USER_BATCHES[key]
    elif DATA_INPUT.get(data) == "tokens":  # ids below the first (Embedding) layer's vocabulary
        x = rng.randint(0, _vocabulary(model, data), shape).astype("int32")
        y = None
    else:
        x = rng.randn(*shape).astype("float32")
        y = None
    if y is not None:
        return x, y
    loss = TRAINING[model][2]
    if loss == "mse":
        y = rng.randn(shape[0], 1).astype("float32")
    elif loss == "sparse_categorical_crossentropy":  # class labels of the softmax output
        y = rng.randint(0, _classes(model, data), (shape[0], 1)).astype("float32")
    else:
        y = rng.randint(0, 2, (shape[0], 1)).astype("float32")
    return x, y


_USER_BATCHES = {}


def _vocabulary(model, data):
    """Token ids stay below this: the model's Embedding's vocabulary, or for a model built by
    code the data's `vocabulary` (1000 when it names none)."""
    if MODELS.get(model):
        return MODELS[model][0][1]
    return (user_description("data", data) or {}).get("vocabulary") or 1000


def _classes(model, data):
    """Class ids stay below this: the model's softmax units, or the data's `classes` (2)."""
    if MODELS.get(model):
        return MODELS[model][-1][1]
    return (user_description("data", data) or {}).get("classes") or 2


class DataSpec(dict):
    """What a builder (config `builder`) is told about the data: batch, shape (one sample's),
    input ("float" or "tokens"), dtype, target ("binary", "sparse", "regression"), classes and
    vocabulary; as keys (spec["shape"]) and attributes (spec.shape)."""

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


def data_spec(model, data):
    shape = DATA[data]
    kind = DATA_INPUT.get(data, "float")
    target = {"mse": "regression", "sparse_categorical_crossentropy": "sparse"}.get(
        TRAINING[model][2], "binary")
    return DataSpec(batch=shape[0], shape=tuple(shape[1:]), input=kind,
                    dtype="int32" if kind == "tokens" else "float32", target=target,
                    classes=_classes(model, data), vocabulary=_vocabulary(model, data))


def usermodels_data(described, spec):
    """(x, y or None) from a user's data file (.npy / .npz with x and y) or data function, checked
    against what the study planned (the file's hash, the batch and shape)."""
    if described.get("file"):
        found = described["file"]
        with open(found["path"], "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
        if digest != found["sha256"]:
            raise usermodels.BuilderError("data file %s changed since the study was planned: "
                                          "plan it again" % found["path"])
        loaded = np.load(found["path"], allow_pickle=False)
        if found["path"].endswith(".npz"):
            x, y = loaded["x"], (loaded["y"] if "y" in loaded.files else None)
        else:
            x, y = loaded, None
        where = found["path"]
    else:
        builder = described["builder"]
        where = usermodels.builder_name(builder)
        out = usermodels.call_builder(builder, (spec,), where_text())
        x, y = (out if isinstance(out, (tuple, list)) and len(out) == 2 else (out, None))
        x = np.asarray(x)
        want = (spec["batch"],) + tuple(spec["shape"])
        if x.shape != want:
            raise usermodels.BuilderError("%s %s returned x of shape %s; the data says batch "
                                          "and shape %s" % (where, where_text(),
                                                            list(x.shape), list(want)))
    x = np.asarray(x).astype("int32" if spec["input"] == "tokens" else "float32")
    if y is not None:
        y = np.asarray(y).astype("float32")
        if y.ndim == 1:
            y = y.reshape(-1, 1)
        if y.shape[0] != x.shape[0]:
            raise usermodels.BuilderError("%s: y holds %d targets for a batch of %d"
                                          % (where, y.shape[0], x.shape[0]))
    return x, y


def where_text(K=None):
    """"in TF 2.15.1, tf.keras 2.15.0 (Python 3.11)": the env a builder ran in, for messages."""
    import platform
    import sys

    parts = []
    tf = sys.modules.get("tensorflow")
    if tf is not None and getattr(tf, "__version__", None):
        parts.append("TF %s" % tf.__version__)
    if K is not None:
        name = K.__name__
        if name == "tensorflow.python.keras":
            name = "tf.python.keras"
        elif name.startswith("tensorflow") or ".api._v" in name:  # tf.keras in TF 1 and TF 2
            name = "tf.keras"
        version = str(getattr(K, "__version__", "") or "")
        if version.startswith("3"):  # Keras 3 names its backend (TF, JAX or torch)
            backend = getattr(getattr(K, "backend", None), "backend", None)
            version += " on %s" % backend() if callable(backend) else ""
        parts.append(("%s %s" % (name, version)).strip())
    return "in %s (Python %s)" % (", ".join(parts) or "this env", platform.python_version())
