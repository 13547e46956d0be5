"""`make publish`: copy one run's report, workbook and tables into docs/ for a static host.

docs/ after a publish:
    index.html        the report (results/report.html), so the folder's URL opens it
    study.xlsx        the workbook
    tables/*.csv      every table of results/tables/ (tables gone from results/ are removed)
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
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

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


def publish(results, docs, repo=None) -> dict:
    """Copy results/ into docs/; returns {published name: source path}."""
    results, docs = Path(results), Path(docs)
    repo = Path(repo) if repo else Path(__file__).resolve().parent.parent
    missing = [name for name in REQUIRED if not (results / name).is_file()]
    if missing:
        raise PublishError("nothing published: %s missing under %s (run `make study` first)"
                           % (", ".join(missing), results))
    sources = {"index.html": results / "report.html", "study.xlsx": results / "study.xlsx"}
    for csv_path in sorted((results / "tables").glob("*.csv")):
        sources["tables/" + csv_path.name] = csv_path
    docs.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".publish-", dir=str(docs)))
    try:
        for name, src in sources.items():
            dst = stage / name
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)
        staged = {name: stage / name for name in sources}
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
        for old in (docs / "tables").glob("*.csv"):
            if old not in keep:
                old.unlink()
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return sources


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results", help="the run's results folder")
    parser.add_argument("--docs", default="docs", help="where to publish (GitHub Pages: docs/)")
    args = parser.parse_args(argv)
    try:
        sources = publish(args.results, args.docs)
    except PublishError as exc:
        print("publish: %s" % exc, file=sys.stderr)
        return 1
    print("published %d files to %s/ (open %s/index.html)" % (len(sources) + 1, args.docs,
                                                               args.docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
