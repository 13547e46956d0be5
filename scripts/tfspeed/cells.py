"""What a cell is: its axes, which combinations can exist, and its id.

The Snakemake side (rules/common.smk) enumerates cells with `expand_grid`; the runner reads the same
axes back. Where cell files live is the driver's business (driver/layout.py). Standard library only.
"""
from .models import DATA, FAULT_MODELS, MODELS, output_length_ok
from .versions import version_tuple

AXES = ("model", "data", "keras", "mode", "api", "input", "device")

KERAS = ("keras", "tf.keras", "tf.python.keras", "tf_keras", "keras3", "none")
MODES = ("eager", "graph", "run_eagerly", "function", "xla", "compile", "torchscript", "numpy")

# Seed 004's matmul micro-case: which modes each framework offers for it ("numpy" is the baseline
# every env can run).
MATMUL_MODES = {"tensorflow": ("numpy", "graph", "eager", "function", "xla"),
                "torch": ("numpy", "eager", "compile"), "jax": ("numpy", "eager", "xla")}
APIS = ("train_on_batch", "fit", "custom_loop", "matmul")
INPUTS = ("numpy", "tfdata")
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


def why_not(env, cell):
    """None if the cell can exist in this env, else a short reason it is not enumerated.

    `env` is envspec facts. Rules here are about what the software offers at all; things that only
    show at run time (an API that rejects an input) become `skipped` cells written by the runner.
    """
    fw, keras, mode, api, inp = (env["framework"], cell["keras"], cell["mode"], cell["api"],
                                 cell["input"])
    model, data = cell["model"], cell["data"]
    if model not in MODELS and model not in FAULT_MODELS:
        return "unknown model"
    if data not in DATA:
        return "unknown data"
    if model not in FAULT_MODELS and not output_length_ok(model, data):
        return "model does not fit the data (seed 000 leaves out large model x small data)"
    if (model == "matmul") != (api == "matmul"):
        return "the matmul micro-case is its own model and api"
    if api == "matmul":
        if keras != "none" or inp != "numpy":
            return "the matmul micro-case uses no Keras and numpy data"
        if mode not in MATMUL_MODES.get(fw, ()):
            return "no matmul mode %s for %s" % (mode, fw)
        if fw == "tensorflow" and mode in ("function", "xla") and \
                version_tuple(env["framework_version"]) < ((2, 0) if mode == "function" else (2, 5)):
            return "%s matmul needs a newer TF" % mode
        return "CPU build" if cell["device"] == "gpu" and env["build"] != "gpu" else None
    if keras not in env["flavours"]:
        return "keras flavour %s not in this env" % keras
    if cell["device"] == "gpu" and env["build"] != "gpu":
        return "CPU build"
    tfv = version_tuple(env["framework_version"] or "0") if fw == "tensorflow" else None
    if fw == "tensorflow":
        if keras == "keras" and inp == "tfdata":
            return "standalone Keras takes no tf.data"
        if keras == "keras" and mode != "graph" and tfv < (2, 0):
            return "standalone Keras 2.2 builds placeholders: graph mode only on TF 1"
        if api == "custom_loop":
            if keras in ("keras", "tf.python.keras") or tfv < (2, 0):
                return "custom loops are studied on TF 2 Keras models"
            if mode not in ("eager", "function", "xla"):
                return "custom loops run eager, in tf.function, or XLA"
            if mode == "xla" and tfv < (2, 5):
                return "jit_compile needs TF >= 2.5"
            return None
        if mode == "graph":
            return "Keras 3 has no v1 graph mode" if keras == "keras3" else None
        if mode == "eager":
            return None
        if mode == "run_eagerly":
            if keras == "keras" or tfv < (2, 0):
                return "run_eagerly is a TF 2 Keras option"
            return None
        if mode == "xla":
            if keras in ("keras", "tf.python.keras") or tfv < (2, 8):
                return "compile(jit_compile=True) needs TF >= 2.8 Keras"
            return None
        return "mode %s is not a TensorFlow mode" % mode
    if keras == "keras3":  # Keras 3 on the jax or torch backend
        if inp == "tfdata":
            return "no TensorFlow in this env"
        if api not in ("train_on_batch", "fit"):
            return "Keras 3 backends are studied through Keras' own APIs"
        if mode not in ("eager", "run_eagerly"):
            return "Keras 3 offers eager (its default, compiled steps) and run_eagerly"
        return None
    if fw == "torch":
        if inp != "numpy" or api != "custom_loop":
            return "PyTorch runs a custom loop on tensors made from numpy"
        if mode not in ("eager", "compile", "torchscript"):
            return "PyTorch modes: eager, compile, torchscript"
        return None
    return "framework %s has no cells" % fw


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
