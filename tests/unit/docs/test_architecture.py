"""docs/ARCHITECTURE.md is the map of the code as it is: generated from the module docstrings
(scripts/architecture_doc.py), it names every module under scripts/."""
import subprocess
import sys
from pathlib import Path

import architecture_doc

REPO = Path(__file__).resolve().parents[3]


def test_the_page_is_current():
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "architecture_doc.py"), "--check"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_every_module_is_named():
    page = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert architecture_doc.missing() == []
    for path in sorted((REPO / "scripts").rglob("*.py")):
        if "__pycache__" not in path.parts:
            assert f"`{path.relative_to(REPO / 'scripts').as_posix()}`" in page, path


def test_the_check_fails_on_a_stale_page(tmp_path, monkeypatch):
    stale = tmp_path / "ARCHITECTURE.md"
    stale.write_text(architecture_doc.page().replace("`tfspeed/cells.py`", "`tfspeed/gone.py`"))
    monkeypatch.setattr(architecture_doc, "PAGE", stale)
    assert architecture_doc.main(["--check"]) == 1



def test_every_recipe_names_a_test_that_exists():
    """Each recipe of the page is performed by a test: its file holds a test of that name."""
    import ast

    assert len(architecture_doc.RECIPES) >= 5
    for what, _, test in architecture_doc.RECIPES:
        path, name = test.split("::")
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert name in names, (what, test)
    page = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    assert "## Recipes" in page and "## Data flow" in page
