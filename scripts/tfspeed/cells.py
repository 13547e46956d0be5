"""What a cell is: its axes, which combinations can exist, and its id.

The Snakemake side (rules/common.smk) enumerates cells with `expand_grid`; the runner reads the same
axes back. Where cell files live is the driver's business (driver/study/layout.py). Standard library
and numpy only (the backends it asks import no framework).
"""
from . import backends, usermodels
from .frameworks import all_modes
from .models import DATA, FAULT_MODELS, INFER_APIS, MODELS, output_length_ok
from .versions import version_tuple

AXES = ("model", "data", "keras", "mode", "api", "input", "device")

KERAS = ("keras", "tf.keras", "tf.python.keras", "tf_keras", "keras3", "none")
MODES = all_modes()  # every framework's, in the catalogue's order (tfspeed/frameworks.py)

# fit: one whole one-step fit() call per step, as the seed timed numpy input (its set-up in every
# step); fit_epoch: one fit() over an epoch of `fit_epoch_steps` steps, the call's time over the
# steps, as the seed timed tf.data and as a user who calls fit once per epoch pays it
TRAIN_APIS = ("train_on_batch", "fit", "fit_epoch", "custom_loop")
# Inference (the seed's seventh factor), named as users write it:
#   call              the forward pass `model(x, training=False)` as the mode runs it: eagerly
#                     (eager), inside tf.function (function) or with jit_compile (xla); in v1
#                     graph mode the plain `session.run(model.output, {model.input: x})`; Keras 3
#                     on JAX/torch `model(x, training=False)`; PyTorch `model(x)` under
#                     torch.no_grad() (eager, torch.jit.trace, torch.compile)
#   inference_mode    PyTorch `model(x)` under torch.inference_mode()
#   predict           Keras `model.predict(x, batch_size=len(x))`: one batch, the whole call
#   predict_on_batch  Keras `model.predict_on_batch(x)`
# A step is one call returning the output on the host (a numpy array), so the work is done when the
# clock stops. Input is always the same numpy array.
APIS = TRAIN_APIS + INFER_APIS + ("matmul", "gradient")
# numpy arrays, tf.data, and Python's own: a generator and a keras.utils.Sequence / PyDataset
# (backends/kerasnet.py), which feed Keras' train_on_batch and fit only
INPUTS = ("numpy", "tfdata", "generator", "sequence")
PYTHON_INPUTS = ("generator", "sequence")
DEVICES = ("cpu", "gpu")

# File-name tokens for values that contain dots.
_SLUG = {"tf.keras": "tfkeras", "tf.python.keras": "tfpykeras"}
_UNSLUG = {v: k for k, v in _SLUG.items()}


def cell_id(cell):
    """'small-small.tfkeras.eager.fit.numpy.cpu': unique per axes, safe as a file name."""
    keras = _SLUG.get(cell["keras"], cell["keras"])
    return "%s-%s.%s.%s.%s.%s.%s" % (cell["model"], cell["data"], keras, cell["mode"],
                                     cell["api"], cell["input"], cell["device"])


def parse_cell_id(text):
    pair, keras, mode, api, inp, device = text.split(".")
    model, data = pair.split("-", 1)
    return {"model": model, "data": data, "keras": _UNSLUG.get(keras, keras), "mode": mode,
            "api": api, "input": inp, "device": device}


def task(api):
    """"train", "infer" or "micro" (seed 004's matmul, seed 001's gradient): comparisons and
    summaries never set a training step against an inference step."""
    if api in INFER_APIS:
        return "infer"
    return "train" if api in TRAIN_APIS else "micro"


def why_not(env, cell):
    """None if the cell can exist in this env, else a short reason it is not enumerated.

    `env` is envspec facts. The checks here hold for every framework (the axes' values, which
    model fits which data and api); then the backend that would run the cell says what its
    framework offers (tfspeed/backends/: its `why_not`). Things that only show at run time (an API
    that rejects an input) become `skipped` cells written by the runner.
    """
    model, data, api = cell["model"], cell["data"], cell["api"]
    if model not in MODELS and model not in FAULT_MODELS:
        return "unknown model"
    if data not in DATA:
        return "unknown data"
    if model not in FAULT_MODELS and not output_length_ok(model, data):
        return "model does not fit the data (seed 000 leaves out large model x small data)"
    if (model == "matmul") != (api == "matmul"):
        return "the matmul micro-case is its own model and api"
    if (model == "xsquared") != (api == "gradient"):
        return "the custom-gradient micro-case (y = x**2) is its own model and api"
    if cell["input"] in PYTHON_INPUTS and (api not in ("train_on_batch", "fit")
                                           or cell["keras"] == "none"):
        return "a generator or Sequence input feeds Keras' train_on_batch and one-step fit"
    if api == "fit_epoch" and cell["keras"] == "none":
        return "fit() is Keras'"
    reason = usermodels.layer_why_not(env, cell)  # a layer this Keras lacks: only its cells
    if reason:
        return reason
    if model == "cnn2d" and api not in INFER_APIS:
        return "seed 003 times this CNN's inference only"
    if model == "mlp784" and (env["framework"] != "tensorflow" or
                              version_tuple(env["framework_version"] or "0") < (2, 0)):
        return "seed 001's dense net is a TF 2 case"
    backend = backends.find(cell, env["framework"])
    if backend is None or getattr(backend, "BUILDS_MODEL", False):
        reason = backends.model_cell_why_not(env, cell)
        if reason or backend is None:
            return reason or "framework %s has no cells" % env["framework"]
    return backend.why_not(env, cell)


def expand_grid(env, grid):
    """Every cell of one config grid in one env that can exist (a dict per cell)."""
    choices = {
        "keras": grid.get("keras", "all"), "mode": grid.get("modes", "all"),
        "api": grid.get("apis", "all"), "input": grid.get("inputs", "all"),
        "device": grid.get("devices", "all"),
    }
    every = {"keras": KERAS, "mode": MODES, "api": APIS, "input": INPUTS, "device": DEVICES}
    for key, value in choices.items():
        choices[key] = every[key] if value == "all" else value
    out = []
    for model, data in grid["pairs"]:
        for keras in choices["keras"]:
            for mode in choices["mode"]:
                for api in choices["api"]:
                    for inp in choices["input"]:
                        for device in choices["device"]:
                            cell = {"model": model, "data": data, "keras": keras, "mode": mode,
                                    "api": api, "input": inp, "device": device}
                            if why_not(env, cell) is None:
                                out.append(cell)
    return out
