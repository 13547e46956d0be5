"""Keras 3 on the jax or torch backend (the backend is chosen by the env's KERAS_BACKEND, set before
keras is imported). `eager` is Keras 3's default (compiled train steps); `run_eagerly` runs every step
in Python. Inference: `model(x, training=False)` (call, eager only), predict, predict_on_batch.
Device: Keras 3 puts the model on the GPU wherever its backend sees one, so a gpu cell runs where
one is visible and a cpu cell where none is (the study's CPU cells run with CUDA_VISIBLE_DEVICES='':
driver/study/duet.py); any other pairing is Unsupported rather than measured on the wrong device."""
from ..timing import clock
from . import Prepared, Unsupported, kerasnet


def prepare(cell, rule):
    import keras

    backend = keras.backend.backend()
    wrong = device_why_not(cell["device"], backend, gpu_visible(backend))
    if wrong:
        raise Unsupported(wrong)
    keras.utils.set_random_seed(0)
    x, y = kerasnet.make_data(cell["model"], cell["data"])
    t0 = clock()
    net = kerasnet.build_model(keras, cell["model"], cell["data"])
    opt = kerasnet.compile_model(keras, net, cell["model"], cell["mode"])
    facts = {"keras_version": keras.__version__, "keras_backend": backend,
             "optimizer": type(opt).__module__ + "." + type(opt).__name__,
             "build_s": clock() - t0, "device": weights_device(net)}
    if backend == "jax":
        import jax
        facts["jax_version"] = jax.__version__
    elif backend == "torch":
        import torch
        facts["intra_op_threads"] = torch.get_num_threads()
        facts["inter_op_threads"] = torch.get_num_interop_threads()
    if cell["api"] == "call":
        def step():
            return kerasnet.host_output(keras.ops.convert_to_numpy(net(x, training=False)))
        return Prepared(step=step, facts=facts)
    if cell["input"] in kerasnet.PYTHON_INPUTS:  # a generator or a PyDataset
        return Prepared(step=kerasnet.python_input_steps(keras, net, x, y, cell["api"],
                                                         cell["input"]), facts=facts)
    return Prepared(step=kerasnet.numpy_steps(net, x, y, cell["api"], rule.steps_per_call),
                    facts=facts)


def gpu_visible(backend):
    """Whether Keras 3's backend places models on a GPU here (its default wherever it sees one)."""
    if backend == "jax":
        import jax
        return jax.default_backend() == "gpu"
    if backend == "torch":
        import torch
        return torch.cuda.is_available()
    return False


def device_why_not(device, backend, visible):
    """None where the cell's `device` is where Keras 3 will run it, else why not."""
    if device == "gpu" and not visible:
        return "device gpu: no GPU visible to Keras 3's %s backend on this machine" % backend
    if device == "cpu" and visible:
        return ("device cpu: Keras 3's %s backend sees a GPU and would run the model there; a CPU "
                "cell runs with CUDA_VISIBLE_DEVICES=''" % backend)
    return None


def weights_device(net):
    """The device the model's first weight lives on (provenance), or None for a model without."""
    weights = net.weights
    return str(getattr(weights[0].value, "device", None)) if weights else None


# Which cells this backend runs (tfspeed/backends/__init__.py): Keras 3 on the jax or torch backend
# (the catalogue's rows of JAX and PyTorch name this module after their own).
BUILDS_MODEL = True


def claims(cell):
    return cell["keras"] == "keras3"


def why_not(env, cell):
    api, mode = cell["api"], cell["mode"]
    if cell["input"] == "tfdata":
        return "no TensorFlow in this env"
    if api not in ("train_on_batch", "fit", "fit_epoch", "call", "predict", "predict_on_batch"):
        return "Keras 3 backends are studied through Keras' own APIs"
    if mode not in ("eager", "run_eagerly"):
        return "Keras 3 offers eager (its default, compiled steps) and run_eagerly"
    if api == "call" and mode != "eager":
        return "run_eagerly is a compile() option: model(x) does not use it"
    return None


def same_function_output(cell, x, weights):
    """Hook (samefunction.py): the second build of the cell's model in Keras 3."""
    import keras

    return kerasnet.same_function_output(keras, cell, x, weights)
