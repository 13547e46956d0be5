"""Reading cell files (driver/study/record.py, layout.py): bad files are named, other machines'
files are found.
"""

import json

import pytest
from cellfiles import MACHINE, run, write_cell

from driver.study import layout, record

# --- bad files ----------------------------------------------------------------------------------

def test_truncated_file_names_the_file(tmp_path):
    root = tmp_path / "cells"
    good = write_cell(root, "tf2.0")
    bad = write_cell(root, "tf2.0", mode="graph")
    bad.write_text(bad.read_text()[:200])
    with pytest.raises(record.CellFileError, match=bad.name) as info:
        run(tmp_path, [good, bad])
    assert str(bad) in str(info.value)
    assert not (tmp_path / "out" / "study.xlsx").exists()


@pytest.mark.parametrize("breakage, where", [
    (lambda d: d.pop("samples_s"), "samples_s"),  # ok without samples
    (lambda d: d.update(mode="turbo"), "mode"),
    (lambda d: d.update(samples_s=[0.01, -0.02, 0.01]), "samples_s/1"),
    (lambda d: d.update(schema_version=99), "schema_version"),
    (lambda d: d.update(status="failed", reason=""), "reason"),
])
def test_schema_invalid_file_names_the_file(tmp_path, breakage, where):
    root = tmp_path / "cells"
    path = write_cell(root, "tf2.0")
    doc = json.loads(path.read_text())
    breakage(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(record.CellFileError) as info:
        run(tmp_path, [path])
    assert str(path) in str(info.value)
    assert where in str(info.value) or "required" in str(info.value)


def test_file_at_the_wrong_place_is_rejected(tmp_path):
    root = tmp_path / "cells"
    path = write_cell(root, "tf2.0")
    moved = root / MACHINE / "tf2.3" / path.name
    moved.parent.mkdir()
    path.rename(moved)
    with pytest.raises(record.CellFileError, match="env"):
        run(tmp_path, [moved])


def test_schema_accepts_real_shapes(tmp_path):
    """A failed cell of an env that did not build (framework null, no python) is valid."""
    root = tmp_path / "cells"
    path = write_cell(root, "tf2.3", status="failed", reason="env build failed: pip")
    doc = json.loads(path.read_text())
    doc.update(framework=None, framework_version=None, flops_per_step=None)
    path.write_text(json.dumps(doc))
    assert record.read_cell_file(path)["framework"] is None


# --- other machines -----------------------------------------------------------------------------

def test_other_machine_files(tmp_path):
    root = tmp_path / "cells"
    mine = write_cell(root, "tf2.0")
    theirs = write_cell(root, "tf2.0", machine="other")
    (theirs.parent / (".cell-abc.json")).write_text("{")  # a runner's temporary file
    (theirs.parent / ("." + theirs.name + ".x1.tmp")).write_text("{")
    (root / "other" / "round0.done").write_text("")
    found = layout.other_machine_files(str(root), MACHINE, "all")
    assert found == [str(theirs)]
    assert layout.other_machine_files(str(root), MACHINE, ["other"]) == [str(theirs)]
    assert layout.other_machine_files(str(root), MACHINE, []) == []
    assert str(mine) not in layout.other_machine_files(str(root), MACHINE, [MACHINE, "other"])




def test_code_facts_name_the_checkout_commit():
    """Each cell and duet records the workflow commit that timed it (make publish reads it)."""
    import subprocess

    from driver.study import provenance

    facts = provenance.code_facts()
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                          cwd=provenance.os.path.dirname(provenance.__file__))
    if head.returncode:
        pytest.skip("not a git checkout")
    assert facts["commit"] == head.stdout.strip() and isinstance(facts["dirty"], bool)
    assert provenance.code_facts("/nonexistent") == {"commit": None, "dirty": None}
