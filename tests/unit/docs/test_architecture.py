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

