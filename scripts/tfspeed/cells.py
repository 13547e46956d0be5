"""What a cell is: its axes, which combinations can exist, and its id.

The Snakemake side (rules/common.smk) enumerates cells with `expand_grid`; the runner reads the same
axes back. Where cell files live is the driver's business (driver/study/layout.py). Standard library only.
"""
from .models import DATA, FAULT_MODELS, INFER_APIS, MODELS, output_length_ok
from .versions import version_tuple

AXES = ("model", "data", "keras", "mode", "api", "input", "device")

KERAS = ("keras", "tf.keras", "tf.python.keras", "tf_keras", "keras3", "none")
MODES = ("eager", "graph", "run_eagerly", "function", "xla", "compile", "torchscript", "numpy")

# Seed 004's matmul micro-case: which modes each framework offers for it ("numpy" is the baseline
# every env can run).
MATMUL_MODES = {"tensorflow": ("numpy", "graph", "eager", "function", "xla"),
                "torch": ("numpy", "eager", "compile"), "jax": ("numpy", "eager", "xla")}
TRAIN_APIS = ("train_on_batch", "fit", "custom_loop")
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


def task(api):
    """"train", "infer" or "micro" (seed 004's matmul, seed 001's gradient): comparisons and
    summaries never set a training step against an inference step."""
    if api in INFER_APIS:
        return "infer"
    return "train" if api in TRAIN_APIS else "micro"


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
    if (model == "xsquared") != (api == "gradient"):
        return "the custom-gradient micro-case (y = x**2) is its own model and api"
    if api == "gradient":
        return _why_not_gradient(env, cell)
    if model == "cnn2d" and api not in INFER_APIS:
        return "seed 003 times this CNN's inference only"
    if model == "mlp784" and (fw != "tensorflow" or
                              version_tuple(env["framework_version"] or "0") < (2, 0)):
        return "seed 001's dense net is a TF 2 case"
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
    if api in INFER_APIS:
        if inp != "numpy":
            return "inference is timed on the same numpy array in every framework"
        if api == "inference_mode" and fw != "torch":
            return "torch.inference_mode is PyTorch's"
    tfv = version_tuple(env["framework_version"] or "0") if fw == "tensorflow" else None
    if fw == "tensorflow" and api == "call":
        return _why_not_tf_call(keras, mode, tfv)
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
        if mode == "function" and api in INFER_APIS:
            return "predict compiles its own tf.function; mode function is for model(x) (call)"
        return "mode %s is not a TensorFlow mode" % mode
    if keras == "keras3":  # Keras 3 on the jax or torch backend
        if inp == "tfdata":
            return "no TensorFlow in this env"
        if api not in ("train_on_batch", "fit", "call", "predict", "predict_on_batch"):
            return "Keras 3 backends are studied through Keras' own APIs"
        if mode not in ("eager", "run_eagerly"):
            return "Keras 3 offers eager (its default, compiled steps) and run_eagerly"
        if api == "call" and mode != "eager":
            return "run_eagerly is a compile() option: model(x) does not use it"
        return None
    if fw == "torch":
        if api in ("predict", "predict_on_batch"):
            return "PyTorch has no predict: model(x) under no_grad (call) or inference_mode"
        if inp != "numpy" or api not in ("custom_loop", "call", "inference_mode"):
            return "PyTorch runs a custom loop on tensors made from numpy"
        if mode not in ("eager", "compile", "torchscript"):
            return "PyTorch modes: eager, compile, torchscript"
        return None
    return "framework %s has no cells" % fw


def _why_not_tf_call(keras, mode, tfv):
    """`call` (model(x)) in a TensorFlow env: eager, in v1 graph mode as a session.run of the
    output, and in tf.function / XLA on TF 2 Keras models (as custom loops)."""
    if mode == "graph":
        return "Keras 3 has no v1 graph mode" if keras == "keras3" else None
    if mode == "eager":
        if keras == "keras":
            # Keras 2.3.1 on TF 2.0: "Layer ... was called with an input that isn't a symbolic
            # tensor" for the numpy array
            return "standalone Keras' model(x) takes symbolic tensors only: graph mode"
        return None
    if mode in ("function", "xla"):
        if keras in ("keras", "tf.python.keras") or tfv < (2, 0):
            return "model(x) in tf.function is studied on TF 2 Keras models"
        if mode == "xla" and tfv < (2, 5):
            return "jit_compile needs TF >= 2.5"
        return None
    if mode == "run_eagerly":
        return "run_eagerly is a compile() option: model(x) does not use it"
    return "mode %s is not a TensorFlow mode" % mode


def _why_not_gradient(env, cell):
    """Seed 001's micro-case: y = x**2 and its gradient, eagerly (GradientTape), inside
    tf.function (tf.gradients, the seed's code) and in a v1 session (tf.gradients)."""
    if env["framework"] != "tensorflow":
        return "the custom-gradient micro-case is TensorFlow's (seed 001)"
    if cell["keras"] != "none" or cell["input"] != "numpy":
        return "the custom-gradient micro-case uses no Keras and no input pipeline"
    if cell["mode"] not in ("eager", "function", "graph"):
        return "the custom-gradient micro-case runs eager, in tf.function or in a session"
    if cell["mode"] == "function" and version_tuple(env["framework_version"] or "0") < (2, 0):
        return "tf.function needs TF 2"
    return "CPU build" if cell["device"] == "gpu" and env["build"] != "gpu" else None


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
