"""The generated reference pages (scripts/reference_docs.py, `make reference`) are what the code
gives: every table of the registry, every key of the config schema, the axes of tfspeed/cells.py."""
import json
import re
from pathlib import Path

import reference_docs
import yaml

from driver.tables import registry
from tfspeed import cells

REPO = Path(__file__).resolve().parents[3]


def test_committed_pages_are_current():
    assert reference_docs.main(["--check"]) == 0, "run `make reference` and commit docs/reference/"


def test_check_fails_on_a_stale_page(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(reference_docs, "REFERENCE", tmp_path)
    monkeypatch.setattr(reference_docs, "REPO", REPO)
    (tmp_path / "cells.md").write_text("<!-- generated: axes -->\nold\n<!-- end generated -->\n")
    assert reference_docs.main(["--check"]) == 1  # nothing written yet
    assert reference_docs.main([]) == 0 and reference_docs.main(["--check"]) == 0
    page = tmp_path / "tables.md"
    page.write_text(page.read_text().replace("tf2_vs_tf1", "tf2_vs_tf0", 1))
    assert reference_docs.main(["--check"]) == 1
    assert "tables.md" in capsys.readouterr().err


def test_tables_page_names_every_registered_table():
    page = reference_docs.tables_page()
    headings = re.findall(r"^## (\S+)$", page, re.M)
    assert [h for h in headings if h != "Columns"] == [t.name for t in registry.REGISTRY]
    for t in registry.REGISTRY:
        assert " ".join(t.description.split()).replace("|", "\\|") in page


def _keys(props, prefix=""):
    for key, prop in props.items():
        yield prefix + key
        yield from _keys(prop.get("properties") or {}, prefix + key + ".")


def test_config_page_has_every_schema_key_with_its_default():
    schema = yaml.safe_load((REPO / "schemas" / "config.schema.yaml").read_text())
    page, _, grid = reference_docs.config_page().partition("## A grid")
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `([\w.]+)` \|.*$", page, re.M)}
    grid_rows = set(re.findall(r"^\| `([\w.]+)` \|", grid, re.M))
    assert set(_keys(schema["properties"])) <= set(rows)
    for key, prop in schema["properties"].items():
        if "default" in prop:
            default = prop["default"]
            text = default if isinstance(default, str) else json.dumps(default)
            assert "| `%s` |" % text in rows[key], key
    assert set(schema["$defs"]["grid"]["properties"]) == grid_rows


def test_cells_page_lists_every_axis_value():
    page = reference_docs.pages()[reference_docs.REFERENCE / "cells.md"]
    for values in (cells.KERAS, cells.MODES, cells.APIS, cells.INPUTS, cells.DEVICES):
        for value in values:
            assert "`%s`" % value in page
    for api in cells.APIS:
        assert "| `%s` | `%s` |" % (api, cells.task(api)) in page


def test_tables_page_lists_every_column():
    from driver.tables import columns

    page = reference_docs.tables_page()
    for col in columns.COLUMNS.values():
        assert "| `%s` | %s |" % (col.name, col.type) in page


def test_presets_page_is_current():
    """Each study's row comes from its plan (driver/study/plan.py), no dry run: cheap enough to
    check here; tests/unit/study/test_plan.py holds the plans to what `snakemake -n` lists."""
    from tfspeed import models

    saved = models.snapshot()  # own_model.yaml registers its models
    try:
        assert reference_docs.main(["--check", "--presets"]) == 0, "run `make reference`"
        jobs = reference_docs.planned_jobs("presets/fidelity_check.yaml")
    finally:
        models.restore(saved)
    # three cells (tf1.14, tf2.0, tf2.21) in six processes each, no twins, no duets: the preset
    assert jobs == {"run_cell": 18, "run_duet": 0, "build_env": 3}


def test_a_study_file_is_laid_over_the_default_config():
    default = reference_docs.study_config()
    quick = reference_docs.study_config("tests/quick.yaml")
    assert default["repeats"] > 1 and quick["repeats"] == 1  # the study file's value wins
    assert quick["order"] == default["order"]  # config.yaml's, where the study file is silent
    assert quick["stop"]["target_rel"] == default["stop"]["target_rel"]  # mappings merge
