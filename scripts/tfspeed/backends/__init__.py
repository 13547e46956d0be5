"""One module per framework family; each turns a cell into a step to time.

A backend exposes `prepare(cell, rule) -> Prepared`. Framework differences live in the backend that
owns them, not in `if version` branches across the runner.
"""


class Unsupported(Exception):
    """The cell proved impossible at run time (an API that rejects this input, no GPU visible).
    The runner writes it as `skipped` with this message as the reason."""


class Prepared(object):
    """What a backend hands the timing loop.

    step: a callable running one step of the cell's API (one train_on_batch, one one-step fit,
        one custom-loop step, one inference call, one matmul, one gradient) and returning a
        host-side float (the loss, the output's first value), so the device has finished before
        the clock stops.
    traces: a callable returning how many graph traces have happened so far, or None.
    facts: framework facts for provenance (versions, optimizer class, threads, build info).
    """

    def __init__(self, step, traces=None, facts=None):
        self.step, self.traces = step, traces
        self.facts = facts or {}


def load(cell, framework):
    """The backend module for a cell (imported lazily: only one framework per process)."""
    if cell["api"] == "matmul":
        from . import matmul as mod
    elif cell["api"] == "gradient":
        from . import gradient as mod
    elif cell["keras"] == "keras3" and framework in ("jax", "torch"):
        from . import keras3 as mod
    elif framework == "tensorflow":
        from . import tf as mod
    elif framework == "torch":
        from . import torch as mod
    else:
        raise Unsupported("no backend for framework %r" % framework)
    return mod
