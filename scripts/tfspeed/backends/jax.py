"""JAX itself: the hooks of a framework whose model cells are Keras 3's (backends/keras3.py, the
next module of its catalogue row), here seed 004's matmul in JAX: jax.numpy.dot, eager or jitted
(mode xla). It claims no cell of its own."""
import numpy as np

from . import Prepared, Unsupported


def claims(cell):
    return False


def matmul(a, b, mode, device):
    if device == "gpu":
        raise Unsupported("matmul on gpu is measured in TensorFlow's GPU builds only")
    import jax

    ja, jb = jax.numpy.asarray(a), jax.numpy.asarray(b)
    fn = jax.jit(jax.numpy.dot) if mode == "xla" else jax.numpy.dot
    return Prepared(step=lambda: float(np.asarray(fn(ja, jb))[0, 0]),
                    facts={"jax_version": jax.__version__})
