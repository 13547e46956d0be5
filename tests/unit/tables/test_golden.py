"""Golden test: the checked-in real cell files (tests/fixtures/cells, from a quick run) give
exactly the checked-in tables and workbook values (tests/fixtures/golden, written by
tests/support/make_golden.py)."""
import json

import pandas as pd
import pytest
from make_golden import GOLDEN, aggregate, workbook_values


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    return aggregate(tmp_path_factory.mktemp("golden"))


def test_every_table_matches_its_golden_csv(outputs):
    names = [n for n in outputs if n != "xlsx"]
    assert sorted(p.stem for p in GOLDEN.glob("*.csv")) == sorted(names)
    for name in names:
        got = pd.read_csv(outputs[name], dtype=str, keep_default_na=False)
        want = pd.read_csv(GOLDEN / f"{name}.csv", dtype=str, keep_default_na=False)
        pd.testing.assert_frame_equal(got, want, check_exact=True, obj=name)


def test_workbook_values_match(outputs):
    want = json.loads((GOLDEN / "workbook.json").read_text())
    got = json.loads(json.dumps(workbook_values(outputs["xlsx"]), default=str))
    assert list(got) == list(want)
    for sheet in want:
        assert got[sheet] == want[sheet], sheet


def test_fixtures_are_real_quick_run_files():
    """Every fixture is a whole cell file of a real run (a quick run on real frameworks)."""
    from make_golden import cell_files

    files = cell_files()
    assert len(files) >= 20
    envs = {json.loads(open(f).read())["env"] for f in files}
    assert {"tf1.14", "tf2.21", "torch2.13", "keras3-jax"} <= envs
