"""`make publish`: copy one run's report, workbook and tables into docs/ and write its results page.

docs/ after a publish:
    index.html        the report (results/report.html), so the folder's URL opens it
    RESULTS.md        the results page, generated here from the run's tables and facts.json: the
                      report's first-screen sentences (driver/report/answer.py), what ran, the
                      verdicts per comparison, failed and skipped cells. Never typed by hand.
    study.xlsx        the workbook
    tables/*.csv      every table of results/tables/ (tables gone from results/ are removed), and
    tables/facts.json the run's machines, envs, dates and failures
    PROVENANCE.md     what was published: the commit, the machines, dates, versions, checksums
    .nojekyll         GitHub Pages serves the files as they are

The report links to `study.xlsx` and `tables/<name>.csv` relatively, and results/ has the same
layout, so the links work in both places.

Atomic enough: everything is staged in a temporary folder inside docs/ first, then each file is
moved into place with os.replace (atomic per file), so a failed copy leaves the previous
publication whole. Idempotent: the same results give byte-identical files (the note carries no
publish time, only facts of the results and checksums). Other files in docs/ are left alone.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pandas as pd  # noqa: E402

from driver.report import answer  # noqa: E402
from driver.report.bottom_line import bottom_line  # noqa: E402
from driver.tables import bundle  # noqa: E402
from tfspeed.atomic import write_text  # noqa: E402
from tfspeed.versions import version_tuple  # noqa: E402

REQUIRED = ("report.html", "study.xlsx", "tables/cells.csv")


class PublishError(Exception):
    pass


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _git_commit(repo: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def _study_facts(cells_csv: Path) -> dict:
    """Machines, envs, framework versions and status counts from cells.csv (stdlib csv: this
    script must run with nothing but Python)."""
    facts = {"machines": set(), "versions": set(), "status": {}, "cells": 0}
    with open(cells_csv, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            facts["cells"] += 1
            if row.get("machine"):
                facts["machines"].add(row["machine"])
            if row.get("framework_version"):
                facts["versions"].add("%s %s" % (row.get("framework") or "tensorflow",
                                                 row["framework_version"]))
            status = row.get("status") or "unknown"
            facts["status"][status] = facts["status"].get(status, 0) + 1
    return facts


def _version_key(text):
    """'tensorflow 2.10.0' sorts by framework, then by version number (2.3 before 2.10)."""
    framework, _, version = text.partition(" ")
    return (framework, version_tuple(version))


def provenance_note(results: Path, files: dict, commit: str) -> str:
    facts = _study_facts(results / "tables" / "cells.csv")
    lines = [
        "# Published tfspeed results",
        "",
        "The report of one run of the study, as produced by `make study` and copied here by",
        "`make publish` (scripts/publish.py). Open `index.html`; the workbook and the tables",
        "are beside it. Every cell's own provenance (CPU, packages, spec hash, load) is in the",
        "report's Environments section.",
        "",
        "- workflow commit: `%s`" % commit,
        "- machines: %s" % (", ".join(sorted(facts["machines"])) or "unknown"),
        "- versions: %s" % (", ".join(sorted(facts["versions"], key=_version_key)) or "unknown"),
        "- cells: %d (%s)" % (facts["cells"], ", ".join(
            "%s %d" % kv for kv in sorted(facts["status"].items()))),
        "",
        "| file | bytes | sha256 |",
        "| --- | ---: | --- |",
    ]
    for name in sorted(files):
        path = files[name]
        lines.append("| %s | %d | `%s` |" % (name, path.stat().st_size, _sha256(path)))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# The results page: generated from the run's tables and facts.json, never typed.

def _md(value) -> str:
    """A table cell: no line breaks, no pipes."""
    return " ".join(str(value).split()).replace("|", "\\|")


def _read_facts(tables: Path) -> dict:
    path = tables / "facts.json"
    if not path.is_file():
        return {}
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def results_page(tables, min_effect: float) -> str:
    """docs/RESULTS.md from a run's tables folder (cells.csv, the comparison tables, facts.json):
    the report's first screen (the bottom line of driver/report/bottom_line.py and the per-mode
    sentences of driver/report/answer.py), what ran, the verdicts per comparison table, and the
    cells that failed or were skipped. Every figure on it comes from those files."""
    tables = Path(tables)
    if not (tables / "cells.csv").is_file():
        raise PublishError("no results page: %s has no cells.csv" % tables)
    # typed (driver/tables/bundle.py) where numbers are read; the verdict counts need text only
    tabs = bundle.read_tables([tables / ("%s.csv" % name)
                               for name in ("cells", "tf2_vs_tf1", "frameworks_best")
                               if (tables / ("%s.csv" % name)).is_file()])
    cells = tabs["cells"]
    facts = _read_facts(tables)
    first = answer.answer(tabs, min_effect)
    right = tabs["tf2_vs_tf1"]["right_env"].dropna() if "tf2_vs_tf1" in tabs and \
        "right_env" in tabs["tf2_vs_tf1"] else pd.Series(dtype=object)
    bottom = bottom_line(tabs, cells, right.mode()[0] if len(right) else "the reference env")
    out = ["# Results", "",
           "Generated by `make publish` (`scripts/publish.py`) from the published run's "
           "`tables/` and `tables/facts.json`; do not edit it by hand. The full report is "
           "[`index.html`](index.html), the workbook [`study.xlsx`](study.xlsx), and what was "
           "published, with checksums, [`PROVENANCE.md`](PROVENANCE.md).", "",
           "## The bottom line", ""]
    for line in bottom["lines"]:
        tally = " (%s)" % line["tally"] if line.get("tally") else ""
        note = " (%s)" % line["note"] if line.get("note") else ""
        out.append("- **%s**: %s%s%s" % (line["what"], line["text"], tally, note))
    out += ["", "## The answer per mode and API", "",
            "Is TF 2 slower than TF 1? One sentence per execution mode and API, from the "
           "`tf2_vs_tf1` table's verdicts (like-for-like rows, one per version; reference %s, "
           "equivalence band 1 ± %g):" % (first["reference"], min_effect), ""]
    if not first["sentences"]:
        out.append("- No like-for-like TF 2 vs TF 1 pair in this run.")
    for item in first["sentences"]:
        versions = " (TF %s)" % item["versions"] if item.get("versions") else ""
        note = " %s." % item["note"] if item.get("note") else ""
        out.append("- **%s**%s: %s%s" % (item["what"], versions, item["text"], note))
    status = cells["status"].fillna("unknown").value_counts()
    ok = cells[cells["status"] == "ok"]
    processes = int(ok["n_repeats"].fillna(0).sum()) if "n_repeats" in ok else len(ok)
    frameworks = sorted({"%s %s" % (f, v) for f, v in zip(cells["framework"].fillna(""),
                                                          cells["framework_version"].fillna(""))
                         if v}, key=_version_key)
    machines = facts.get("machines") or {}
    out += ["", "## What ran", "",
            "- measured: %s" % (facts.get("dates") or "(no facts.json)"),
            "- machines: %s" % (", ".join(
                "%s (%s, %s CPUs%s)" % (key, m.get("cpu_model") or "CPU unknown",
                                        m.get("cpu_count") or "?",
                                        ", GPU " + ", ".join(map(str, m["gpus"]))
                                        if m.get("gpus") else ", no GPU")
                for key, m in sorted(machines.items()))
                or ", ".join(sorted(cells["machine"].dropna().unique()))),
            "- envs: %d (%s)" % (cells["env"].nunique(), ", ".join(frameworks)),
            "- cells: %d (%s), from %d ok processes" % (
                len(cells), ", ".join("%s %d" % kv for kv in sorted(status.items())), processes)]
    out += ["", "## Verdicts per comparison", "",
            "| table | rows | first-named faster | second faster | equivalent | inconclusive |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for path in sorted(tables.glob("*.csv")):
        df, name = pd.read_csv(path, dtype=str, keep_default_na=False), path.stem
        if "verdict" not in df.columns:
            continue
        verdicts = df["verdict"].map(answer.norm_verdict).value_counts()
        out.append("| [`%s`](tables/%s.csv) | %d | %d | %d | %d | %d |" % (
            name, name, len(df), verdicts.get(answer.LEFT, 0), verdicts.get(answer.RIGHT, 0),
            verdicts.get(answer.EQUIV, 0), verdicts.get(answer.INCONCL, 0)))
    bad = cells[cells["status"] != "ok"]
    out += ["", "## Failed and skipped cells", ""]
    if bad.empty:
        out.append("None.")
    else:
        out += ["| env | cell | status | reason |", "| --- | --- | --- | --- |"]
        for row in bad.sort_values(["env", "cell_id"]).itertuples():
            reason = _md(row.reason or "")
            out.append("| %s | `%s` | %s | %s |" % (row.env, row.cell_id, row.status,
                                                    reason[:200] + ("…" if len(reason) > 200
                                                                    else "")))
    return "\n".join(out) + "\n"


def publish(results, docs, repo=None, config_path=None) -> dict:
    """Copy results/ into docs/ and write the results page; returns {published name: source path}.
    config_path: the run's config, read for `min_effect` when the workbook does not carry it."""
    results, docs = Path(results), Path(docs)
    repo = Path(repo) if repo else Path(__file__).resolve().parent.parent
    missing = [name for name in REQUIRED if not (results / name).is_file()]
    if missing:
        raise PublishError("nothing published: %s missing under %s (run `make study` first)"
                           % (", ".join(missing), results))
    sources = {"index.html": results / "report.html", "study.xlsx": results / "study.xlsx"}
    for csv_path in sorted((results / "tables").glob("*.csv")):
        sources["tables/" + csv_path.name] = csv_path
    if (results / "tables" / "facts.json").is_file():
        sources["tables/facts.json"] = results / "tables" / "facts.json"
    docs.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".publish-", dir=str(docs)))
    try:
        for name, src in sources.items():
            dst = stage / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        staged = {name: stage / name for name in sources}
        min_effect = run_min_effect(results / "study.xlsx", config_path)
        (stage / "RESULTS.md").write_text(results_page(stage / "tables", min_effect),
                                          encoding="utf-8")
        staged["RESULTS.md"] = stage / "RESULTS.md"
        (stage / "PROVENANCE.md").write_text(provenance_note(results, staged, _git_commit(repo)),
                                             encoding="utf-8")
        (stage / ".nojekyll").write_text("")
        # Move into place: each os.replace is atomic, and nothing is replaced before every
        # file was copied.
        for path in sorted(p for p in stage.rglob("*") if p.is_file()):
            rel = path.relative_to(stage)
            target = docs / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, target)
        # Tables that are no longer in results/ would be stale: remove them.
        keep = {docs / name for name in sources}
        for old in [*(docs / "tables").glob("*.csv"), *(docs / "tables").glob("facts.json")]:
            if old not in keep:
                old.unlink()
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return sources


def run_min_effect(workbook, config_path=None) -> float:
    """The run's own `min_effect` (the equivalence band its verdicts used): from the config the
    workbook's `about` sheet carries (rows under "config (YAML)"), else from `config_path`, else
    the schema's default (the one place defaults live)."""
    import zipfile

    import openpyxl
    import yaml
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        sheet = openpyxl.load_workbook(workbook, read_only=True)["about"]
        rows = [row[:2] for row in sheet.iter_rows(values_only=True)]
        start = [i for i, row in enumerate(rows) if row[0] == "config (YAML)"]
        text = "\n".join(str(row[1]) for row in rows[start[0] + 1:] if row[1]) if start else ""
        found = (yaml.safe_load(text) or {}) if text else {}
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, InvalidFileException,
            yaml.YAMLError):
        found = {}  # no readable workbook: the config file or the schema says
    if not isinstance(found, dict) or "min_effect" not in found:
        try:
            with open(config_path or "", encoding="utf-8") as handle:
                found = yaml.safe_load(handle) or {}
        except (FileNotFoundError, IsADirectoryError):
            found = {}
    if "min_effect" in found:
        return float(found["min_effect"])
    repo = Path(__file__).resolve().parent.parent
    with open(repo / "schemas" / "config.schema.yaml", encoding="utf-8") as handle:
        return float(yaml.safe_load(handle)["properties"]["min_effect"]["default"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results", help="the run's results folder")
    parser.add_argument("--docs", default="docs", help="where to publish (GitHub Pages: docs/)")
    parser.add_argument("--config", default="config.yaml",
                        help="the run's config, read for min_effect (the equivalence band) when "
                             "the workbook does not record it")
    parser.add_argument("--page-only", action="store_true",
                        help="only rewrite <docs>/RESULTS.md from what is published there "
                             "(<docs>/tables, <docs>/study.xlsx)")
    args = parser.parse_args(argv)
    if args.page_only:
        docs = Path(args.docs)
        try:
            page = results_page(docs / "tables", run_min_effect(docs / "study.xlsx", args.config))
        except PublishError as exc:
            print("publish: %s" % exc, file=sys.stderr)
            return 1
        write_text(str(docs / "RESULTS.md"), page)
        print("wrote %s" % (docs / "RESULTS.md"))
        return 0
    try:
        sources = publish(args.results, args.docs, config_path=args.config)
    except PublishError as exc:
        print("publish: %s" % exc, file=sys.stderr)
        return 1
    print("published %d files to %s/ (open %s/index.html; the results page is %s/RESULTS.md)"
          % (len(sources) + 2, args.docs, args.docs, args.docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
