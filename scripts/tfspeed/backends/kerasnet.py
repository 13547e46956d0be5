"""Keras pieces shared by every Keras flavour (standalone 2.x, tf.keras, tf_keras, Keras 3 on any
backend): the seed's models built from models.MODELS (or by a user's builder), the optimizer and
the compile, and a second build for the same-function check. The data is
backends/kerasdata.py's, the step callables (train_on_batch, fit, fit_epoch, predict,
predict_on_batch, the Python inputs) backends/kerassteps.py's, both re-exported here for the
backends. Framework-specific set-up (and `call`, which each framework runs its own way) stays in
tf.py / keras3.py.
"""
import numpy as np

from .. import usermodels
from ..models import DATA, DATA_INPUT, MODELS, TRAINING, user_description
from . import Unsupported
from .kerasdata import data_spec, make_data, where_text
from .kerassteps import (  # noqa: F401 - re-exported for the backends (tf.py, keras3.py)
    PYTHON_INPUTS,
    fit_epoch_step,
    fit_step,
    host_loss,
    host_output,
    numpy_steps,
    python_input_steps,
)


def build_with_code(K, model, data):
    """A user's model from their builder function: called with the cell's Keras module and the
    data spec, checked to be a Keras model of that Keras whose one output fits the targets."""
    builder = user_description("models", model)["builder"]
    spec = data_spec(model, data)
    where = "%s %s" % (usermodels.builder_name(builder), where_text(K))
    net = usermodels.call_builder(builder, (K, spec), where_text(K))
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
