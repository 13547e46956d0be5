"""Seed 004's micro-case: one 1000 x 1000 float32 matmul, in NumPy and in the env's framework
(a TF 1 session, TF 2 eager, tf.function, XLA; PyTorch eager and torch.compile; JAX). Each step
returns a host value (the result copied back, as the seed's `sess.run` does), so a GPU has
finished before the clock stops. The fastest matmul cell of a machine is its attainable FLOP/s: the
peak that the training cells' achieved FLOP/s are set against."""
import numpy as np

from .. import frameworks
from ..models import DATA
from ..versions import version_tuple
from . import Prepared, Unsupported


def prepare(cell, rule):
    n = DATA[cell["data"]][0]
    rng = np.random.RandomState(0)
    a = rng.rand(n, n).astype("float32")
    b = rng.rand(n, n).astype("float32")
    mode = cell["mode"]
    if mode == "numpy":
        return Prepared(step=lambda: float(np.dot(a, b)[0, 0]), facts={"matmul_n": n})
    framework = cell.get("framework", "tensorflow")
    if framework == "tensorflow":
        import tensorflow as tf

        return _tensorflow(tf, a, b, mode, cell["device"])
    if cell["device"] == "gpu":
        raise Unsupported("matmul on gpu is measured in TensorFlow's GPU builds only")
    if framework == "torch":
        import torch

        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        fn = torch.compile(torch.matmul) if mode == "compile" else torch.matmul
        return Prepared(step=lambda: float(fn(ta, tb)[0, 0].item()),
                        facts={"torch_version": torch.__version__})
    import jax

    ja, jb = jax.numpy.asarray(a), jax.numpy.asarray(b)
    fn = jax.jit(jax.numpy.dot) if mode == "xla" else jax.numpy.dot
    return Prepared(step=lambda: float(np.asarray(fn(ja, jb))[0, 0]),
                    facts={"jax_version": jax.__version__})


def _tensorflow(tf, a, b, mode, device):
    """In a v1 session placed explicitly, as seed 004 does: tf.device('/GPU:0') for a gpu cell,
    '/CPU:0' otherwise; eager and tf.function run where TF puts them. A gpu cell is skipped where
    no GPU is visible."""
    from .tf import gpu_check, setup

    _, tfv = setup({"mode": "graph" if mode == "graph" else "eager"})
    gpu_check(tf, {"device": device})
    facts = {"tf_version": tf.__version__}
    place = "/GPU:0" if device == "gpu" else "/CPU:0"
    if mode == "graph":
        v1 = tf.compat.v1 if hasattr(tf, "compat") else tf
        # Variables, not constants: Grappler folds matmul(constant, constant) once and every later
        # sess.run returns the cached product (it "measured" 4 TFLOP/s on 2 cores).
        with tf.device(place):
            va, vb = v1.Variable(a), v1.Variable(b)
            c = tf.matmul(va, vb)
        sess = v1.Session()
        sess.run(v1.global_variables_initializer())
        return Prepared(step=lambda: float(sess.run(c)[0, 0]), facts=facts)
    ta, tb = tf.constant(a), tf.constant(b)
    if mode == "eager":
        return Prepared(step=lambda: float(tf.matmul(ta, tb).numpy()[0, 0]), facts=facts)
    kwargs = {"jit_compile": True} if mode == "xla" else {}
    fn = tf.function(lambda: tf.matmul(ta, tb), **kwargs)
    return Prepared(step=lambda: float(fn().numpy()[0, 0]), facts=facts)


# Which cells this backend runs (tfspeed/backends/__init__.py): every framework's matmul cells.
FRAMEWORKS = frameworks.NAMES


def claims(cell):
    return cell["api"] == "matmul"


def why_not(env, cell):
    fw, mode = env["framework"], cell["mode"]
    if cell["keras"] != "none" or cell["input"] != "numpy":
        return "the matmul micro-case uses no Keras and numpy data"
    if mode not in frameworks.get(fw).matmul_modes:
        return "no matmul mode %s for %s" % (mode, fw)
    if fw == "tensorflow" and mode in ("function", "xla") and \
            version_tuple(env["framework_version"]) < ((2, 0) if mode == "function" else (2, 5)):
        return "%s matmul needs a newer TF" % mode
    return "CPU build" if cell["device"] == "gpu" and env["build"] != "gpu" else None
