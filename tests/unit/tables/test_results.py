"""One owner for a results folder (driver/tables/results.py): it finds the tables of results/,
tables/ or docs/, loads them typed, and no other module opens a results folder's files."""
import ast
import json
from pathlib import Path

import pandas as pd

from driver.tables import bundle
from driver.tables.registry import COMPARISONS
from driver.tables.results import Results

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"

# The modules that may read a results folder's files: the owner, the loaders it goes through,
# the layout that names the paths. Each other entry says why it is not a reader.
ALLOWED = {
    "driver/tables/results.py": "the owner",
    "driver/tables/bundle.py": "the typed loader the owner goes through",
    "driver/tables/facts.py": "the reader of facts.json / processes.json the owner goes through",
    "driver/study/layout.py": "the paths",
    # the study layer cannot import the tables layer (tests/unit/test_layers.py); compare-runs
    # now compares machines from Results.facts()
    "driver/study/fingerprint.py": "compare_folders, below the tables layer",
    "retry_failed.py": "deletes cells.csv so that Snakemake remakes it; reads nothing",
    "driver/study/publishing.py": "the suffixes of archive members whose paths it rewrites; reads no table",
}
READERS = {"read_table", "read_tables", "read_csv", "read_facts", "read_samples", "read_json"}


def _write(folder: Path, name: str, df: pd.DataFrame) -> None:
    bundle.write_table(df, folder / f"{name}.csv")


def _study(root: Path) -> Path:
    tables = root / "tables"
    tables.mkdir(parents=True)
    _write(tables, "cells", pd.DataFrame({"env": ["tf1.14", "tf2.10"], "cell_id": ["a", "a"],
                                          "status": ["ok", "failed"],
                                          "framework_version": ["1.14", "2.10"]}))
    _write(tables, "tf2_vs_tf1", pd.DataFrame({"left_env": ["tf2.10"], "verdict": ["equivalent"],
                                               "ratio": [1.01]}))
    _write(tables, "machines", pd.DataFrame({"left_env": ["tf2.10"], "verdict": ["equivalent"]}))
    (tables / "facts.json").write_text(json.dumps({"dates": "2026-01-01"}))
    return root


def test_one_object_for_results_tables_and_docs_folders(tmp_path):
    root = _study(tmp_path / "results")
    for given in (root, root / "tables"):
        res = Results(given)
        assert res.folder == root / "tables" and res.root == root
        cells = res.cells()
        assert list(cells["framework_version"]) == ["1.14", "2.10"]  # typed: '2.10' stays text
        assert res.facts() == {"dates": "2026-01-01"} and res.samples() == {}
        assert res.names() == ["machines", "tf2_vs_tf1"]
        assert "cells" in res.tables(cells=True)
        # a run's comparisons in the registry's order, the across-machines table left out
        assert list(res.comparisons()) == [n for n in COMPARISONS if n == "tf2_vs_tf1"]
        assert res.table("duets").empty and not res.has("duets")
    assert Results(tmp_path / "nowhere").facts() == {}


def test_from_files_keeps_the_named_inputs_and_their_order(tmp_path):
    root = _study(tmp_path / "results") / "tables"
    res = Results.from_files(root / "cells.csv", [root / "tf2_vs_tf1.csv", root / "machines.csv"],
                             None, root / "facts.json")
    assert res.names() == ["tf2_vs_tf1", "machines"]
    assert res.facts()["dates"] == "2026-01-01" and res.samples() == {}
    prev = Results.from_files(tables=sorted(root.glob("*.csv")))
    assert set(prev.tables(cells=True)) == {"cells", "machines", "tf2_vs_tf1"}


def _docstring_nodes(tree) -> set:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def readers(source: str) -> list[str]:
    """What in `source` reads a results folder's files: calls of the loaders and path-like
    strings naming a table or facts.json / processes.json (docstrings and messages aside)."""
    tree = ast.parse(source)
    docs = _docstring_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fn = node.func
            name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if name in READERS:
                found.append(f"line {node.lineno}: {name}(")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docs and not any(c.isspace() for c in node.value):
            value = node.value
            if value.endswith((".csv", "facts.json", "processes.json")):
                found.append(f"line {node.lineno}: {value!r}")
    return found


def test_no_reader_of_a_results_folder_outside_the_results_object():
    offenders = {}
    for path in sorted(SCRIPTS.rglob("*.py")):
        rel = path.relative_to(SCRIPTS).as_posix()
        if rel in ALLOWED or "__pycache__" in path.parts:
            continue
        hits = readers(path.read_text(encoding="utf-8"))
        if hits:
            offenders[rel] = hits
    assert not offenders, ("read a results folder through driver/tables/results.py "
                           f"(Results), not directly: {offenders}")


def test_the_grep_finds_a_planted_reader():
    planted = 'import pandas as pd\n\ndef f(folder):\n    return pd.read_csv(folder / "x.csv")\n'
    assert len(readers(planted)) == 2
    assert readers('"""A docstring about cells.csv."""\nX = "no cells.csv here"\n') == []
