"""The frameworks the study can measure: one row each, the one place that names them.

    name          what env facts and cell files call it (`framework`)
    label         its name in sentences and tables ("TensorFlow")
    short_label   its name in the seed's configuration strings ("TF 2.3.4 + Eager")
    order         envs sort by it: TensorFlow first, then the others
    modes         the modes its training and inference cells run in, in the study's order
    matmul_modes  the modes of seed 004's matmul micro-case ("numpy" is every env's baseline)
    packages      the pip names whose pin in an env file says the env is this framework's
                  (driver/study/envspec.py); the first one pinned gives the framework's version
    module        its import name: the import check of a built env (build_env.py), the module a
                  forked helper imports first (measure_fork.py)
    backends      its backend modules (tfspeed/backends/), asked in this order after the
                  micro-cases; the first is the framework's own and holds its hooks (`matmul`:
                  seed 004's matmul in this framework)
    gpu_query     Python that prints how many GPUs the framework sees (driver/study/gpucheck.py)
    switches      mode -> the one line of code that selects it (the report's guidance)
    env_prefix    what the names of its env files start with ("tf2.3"): the report tells an env's
                  framework from its name where a table carries the env only
    tag           its name after a mode in the report's guidance ("graph (TF)")

Which cells a framework runs is its backends' business (tfspeed/backends/: each module says which
cells it claims and `why_not` for its own constraints). Adding a framework is one row here, one
backend module and one env file; `register` adds a row at run time (a test's planted framework).
Standard library only (runs in every env).
"""
from collections import namedtuple

Framework = namedtuple("Framework", ["name", "label", "short_label", "order", "modes",
                                     "matmul_modes", "packages", "module", "backends",
                                     "gpu_query", "switches", "env_prefix", "tag"])

CATALOGUE = (
    Framework("tensorflow", "TensorFlow", "TF", 0,
              modes=("eager", "graph", "run_eagerly", "function", "xla"),
              matmul_modes=("numpy", "graph", "eager", "function", "xla"),
              packages=("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly",
                        "tf-nightly-cpu"),
              module="tensorflow", backends=("tf",),
              # TF 1.14+ has list_physical_devices under tf.config.experimental; TF 2.1+ also
              # under tf.config
              gpu_query="import tensorflow as tf; c = tf.config; f = getattr(c, "
                        "'list_physical_devices', None) or c.experimental.list_physical_devices; "
                        "print(len(f('GPU')))",
              switches={
                  "graph": "TF 2: tf.compat.v1.disable_eager_execution() before any model "
                           "(TF 1: the default)",
                  "eager": "TF 1: tf.compat.v1.enable_eager_execution() at start (TF 2: the "
                           "default)",
                  "run_eagerly": "model.compile(..., run_eagerly=True)",
                  "function": "decorate the step with @tf.function",
                  "xla": "model.compile(..., jit_compile=True) or @tf.function(jit_compile=True)",
              },
              env_prefix="tf", tag="TF"),
    Framework("torch", "PyTorch", "PyTorch", 1,
              modes=("eager", "compile", "torchscript"),
              matmul_modes=("numpy", "eager", "compile"),
              packages=("torch",),
              module="torch", backends=("torch", "keras3"),
              gpu_query="import torch; print(torch.cuda.device_count())",
              switches={
                  "eager": "PyTorch's default",
                  "compile": "model = torch.compile(model)",
                  "torchscript": "model = torch.jit.script(model)",
              },
              env_prefix="torch", tag="torch"),
    Framework("jax", "JAX", "JAX", 2,  # Keras 3 on JAX; JAX's own matmul
              modes=("eager", "run_eagerly"),
              matmul_modes=("numpy", "eager", "xla"),
              packages=("jax",),
              module="jax", backends=("jax", "keras3"),
              gpu_query="import jax; print(sum(d.platform == 'gpu' for d in jax.devices()))",
              switches={"eager": "Keras 3 on JAX: KERAS_BACKEND=jax (steps are jitted by default)"},
              env_prefix="jax", tag="jax"),
)


def get(name):
    """The catalogue row of a framework, or None for a name it does not hold."""
    for fw in CATALOGUE:
        if fw.name == name:
            return fw
    return None


def names():
    """Every framework's name, in catalogue order."""
    return tuple(f.name for f in CATALOGUE)


def __getattr__(attr):
    """`frameworks.NAMES`, read from the catalogue as it is now (a registered row included)."""
    if attr == "NAMES":
        return names()
    raise AttributeError("module %r has no attribute %r" % (__name__, attr))


def register(row):
    """Add a framework (a test's planted one); every lookup here sees it from now on."""
    global CATALOGUE
    if get(row.name) is not None:
        raise ValueError("framework %r is in the catalogue already" % row.name)
    CATALOGUE = CATALOGUE + (row,)


def unregister(name):
    global CATALOGUE
    CATALOGUE = tuple(f for f in CATALOGUE if f.name != name)


def all_modes():
    """Every mode any framework runs, in catalogue order (each once), the matmul modes last."""
    out = []
    for fw in CATALOGUE:
        out += [m for m in fw.modes if m not in out]
    for fw in CATALOGUE:
        out += [m for m in fw.matmul_modes if m not in out]
    return tuple(out)


def pinned(pins):
    """(framework name, pinned package) of the first framework whose package an env pins, in
    catalogue order; (None, None) when it pins none."""
    for fw in CATALOGUE:
        for package in fw.packages:
            if package in pins:
                return fw.name, package
    return None, None


def of_env(env_name):
    """The framework of an env told by its name alone: a Keras 3 env 'keras3-<framework>' is that
    framework's, any other the first whose env_prefix starts the name; None when none does."""
    env_name = env_name or ""
    if env_name.startswith("keras3-"):
        return get(env_name.split("-", 1)[1])
    for fw in CATALOGUE:
        if env_name.startswith(fw.env_prefix):
            return fw
    return None
