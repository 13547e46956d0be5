"""One module per framework family; each turns a cell into a step to time and says which cells it
can run.

A backend module declares
    FRAMEWORKS            the catalogue names it serves (tfspeed/frameworks.py)
    claims(cell)          whether a cell of those frameworks is its own (the micro-cases claim
                          theirs by api, Keras 3 on JAX/torch by its flavour); without it, all
    BUILDS_MODEL          True for a backend that builds a model (not a micro-case): the cell
                          must first pass model_cell_why_not
    why_not(env, cell)    None if it can run the cell in this env (envspec facts), else a reason:
                          its own constraints, after the generic ones of tfspeed/cells.py
    prepare(cell, rule)   -> Prepared, in the cell's process (the framework is imported there)
Backends are asked in BACKENDS' order; the first that serves the framework and claims the cell
runs it. Framework differences live in the backend that owns them, not in `if version` branches
across the runner. Importing a backend imports no framework, so the planning side asks them too.
"""
import importlib

from ..models import INFER_APIS

BACKENDS = ("matmul", "gradient", "keras3", "tf", "torch")


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


def find(cell, framework):
    """The backend module that runs a cell of this framework, or None."""
    for name in BACKENDS:
        mod = importlib.import_module("." + name, __name__)
        if framework in mod.FRAMEWORKS and (not hasattr(mod, "claims") or mod.claims(cell)):
            return mod
    return None


def load(cell, framework):
    """The backend module for a cell (its framework is imported lazily, by prepare)."""
    mod = find(cell, framework)
    if mod is None:
        raise Unsupported("no backend for framework %r" % framework)
    return mod


def model_cell_why_not(env, cell):
    """What every backend that builds a model (not a micro-case) asks first: the env carries the
    cell's Keras flavour and device, and inference is timed on one numpy array everywhere."""
    if cell["keras"] not in env["flavours"]:
        return "keras flavour %s not in this env" % cell["keras"]
    if cell["device"] == "gpu" and env["build"] != "gpu":
        return "CPU build"
    if cell["api"] in INFER_APIS:
        if cell["input"] != "numpy":
            return "inference is timed on the same numpy array in every framework"
        if cell["api"] == "inference_mode" and env["framework"] != "torch":
            return "torch.inference_mode is PyTorch's"
    return None
