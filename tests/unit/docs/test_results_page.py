"""docs/RESULTS.md is generated (driver/report/results_page.py, written by `make republish`)
from the tables: the report's first-screen sentences (driver/report/answer.py) and facts.json,
never typed. Tested on a real aggregation of the golden fixtures (tests/fixtures/cells, a real
quick run) and on the archived tables of commit 12b8ef4 (docs/archive/, older than facts.json).
That the committed docs/RESULTS.md is what the code gives: tests/unit/docs/test_published.py."""
import json
import shutil
from pathlib import Path

import pandas as pd
import publish
import pytest
from make_golden import aggregate
from markupsafe import escape

from driver.report import answer, results_page
from driver.report.bottom_line import bottom_line, more_lines
from driver.report.claim_lines import line_markdown
from driver.report.questions import questions
from driver.tables import bundle

REPO = Path(__file__).resolve().parents[3]
ARCHIVE = REPO / "docs" / "archive" / "12b8ef4"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    res = tmp_path_factory.mktemp("run") / "results"
    out = aggregate(res / "tables")
    shutil.move(str(out["xlsx"]), str(res / "study.xlsx"))
    (res / "report.html").write_text("<!doctype html><title>report</title>")
    return res


def test_page_holds_the_first_screen_and_the_runs_facts(results):
    page = results_page.results_page(results / "tables", 0.10)
    tabs = bundle.read_tables([results / "tables" / "tf2_vs_tf1.csv"])
    first = answer.answer(tabs, 0.10)  # the golden config has no min_effect: the schema default
    assert first["sentences"], "the quick run has like-for-like TF 2 vs TF 1 rows"
    for item in first["sentences"]:
        assert item["text"] in page and item["what"] in page
    cells_typed = bundle.read_tables([results / "tables" / "cells.csv"])["cells"]
    bottom = bottom_line(tabs, cells_typed, "tf1.14")
    assert bottom["lines"]
    for line in more_lines(bottom):  # the rest of the bottom line, after the questions
        assert "- **%s**: %s" % (line["what"], line["text"]) in page
    for q in questions(tabs, 0.10, bottom["reference"])["items"]:  # the report's first screen
        for line in line_markdown(q):
            assert line in page
    assert "undecided" in page  # one process per cell: nothing decided, and the page says so
    facts = json.loads((results / "tables" / "facts.json").read_text())
    assert "- measured: %s\n" % facts["dates"] in page
    cells = pd.read_csv(results / "tables" / "cells.csv")
    counts = ", ".join("%s %d" % kv for kv in sorted(cells["status"].value_counts().items()))
    assert "- cells: %d (%s)" % (len(cells), counts) in page
    assert "- envs: %d (" % cells["env"].nunique() in page
    for key in facts["machines"]:
        assert key in page
    assert results_page.results_page(results / "tables", 0.10) == page  # same tables, same page
    assert "sides of duets" not in page  # no cell of the golden run came from a duet's sides


def test_the_processes_count_says_how_many_were_duets_sides(results, tmp_path):
    """A cell pooled from a duet's sides (config duets.sides_as_cells) counts its replicates
    among the processes, and the line says how many of them were duets' workers, in how many
    cells, recomputed here from the cells table."""
    tables = tmp_path / "tables"
    shutil.copytree(results / "tables", tables)
    cells = pd.read_csv(tables / "cells.csv")
    ok = cells.index[cells["status"] == "ok"][:3]
    cells.loc[ok, "stopped_by"] = "duet sides"
    cells.loc[ok, "n_repeats"] = [4, 6, 10]
    cells.to_csv(tables / "cells.csv", index=False)
    page = results_page.results_page(tables, 0.10)
    total = int(cells.loc[cells["status"] == "ok", "n_repeats"].sum())
    assert "from %d ok processes (20 of them the sides of duets, in 3 cells)" % total in page


def test_page_follows_the_tables_not_a_typed_text(results, tmp_path):
    tables = tmp_path / "tables"
    shutil.copytree(results / "tables", tables)
    before = results_page.results_page(tables, 0.10)
    df = pd.read_csv(tables / "tf2_vs_tf1.csv", dtype=str, keep_default_na=False)
    row = df.index[df["verdict"] != "right_faster"][0]
    df.loc[row, "verdict"] = "right_faster"
    df.to_csv(tables / "tf2_vs_tf1.csv", index=False)
    after = results_page.results_page(tables, 0.10)
    assert after != before
    counts = df["verdict"].value_counts()
    assert "| [`tf2_vs_tf1`](tables/tf2_vs_tf1.csv) | %d | %d | %d | %d | %d |" % (
        len(df), counts.get("left_faster", 0), counts.get("right_faster", 0),
        counts.get("equivalent", 0), counts.get("inconclusive", 0) + counts.get("undecided", 0)) in after


def test_page_of_the_archived_tables():
    """docs/archive/12b8ef4/tables (an old publication; it predates facts.json): verdict counts
    per table and the failed cells, each computed here with pandas."""
    tables = ARCHIVE / "tables"
    page = results_page.results_page(tables, 0.05)
    assert "- measured: (no facts.json)" in page
    for path in sorted(tables.glob("*.csv")):
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
        if "verdict" not in df.columns:
            continue
        counts = df["verdict"].value_counts()
        assert "| [`%s`](tables/%s.csv) | %d | %d | %d |" % (
            path.stem, path.stem, len(df), counts.get("left_faster", 0),
            counts.get("right_faster", 0)) in page
    cells = pd.read_csv(tables / "cells.csv", dtype=str, keep_default_na=False)
    for cell_id in cells.loc[cells["status"] != "ok", "cell_id"]:
        assert "`%s`" % cell_id in page


def test_min_effect_is_the_runs_own(results, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("min_effect: 0.07\n")
    assert publish.run_min_effect(results / "study.xlsx", str(config)) == 0.07
    assert publish.run_min_effect(tmp_path / "missing.xlsx", str(tmp_path / "no.yaml")) == 0.10
    assert publish.run_min_effect(ARCHIVE / "study.xlsx") == 0.05  # its about sheet's config


def test_published_page_says_what_the_published_report_says():
    """docs/RESULTS.md's bottom line is the report's: computed from every published table, the
    duets' included (a page built from the cells' tables alone would answer the headline
    differently from the report beside it)."""
    docs = REPO / "docs"
    if not (docs / "tables" / "duets.csv").is_file():
        pytest.skip("no published run with duets")
    tabs = bundle.read_tables(sorted((docs / "tables").glob("*.csv")))
    page = (docs / "RESULTS.md").read_text(encoding="utf-8")
    bottom = bottom_line(tabs, tabs["cells"], "tf1.14")
    asked = questions(tabs, 0.10, bottom["reference"])
    assert asked["source"] == "duets"
    for line in more_lines(bottom):
        assert "- **%s**: %s" % (line["what"], line["text"]) in page, line["what"]
    html = (docs / "index.html").read_text(encoding="utf-8")
    for q in asked["items"]:  # the same claims on both, from the same tables
        for line in line_markdown(q):
            assert line in page, q["id"]
        for line in q["lines"]:
            assert str(escape(line["text"])) in html, q["id"]
    assert "from duets" in html


def test_runs_name_each_machine_in_plain_words(results):
    """The runs table names each machine in plain words beside its key, with its own run's
    commit and wall time (the answer above names machines by those words alone)."""
    from answer_check import plain_names

    facts = json.loads((results / "tables" / "facts.json").read_text())
    key = sorted(k for k in facts["machines"] if not k.endswith(".twin"))[0]
    run = {"machine": key, "run_id": "2026-01-01-abcdef0", "commit": "a" * 40,
           "started_utc": "2026-01-01T10:00:00Z", "ended_utc": "2026-01-01T11:06:00Z",
           "wall_s": 3960.0}
    page = results_page.results_page(results / "tables", 0.10, runs=[run])
    name = plain_names(facts["machines"], [key])[key]
    assert name != key
    assert "| %s | %s | [2026-01-01-abcdef0](data/%s/2026-01-01-abcdef0/run.json) | `%s` |" % (
        name, key, key, "a" * 12) in page
