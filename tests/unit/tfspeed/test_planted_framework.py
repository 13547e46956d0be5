"""The framework catalogue is the only extension point (tfspeed/frameworks.py): a framework that is
one catalogue row and one backend module (both planted here, the backend and the framework's own
module written under tmp_path, nothing of them in the repository) is planned (its env's cells),
built-checked (build_env's import check, the GPU query), run (run_cell.run, in-process, through
its backend's prepare and step and its matmul hook), checked for the same function and labelled
(tables' labels, the report's guidance) with no other file naming it."""
import subprocess
import sys

import build_env
import pandas as pd
import pytest
import run_cell

from driver.report import guidance
from driver.study import envspec, gpucheck
from driver.tables import comparisons, labels, summaries
from tfspeed import backends, cells, frameworks, samefunction

ROW = frameworks.Framework(
    "fakeflow", "FakeFlow", "FF", 3, modes=("eager",), matmul_modes=("numpy", "eager"),
    packages=("fakeflow",), module="fakeflow", backends=("fakenet",),
    gpu_query="import fakeflow; print(fakeflow.gpus())",
    switches={"eager": "fakeflow.eager()"}, env_prefix="fake", tag="ff")

# The framework itself: a module the env's Python imports (its import name is the row's `module`).
FRAMEWORK = '''
import numpy as np

__version__ = "0.7.1"


def gpus():
    return 0


def dot(a, b):
    return np.dot(a, b)
'''

# Its backend: custom-loop cells on numpy, and the hooks (matmul, same function, GPU hint).
BACKEND = '''
"""FakeFlow: a planted backend (tests/unit/tfspeed/test_planted_framework.py)."""
import numpy as np

from tfspeed import samefunction
from tfspeed.backends import Prepared, kerasnet

BUILDS_MODEL = True
PREPARED = []


def why_not(env, cell):
    if cell["api"] != "custom_loop" or cell["input"] != "numpy":
        return "FakeFlow runs custom loops on numpy"
    return None if cell["mode"] == "eager" else "FakeFlow runs eager only"


def prepare(cell, rule):
    import fakeflow

    x, y = kerasnet.make_data(cell["model"], cell["data"])
    w = np.ones((x.shape[-1], 1), dtype="float32")
    PREPARED.append(dict(cell))

    def step():
        return float(fakeflow.dot(x, w).mean())

    return Prepared(step=step, facts={"fakeflow_version": fakeflow.__version__})


def matmul(a, b, mode, device):
    import fakeflow

    return Prepared(step=lambda: float(fakeflow.dot(a, b)[0, 0]),
                    facts={"fakeflow_version": fakeflow.__version__})


def same_function_output(cell, x, weights):
    return samefunction.forward(cell["model"], x, weights)


def gpu_hint(version):
    return "FakeFlow %s: pip install fakeflow-cuda" % version
'''

RULE = {"kind": "fixed", "iterations": 5, "target_rel": 0.05, "min_samples": 3,
        "max_samples": 10, "budget_s": 1.0, "level": 0.95, "warmup_rel": 0.5,
        "warmup_block_s": 0.005, "warmup_max_s": 0.1, "min_samples_max_s": 1.0}


@pytest.fixture
def planted(tmp_path, monkeypatch):
    """The row in the catalogue, the backend findable under tfspeed.backends, the framework
    importable; all gone afterwards."""
    site, extra = tmp_path / "site", tmp_path / "backends"
    site.mkdir()
    extra.mkdir()
    (site / "fakeflow.py").write_text(FRAMEWORK)
    (extra / "fakenet.py").write_text(BACKEND)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(backends, "__path__", list(backends.__path__) + [str(extra)])
    for name in ("fakeflow", "tfspeed.backends.fakenet"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    frameworks.register(ROW)
    yield site
    frameworks.unregister(ROW.name)
    for name in ("fakeflow", "tfspeed.backends.fakenet"):
        sys.modules.pop(name, None)
    assert frameworks.get(ROW.name) is None and ROW.name not in frameworks.NAMES


def env():
    """What envspec reads from the new env file's pins: the catalogue's packages say whose it is."""
    return envspec.describe("fake0.7", "3.11", {"fakeflow": "0.7.1", "numpy": "1.26.4"}, [], [],
                            {})


def test_it_is_planned(planted):
    facts = env()
    assert (facts["framework"], facts["framework_version"], facts["flavours"]) == (
        "fakeflow", "0.7.1", ["none"])
    grid = {"pairs": [("small", "small"), ("matmul", "matmul"), ("xsquared", "scalar")]}
    ids = {cells.cell_id(c) for c in cells.expand_grid(facts, grid)}
    assert ids == {"small-small.none.eager.custom_loop.numpy.cpu",
                   "matmul-matmul.none.numpy.matmul.numpy.cpu",
                   "matmul-matmul.none.eager.matmul.numpy.cpu"}
    gradient = dict(model="xsquared", data="scalar", keras="none", mode="eager", api="gradient",
                    input="numpy", device="cpu")
    assert "TensorFlow's" in cells.why_not(facts, gradient)  # the micro-cases reach it too
    assert backends.find(cells.parse_cell_id("small-small.none.eager.custom_loop.numpy.cpu"),
                         "fakeflow").__name__ == "tfspeed.backends.fakenet"


def test_it_is_built_checked(planted):
    """build_env's import check and gpucheck's GPU query, in a fresh Python that finds the
    framework as a built env would (on its path)."""
    check = build_env.import_check("fakeflow") + "; print(m.__version__)"
    assert check.startswith("import fakeflow as m")
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                         timeout=60, env={"PYTHONPATH": str(planted)})
    assert out.returncode == 0 and out.stdout.strip() == "0.7.1", out.stderr

    def run_in_env(cmd, **kwargs):
        return subprocess.run(cmd, env={"PYTHONPATH": str(planted)}, **kwargs)

    assert gpucheck.framework_gpus(sys.executable, "fakeflow", run=run_in_env) == (0, "")
    assert gpucheck.gpu_hint({"framework": "fakeflow", "framework_version": "0.7.1"}) == \
        "FakeFlow 0.7.1: pip install fakeflow-cuda"
    assert build_env.import_check("nosuchframework") == "import numpy as m"


@pytest.mark.parametrize("cell_id, facts_key", [
    ("small-small.none.eager.custom_loop.numpy.cpu", "fakeflow_version"),
    ("matmul-matmul.none.eager.matmul.numpy.cpu", "fakeflow_version"),
    ("matmul-matmul.none.numpy.matmul.numpy.cpu", "matmul_n"),
])
def test_it_runs_through_the_runner(planted, cell_id, facts_key, capsys):
    out = run_cell.run(cells.parse_cell_id(cell_id), RULE, "fakeflow", 1.0)
    assert out["status"] == "ok" and len(out["samples_s"]) >= 3
    assert facts_key in out["framework_facts"]
    assert "timed window: start" in capsys.readouterr().out  # announced as a real cell is


def test_its_same_function_hook_is_found(planted):
    cell = cells.parse_cell_id("small-small.none.eager.custom_loop.numpy.cpu")
    got = samefunction.check(cell, "fakeflow")
    assert got["match"] is True and got["max_abs_diff"] == 0.0


def test_it_is_labelled_by_its_row(planted):
    assert labels.FRAMEWORK["fakeflow"] == "FakeFlow" and labels.FRAMEWORK_SHORT["fakeflow"] == "FF"
    assert "fakeflow" in labels.FRAMEWORK and len(labels.FRAMEWORK) == len(frameworks.CATALOGUE)
    row = {"api": "custom_loop", "input": "numpy", "keras": "none", "framework": "fakeflow",
           "framework_version": "0.7.1", "mode": "eager", "device": "cpu"}
    assert summaries.configuration_text(row) == "custom loop + numpy + FF 0.7.1 + Eager + CPU"
    assert comparisons.family("fakeflow", "none") == "FakeFlow"  # best vs best across frameworks
    rows = pd.DataFrame([
        {"machine": "m", "model": "small", "data": "small", "task": "train", "list": "DO",
         "configuration": "x", "ratio_to_fastest": ratio, "median_s": 0.01 * ratio,
         "fastest_median_s": 0.01, "env": env_name, "framework_version": version,
         "keras": "none", "mode": "eager", "api": "custom_loop", "input": "numpy",
         "device": "cpu"}
        for env_name, version, ratio in (("fake0.7", "0.7.1", 1.0), ("torch2.13", "2.13.0", 1.01))])
    blocks = guidance.rules(rows)
    fake, torch = blocks[0]["do"]
    assert fake["where"] == "FF 0.7.1" and fake["switch"] == "fakeflow.eager()"
    assert torch["where"] == "PyTorch 2.13.0" and torch["switch"] == "PyTorch's default"
    assert ("eager (ff)", "fakeflow.eager()") in guidance.switch_lines(blocks)
    assert ("eager (torch)", "PyTorch's default") in guidance.switch_lines(blocks)


def test_without_its_row_it_is_nothing(planted):
    """The row is what makes it a framework: unregistered, the same env has no framework."""
    frameworks.unregister(ROW.name)
    try:
        assert env()["framework"] is None
        with pytest.raises(backends.Unsupported, match="fakeflow"):
            backends.load(cells.parse_cell_id("small-small.none.eager.custom_loop.numpy.cpu"),
                          "fakeflow")
    finally:
        frameworks.register(ROW)
