"""JAX itself: the hooks of a framework whose model cells are Keras 3's (backends/keras3.py, the
next module of its catalogue row), here seed 004's matmul in JAX: jax.numpy.dot, eager or jitted
(mode xla), on the cell's device placed explicitly (jax.device_put). It claims no cell of its
own."""
import numpy as np

from . import Prepared, Unsupported


def claims(cell):
    return False


def platform(device):
    """JAX's platform name for a cell's `device` axis."""
    return "gpu" if device == "gpu" else "cpu"


def place(jax, device):
    """The first JAX device of the cell's platform: a cpu cell runs on the CPU even where JAX
    sees a GPU (its default there); a gpu cell is Unsupported where JAX sees none."""
    try:
        found = jax.devices(platform(device))
    except RuntimeError:  # JAX's answer where no backend of that platform initialised
        found = []
    if not found:
        raise Unsupported("device %s: no %s device visible to JAX on this machine"
                          % (device, platform(device).upper()))
    return found[0]


def matmul(a, b, mode, device):
    """Seed 004's matmul: both operands committed to the cell's device once (computations follow
    committed operands, jitted or not); each step copies the whole product back to the host."""
    import jax

    where = place(jax, device)
    ja, jb = jax.device_put(a, where), jax.device_put(b, where)
    fn = jax.jit(jax.numpy.dot) if mode == "xla" else jax.numpy.dot
    return Prepared(step=lambda: float(np.asarray(fn(ja, jb))[0, 0]),
                    facts={"jax_version": jax.__version__, "device": str(where),
                           "default_matmul_precision":
                               str(jax.config.jax_default_matmul_precision)})
