"""Same model, same function (tfspeed/samefunction.py): the check each cell file of a user's model
carries (`same_function`) reaches cells.csv typed and described, and a mismatch is listed in the
report's failures section. The cell files are synthetic, with one mismatch planted."""
import glob

import pandas as pd
import pytest
from cellfiles import run, write_cell
from helpers import REPO

from driver.report import render
from driver.tables import bundle, columns

TEMPLATE = REPO / "report" / "template.html.j2"
MATCH = {"max_abs_diff": 2e-7, "tolerance": 1.1e-6, "match": True, "reference": "numpy"}
MISMATCH = {"max_abs_diff": 0.25, "tolerance": 1.1e-6, "match": False, "reference": "numpy"}


def plant(root, env, check, **axes):
    """One ok cell file with its `same_function` record, as run_cell.py writes it."""
    import json

    path = write_cell(root, env, **axes)
    doc = json.loads(path.read_text())
    if check is not None:
        doc["same_function"] = check
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("same_function")
    root = tmp / "cells"
    files = [
        plant(root, "tf2.21", MATCH, keras="keras3", mode="eager"),
        plant(root, "torch2.13", MISMATCH, keras="none", mode="eager", api="custom_loop"),
        plant(root, "tf1.14", {"error": "ValueError: no such layer", "match": None},
              keras="tf.keras", mode="graph"),
        plant(root, "tf1.14", None, keras="tf.keras", mode="eager"),  # not checked
    ]
    frames, out, tables = run(tmp, files)
    cells = bundle.read_table(out / "tables" / "cells.csv")
    return frames, cells, out, tables


def test_the_check_is_a_typed_described_column(study):
    _, cells, _, _ = study
    got = {cid: (v, d) for cid, v, d in zip(cells.cell_id, cells.same_function,
                                            cells.same_function_max_diff)}
    assert got["small-small.keras3.eager.train_on_batch.numpy.cpu"] == ("match", 2e-7)
    assert got["small-small.none.eager.custom_loop.numpy.cpu"] == ("mismatch", 0.25)
    verdict, diff = got["small-small.tfkeras.graph.train_on_batch.numpy.cpu"]
    assert verdict == "error: ValueError: no such layer" and diff != diff  # NaN: no difference
    verdict, _ = got["small-small.tfkeras.eager.train_on_batch.numpy.cpu"]
    assert pd.isna(verdict)  # not checked: empty
    for name in ("same_function", "same_function_max_diff", "same_function_tolerance"):
        assert columns.column(name) is not None and columns.column(name).description
    assert bundle.column_type("same_function") == "text"
    assert bundle.column_type("same_function_max_diff") == "number"


def test_a_study_without_the_check_keeps_its_columns(tmp_path):
    files = [write_cell(tmp_path / "cells", "tf2.21", keras="keras3")]
    frames, _, _ = run(tmp_path, files)
    assert "same_function" not in frames["cells"].columns


def test_the_report_lists_the_mismatch(study):
    _, cells, out, tables = study
    tabs = bundle.read_tables(sorted(glob.glob(str(out / "tables" / "*.csv"))))
    ctx = render.build_context(cells, tabs, {}, {}, "m", {})
    assert ctx["errors"] == {}
    listed = {(m["env"], m["cell"], m["verdict"]) for m in ctx["failures"]["same_function"]}
    assert listed == {
        ("torch2.13", "small-small.none.eager.custom_loop.numpy.cpu", "mismatch"),
        ("tf1.14", "small-small.tfkeras.graph.train_on_batch.numpy.cpu",
         "error: ValueError: no such layer")}
    html = render.render_html(ctx, TEMPLATE)
    section = html[html.index('<section id="failures"'):]
    section = section[:section.index("</section>")]
    assert "Same model, different function" in section
    # the cell in words, its ids in the tooltip
    assert "PyTorch 2.13: Eager, custom loop, NumPy input" in section
    assert 'title="env torch2.13, cell small-small.none.eager.custom_loop.numpy.cpu"' in section
    assert "largest difference 0.25 (tolerance 1.1e-06)" in section
    assert "no such layer" in section
    assert "keras3.eager.train_on_batch" not in section  # the match is not listed
