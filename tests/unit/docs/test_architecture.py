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


def test_every_entry_script_has_one_role_and_the_worker_is_the_one_started_in_envs():
    """scripts/ shows its roles on the page: each entry script is a rule's, a make target's, or
    the in-env worker, read from where it is named (never typed); none is both."""
    scripts = architecture_doc.modules("")
    roles = {p.name: architecture_doc.role(p) for p in scripts}
    assert "both" not in roles.values(), roles
    assert [n for n, r in roles.items() if r == "worker"] == ["run_cell.py"]
    assert roles["tabulate_cells.py"] == "rule" and roles["republish.py"] == "make"
    page = architecture_doc.page()
    for _, text in architecture_doc.ROLES:
        assert text[1:] in page
