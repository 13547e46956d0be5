"""Imports run downward through the driver's layers, and the in-env package imports none of them.

    tables -> study, stats      report -> tables, study, stats      study, stats: their own only

`study` (paths, the cell record, env specs) and `stats` (pure statistics) sit at the bottom side by
side and import neither each other nor anything above; the entry scripts in scripts/*.py may import
any layer. scripts/tfspeed/ (and run_cell.py) run inside the framework envs and import no layer.
Every import counts, also one inside a function, which an import-time check would not see. And no
module of scripts/tfspeed or scripts/driver imports itself back through a chain of imports (an
import circle: `test_no_import_circles`).
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


# Import circles: no module of scripts/tfspeed or scripts/driver imports itself back, through any
# chain of imports, also imports inside functions (which hide a circle from an import-time check
# until the day the function runs first).
PACKAGES = ("tfspeed", "driver")


def module_name(path: Path, scripts: Path) -> str:
    parts = list(path.relative_to(scripts).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(scripts: Path) -> dict[str, set[str]]:
    """module -> the modules of PACKAGES it imports (`from pkg import name` counts as importing
    pkg.name where that is a module, else pkg)."""
    files = {module_name(p, scripts): p for pkg in PACKAGES for p in (scripts / pkg).rglob("*.py")
             if "__pycache__" not in p.parts}
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base
                           for a in node.names]
            else:
                continue
            edges |= {t for t in targets if t in files and t != name}
        graph[name] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected set of two or more modules (Tarjan), each sorted, as chains."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def test_no_import_circles():
    graph = import_graph(SCRIPTS)
    assert len(graph) > 50 and "tfspeed.backends.tf" in graph
    assert circles(graph) == []


def test_the_circle_check_catches_a_planted_circle(tmp_path):
    """Two modules that import each other, one of them inside a function, relatively."""
    for pkg in PACKAGES:
        (tmp_path / pkg / "sub").mkdir(parents=True)
        (tmp_path / pkg / "__init__.py").write_text("")
        (tmp_path / pkg / "sub" / "__init__.py").write_text("")
    (tmp_path / "tfspeed" / "a.py").write_text("from .sub import b\n")
    (tmp_path / "tfspeed" / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    (tmp_path / "driver" / "c.py").write_text("import tfspeed.a\n")
    graph = import_graph(tmp_path)
    assert graph["tfspeed.a"] == {"tfspeed.sub.b"} and graph["driver.c"] == {"tfspeed.a"}
    assert circles(graph) == [["tfspeed.a", "tfspeed.sub.b"]]
