"""Seed 004's micro-case: one 1000 x 1000 float32 matmul, in NumPy and in the env's framework
(a TF 1 session, TF 2 eager, tf.function, XLA; PyTorch eager and torch.compile; JAX: each
framework's `matmul` hook, in its own backend module, found through the catalogue). Each step
returns a host value (the result copied back, as the seed's `sess.run` does), so a GPU has
finished before the clock stops. The fastest matmul cell of a machine is its attainable FLOP/s: the
peak that the training cells' achieved FLOP/s are set against."""
import numpy as np

from .. import frameworks
from ..models import DATA
from . import Prepared, Unsupported, hook


def prepare(cell, rule):
    n = DATA[cell["data"]][0]
    rng = np.random.RandomState(0)
    a = rng.rand(n, n).astype("float32")
    b = rng.rand(n, n).astype("float32")
    mode = cell["mode"]
    if mode == "numpy":
        return Prepared(step=lambda: float(np.dot(a, b)[0, 0]), facts={"matmul_n": n})
    framework = cell.get("framework", "tensorflow")
    matmul = hook(framework, "matmul")
    if matmul is None:
        raise Unsupported("no matmul in framework %r" % framework)
    return matmul(a, b, mode, cell["device"])


# Which cells this backend runs (tfspeed/backends/__init__.py): every framework's matmul cells.
def claims(cell):
    return cell["api"] == "matmul"


def why_not(env, cell):
    fw, mode = env["framework"], cell["mode"]
    if cell["keras"] != "none" or cell["input"] != "numpy":
        return "the matmul micro-case uses no Keras and numpy data"
    if mode not in frameworks.get(fw).matmul_modes:
        return "no matmul mode %s for %s" % (mode, fw)
    own_limits = hook(fw, "matmul_why_not")
    reason = own_limits(env, cell) if own_limits is not None else None
    if reason:
        return reason
    return "CPU build" if cell["device"] == "gpu" and env["build"] != "gpu" else None
