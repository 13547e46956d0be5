"""Imports run downward through the driver's layers, and the in-env package imports none of them.

    tables -> study, stats      report -> tables, study, stats      study, stats: their own only

`study` (paths, the cell record, env specs) and `stats` (pure statistics) sit at the bottom side by
side and import neither each other nor anything above; the entry scripts in scripts/*.py may import
any layer. scripts/tfspeed/ (and run_cell.py) run inside the framework envs and import no layer.
Every import counts, also one inside a function, which an import-time check would not see.
"""
import ast
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
# A layer may import the layers it names here, and itself.
MAY_IMPORT = {
    "study": set(),
    "stats": set(),
    "tables": {"study", "stats"},
    "report": {"study", "stats", "tables"},
    "tfspeed": set(),
}


def imported_layers(source: str):
    """(line, driver layer) for every import of `driver.<layer>` (or `from driver import <layer>`)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "driver":
                names = [f"driver.{a.name}" for a in node.names]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] == "driver":
                yield node.lineno, parts[1] if len(parts) > 1 else "driver"


def layer_of(path: Path, scripts: Path) -> str | None:
    """The layer a file belongs to: driver/<layer>/..., tfspeed/... and run_cell.py; None for the
    entry scripts."""
    rel = path.relative_to(scripts).parts
    if rel[0] == "driver":
        return rel[1] if len(rel) > 2 else "driver"
    if rel[0] == "tfspeed" or rel == ("run_cell.py",):
        return "tfspeed"
    return None


def upward_imports(scripts: Path) -> list[str]:
    """Every import that breaks the layering, as 'file:line: layer imports layer'."""
    bad = []
    for path in sorted(scripts.rglob("*.py")):
        layer = layer_of(path, scripts)
        if layer is None:
            continue
        for line, target in imported_layers(path.read_text(encoding="utf-8")):
            if target != layer and target not in MAY_IMPORT.get(layer, set()):
                bad.append(f"{path.relative_to(scripts)}:{line}: {layer} imports driver.{target}")
    return bad


def test_every_driver_module_is_in_a_layer():
    strays = [p.name for p in (SCRIPTS / "driver").glob("*.py") if p.name != "__init__.py"]
    assert strays == []
    layers = {p.name for p in (SCRIPTS / "driver").iterdir() if (p / "__init__.py").exists()}
    assert layers == set(MAY_IMPORT) - {"tfspeed"}


def test_imports_run_downward():
    assert upward_imports(SCRIPTS) == []


@pytest.mark.parametrize("layer, line, caught", [
    ("tables", "from driver.report.fmt import text", True),
    ("stats", "from driver.study import layout", True),
    ("study", "import driver.tables.registry", True),
    ("stats", "from driver import tables", True),
    ("report", "from driver.tables import bundle", False),
    ("tables", "from driver.stats import verdicts", False),
])
def test_the_check_catches_an_upward_import(tmp_path, layer, line, caught):
    """The check must be able to fail: a planted import, also one inside a function."""
    module = tmp_path / "driver" / layer / "planted.py"
    module.parent.mkdir(parents=True)
    (module.parent / "__init__.py").write_text("")
    module.write_text(f"def f():\n    {line}\n")
    assert bool(upward_imports(tmp_path)) is caught


def test_the_in_env_package_imports_no_layer(tmp_path):
    planted = tmp_path / "tfspeed" / "backends" / "x.py"
    planted.parent.mkdir(parents=True)
    planted.write_text("import numpy\nfrom driver.study import layout\n")
    assert upward_imports(tmp_path) == ["tfspeed/backends/x.py:2: tfspeed imports driver.study"]
