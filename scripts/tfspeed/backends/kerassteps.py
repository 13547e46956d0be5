"""The step callables of a Keras cell, shared by every Keras flavour (backends/kerasnet.py builds
the model): train_on_batch, fit (one step per call), fit_epoch (an epoch of steps per call),
predict and predict_on_batch on numpy input, and the Python inputs (a generator, a
keras.utils.Sequence or PyDataset); each returns a host-side value, so the framework has finished.
"""
import numpy as np

from . import Unsupported


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
