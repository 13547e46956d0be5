"""Keras pieces shared by every Keras flavour (standalone 2.x, tf.keras, tf_keras, Keras 3 on any
backend): the seed's models built from models.MODELS, the optimizer, data, and the step callables
for train_on_batch, fit, predict and predict_on_batch. Framework-specific set-up (and `call`, which
each framework runs its own way) stays in tf.py / keras3.py.
"""
import numpy as np

from ..models import DATA, MODELS, TRAINING
from . import Unsupported


def make_data(model, data, seed=0):
    """The seed's make_data, in float32 (every framework trains in float32; the seed's float64
    randn would add a cast to every step that differs between frameworks)."""
    rng = np.random.RandomState(seed)
    shape = DATA[data]
    x = rng.randn(*shape).astype("float32")
    loss = TRAINING[model][2]
    if loss == "mse":
        y = rng.randn(shape[0], 1).astype("float32")
    elif loss == "sparse_categorical_crossentropy":  # class labels of the softmax output
        y = rng.randint(0, MODELS[model][-1][1], (shape[0], 1)).astype("float32")
    else:
        y = rng.randint(0, 2, (shape[0], 1)).astype("float32")
    return x, y


def build_model(K, model, data):
    layers = K.layers
    ipt = layers.Input(batch_shape=DATA[data])
    x = ipt
    for spec in MODELS[model]:
        kind = spec[0]
        if kind == "conv1d":
            x = layers.Conv1D(spec[1], spec[2], strides=spec[3], padding=spec[4])(x)
        elif kind == "gap":
            x = layers.GlobalAveragePooling1D()(x)
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


def host_output(value):
    """The model's output as a numpy array on the host (a tensor's .numpy() where it is one, so
    the framework has finished); its first value as a float for the record's loss fields."""
    if isinstance(value, (list, tuple)):
        value = value[0]
    if hasattr(value, "numpy"):
        value = value.numpy()
    return float(np.asarray(value).reshape(-1)[0])


def numpy_steps(net, x, y, api):
    if api == "predict":  # one batch: the whole array, as fit takes it
        return lambda: host_output(net.predict(x, batch_size=x.shape[0], verbose=0))
    if api == "predict_on_batch":
        return lambda: host_output(net.predict_on_batch(x))
    if api == "train_on_batch":
        return lambda: host_loss(net.train_on_batch(x, y))
    if api == "fit":
        return fit_step(net, (x, y), api_batch=x.shape[0])
    raise Unsupported("api %s with numpy input" % api)
