"""The published results are the current code's: docs/'s derived files (index.html, study.xlsx,
tables/, RESULTS.md, PROVENANCE.md) are regenerated from the measurements under docs/data by
scripts/republish.py, and the committed copies must be byte for byte what the code gives now.

With no run under docs/data, the derived files are a placeholder page, a results page and a
provenance note that say so: no table, no workbook, no report claiming results (the report of
commit 12b8ef4, published before the measurements were kept, is in docs/archive/ with a note
that it is neither current nor regenerable).

A planted study (the golden fixtures' real cell files, tests/fixtures/cells, under two machine
keys) goes through `make publish` -> `make republish` in a temporary folder: both machines'
runs appear in every output, the check passes, and a changed table builder makes it fail naming
the file.
"""
import json
import math
import shutil
from pathlib import Path

import publish
import pytest
import republish
from test_published_report import check_report

from driver.tables import aggregate
from driver.tables.registry import NAMES

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
FIXTURE = REPO / "tests" / "fixtures" / "cells" / "amd-epyc-2c"
OTHER = "xeon-4c-test"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def test_committed_docs_are_what_the_current_code_regenerates():
    problems = republish.check(DOCS)
    assert not problems, (
        "docs/ is not what the current code gives from docs/data (run `make republish` and "
        "commit docs/):\n" + "\n".join(problems))


def test_no_run_means_no_report_claiming_results():
    if republish.find_runs(DOCS / "data"):
        pytest.skip("docs/data holds runs: the check above covers every derived file")
    assert not (DOCS / "study.xlsx").exists() and not (DOCS / "tables").exists()
    page = (DOCS / "index.html").read_text(encoding="utf-8")
    assert "no results published yet" in page and "bottom-line" not in page
    assert "No run is published yet" in (DOCS / "RESULTS.md").read_text(encoding="utf-8")
    note = (DOCS / "archive" / "README.md").read_text(encoding="utf-8")
    assert "not current" in note and "not regenerable" in note


# --------------------------------------------------------------------------- a planted study

def _planted_results(root: Path) -> Path:
    """results/cells with the fixture's cell files under its own key and under OTHER (the same
    cells, TF 2 a tenth slower and an hour later), and an order file for one of them."""
    results = root / "results"
    shutil.copytree(FIXTURE, results / "cells" / FIXTURE.name)
    for path in sorted(FIXTURE.rglob("*.json")):
        doc = json.loads(path.read_text())
        doc["machine"] = OTHER
        doc["started_utc"] = doc["started_utc"].replace("T15:", "T16:")
        if doc.get("samples_s") and str(doc.get("env", "")).startswith("tf2"):
            doc["samples_s"] = [x * 1.1 for x in doc["samples_s"]]
            doc["summary"] = {k: (v * 1.1 if k.endswith("_s") and isinstance(v, float) else v)
                              for k, v in (doc.get("summary") or {}).items()}
        target = results / "cells" / OTHER / path.relative_to(FIXTURE)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(doc))
    (results / "machines" / OTHER).mkdir(parents=True)
    (results / "machines" / OTHER / "probe.json").write_text(json.dumps(
        {"fingerprint": {"hash": "feedface" * 8, "vendor": "GenuineIntel"}}))
    return results


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    results = _planted_results(root)
    docs = root / "docs"
    runs = publish.publish(results, docs, commit=COMMIT)
    return {"root": root, "results": results, "docs": docs, "runs": runs}


def test_publish_keeps_every_process_per_machine_with_its_run_facts(planted):
    runs = {r["machine"]: r for r in planted["runs"]}
    assert sorted(runs) == sorted([FIXTURE.name, OTHER])
    n_files = len(list(FIXTURE.rglob("*.json")))
    for key, run in runs.items():
        folder = planted["docs"] / "data" / key / run["run_id"]
        assert run["run_id"] == "2026-11-22-0123456" and run["action"] == "new"
        doc = json.loads((folder / "run.json").read_text())
        assert doc["commit"] == COMMIT and doc["commit_source"] == "given to make publish"
        assert doc["processes"] == n_files and doc["date"] == "2026-11-22"
        assert doc["started_utc"] < doc["ended_utc"] and doc["wall_s"] > 0
        assert doc["config"]["reference_env"] == "tf1.14"
        members = publish._members(folder / publish.ARCHIVE)
        assert len([m for m in members if m.startswith("cells/%s/" % key)]) == n_files
        assert doc["archive"]["sha256"] == republish.sha256(folder / publish.ARCHIVE)
    # a results folder with a workbook: the config its `about` sheet records
    from_sheet = publish.run_config(planted["docs"])
    assert from_sheet["reference_env"] == "tf1.14" and "min_effect" in from_sheet
    assert runs[OTHER]["fingerprint"]["hash"] == "feedface" * 8  # from the probe's file
    assert "`feedfacefeedface`" in (planted["docs"] / "PROVENANCE.md").read_text()
    assert "machines/%s/probe.json" % OTHER in publish._members(
        planted["docs"] / "data" / OTHER / runs[OTHER]["run_id"] / publish.ARCHIVE)


def test_both_machines_appear_in_every_output(planted):
    docs = planted["docs"]
    cells = (docs / "tables" / "cells.csv").read_text()
    page = (docs / "RESULTS.md").read_text()
    note = (docs / "PROVENANCE.md").read_text()
    html = (docs / "index.html").read_text()
    for key in (FIXTURE.name, OTHER):
        assert key in cells and key in page and key in note
        assert "data/%s/2026-11-22-0123456/run.json" % key in note
    assert "## Machines compared" in page
    for name in NAMES:  # every table of the registry, regenerated (none left behind)
        assert (docs / "tables" / ("%s.csv" % name)).is_file(), name
    section = html[html.index('<section id="machines">'):]
    section = section[:section.index("</section>")]
    assert "%s: TF 2 / TF 1" % FIXTURE.name in section and "%s: TF 2 / TF 1" % OTHER in section
    assert "sd of log ratio" in section and "machines agree" in section
    check_report(docs)


def test_the_check_passes_and_publishing_again_changes_nothing(planted, tmp_path):
    docs = planted["docs"]
    assert republish.check(docs) == []

    def files():  # the regenerating commit's line aside (HEAD may move between two publishes)
        return {p: republish._comparable(p.name, p.read_bytes())
                for p in docs.rglob("*") if p.is_file()}

    before = files()
    runs = publish.publish(planted["results"], docs, commit=COMMIT)
    assert {r["action"] for r in runs} == {"unchanged"}
    assert before == files()  # deterministic: same data, same code, same bytes
    assert not [p for p in docs.rglob(".publish-*")] + [p for p in docs.rglob(".republish-*")]


def test_a_changed_table_builder_fails_the_check_naming_the_file(planted, monkeypatch):
    real = aggregate.build_tables

    def changed(*args, **kwargs):
        tables = real(*args, **kwargs)
        tables["tf2_vs_tf1"] = tables["tf2_vs_tf1"].assign(ratio=tables["tf2_vs_tf1"]["ratio"]
                                                           * 1.01)
        return tables

    monkeypatch.setattr(aggregate, "build_tables", changed)
    problems = republish.check(planted["docs"])
    assert any(p.startswith("tables/tf2_vs_tf1.csv: differs") for p in problems), problems
    assert any(p.startswith("index.html: differs") for p in problems), problems
    assert not any(p.startswith("tables/cells.csv") for p in problems)


def test_the_check_names_missing_stale_and_edited_files(planted, tmp_path, capsys):
    docs = tmp_path / "docs"
    shutil.copytree(planted["docs"], docs)
    (docs / "tables" / "old_table.csv").write_text("a\n1\n")
    (docs / "study.xlsx").unlink()
    with open(docs / "RESULTS.md", "a", encoding="utf-8") as handle:
        handle.write("typed by hand\n")
    # the line that records the regenerating commit is not compared
    note = (docs / "PROVENANCE.md").read_text()
    (docs / "PROVENANCE.md").write_text(note.replace(republish.REGENERATED_LINE,
                                                     republish.REGENERATED_LINE + "x"))
    assert republish.main(["--docs", str(docs), "--check"]) == 1
    named = [line.split(": ")[1] for line in capsys.readouterr().err.splitlines()
             if line.startswith("republish --check: ")]
    assert sorted(named) == ["RESULTS.md", "study.xlsx", "tables/old_table.csv"], named
    republish.republish(docs)
    assert not (docs / "tables" / "old_table.csv").exists()
    for name in ("RESULTS.md", "study.xlsx", "tables/cells.csv"):
        assert (docs / name).read_bytes() == (planted["docs"] / name).read_bytes()


def test_a_grown_run_replaces_its_folder_and_another_run_gets_a_suffix(tmp_path):
    results = _planted_results(tmp_path)
    shutil.rmtree(results / "cells" / OTHER)
    docs = tmp_path / "docs"
    extra = sorted((results / "cells" / FIXTURE.name).rglob("*.r0.json"))[0]
    grown = extra.with_name(extra.name.replace(".r0.", ".r1."))
    kw = {"commit": COMMIT, "regenerate": False}
    first = publish.publish(results, docs, **kw)[0]
    shutil.copyfile(extra, grown)
    second = publish.publish(results, docs, **kw)[0]
    assert (first["action"], second["action"]) == ("new", "replaced")
    assert second["run_id"] == first["run_id"] and second["processes"] == first["processes"] + 1
    extra.unlink()  # not a superset of the published run: another run of the same day
    third = publish.publish(results, docs, **kw)[0]
    assert third["action"] == "new" and third["run_id"] == first["run_id"] + "-2"
    runs = republish.find_runs(docs / "data")
    assert len(runs) == 2 and len(republish.newest_per_machine(runs)) == 1


def test_publish_without_cells_says_so(tmp_path):
    (tmp_path / "results").mkdir()
    with pytest.raises(publish.PublishError, match="no cell files"):
        publish.publish(tmp_path / "results", tmp_path / "docs")
    assert publish.main(["--results", str(tmp_path / "results"), "--docs",
                         str(tmp_path / "docs")]) == 1
    assert not (tmp_path / "docs").exists()


def test_the_run_commit_is_the_cell_files_own(tmp_path):
    recs = [{"provenance": {"code": {"commit": "a" * 40}}}] * 2 + \
        [{"provenance": {"code": {"commit": "b" * 40}}}]
    sha, source = publish.run_commit(recs, tmp_path, commit="c" * 40)
    assert sha == "a" * 40 and source.startswith("cell files (2 commits")
    assert publish.run_commit([{}], tmp_path, commit="c" * 40) == ("c" * 40,
                                                                   "given to make publish")


def test_machines_compared_spread_and_agreement():
    from driver.report.sections import machines

    assert machines.agreement(["right_faster", "right_faster"]) == "same"
    assert machines.agreement(["right_faster", "left_faster"]) == "opposite"
    assert machines.agreement(["right_faster", "inconclusive"]) == "differ"
    assert math.isclose(machines.log_sd([1.0, math.e]), math.sqrt(0.5))
    assert math.isnan(machines.log_sd([1.2]))


def test_publish_command_line(tmp_path):
    import subprocess
    import sys

    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results / "cells" / FIXTURE.name)
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "publish.py"), "--results",
                          str(results), "--docs", str(tmp_path / "site"), "--commit", COMMIT,
                          "--no-regenerate"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "new: %s/2026-11-22-0123456" % FIXTURE.name in out.stdout
    assert (tmp_path / "site" / "data" / FIXTURE.name / "2026-11-22-0123456" / "run.json").is_file()


def test_an_older_runs_config_stays_readable():
    import yaml

    config = yaml.safe_load((REPO / "config.yaml").read_text())
    run = {"machine": "m", "run_id": "r", "config": dict(config, key_of_an_older_version=1)}
    got = republish._config(run)
    assert "key_of_an_older_version" not in got and got["reference_env"] == config["reference_env"]
    with pytest.raises(republish.RepublishError, match="m/r"):
        republish._config({"machine": "m", "run_id": "r", "config": dict(config, min_effect="x")})


def test_an_archive_holds_its_own_machine_only(tmp_path):
    results = _planted_results(tmp_path)
    docs = tmp_path / "docs"
    run = publish.publish(results, docs, machines=[OTHER], commit=COMMIT, regenerate=False)[0]
    folder = docs / "data" / OTHER / run["run_id"]
    moved = docs / "data" / "someone-else" / run["run_id"]
    moved.parent.mkdir()
    shutil.copytree(folder, moved)
    doc = json.loads((moved / "run.json").read_text())
    (moved / "run.json").write_text(json.dumps(dict(doc, machine="someone-else")))
    with pytest.raises(republish.RepublishError, match="belongs to machine %s" % OTHER):
        republish.unpack(dict(doc, machine="someone-else", path=str(moved)), tmp_path / "r")


def test_with_no_run_the_derived_files_say_so_and_stale_ones_go(tmp_path):
    docs = tmp_path / "docs"
    (docs / "tables").mkdir(parents=True)
    (docs / "tables" / "cells.csv").write_text("machine\nold\n")
    (docs / "study.xlsx").write_bytes(b"old")
    (docs / "index.html").write_text("<p>an old report</p>")
    (docs / "other.md").write_text("not derived")
    assert sorted(p.split(":")[0] for p in republish.check(docs)) == [
        "PROVENANCE.md", "RESULTS.md", "index.html", "study.xlsx", "tables/cells.csv"]
    written = republish.republish(docs, code_commit="abc")
    assert sorted(written) == ["PROVENANCE.md", "RESULTS.md", "index.html"]
    assert not (docs / "tables").exists() and not (docs / "study.xlsx").exists()
    assert (docs / "other.md").read_text() == "not derived"
    assert "no results published yet" in (docs / "index.html").read_text()
    assert republish.check(docs) == []
    assert "- regenerated at commit: `abc`" in (docs / "PROVENANCE.md").read_text()


def test_retabulate_rewrites_one_runs_tables_with_the_current_code(planted, tmp_path):
    """`make retabulate R=<results>`: a run's tables again from its measurements by the current
    code; for one machine's run they are the tables republish derives from the same data."""
    one = tmp_path / "one" / "results"
    shutil.copytree(planted["results"] / "cells" / FIXTURE.name,
                    one / "cells" / FIXTURE.name)
    shutil.copy(planted["docs"] / "study.xlsx", one / "study.xlsx")  # the config it records
    assert republish.main(["--retabulate", str(one)]) == 0
    for name in ("cells.csv", "tf2_vs_tf1.csv"):
        assert (one / "tables" / name).is_file(), name
    assert (one / "report.html").is_file()
    ours = (one / "tables" / "tf2_vs_tf1.csv").read_text()
    assert FIXTURE.name in ours and OTHER not in ours
    # two machines' cells in one folder, or a folder not named results: refused, naming why
    assert republish.main(["--retabulate", str(planted["results"])]) == 1
    wrong = tmp_path / "elsewhere"
    shutil.copytree(one, wrong)
    assert republish.main(["--retabulate", str(wrong)]) == 1
