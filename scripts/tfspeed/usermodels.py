"""A user's own models and data (config `models` and `data`): checked before any job, then
registered through models' registration API (models.register_model, register_data) so that every
backend builds them as it builds the seed's. docs/reference/models.md describes the form.

The Snakemake side checks and registers them from config (rules/common.smk); the description of a
cell's model travels with the cell (`spec`, see payload) to the supervisor and the cell process,
which register it again (register_cell). Standard library only (numpy to read a data file's
header, on the driver side).

A model may instead name Python code (`builder: my_model.py:build` or `package.module:build`): the
driver finds the file and the function without importing it (the file's syntax tree), reads its
text and hash, and the text travels with the cell in its `spec`, so the env's Python imports the
same code wherever the cell runs; the hash makes an edited builder a new cell (Snakemake's params)
and is recorded with each cell (run_cell.py `builder`). backends/kerasnet.py calls it.
"""
import hashlib
import os

from . import models
from .builders import (  # noqa: F401 - the builder half, re-exported for its callers
    BuilderError,
    ModelError,
    _defined_names,
    _find_module,
    _module_name,
    _sha256,
    builder_name,
    call_builder,
    config_dirs,
    error_line,
    load_builder,
    resolve_builder,
)
from .versions import version_tuple

ACTIVATIONS = (None, "relu", "sigmoid", "softmax", "tanh")
LOSSES = {"binary_crossentropy": "binary", "sparse_categorical_crossentropy": "sparse",
          "mse": "regression"}
OPTIMIZERS = ("adam", "sgd")
INPUT_KINDS = ("float", "tokens")
# The rank of the input (batch left out) each layer takes: 2 = (steps, channels), 3 = an image
# (height, width, channels), 4 = a volume; None = any rank.
_RANK = {"conv1d": 2, "lstm": 2, "bilstm": 2, "gru": 2, "mha": 2, "encoder": 2, "conv2d": 3,
         "maxpool2d": 3, "conv3d": 4}


def _positive_int(value):
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _check_args(kind, args):
    """The first thing wrong with one layer's arguments, or None."""
    names = models.LAYERS[kind]
    if len(args) != len(names):
        return "takes %d argument%s (%s), got %d" % (
            len(names), "" if len(names) == 1 else "s", ", ".join(names) or "none", len(args))
    for name, value in zip(names, args):
        if name == "padding":
            if value not in ("same", "valid"):
                return "padding must be same or valid, got %r" % (value,)
        elif name == "activation" and kind in ("conv2d", "conv3d"):
            if value not in (None, "relu", "sigmoid", "tanh"):
                return "activation must be one of relu, sigmoid, tanh or null, got %r" % (value,)
        elif name == "activation":
            if value not in ACTIVATIONS:
                return "activation must be one of relu, sigmoid, softmax, tanh or null, got %r" \
                    % (value,)
        elif name == "rate":
            if not isinstance(value, (int, float)) or isinstance(value, bool) \
                    or not 0 <= value < 1:
                return "rate must be a number in [0, 1), got %r" % (value,)
        elif not _positive_int(value):
            return "%s must be a positive integer, got %r" % (name, value)
    return None


def layer_tuple(where, layer):
    """One layer of a description as the models module holds it: ("conv1d", 128, 40, 4, "same").
    A layer is a list [kind, arguments...] or a bare kind ("gap")."""
    if isinstance(layer, str):
        layer = [layer]
    if not isinstance(layer, (list, tuple)) or not layer or not isinstance(layer[0], str):
        raise ModelError(where, "a layer is a list [kind, arguments...], got %r" % (layer,))
    kind, args = layer[0], list(layer[1:])
    if kind not in models.LAYERS:
        raise ModelError(where, "unknown layer %r; layers: %s"
                         % (kind, ", ".join(sorted(models.LAYERS))))
    problem = _check_args(kind, args)
    if problem:
        raise ModelError(where, "layer %s %s" % (kind, problem))
    return (kind,) + tuple(args)


def _name(layer):
    return " ".join(str(part) for part in layer)


def output_shape(layers, shape, tokens, where="layers"):
    """The output shape (batch left out) of `layers` on inputs of `shape` (batch left out), or
    ModelError naming the first layer that cannot take what reaches it."""
    shape = tuple(shape)
    for i, layer in enumerate(layers):
        kind, at = layer[0], "%s[%d] (%s)" % (where, i, _name(layer))
        if kind == "embedding":
            if i != 0 or not tokens:
                raise ModelError(at, "an embedding takes the token data itself: it must be the "
                                 "first layer, on data with input: tokens")
            if len(shape) != 1:
                raise ModelError(at, "an embedding takes (steps,) token ids, got shape %s"
                                 % (list(shape),))
            shape = (shape[0], layer[2])
            continue
        if i == 0 and tokens:
            raise ModelError(at, "token data needs an embedding as the first layer")
        rank = _RANK.get(kind)
        if rank is not None and len(shape) != rank:
            raise ModelError(at, "takes inputs of rank %d (batch left out), got shape %s"
                             % (rank, list(shape)))
        if kind == "conv1d":
            out = models._conv_out(shape[0], layer[2], layer[3], layer[4])
            if out < 1:
                raise ModelError(at, "its kernel %d is longer than the %d steps that reach it: "
                                 "impossible shape" % (layer[2], shape[0]))
            shape = (out, layer[1])
        elif kind in ("conv2d", "conv3d"):
            spatial = [s - layer[2] + 1 for s in shape[:-1]]
            if min(spatial) < 1:
                raise ModelError(at, "its kernel %d is larger than the input %s: impossible "
                                 "shape" % (layer[2], list(shape[:-1])))
            shape = tuple(spatial) + (layer[1],)
        elif kind == "maxpool2d":
            spatial = [s // layer[1] for s in shape[:-1]]
            if min(spatial) < 1:
                raise ModelError(at, "pool size %d is larger than the input %s: impossible shape"
                                 % (layer[1], list(shape[:-1])))
            shape = tuple(spatial) + (shape[-1],)
        elif kind in ("lstm", "gru"):
            shape = (shape[0], layer[1])
        elif kind == "bilstm":
            shape = (shape[0], 2 * layer[1])
        elif kind == "gap":
            if len(shape) < 2:
                raise ModelError(at, "global average pooling needs steps or pixels to pool, got "
                                 "shape %s" % (list(shape),))
            shape = (shape[-1],)
        elif kind == "flatten":
            size = 1
            for s in shape:
                size *= s
            shape = (size,)
        elif kind == "dense":
            shape = shape[:-1] + (layer[1],)
        # dropout, batchnorm, layernorm, mha, encoder keep the shape
    return shape


def check_model(name, desc):
    """(layers, training, iterations) of one config `models` entry, or ModelError naming it. A
    model built by code (`builder`) has no layers: ([], ...), its builder resolved into `desc`."""
    where = "models.%s" % name
    if (name in models.MODELS and models.user_description("models", name) is None) \
            or name in models.FAULT_MODELS:
        raise ModelError(where, "%r is a built-in model's name; choose another" % name)
    if desc.get("builder") is not None:
        if desc.get("layers"):
            raise ModelError(where, "give layers or a builder, not both")
        desc["builder"] = resolve_builder(where + ".builder", desc["builder"])
        return [], _training(where, desc), int(desc.get("iterations", 20))
    layers = desc.get("layers") or []
    if not layers:
        raise ModelError(where + ".layers", "a model needs at least one layer")
    layers = [layer_tuple("%s.layers[%d]" % (where, i), layer) for i, layer in enumerate(layers)]
    last = layers[-1]
    loss = desc.get("loss", "binary_crossentropy")
    if loss not in LOSSES:
        raise ModelError(where + ".loss", "unknown loss %r; losses: %s"
                         % (loss, ", ".join(LOSSES)))
    want = {"binary_crossentropy": ("one unit", "sigmoid"), "mse": ("one unit", None),
            "sparse_categorical_crossentropy": ("two or more units", "softmax")}[loss]
    units_ok = last[0] == "dense" and (last[1] >= 2 if loss.startswith("sparse") else last[1] == 1)
    if not units_ok or last[2] != want[1]:
        raise ModelError("%s.layers[%d] (%s)" % (where, len(layers) - 1, _name(last)),
                         "loss %s needs a last dense layer of %s, activation %s"
                         % (loss, want[0], want[1]))
    return layers, _training(where, desc), int(desc.get("iterations", 20))


def _training(where, desc):
    """(optimizer, learning rate, loss) of a model entry."""
    loss = desc.get("loss", "binary_crossentropy")
    if loss not in LOSSES:
        raise ModelError(where + ".loss", "unknown loss %r; losses: %s"
                         % (loss, ", ".join(LOSSES)))
    optimizer = desc.get("optimizer", "adam")
    if optimizer not in OPTIMIZERS:
        raise ModelError(where + ".optimizer", "unknown optimizer %r; optimizers: %s"
                         % (optimizer, ", ".join(OPTIMIZERS)))
    return optimizer, float(desc.get("learning_rate", 1e-3)), loss


def check_data(name, desc):
    """(shape with batch, input kind, target) of one config `data` entry."""
    where = "data.%s" % name
    if name in models.DATA and models.user_description("data", name) is None:
        raise ModelError(where, "%r is a built-in data set's name; choose another" % name)
    if desc.get("file") is not None and desc.get("builder") is not None:
        raise ModelError(where, "give a file or a builder, not both")
    if desc.get("file") is not None:
        desc["file"] = read_data_file(where + ".file", desc["file"])
        found = desc["file"]
        for key in ("batch", "shape"):  # the file says; a config that says too must agree
            given = desc.get(key)
            if given is not None and (list(given) if key == "shape" else given) != found[key]:
                raise ModelError(where + "." + key, "%r, but %s holds %r" % (
                    given, os.path.basename(found["path"]), found[key]))
        desc.update(batch=found["batch"], shape=found["shape"], input=found["input"])
    elif desc.get("builder") is not None:  # called in the env; batch and shape say what it returns
        desc["builder"] = resolve_builder(where + ".builder", desc["builder"])
    for key in ("vocabulary", "classes"):
        if desc.get(key) is not None and not _positive_int(desc[key]):
            raise ModelError(where + "." + key, "must be a positive integer, got %r"
                             % (desc[key],))
    shape = [desc.get("batch")] + list(desc.get("shape") or [])
    if len(shape) < 2 or not all(_positive_int(s) for s in shape):
        raise ModelError(where, "batch and shape must be positive integers, got batch %r, "
                         "shape %r" % (desc.get("batch"), desc.get("shape")))
    kind = desc.get("input", "float")
    if kind not in INPUT_KINDS:
        raise ModelError(where + ".input", "input must be float or tokens, got %r" % (kind,))
    target = desc.get("target", "binary")
    if target not in LOSSES.values():
        raise ModelError(where + ".target", "target must be binary, sparse or regression, got %r"
                         % (target,))
    return tuple(shape), kind, target


def read_data_file(where, value):
    """A data `file` (.npy: the inputs; .npz: arrays x and, optionally, y) as a cell finds it:
    {"path", "sha256", "batch", "shape", "input", "has_targets"}, or ModelError naming the file.
    The arrays are read where the cell runs (backends/kerasnet.py): they never travel."""
    if isinstance(value, dict):
        return dict(value)
    if not isinstance(value, str) or not value.endswith((".npy", ".npz")):
        raise ModelError(where, "a data file is a .npy or .npz file, got %r" % (value,))
    candidates = [value] if os.path.isabs(value) else [os.path.join(b, value)
                                                       for b in config_dirs()]
    found = [c for c in candidates if os.path.isfile(c)]
    if not found:
        raise ModelError(where, "data file %s does not exist (looked in %s)"
                         % (value, ", ".join(os.path.dirname(c) for c in candidates)))
    path = os.path.abspath(found[0])
    import numpy as np

    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
        loaded = np.load(path, allow_pickle=False)
        if path.endswith(".npz"):
            with loaded:
                if "x" not in loaded.files:
                    raise ModelError(where, "%s holds no array x (it holds: %s)"
                                     % (path, ", ".join(loaded.files) or "nothing"))
                x = loaded["x"]
                y = loaded["y"] if "y" in loaded.files else None
        else:
            x, y = loaded, None
    except ModelError:
        raise
    except Exception as exc:  # a corrupt or pickled file: numpy's own words
        raise ModelError(where, "%s cannot be read as numpy arrays: %s: %s"
                         % (path, type(exc).__name__, exc)) from None
    if x.ndim < 2 or min(x.shape) < 1:
        raise ModelError(where, "%s: x has shape %s; it needs a batch axis and one sample's "
                         "shape" % (path, list(x.shape)))
    if y is not None and (y.ndim < 1 or y.shape[0] != x.shape[0]):
        raise ModelError(where, "%s: y has shape %s; it needs one target per sample of x's %d"
                         % (path, list(y.shape), x.shape[0]))
    kind = "tokens" if x.dtype.kind in "iu" else "float"
    if kind == "float" and x.dtype.kind != "f":
        raise ModelError(where, "%s: x is of dtype %s; it needs floats or integer token ids"
                         % (path, x.dtype))
    return {"path": path, "sha256": digest, "batch": int(x.shape[0]),
            "shape": [int(s) for s in x.shape[1:]], "input": kind,
            "has_targets": y is not None}


def built_by_code(model):
    """Whether a model is a user's built by a Python function (config `builder`)."""
    desc = models.user_description("models", model)
    return desc is not None and desc.get("builder") is not None


def pair_error(model, data):
    """Why `model` cannot take `data` (both registered), naming the layer; None if it can."""
    if model not in models.MODELS or data not in models.DATA:
        return "unknown %s" % ("model %r" % model if model not in models.MODELS
                               else "data %r" % data)
    described = models.user_description("data", data)
    target = described.get("target", "binary") if described is not None else None
    loss = models.TRAINING[model][2]
    if target is not None and LOSSES.get(loss) != target:
        return "data %r has %s targets; model %r's loss %s wants %s targets" % (
            data, target, model, loss, LOSSES.get(loss))
    if built_by_code(model):  # its output is checked in each env, after the function ran
        return None
    layers = models.MODELS[model]
    try:
        shape = output_shape(layers, models.DATA[data][1:],
                             models.DATA_INPUT.get(data) == "tokens", "models.%s.layers" % model)
    except ModelError as exc:
        return "model %r on data %r: %s" % (model, data, exc)
    if len(shape) != 1:
        return ("model %r on data %r: models.%s.layers[%d] (%s) outputs shape %s per sample; the "
                "targets are one per sample (put gap or flatten before the last dense layer)"
                % (model, data, model, len(layers) - 1, _name(layers[-1]), list(shape)))
    return None


def register(config_models, config_data):
    """Check every config `models` / `data` entry and register it with the models module; ModelError
    naming the first thing wrong. Returns the user model names."""
    models.register_pair_check(pair_error)
    # copies: a builder or data file is resolved into the registered description (what travels
    # with a cell), while the config keeps what the user wrote
    for name, desc in (config_data or {}).items():
        desc = dict(desc)
        shape, kind, _ = check_data(name, desc)
        models.register_data(name, shape, kind, desc)
    for name, desc in (config_models or {}).items():
        desc = dict(desc)
        layers, training, iterations = check_model(name, desc)
        models.register_model(name, layers, training, iterations, desc)
    return list(config_models or {})


def is_user(model=None, data=None):
    return models.is_user(model, data)


def payload(model, data):
    """The descriptions a cell of (model, data) needs in its own process, or None for the seed's
    models and data (whose cells' parameters stay as they were)."""
    if not is_user(model, data):
        return None
    out = {}
    if models.user_description("models", model) is not None:
        out["models"] = {model: models.user_description("models", model)}
    if models.user_description("data", data) is not None:
        out["data"] = {data: models.user_description("data", data)}
    return out


# The Keras layer classes the layer kinds beyond Dense/Conv/LSTM need where some Keras flavour lacks
# them, and the TensorFlow versions [first, past) whose flavour carries each (None: open end; a
# flavour not named carries it everywhere: tf_keras, Keras 3 on any backend; PyTorch's own
# translations in backends/torchnet.py cover every kind). Standalone Keras (2.2.5, 2.3.1) has
# neither LayerNormalization nor MultiHeadAttention; tf.keras has MultiHeadAttention from TF 2.4;
# tensorflow.python.keras, the private copy, lost layers after Keras moved out of TF: no
# normalization layers from TF 2.8, no MultiHeadAttention from 2.10. Checked by hasattr in this
# project's envs of TF 1.14, 1.15 and 2.0 to 2.11.
_KERAS_CLASSES = {"layernorm": ("LayerNormalization",), "batchnorm": ("BatchNormalization",),
                  "mha": ("MultiHeadAttention",),
                  "encoder": ("MultiHeadAttention", "LayerNormalization")}
_NEVER = ((), ())
KERAS_LAYER_SPANS = {
    ("keras", "LayerNormalization"): _NEVER,
    ("keras", "MultiHeadAttention"): _NEVER,
    ("tf.keras", "MultiHeadAttention"): ((2, 4), None),
    ("tf.python.keras", "MultiHeadAttention"): ((2, 4), (2, 10)),
    ("tf.python.keras", "LayerNormalization"): (None, (2, 8)),
    ("tf.python.keras", "BatchNormalization"): (None, (2, 8)),
}


def _has(span, version):
    first, past = span
    if span == _NEVER:
        return False
    return (first is None or version >= first) and (past is None or version < past)


def layer_why_not(env, cell):
    """At plan time (tfspeed/cells.py why_not): the reason the cell's Keras cannot build a layer of
    its model, naming the layer and the class, or None. Only that backend's cells become
    impossible; the run-time check (backends/kerasnet.py _layer) stays as the last word."""
    keras = cell.get("keras")
    if built_by_code(cell.get("model")) and keras == "none":
        return "a builder (config `builder`) builds a Keras model: no cells without Keras"
    if env.get("framework") != "tensorflow" or keras not in ("keras", "tf.keras",
                                                             "tf.python.keras"):
        return None
    version = version_tuple(env.get("framework_version") or "0")
    for index, spec in enumerate(models.MODELS.get(cell.get("model"), ())):
        for name in _KERAS_CLASSES.get(spec[0], ()):
            span = KERAS_LAYER_SPANS.get((keras, name))
            if span is not None and not _has(span, version):
                where = ("standalone Keras" if keras == "keras"
                         else "%s in TF %s" % (keras, env.get("framework_version")))
                return ("layer %d (%s) needs keras.layers.%s, which %s does not have"
                        % (index, spec[0], name, where))
    return None


def provenance(cell):
    """What a cell file records of the user's code and data it ran: each builder's file, function
    and hash, the data file's path and hash; {} for a cell of the study's own models."""
    spec, out = cell.get("spec") or {}, {}
    for kind in ("models", "data"):
        for name, desc in (spec.get(kind) or {}).items():
            builder = desc.get("builder")
            if isinstance(builder, dict):
                out["%s.%s.builder" % (kind, name)] = {
                    key: builder.get(key) for key in ("file", "module", "function", "sha256")}
            if isinstance(desc.get("file"), dict):
                out["%s.%s.file" % (kind, name)] = {
                    key: desc["file"].get(key) for key in ("path", "sha256")}
    return out


def register_cell(cell):
    """In the supervisor and the cell process: register what the cell's `spec` describes."""
    spec = cell.get("spec")
    if spec:
        register(spec.get("models"), spec.get("data"))
