"""The frameworks the study can measure: one row each, the one place that names them.

    name          what env facts and cell files call it (`framework`)
    label         its name in sentences and tables ("TensorFlow")
    short_label   its name in the seed's configuration strings ("TF 2.3.4 + Eager")
    order         envs sort by it: TensorFlow first, then the others
    modes         the modes its training and inference cells run in, in the study's order
    matmul_modes  the modes of seed 004's matmul micro-case ("numpy" is every env's baseline)
    packages      the pip names whose pin in an env file says the env is this framework's
                  (driver/study/envspec.py); the first one pinned gives the framework's version

Which cells a framework runs is its backend's business (tfspeed/backends/: each module declares
the frameworks it serves and `why_not` for its own constraints). Adding a framework is one row
here, one backend module and one env file. Standard library only (runs in every env).
"""
from collections import namedtuple

Framework = namedtuple("Framework", ["name", "label", "short_label", "order", "modes",
                                     "matmul_modes", "packages"])

CATALOGUE = (
    Framework("tensorflow", "TensorFlow", "TF", 0,
              modes=("eager", "graph", "run_eagerly", "function", "xla"),
              matmul_modes=("numpy", "graph", "eager", "function", "xla"),
              packages=("tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly",
                        "tf-nightly-cpu")),
    Framework("torch", "PyTorch", "PyTorch", 1,
              modes=("eager", "compile", "torchscript"),
              matmul_modes=("numpy", "eager", "compile"),
              packages=("torch",)),
    Framework("jax", "JAX", "JAX", 2,  # Keras 3 on JAX; JAX's own matmul
              modes=("eager", "run_eagerly"),
              matmul_modes=("numpy", "eager", "xla"),
              packages=("jax",)),
)

BY_NAME = {f.name: f for f in CATALOGUE}
NAMES = tuple(f.name for f in CATALOGUE)


def get(name):
    """The catalogue row of a framework, or None for a name it does not hold."""
    return BY_NAME.get(name)


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
