"""`make republish`: regenerate docs/'s derived files (report, workbook, tables, results page,
provenance) from the measurements published under docs/data/, by the current code.

docs/data/<machine key>/<run id>/ holds one published run (scripts/publish.py writes it):
    run.json            the run: machine key and fingerprint, the commit that timed it, the first
                        process start and the last end, the wall time between them, the config
                        its analysis used, and the archive's checksum
    processes.tar.xz    what aggregation reads, as the study wrote it under results/: every cell
                        file (one process, all its samples) of the key and of its twin key, the
                        rounds' order and plan files, the machine's probe and fingerprint files

From them, with the same functions the workflow's rules call (driver/tables/aggregate.py for
rule tabulate_cells, driver/report/render.py for rule render_report), this writes to docs/:
index.html, study.xlsx, tables/*.csv and tables/facts.json, RESULTS.md and PROVENANCE.md. Per
machine key one run is used (two runs of one key would both hold e.g. repeat 0 of a cell): the
one docs/data/<key>/shown.json names, else the fullest study (most grids), newest among equals
(driver/study/publishing.py); the others stay in docs/data and PROVENANCE.md lists them. The
analysis settings (reference env, level, equivalence band, ...) are the newest shown run's; the
machine the report is written for is that run's key (as on the machine that ran the workflow
with the other keys' folders copied).

Deterministic: the same data and the same code give byte-identical files. Every date comes from
run.json (the newest run's last process end stands for "now"), matplotlib's SVG ids are salted
(driver/report/figures.py), the workbook's created/modified dates are set to that date and its
zip entries carry a fixed timestamp, and files are read in sorted order. The one exception is a
single line of PROVENANCE.md, `- regenerated at commit: ...` (the checkout's HEAD when
`make republish` ran), which `check` ignores: the check itself guarantees that the committed
files are what the current code gives, so recording the code in the compared bytes would only
make every commit fail it.

`--check` regenerates into a temporary folder and names every derived file of docs/ that differs
(tests/unit/docs/test_published.py runs it). With no run under docs/data the derived files are
a placeholder page, a results page and a provenance note that say so, and nothing else: no
table, no workbook.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import glob
import inspect
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver.report.provenance_page import REGENERATED_LINE, provenance_note  # noqa: E402
from driver.report.results_page import results_page  # noqa: E402
from driver.study import publishing  # noqa: E402
from driver.study.publishing import (  # noqa: E402
    ARCHIVE,
    REPO,
    RUN_JSON,
    git_commit,
    sha256,
)

# The derived files under docs/ (tables/ is a folder of them): all of it is regenerated, and
# nothing else under docs/ is touched.
DERIVED = ("index.html", "study.xlsx", "RESULTS.md", "PROVENANCE.md")
TABLES = "tables"
# What a run's archive may hold: folders of results/ that aggregation reads.
MEMBER_FOLDERS = ("cells", "rounds", "machines", "duets")


class RepublishError(publishing.PublishingError):
    pass


def parse_utc(value) -> datetime.datetime | None:
    try:
        when = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


# ---------------------------------------------------------------------------------------------
# The runs under docs/data

def find_runs(data) -> list[dict]:
    """Every run.json under data/<key>/<run id>/, with its folder as `path`; sorted by key, then
    by start, then by id."""
    runs = []
    for path in sorted(Path(data).glob("*/*/" + RUN_JSON)):
        with open(path, encoding="utf-8") as handle:
            run = json.load(handle)
        if run.get("machine") != path.parent.parent.name:
            raise RepublishError("%s names machine %r but sits under %s/" % (
                path, run.get("machine"), path.parent.parent.name))
        if not (path.parent / ARCHIVE).is_file():
            raise RepublishError("%s has no %s" % (path.parent, ARCHIVE))
        runs.append(dict(run, path=str(path.parent)))
    return sorted(runs, key=lambda r: (r["machine"], str(r.get("started_utc")), r["run_id"]))


def shown_per_machine(runs: list[dict]) -> list[dict]:
    """The run each machine key's derived files come from (publishing.shown_per_machine: the one
    docs/data/<key>/shown.json names, else the fullest study, newest among equals), each with
    `shown_why`."""
    try:
        return publishing.shown_per_machine(runs)
    except publishing.PublishingError as exc:
        raise RepublishError(str(exc)) from exc


newest_per_machine = shown_per_machine  # the name callers used before shown.json


def unpack(run: dict, results: Path) -> list[str]:
    """Extract a run's archive into a results folder; only plain files under MEMBER_FOLDERS,
    never outside it. Returns the names extracted."""
    archive = Path(run["path"]) / ARCHIVE
    want = run.get("archive", {}).get("sha256")
    if want and sha256(archive) != want:
        raise RepublishError("%s does not match the sha256 its run.json records" % archive)
    from driver.study import layout

    names = []
    with tarfile.open(archive, "r:xz") as tar:
        for member in tar.getmembers():
            name = member.name
            parts = Path(name).parts
            if not member.isfile() or name.startswith("/") or ".." in parts or \
                    len(parts) < 3 or parts[0] not in MEMBER_FOLDERS:
                raise RepublishError("%s: unexpected member %r" % (archive, name))
            if layout.base_machine(parts[1]) != run["machine"]:
                raise RepublishError("%s: %s belongs to machine %s, not to %s" % (
                    archive, name, layout.base_machine(parts[1]), run["machine"]))
            target = results / name
            if target.exists():
                raise RepublishError("%s: %s is in two published runs" % (archive, name))
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
            names.append(name)
    return names


def env_builds(runs: list[dict]) -> dict:
    """{(key, run id): publishing.env_builds} from each run's cell files (read in its archive)."""
    out = {}
    for run in runs:
        records = []
        with tarfile.open(Path(run["path"]) / ARCHIVE, "r:xz") as tar:
            for member in tar.getmembers():
                if member.isfile() and member.name.startswith("cells/") and \
                        member.name.endswith(".json"):
                    with tar.extractfile(member) as handle:
                        records.append(json.load(handle))
        out[(run["machine"], run["run_id"])] = publishing.env_builds(run, records)
    return out


# ---------------------------------------------------------------------------------------------
# Regeneration

def _config(run: dict) -> dict:
    """The run's config with the schema's defaults filled in (the workflow validates with
    defaults before any rule reads it). Keys the current schema no longer knows are dropped, so
    that an older run stays regenerable; a config the schema still rejects stops here, naming
    the run."""
    import copy

    import yaml
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema_path = REPO / "schemas" / "config.schema.yaml"
    with open(schema_path, encoding="utf-8") as handle:
        known = set((yaml.safe_load(handle) or {}).get("properties") or {})
    config = {k: v for k, v in copy.deepcopy(run.get("config") or {}).items() if k in known}
    try:
        validate(config, str(schema_path), set_default=True)
    except WorkflowError as exc:
        raise RepublishError("the config of run %s/%s does not fit the current schema: %s" % (
            run["machine"], run["run_id"], str(exc).splitlines()[0])) from exc
    return config


def fix_workbook_dates(path: Path, when: datetime.datetime) -> None:
    """Set the workbook's created and modified dates (docProps/core.xml) to `when`, keeping every
    zip entry's name, order, timestamp and compression: XlsxWriter writes "now" there."""
    stamp = when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    with zipfile.ZipFile(path) as src:
        entries = [(info, src.read(info.filename)) for info in src.infolist()]
    out = path.with_suffix(".tmp")
    with zipfile.ZipFile(out, "w") as dst:
        for info, data in entries:
            if info.filename == "docProps/core.xml":
                text = data.decode("utf-8")
                for tag in ("created", "modified"):
                    text = re.sub(r"(<dcterms:%s[^>]*>)[^<]*(</dcterms:%s>)" % (tag, tag),
                                  r"\g<1>%s\g<2>" % stamp, text)
                data = text.encode("utf-8")
            dst.writestr(info, data, compress_type=info.compress_type)
    os.replace(out, path)


PLACEHOLDER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'">
<title>tfspeed: no results published yet</title></head>
<body>
<h1>tfspeed: no results published yet</h1>
<p>No run is published in this repository yet (docs/data/ holds none), so there is no report
here. How a run is published: docs/publishing.md. The report published before the measurements
were kept is in archive/: it is not current and cannot be regenerated.</p>
</body></html>
"""


def empty_results_page() -> str:
    return ("# Results\n\nGenerated by `make republish` (`scripts/republish.py`) from the runs "
            "under [`data/`](data/); do not edit it by hand.\n\nNo run is published yet: "
            "`docs/data/` holds none, so there is nothing to report. How to publish one: "
            "[publishing](publishing.md). The report published before the measurements were "
            "kept is in [the archive](archive/README.md): it is not current and cannot be "
            "regenerated.\n")


def tabulate_results(results, config: dict, machine: str, now=None) -> None:
    """Aggregate a results folder's cells and duets with the current code and render its report,
    with the functions the workflow's rules call (driver/tables/aggregate.py for rule
    tabulate_cells, driver/report/render.py for rule render_report): <results>/tables/,
    study.xlsx and report.html are written again; the measurements are not touched. The folder
    must be named `results` (the workflow's relative paths)."""
    from driver.report.render import render
    from driver.study import layout
    from driver.tables import aggregate
    from driver.tables.registry import NAMES

    results = Path(results).resolve()
    if results.name != "results":
        raise RepublishError("%s: a results folder must be named results" % results)
    with contextlib.chdir(results.parent):  # relative paths, as the workflow passes them
        files = sorted(glob.glob("results/cells/*/*/*.r[0-9]*.json"))
        orders = sorted(glob.glob("results/rounds/*/order[0-9]*.json"))
        allocation = config["allocation"]
        extra = {}
        if "duet_files" in inspect.signature(aggregate.tabulate).parameters:
            extra["duet_files"] = sorted(glob.glob("results/duets/*/*/*.json"))
        if (config.get("duets") or {}).get("sides_as_cells"):  # the run's own cells' rule
            extra["sides_as_cells"] = "auto"
        time_budget = config.get("time_budget_min")
        result = aggregate.tabulate(
            files, config["reference_env"], config["noisy_threshold"],
            config["stop"]["level"], config=config, q=config["fdr_q"],
            min_effect=config["min_effect"],
            allocation={"repeats": config["repeats"],
                        "max_repeats": allocation["max_repeats"],
                        "budget_s": allocation["budget_s"],
                        "time_budget_s": None if time_budget is None else 60.0 * time_budget,
                        "machine": machine},
            now=now, spike_factor=config["spike_factor"], orders=orders,
            alpha_equivalence=config["equivalence_alpha"], **extra)
        tables = {name: Path(layout.TABLE_PATTERN.format(table=name)) for name in NAMES}
        aggregate.write_outputs(result, layout.CELLS_CSV, tables, layout.WORKBOOK,
                                layout.PROCESSES_JSON, layout.FACTS_JSON)
        render(cells_csv=layout.CELLS_CSV, tables=[str(p) for p in tables.values()],
               processes_json=layout.PROCESSES_JSON, facts_json=layout.FACTS_JSON,
               template=str(REPO / "report" / "template.html.j2"),
               out_html=layout.REPORT, machine=machine, config=config,
               selfbench_path=None, now=now, previous_tables=None)


def regenerate(docs, out, code_commit=None) -> dict:
    """Write every derived file of docs/ into `out` (a fresh folder), from docs/data; returns
    {name relative to docs: path}."""

    docs, out = Path(docs), Path(out)
    runs = find_runs(docs / "data")
    used = shown_per_machine(runs)
    out.mkdir(parents=True, exist_ok=True)
    written: dict = {}
    if not used:
        (out / "index.html").write_text(PLACEHOLDER, encoding="utf-8")
        (out / "RESULTS.md").write_text(empty_results_page(), encoding="utf-8")
        written = {"index.html": out / "index.html", "RESULTS.md": out / "RESULTS.md"}
        (out / "PROVENANCE.md").write_text(provenance_note(runs, used, {}, code_commit),
                                           encoding="utf-8")
        written["PROVENANCE.md"] = out / "PROVENANCE.md"
        return written
    from driver.tables.results import Results

    primary = max(used, key=lambda r: (str(r.get("ended_utc")), r["run_id"]))
    config = _config(primary)
    now = max(parse_utc(r.get("ended_utc")) or datetime.datetime(1970, 1, 1,
                                                                  tzinfo=datetime.timezone.utc)
              for r in used)
    with tempfile.TemporaryDirectory(prefix="tfspeed-republish-") as work:
        work = Path(work)
        results = work / "results"
        for run in used:
            unpack(run, results)
        tabulate_results(results, config, primary["machine"], now)
        fix_workbook_dates(results / "study.xlsx", now)
        (out / TABLES).mkdir(exist_ok=True)
        shutil.copyfile(results / "report.html", out / "index.html")
        shutil.copyfile(results / "study.xlsx", out / "study.xlsx")
        written = {"index.html": out / "index.html", "study.xlsx": out / "study.xlsx"}
        written_tables = Results(results)
        for path in written_tables.paths(cells=True) + [written_tables.facts_path]:
            shutil.copyfile(path, out / TABLES / path.name)
            written["%s/%s" % (TABLES, path.name)] = out / TABLES / path.name
    page = results_page(out / TABLES, float(config["min_effect"]), runs=used)
    (out / "RESULTS.md").write_text(page, encoding="utf-8")
    written["RESULTS.md"] = out / "RESULTS.md"
    (out / "PROVENANCE.md").write_text(provenance_note(runs, used, dict(written), code_commit,
                                                       builds=env_builds(runs)),
                                       encoding="utf-8")
    written["PROVENANCE.md"] = out / "PROVENANCE.md"
    return written


def derived_in(docs) -> dict:
    """The derived files docs/ holds now: {name: path}."""
    docs = Path(docs)
    found = {name: docs / name for name in DERIVED if (docs / name).is_file()}
    for path in sorted((docs / TABLES).glob("*")) if (docs / TABLES).is_dir() else []:
        if path.is_file():
            found["%s/%s" % (TABLES, path.name)] = path
    return found


def _comparable(name: str, data: bytes) -> bytes:
    if name == "PROVENANCE.md":
        return b"".join(line for line in data.splitlines(keepends=True)
                        if not line.startswith(REGENERATED_LINE.encode()))
    return data


def differences(docs, fresh: dict) -> list[str]:
    """'name: why' for every derived file of docs/ that is not what regeneration gave."""
    have = derived_in(docs)
    problems = []
    for name in sorted(set(have) | set(fresh)):
        if name not in have:
            problems.append("%s: missing from docs/ (regeneration writes it)" % name)
        elif name not in fresh:
            problems.append("%s: in docs/ but regeneration does not write it (stale)" % name)
        elif _comparable(name, have[name].read_bytes()) != \
                _comparable(name, Path(fresh[name]).read_bytes()):
            problems.append("%s: differs from what the current code regenerates" % name)
    return problems


def check(docs) -> list[str]:
    """Regenerate into a temporary folder and compare with docs/; [] when all is current."""
    with tempfile.TemporaryDirectory(prefix="tfspeed-check-") as tmp:
        fresh = regenerate(docs, Path(tmp) / "out")
        return differences(docs, fresh)


def republish(docs, code_commit=None) -> dict:
    """Regenerate docs/'s derived files in place: staged in a folder inside docs/, then moved
    file by file (os.replace); derived files that regeneration no longer writes are removed."""
    docs = Path(docs)
    docs.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".republish-", dir=str(docs)))
    try:
        fresh = regenerate(docs, stage / "out", code_commit=code_commit)
        for name in sorted(fresh):
            target = docs / name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(fresh[name], target)
        for name, path in derived_in(docs).items():
            if name not in fresh:
                path.unlink()
        if (docs / TABLES).is_dir() and not any((docs / TABLES).iterdir()):
            (docs / TABLES).rmdir()
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    (docs / ".nojekyll").write_text("")
    return {name: docs / name for name in fresh}


def retabulate(results) -> int:
    """--retabulate: one results folder's tables and report by the current code, with the config
    its analysis used (publishing.run_config: the workbook's, else config.yaml)."""
    keys = publishing.machine_keys(results)  # twin keys folded into their machine
    if len(keys) != 1:
        raise RepublishError("%s holds cells of %s machine keys (%s): retabulate takes one"
                             % (results, len(keys), ", ".join(keys) or "no"))
    tabulate_results(results, publishing.run_config(results), keys[0])
    print("retabulated %s with the current code (machine %s)" % (results, keys[0]))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(REPO / "docs"), help="the published folder")
    parser.add_argument("--check", action="store_true",
                        help="regenerate into a temporary folder and name the files of docs/ "
                             "that differ (exit 1); write nothing")
    parser.add_argument("--retabulate", metavar="RESULTS",
                        help="instead: aggregate a results folder (named results) again with the "
                             "current code, and render its report (its tables/, study.xlsx and "
                             "report.html are replaced; the measurements are not touched)")
    args = parser.parse_args(argv)
    try:
        if args.retabulate:
            return retabulate(args.retabulate)
        if args.check:
            problems = check(args.docs)
            for line in problems:
                print("republish --check: %s" % line, file=sys.stderr)
            if problems:
                print("run `make republish` and commit docs/", file=sys.stderr)
                return 1
            print("docs/ is what the current code gives from docs/data")
            return 0
        written = republish(args.docs, code_commit=git_commit())
    except RepublishError as exc:
        print("republish: %s" % exc, file=sys.stderr)
        return 1
    print("regenerated %d files in %s/ from %s/data" % (len(written), args.docs, args.docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
