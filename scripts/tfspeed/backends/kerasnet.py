"""Keras pieces shared by every Keras flavour (standalone 2.x, tf.keras, tf_keras, Keras 3 on any
backend): the seed's models built from models.MODELS, the optimizer, data, and the step callables
for train_on_batch, fit (one step per call), fit_epoch (an epoch of steps per call), predict and
predict_on_batch. Framework-specific set-up (and `call`, which
each framework runs its own way) stays in tf.py / keras3.py.
"""
import hashlib

import numpy as np

from .. import usermodels
from ..models import DATA, DATA_INPUT, MODELS, TRAINING, user_description
from . import Unsupported


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
        out = usermodels.call_builder(builder, (spec,), _where_text())
        x, y = (out if isinstance(out, (tuple, list)) and len(out) == 2 else (out, None))
        x = np.asarray(x)
        want = (spec["batch"],) + tuple(spec["shape"])
        if x.shape != want:
            raise usermodels.BuilderError("%s %s returned x of shape %s; the data says batch "
                                          "and shape %s" % (where, _where_text(),
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


def _where_text(K=None):
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


def build_with_code(K, model, data):
    """A user's model from their builder function: called with the cell's Keras module and the
    data spec, checked to be a Keras model of that Keras whose one output fits the targets."""
    builder = user_description("models", model)["builder"]
    spec = data_spec(model, data)
    where = "%s %s" % (usermodels.builder_name(builder), _where_text(K))
    net = usermodels.call_builder(builder, (K, spec), _where_text(K))
    base = getattr(getattr(K, "models", None), "Model", None) or getattr(K, "Model", None)
    if base is None or not isinstance(net, base):
        raise usermodels.BuilderError("%s returned %s, not a model of this Keras (%s.Model)"
                                      % (where, type(net).__name__, K.__name__))
    outputs = getattr(net, "outputs", None) or []
    if len(outputs) > 1:
        raise usermodels.BuilderError("%s returned a model of %d outputs; the study trains one "
                                      "output on the data's targets" % (where, len(outputs)))
    try:
        shape = tuple(net.output_shape)
    except (AttributeError, RuntimeError, ValueError, TypeError):
        shape = tuple(outputs[0].shape) if outputs else None  # a subclassed model: unknown
    if shape is not None:
        _, y = make_data(model, data)
        if spec["target"] == "sparse":
            fits, want = len(shape) == 2 and (shape[-1] or 0) >= spec["classes"], \
                "(batch, units) with units >= the %d classes" % spec["classes"]
        else:
            fits, want = len(shape) == 2 and shape[-1] == y.shape[-1], \
                "(batch, %d)" % y.shape[-1]
        if not fits:
            raise usermodels.BuilderError("%s: the model's output has shape %s, which does not fit "
                                          "%s targets: it needs %s" % (
                                              where, list(shape), spec["target"], want))
    return net


def is_compiled(net):
    """Whether a model has been compiled (by a builder that compiles its own)."""
    if getattr(net, "compiled", False) or getattr(net, "_is_compiled", False):
        return True
    return getattr(net, "optimizer", None) is not None and getattr(net, "loss", None) is not None


def _layer(layers, name, spec, index):
    """A Keras layer class, or Unsupported naming the layer where this Keras has none."""
    cls = getattr(layers, name, None)
    if cls is None:
        raise Unsupported("layer %d (%s) needs keras.layers.%s, which this Keras does not have"
                          % (index, spec[0], name))
    return cls


def build_model(K, model, data):
    if usermodels.built_by_code(model):
        return build_with_code(K, model, data)
    layers = K.layers
    if DATA_INPUT.get(data) == "tokens":
        ipt = layers.Input(batch_shape=DATA[data], dtype="int32")
    else:
        ipt = layers.Input(batch_shape=DATA[data])
    x = ipt
    for index, spec in enumerate(MODELS[model]):
        kind = spec[0]
        if kind in _NEW_LAYERS:
            x = _NEW_LAYERS[kind](layers, spec, index, x)
        elif kind == "conv1d":
            x = layers.Conv1D(spec[1], spec[2], strides=spec[3], padding=spec[4])(x)
        elif kind == "gap":
            x = layers.GlobalAveragePooling1D()(x) if len(x.shape) == 3 else \
                _gap(layers, spec, index, x)
        elif kind == "dropout":
            x = layers.Dropout(spec[1])(x)
        elif kind == "dense":
            x = layers.Dense(spec[1], activation=spec[2])(x)
        elif kind == "flatten":
            x = layers.Flatten()(x)
        elif kind == "conv2d":
            x = layers.Conv2D(spec[1], spec[2], activation=spec[3])(x)
        elif kind == "maxpool2d":
            x = layers.MaxPooling2D(spec[1])(x)
        elif kind == "lstm":
            x = layers.LSTM(spec[1], activation="relu", return_sequences=True)(x)
        elif kind == "bilstm":
            x = layers.Bidirectional(
                layers.LSTM(spec[1], activation="relu", return_sequences=True))(x)
        else:
            raise ValueError("unknown layer kind %r" % kind)
    return K.models.Model(ipt, x)


def _self_attention(layers, spec, index, x):
    """Keras' MultiHeadAttention(heads, key_dim) on x as query, key and value."""
    return _layer(layers, "MultiHeadAttention", spec, index)(spec[1], spec[2])(x, x)


def _encoder(layers, spec, index, x):
    """A post-norm transformer encoder block (Keras' text classification with Transformer
    example, without dropout): x = LN(x + MHA(x, x)); x = LN(x + Dense(dim)(Dense(ff, relu)(x)))."""
    norm = _layer(layers, "LayerNormalization", spec, index)
    dim = int(x.shape[-1])
    x = norm()(layers.Add()([x, _self_attention(layers, spec, index, x)]))
    ff = layers.Dense(dim)(layers.Dense(spec[3], activation="relu")(x))
    return norm()(layers.Add()([x, ff]))


def _gap(layers, spec, index, x):
    """Global average pooling over the steps, pixels or voxels, whatever the rank."""
    name = {3: "GlobalAveragePooling1D", 4: "GlobalAveragePooling2D",
            5: "GlobalAveragePooling3D"}[len(x.shape)]
    return _layer(layers, name, spec, index)()(x)


# The layers beyond the seed's (usermodels.py), each (layers, spec, index, x) -> x. A GRU is
# reset_after=True with a sigmoid recurrent activation, what TF 2's Keras, Keras 3, cuDNN and PyTorch
# compute (Keras before TF 2.0 defaults to reset_after=False and hard_sigmoid).
_NEW_LAYERS = {
    "embedding": lambda L, s, i, x: L.Embedding(s[1], s[2])(x),
    "gru": lambda L, s, i, x: L.GRU(s[1], return_sequences=True, reset_after=True,
                                      recurrent_activation="sigmoid")(x),
    "batchnorm": lambda L, s, i, x: L.BatchNormalization()(x),
    "layernorm": lambda L, s, i, x: _layer(L, "LayerNormalization", s, i)()(x),
    "mha": _self_attention,
    "encoder": _encoder,
    "conv3d": lambda L, s, i, x: L.Conv3D(s[1], s[2], activation=s[3])(x),
}


def make_optimizer(K, model, legacy=False):
    name, lr, _ = TRAINING[model]
    module = K.optimizers
    if legacy:
        # TF >= 2.11 in v1 graph mode: the new optimizers have no get_updates (ENVS.md).
        module = module.legacy
    cls = {"adam": module.Adam, "sgd": module.SGD}[name]
    try:
        return cls(learning_rate=lr)
    except TypeError:  # standalone Keras 2.2.5 knows only `lr`
        return cls(lr=lr)


def compile_model(K, net, model, mode, legacy=False):
    """Compile with the model's optimizer and loss; a model its builder compiled keeps its own
    compile, with the mode's run_eagerly or jit_compile set on it."""
    if usermodels.built_by_code(model) and is_compiled(net):
        try:
            if mode == "run_eagerly":
                net.run_eagerly = True
            elif mode == "xla":
                net.jit_compile = True
        except AttributeError as exc:
            raise Unsupported("mode %s on a model its builder compiled: %s" % (mode, exc)) \
                from exc
        return net.optimizer
    opt = make_optimizer(K, model, legacy)
    kwargs = {}
    if mode == "run_eagerly":
        kwargs["run_eagerly"] = True
    elif mode == "xla":
        kwargs["jit_compile"] = True
    net.compile(opt, TRAINING[model][2], **kwargs)
    return opt


def host_loss(value):
    """A host-side float from what a Keras API returned, or Unsupported if nothing ran.

    Keras 3 after disable_eager_execution returns a symbolic tensor and trains nothing (ENVS.md);
    a timing of that would be a lie, so the runner refuses it."""
    if isinstance(value, (list, tuple)):
        value = value[0]
    try:
        out = float(value)
    except (TypeError, ValueError):
        raise Unsupported("the step returned no host value (%s): nothing was trained"
                          % type(value).__name__) from None
    return out


def fit_step(net, inputs, api_batch=None):
    """One step of `fit` as the seed timed it: a whole one-step `fit()` call
    (`timeit(model.fit, iters, X, y, verbose=0)`), for numpy arrays and a repeating tf.data
    dataset alike, so that the numpy-vs-tf.data comparison changes the input and nothing else.
    fit's set-up (data adapter, callbacks, the train function) is inside every call, as a user who
    calls fit pays it; the very first call (tracing) is timed apart as `first_call_s`."""
    if api_batch is not None:  # numpy arrays: (x, y) with the whole batch as one step
        x, y = inputs
        return lambda: host_loss(
            net.fit(x, y, batch_size=api_batch, epochs=1, verbose=0).history["loss"][-1])
    return lambda: host_loss(
        net.fit(inputs, steps_per_epoch=1, epochs=1, verbose=0).history["loss"][-1])


def fit_epoch_step(net, inputs, steps, api_batch=None):
    """One call of `fit_epoch`: a whole `fit()` over one epoch of `steps` steps, as the seed timed
    tf.data (`fit(data, steps_per_epoch=iters)`, time over iters) and as a user who calls fit once
    per epoch pays it; the runner divides the call's time by `steps`. numpy: the batch stacked
    `steps` times into one array, `batch_size` the batch, `shuffle=False` (tf.data is not
    shuffled either; a user's default shuffle=True adds a gather per batch); tf.data: the
    repeating dataset with `steps_per_epoch=steps`. fit's set-up is paid once per call."""
    if api_batch is not None:
        x, y = inputs
        xs, ys = np.concatenate([x] * steps), np.concatenate([y] * steps)
        return lambda: host_loss(net.fit(xs, ys, batch_size=api_batch, epochs=1, verbose=0,
                                         shuffle=False).history["loss"][-1])
    return lambda: host_loss(
        net.fit(inputs, steps_per_epoch=steps, epochs=1, verbose=0).history["loss"][-1])


def host_output(value):
    """The model's output as a numpy array on the host (a tensor's .numpy() where it is one, so
    the framework has finished); its first value as a float for the record's loss fields."""
    if isinstance(value, (list, tuple)):
        value = value[0]
    if hasattr(value, "numpy"):
        value = value.numpy()
    return float(np.asarray(value).reshape(-1)[0])


def numpy_steps(net, x, y, api, steps_per_call=1):
    if api == "predict":  # one batch: the whole array, as fit takes it
        return lambda: host_output(net.predict(x, batch_size=x.shape[0], verbose=0))
    if api == "predict_on_batch":
        return lambda: host_output(net.predict_on_batch(x))
    if api == "train_on_batch":
        return lambda: host_loss(net.train_on_batch(x, y))
    if api == "fit":
        return fit_step(net, (x, y), api_batch=x.shape[0])
    if api == "fit_epoch":
        return fit_epoch_step(net, (x, y), steps_per_call, api_batch=x.shape[0])
    raise Unsupported("api %s with numpy input" % api)


# Keras layers holding each description layer's weights, in order (samefunction.py): one each,
# and an encoder block's attention, norm, two dense layers and norm.
_WEIGHT_SPLITS = {"encoder": (8, 2, 2, 2, 2)}


def same_function_output(K, cell, x, weights):
    """A second build of the cell's model in the Keras K (the backend that runs the cell picks it:
    its `same_function_output` hook), with samefunction's seeded weights, run forward in inference
    (predict) on x; after the timed window, never inside it."""
    net = build_model(K, cell["model"], cell["data"])
    per_layer = []
    for spec, arrays in zip(MODELS[cell["model"]], weights):
        if not arrays:
            continue
        start = 0
        for size in _WEIGHT_SPLITS.get(spec[0], (len(arrays),)):
            per_layer.append(arrays[start:start + size])
            start += size
    held = [layer for layer in net.layers if layer.weights]
    if len(held) != len(per_layer):
        raise ValueError("%d Keras layers hold weights, the description gives %d"
                         % (len(held), len(per_layer)))
    for layer, arrays in zip(held, per_layer):
        layer.set_weights(arrays)
    return np.asarray(net.predict(x, batch_size=x.shape[0], verbose=0))


# Inputs beyond numpy and tf.data (the seed: "many other formats exist"): a Python generator and a
# keras.utils.Sequence (Keras 3: PyDataset), each serving a few distinct batches in turn, as the
# tf.data input does (tf.make_dataset), so no input holds `iterations` batches in memory.
PYTHON_INPUTS = ("generator", "sequence")


def distinct_batches(x, y, distinct=4):
    return [(np.roll(x, i, axis=0), np.roll(y, i, axis=0)) for i in range(distinct)]


def batch_generator(x, y):
    """A plain Python generator of (x, y) batches, forever."""
    batches = distinct_batches(x, y)
    i = 0
    while True:
        yield batches[i % len(batches)]
        i += 1


def batch_sequence(K, x, y):
    """A keras.utils.PyDataset (Keras 3) or keras.utils.Sequence (Keras 2) of the batches."""
    utils = K.utils
    base = getattr(utils, "PyDataset", None) or getattr(utils, "Sequence", None)
    if base is None:
        raise Unsupported("this Keras has neither keras.utils.PyDataset nor keras.utils.Sequence")
    batches = distinct_batches(x, y)

    class Batches(base):
        def __len__(self):
            return len(batches)

        def __getitem__(self, index):
            return batches[index % len(batches)]

    return Batches()


def python_input_steps(K, net, x, y, api, kind):
    """One step of train_on_batch or fit fed by a generator or a Sequence/PyDataset. fit: a whole
    one-step fit() call on the input, as fit_step times numpy and tf.data; train_on_batch: the
    next batch drawn from the input, then train_on_batch on it (the draw is part of the step, as
    for tf.data). Unsupported where this Keras refuses the input."""
    source = batch_generator(x, y) if kind == "generator" else batch_sequence(K, x, y)
    if api == "fit":
        def fit():
            try:
                history = net.fit(source, steps_per_epoch=1, epochs=1, verbose=0, shuffle=False)
            except (TypeError, ValueError, NotImplementedError) as exc:
                raise Unsupported("fit does not take a %s here: %s" % (kind, exc)) from exc
            return host_loss(history.history["loss"][-1])
        return fit
    if api == "train_on_batch":
        if kind == "generator":
            return lambda: host_loss(net.train_on_batch(*next(source)))
        counter = [0]

        def step():
            counter[0] += 1
            return host_loss(net.train_on_batch(*source[counter[0] % len(source)]))
        return step
    raise Unsupported("api %s with %s input" % (api, kind))
