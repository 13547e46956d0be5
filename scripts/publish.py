"""`make publish`: copy a run's measurements (every process's cell file, with all its samples)
into docs/data/<machine key>/<run id>/, then regenerate docs/'s derived files from all published
runs.

What a run folder holds (scripts/republish.py reads it):
    processes.tar.xz  what aggregation reads, as the study wrote it under results/: the cell files
                      of the key and of its twin key (results/cells/<key>[.twin]/), the rounds'
                      order and plan files (results/rounds/<key>/), the machine's probe and
                      fingerprint files (results/machines/<key>/), the headline's duets where the
                      study ran them (results/duets/<key>/); xz-compressed, members in
                      sorted order with fixed owner, mode and time, so the same files give the
                      same bytes
    run.json          the run: machine key; run id (<date of the first process>-<short commit>);
                      the commit that timed it (the one the cell files record; when they record
                      none, --commit, else the HEAD of the git tree that holds the results folder,
                      e.g. the frozen worktree the run used; `commit_source` says which); the
                      first process start, the last end (start + cell wall time) and the wall
                      time between them; processes and ok processes; envs; the machine's
                      fingerprint and facts; the config its analysis used (the workbook's `about`
                      sheet, else --config); the archive's size and sha256

Paths: every JSON and CSV member and run.json are written with the paths under the publishing
checkout, the results folder's checkout (and --relative-to ones) relative to it, and the home
directory as `~` (driver/study/publishing.py: Roots); versions, hashes and figures are kept.
--rewrite-paths does the same to a run published before. --show names the run a machine key's
derived files show (docs/data/<key>/shown.json).

Every machine key found under results/cells/ is published as its own run (twin keys go with their
machine); --machine picks some. Publishing the same results again changes nothing; a run that
grew (more rounds, retried cells: its earlier files are all still there) replaces its folder; any
other run with the same id gets a suffix (-2, -3, ...). Then docs/'s derived files are regenerated
from all of docs/data (scripts/republish.py; --no-regenerate skips it), and with them the answer
block of the README beside docs/ (scripts/readme_answer.py, as `make republish` writes it). The
report, workbook and tables of results/ are never copied: what docs/ shows is always what the
current code makes of the measurements.

The results page is built by driver/report/results_page.py from a tables folder; scripts/republish.py
writes it as docs/RESULTS.md.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


import republish  # noqa: E402  (one way: republish never imports publish)

from driver.study import layout, publishing  # noqa: E402
from driver.study.publishing import (  # noqa: E402
    ARCHIVE,
    REPO,
    RUN_JSON,
    machine_keys,
    run_config,
)

# Where a cell file may name the commit that timed it (first found wins, per file).
COMMIT_KEYS = (("provenance", "code", "commit"), ("provenance", "workflow", "commit"),
               ("provenance", "commit"), ("code", "commit"), ("commit",))


class PublishError(publishing.PublishingError):
    pass


def run_min_effect(workbook, config_path=None) -> float:
    """The run's own `min_effect` (the equivalence band its verdicts used): from the config the
    workbook's `about` sheet carries, else from `config_path`, else the schema's default (the one
    place defaults live)."""
    import yaml

    found = publishing.workbook_config(workbook)
    if "min_effect" not in found:
        try:
            with open(config_path or "", encoding="utf-8") as handle:
                found = yaml.safe_load(handle) or {}
        except (FileNotFoundError, IsADirectoryError):
            found = {}
    if "min_effect" in found:
        return float(found["min_effect"])
    with open(REPO / "schemas" / "config.schema.yaml", encoding="utf-8") as handle:
        return float(yaml.safe_load(handle)["properties"]["min_effect"]["default"])


# ---------------------------------------------------------------------------------------------
# Publishing a run's measurements

def run_files(results, key) -> list[str]:
    """The files of one machine key's run, relative to results/, sorted."""
    results = Path(results)
    names = []
    for folder in (key, layout.twin_key(key)):
        names += [p for p in (results / "cells" / folder).glob("*/*.r[0-9]*.json")]
        names += [p for p in (results / "rounds" / folder).glob("*.json")]
        names += [p for p in (results / "machines" / folder).glob("*.json")]
        names += [p for p in (results / "duets" / folder).glob("*/*.json")]
    return sorted(p.relative_to(results).as_posix() for p in names if p.is_file())


def _dig(doc, path):
    for part in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(part)
    return doc


def _git(tree, *args) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True,
                             timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def run_commit(records: list[dict], results, commit=None) -> tuple[str | None, str]:
    """(commit, where it came from): the cell files' own (the commit of most processes, when they
    name several), else `commit`, else the HEAD of the git tree holding `results`."""
    found = collections.Counter()
    for rec in records:
        for path in COMMIT_KEYS:
            value = _dig(rec, path)
            if isinstance(value, str) and value.strip():
                found[value.strip()] += 1
                break
    if found:
        best = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))
        source = "cell files"
        if len(best) > 1:
            source += " (%d commits; %s)" % (len(best), ", ".join(
                "%s: %d processes" % (c[:12], n) for c, n in best))
        return best[0][0], source
    if commit:
        return commit, "given to make publish"
    head = _git(Path(results).resolve().parent, "rev-parse", "HEAD")
    if head:
        dirty = _git(Path(results).resolve().parent, "status", "--porcelain",
                     "--untracked-files=no")
        return head, "HEAD of the checkout holding the results folder at publish time" + (
            ", with uncommitted changes" if dirty else "")
    return None, "unknown"


def _utc(value):
    try:
        when = datetime.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except (TypeError, ValueError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def run_facts(records: list[dict], duets: list[dict] = ()) -> dict:
    """Dates, wall time, counts, envs, fingerprint and machine facts of one run's cell files; the
    run's span covers its duets too (they run first)."""
    starts, ends = [], []
    timed = [(rec, _dig(rec, ("provenance", "cell_wall_s"))) for rec in records]
    timed += [(rec, rec.get("wall_s")) for rec in duets]
    for rec, wall in timed:
        start = _utc(rec.get("started_utc"))
        if start is None:
            continue
        starts.append(start)
        ends.append(start + datetime.timedelta(seconds=float(wall))
                    if isinstance(wall, (int, float)) else start)
    latest = max(records, key=lambda r: str(r.get("started_utc") or ""))
    facts = _dig(latest, ("provenance", "machine")) or {}
    first, last = (min(starts), max(ends)) if starts else (None, None)

    def iso(t):
        return (t.astimezone(datetime.timezone.utc).isoformat(timespec="seconds")
                .replace("+00:00", "Z") if t else None)

    return {
        "date": first.strftime("%Y-%m-%d") if first else "undated",
        "started_utc": iso(first), "ended_utc": iso(last),
        "wall_s": round((last - first).total_seconds(), 3) if starts else None,
        "processes": len(records),
        "ok": sum(1 for r in records if r.get("status") == "ok"),
        "duets": len(duets),
        "duets_ok": sum(1 for r in duets if r.get("status") == "ok"),
        "envs": sorted({str(r.get("env")) for r in records}),
        "fingerprint": facts.get("fingerprint") if isinstance(facts, dict) else None,
        "machine_facts": {k: facts.get(k) for k in ("cpu_model", "cpu_count", "gpus",
                                                    "mem_total_gb", "platform")}
        if isinstance(facts, dict) else {},
    }


def write_archive(results, names, out, roots: publishing.Roots | None = None) -> None:
    """processes.tar.xz of `names` (relative to results), each JSON/CSV member's paths made
    relative by `roots`: same files, same bytes."""
    results = Path(results)
    with tarfile.open(out, "w:xz", format=tarfile.PAX_FORMAT) as tar:
        for name in names:
            data = (results / name).read_bytes()
            _add(tar, name, roots.member(name, data) if roots else data)


def _add(tar, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    tar.addfile(info, io.BytesIO(data))


def _members(archive) -> set[str]:
    with tarfile.open(archive, "r:xz") as tar:
        return set(tar.getnames())


def _read_all(results, names, kind) -> list[dict]:
    out = []
    for name in names:
        try:
            with open(Path(results) / name, encoding="utf-8") as handle:
                out.append(json.load(handle))
        except (OSError, ValueError) as exc:
            raise PublishError("%s: not a %s file (%s)" % (Path(results) / name, kind,
                                                          exc)) from exc
    return out


def publish_run(results, docs, key, commit=None, config_path=None, roots=None) -> dict:
    """Publish one machine key's run into docs/data/<key>/<run id>/, its paths made relative
    (`roots`, default publishing.publisher_roots); returns its run.json with `path` and `action`
    (new, unchanged, replaced)."""
    results, docs = Path(results), Path(docs)
    roots = roots or publishing.publisher_roots(results)
    names = run_files(results, key)
    cell_names = [n for n in names if n.startswith("cells/")]
    if not cell_names:
        raise PublishError("no cell files of machine %s under %s/cells" % (key, results))
    records = _read_all(results, cell_names, "cell")
    duets = _read_all(results, [n for n in names if n.startswith("duets/")], "duet")
    facts = run_facts(records, duets)
    probe = results / "machines" / key / "probe.json"  # the key's first probe (driver/study/probe.py)
    if not facts["fingerprint"] and probe.is_file():
        try:
            facts["fingerprint"] = json.loads(probe.read_text(encoding="utf-8")).get("fingerprint")
        except (OSError, ValueError, AttributeError):
            pass
    sha, source = run_commit(records, results, commit)
    run_id = "%s-%s" % (facts["date"], sha[:7] if sha else "nocommit")
    machine_dir = docs / "data" / key
    machine_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".publish-", dir=str(machine_dir)))
    try:
        write_archive(results, names, stage / ARCHIVE, roots)
        digest = publishing.sha256(stage / ARCHIVE)
        action, suffix = "new", 1
        while True:
            rid = run_id if suffix == 1 else "%s-%d" % (run_id, suffix)
            target = machine_dir / rid
            if not target.exists():
                break
            old = target / ARCHIVE
            if old.is_file() and publishing.sha256(old) == digest:
                action = "unchanged"
                break
            if old.is_file() and _members(old) <= set(names):
                action = "replaced"  # the same run, grown: more rounds or retried cells
                break
            suffix += 1
        run = roots.value({"machine": key, "run_id": rid, "commit": sha, "commit_source": source,
                           **facts, "config": run_config(results, config_path)})
        run["archive"] = {"name": ARCHIVE, "bytes": (stage / ARCHIVE).stat().st_size,
                          "sha256": digest, "files": len(names)}
        if action != "unchanged":
            _write_run_json(stage / RUN_JSON, run)
            if target.exists():
                shutil.rmtree(target)
            os.replace(stage, target)
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return dict(run, path=str(target), action=action)


def _write_run_json(path, run: dict) -> None:
    Path(path).write_text(json.dumps(run, indent=1, sort_keys=True, default=str) + "\n",
                          encoding="utf-8")


def relative_paths(folder, roots: publishing.Roots) -> bool:
    """Rewrite a published run folder's archive and run.json with their paths made relative
    (`roots`), the archive's sha256 and size in run.json recomputed; members, their order and
    every other byte kept. Returns whether anything changed."""
    folder = Path(folder)
    run = json.loads((folder / RUN_JSON).read_text(encoding="utf-8"))
    new_run = roots.value(run)
    stage = folder / (".%s.tmp" % ARCHIVE)
    changed = False
    try:
        with tarfile.open(folder / ARCHIVE, "r:xz") as src, \
                tarfile.open(stage, "w:xz", format=tarfile.PAX_FORMAT) as dst:
            for member in src.getmembers():
                with src.extractfile(member) as handle:
                    data = handle.read()
                new = roots.member(member.name, data)
                changed |= new != data
                _add(dst, member.name, new)
        if changed:
            new_run["archive"] = dict(new_run.get("archive") or {}, sha256=publishing.sha256(stage),
                                      bytes=stage.stat().st_size)
            os.replace(stage, folder / ARCHIVE)
    finally:
        stage.unlink(missing_ok=True)
    if changed or new_run != run:
        _write_run_json(folder / (".%s.tmp" % RUN_JSON), new_run)
        os.replace(folder / (".%s.tmp" % RUN_JSON), folder / RUN_JSON)
        return True
    return False


def publish(results, docs, machines=None, commit=None, config_path=None,
            regenerate=True, roots=None) -> list[dict]:
    """Publish every machine key's run found under results/cells (or those in `machines`), then
    regenerate docs/'s derived files from all of docs/data (scripts/republish.py)."""
    results, docs = Path(results), Path(docs)
    keys = machine_keys(results)
    if not keys:
        raise PublishError("nothing published: no cell files under %s/cells (run `make study` "
                           "first)" % results)
    if machines:
        missing = sorted(set(machines) - set(keys))
        if missing:
            raise PublishError("no cell files of %s under %s/cells (there: %s)" % (
                ", ".join(missing), results, ", ".join(keys)))
        keys = [k for k in keys if k in set(machines)]
    runs = [publish_run(results, docs, key, commit=commit, config_path=config_path, roots=roots)
            for key in keys]
    if regenerate:
        republish.republish(docs, code_commit=publishing.git_commit())
        write_readme(docs)
    return runs


def write_readme(docs, readme=None) -> bool | None:
    """The README's answer block from the regenerated docs/tables (what `make republish` writes
    with scripts/readme_answer.py), so that `make publish` leaves a checkout whose tests pass:
    True when it changed; None where no README with the block's markers sits beside docs/ (or
    docs/ holds no tables)."""
    import readme_answer

    from driver.report import readme_block
    from driver.tables.results import Results

    readme = Path(readme) if readme else Path(docs).resolve().parent / "README.md"
    if not readme.is_file() or readme_block.BEGIN not in readme.read_text(encoding="utf-8") \
            or not Results(Path(docs) / "tables").has_cells():
        return None
    return readme_block.write(readme, Path(docs) / "tables",
                              readme_answer.published_margin(docs))


def show(docs, spec: str, why: str = "") -> dict:
    """--show <key>/<run id> (or <run id> when one key has it): the run the key's derived files
    show (docs/data/<key>/shown.json)."""
    data = Path(docs) / "data"
    key, _, run_id = spec.rpartition("/")
    if not key:
        keys = sorted(p.parent.parent.name for p in data.glob("*/%s/%s" % (run_id, RUN_JSON)))
        if len(keys) != 1:
            raise PublishError("--show %s: %s (name it as <machine key>/<run id>)" % (
                spec, "published under %s" % ", ".join(keys) if keys else "no such run"))
        key = keys[0]
    return publishing.write_shown(data / key, run_id, why)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results", help="the run's results folder")
    parser.add_argument("--docs", default="docs", help="where to publish (GitHub Pages: docs/)")
    parser.add_argument("--machine", action="append",
                        help="publish this machine key only (repeatable; default: every key "
                             "under <results>/cells)")
    parser.add_argument("--commit", help="the commit that timed the run, when its cell files "
                                         "record none (default: the HEAD of the git tree that "
                                         "holds the results folder)")
    parser.add_argument("--config", default="config.yaml",
                        help="the run's config, when the workbook does not record it")
    parser.add_argument("--relative-to", action="append", default=[], metavar="DIR",
                        help="another checkout whose paths are published relative to it "
                             "(repeatable; the publishing checkout, the results folder's and "
                             "the home directory always are)")
    parser.add_argument("--show", metavar="[KEY/]RUN",
                        help="instead of publishing: the run its machine key's derived files "
                             "show (docs/data/<key>/shown.json), then regenerate")
    parser.add_argument("--why", default="", help="with --show: why (recorded in shown.json)")
    parser.add_argument("--rewrite-paths", action="append", default=[], metavar="RUN_DIR",
                        help="instead of publishing: make a published run folder's paths "
                             "relative (with --relative-to for the checkout that ran it), "
                             "its sha256 recomputed")
    parser.add_argument("--no-regenerate", action="store_true",
                        help="only copy the measurements; `make republish` regenerates later")
    args = parser.parse_args(argv)
    roots = publishing.Roots([REPO, *args.relative_to], os.path.expanduser("~"))
    try:
        if args.show or args.rewrite_paths:
            for folder in args.rewrite_paths:
                print("%s: %s" % ("paths made relative" if relative_paths(folder, roots)
                                  else "no absolute path of the checkouts or home", folder))
            if args.show:
                shown = show(args.docs, args.show, args.why)
                print("shown: %s (%s)" % (shown["run"], shown["why"]))
            runs = []
        else:
            runs = publish(args.results, args.docs, machines=args.machine, commit=args.commit,
                           config_path=args.config, regenerate=False,
                           roots=publishing.publisher_roots(args.results, args.relative_to))
        if not args.no_regenerate:
            republish.republish(args.docs, code_commit=publishing.git_commit())
            readme = write_readme(args.docs)
            if readme is not None:
                print("README.md: answer block %s" % ("written" if readme else "already current"))
    except publishing.PublishingError as exc:
        print("publish: %s" % exc, file=sys.stderr)
        return 1
    for run in runs:
        print("%s: %s/%s (%s; %d processes, commit %s)" % (
            run["action"], run["machine"], run["run_id"], run["path"], run["processes"],
            (run["commit"] or "unknown")[:12]))
    if not args.no_regenerate:
        print("regenerated %s/ from %s/data (open %s/index.html; the results page is "
              "%s/RESULTS.md)" % (args.docs, args.docs, args.docs, args.docs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
