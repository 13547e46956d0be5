"""One module per framework family; each turns a cell into a step to time and says which cells it
can run.

Which modules serve a framework is the catalogue's business (tfspeed/frameworks.py: its row's
`backends`); they are asked after the micro-cases (MICRO_CASES: seed 004's matmul, seed 001's
custom gradient, which every framework's cells reach), in that order, and the first that claims
the cell runs it. A backend module declares
    claims(cell)          whether a cell of its frameworks is its own (the micro-cases claim
                          theirs by api, Keras 3 on JAX/torch by its flavour); without it, all
    BUILDS_MODEL          True for a backend that builds a model (not a micro-case): the cell
                          must first pass model_cell_why_not
    why_not(env, cell)    None if it can run the cell in this env (envspec facts), else a reason:
                          its own constraints, after the generic ones of tfspeed/cells.py
    prepare(cell, rule)   -> Prepared, in the cell's process (the framework is imported there)
and, where it has them, the hooks that other code looks up through it instead of naming
frameworks:
    same_function_output(cell, x, weights)   its build of the cell's model with the seeded
                          weights, run forward (tfspeed/samefunction.py), on the backend that
                          runs the cell
    matmul(a, b, mode, device) -> Prepared    seed 004's matmul in the framework, on the
                          framework's own backend (the first of its row)
    matmul_why_not(env, cell)                 the framework's own limits on a matmul cell
    gpu_hint(version)     what to do when a GPU build of this version sees no GPU
                          (driver/study/gpucheck.py), on the framework's own backend
    import_hint(packages, build)              why a built env's import check may have failed
                          (build_env.py), or None
    clear_session(cell)   what run_cell.py --serve does before it builds a model again in the
                          same process, on the framework's own backend
Framework differences live in the backend that owns them, not in `if version` branches across the
runner. Importing a backend imports no framework, so the planning side asks them too.
"""
import importlib

from .. import frameworks
from ..models import INFER_APIS

MICRO_CASES = ("matmul", "gradient")


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


def module(name):
    """A backend module by its name under tfspeed/backends/ (imports no framework)."""
    return importlib.import_module("." + name, __name__)


def names(framework):
    """The backend modules a framework's cells are offered to, in order: the micro-cases, then its
    catalogue row's; () for a framework the catalogue does not hold."""
    row = frameworks.get(framework)
    return MICRO_CASES + tuple(row.backends) if row is not None else ()


def all_names():
    """Every backend module any framework of the catalogue reaches, each once."""
    out = []
    for fw in frameworks.CATALOGUE:
        out += [n for n in names(fw.name) if n not in out]
    return tuple(out)


def find(cell, framework):
    """The backend module that runs a cell of this framework, or None."""
    for name in names(framework):
        mod = module(name)
        if not hasattr(mod, "claims") or mod.claims(cell):
            return mod
    return None


def own(framework):
    """The framework's own backend module (the first of its catalogue row): where its hooks are."""
    row = frameworks.get(framework)
    return module(row.backends[0]) if row is not None and row.backends else None


def hook(framework, name):
    """The framework's own backend's hook `name`, or None where it has none."""
    mod = own(framework)
    return getattr(mod, name, None) if mod is not None else None


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
