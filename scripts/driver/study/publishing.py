"""What `make publish` (scripts/publish.py) and `make republish` (scripts/republish.py) both need,
so that neither imports the other for it: a published run's file names and checksum, the machine
keys of a results folder, the config a run's analysis used, the commit of a checkout, the paths a
published file may carry (relative to the checkout, `~` for the home directory), and which run of
a machine key the derived files show.

Paths. A cell file records where its interpreter, env and spec file lay (`/home/alice/tfspeed/
.envs/tf2.0-.../bin/python`): published as they are, they name the publisher's user and folders.
`Roots` maps each checkout to a path relative to it (`.envs/tf2.0-.../bin/python`) and the home
directory to `~` (`~/.pyenv/versions/3.7.16/bin/python`), longest root first, only at a path
boundary; versions, hashes and every measured figure are untouched. It applies to every JSON and
CSV member of a run's archive and to run.json.

Which run a key shows. The derived files come from one run per machine key (two runs of a key
both hold, say, repeat 0 of a cell). docs/data/<key>/shown.json ({"run": <run id>, "why": ...},
written by `make publish ARGS="--show <run id>"`) names it; without one, the fullest study (the
run whose config has the most grids: the default study over a preset such as the headline's),
newest among equals (by last process end, then run id).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

ARCHIVE = "processes.tar.xz"
RUN_JSON = "run.json"
SHOWN = "shown.json"
REPO = Path(__file__).resolve().parents[3]
# archive members whose text is rewritten (paths made relative): every JSON and CSV file
TEXT_MEMBERS = (".json", ".csv")
# never a root: folders that hold other users' and the system's files
SHARED_FOLDERS = {"/home", "/Users", "/usr", "/tmp", "/opt", "/var", "/srv", "/mnt", "/work"}
JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


class PublishingError(Exception):
    pass


def sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_commit(repo=REPO) -> str | None:
    """The checkout's HEAD, with ' (with uncommitted changes)' when tracked files differ."""
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=20)
        dirty = subprocess.run(["git", "-C", str(repo), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return out.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")


def git_toplevel(path) -> Path | None:
    try:
        out = subprocess.run(["git", "-C", str(path), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return Path(out.stdout.strip()) if out.returncode == 0 and out.stdout.strip() else None


def machine_keys(results) -> list[str]:
    """The machine keys (twin keys folded into their machine) with cell files under results."""
    from driver.study import layout

    cells = Path(results) / "cells"
    keys = {layout.base_machine(p.name) for p in cells.iterdir()
            if p.is_dir() and any(p.glob("*/*.r[0-9]*.json"))} if cells.is_dir() else set()
    return sorted(keys)


def _laid_over(base: dict, top: dict) -> dict:
    """`top` laid over `base` as the workflow does: mappings merge key by key, the rest
    replaces."""
    out = dict(base)
    for key, value in top.items():
        out[key] = _laid_over(out[key], value) if isinstance(value, dict) and \
            isinstance(out.get(key), dict) else value
    return out


def workbook_config(workbook) -> dict:
    """The config a workbook's `about` sheet records (rows under "config (YAML)"); {} when there
    is no readable workbook or no such rows."""
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
    except (OSError, KeyError, ValueError, IndexError, zipfile.BadZipFile, InvalidFileException,
            yaml.YAMLError):
        return {}
    return found if isinstance(found, dict) else {}


def run_config(results, config_path=None, repo=REPO) -> dict:
    """The config the run's analysis used: the workbook's `about` sheet (what the workflow
    passed to aggregation), else the config file given laid over the repository's config.yaml
    (as the workflow lays a --configfile over it)."""
    import yaml

    found = workbook_config(Path(results) / "study.xlsx")
    if found:
        return found
    with open(Path(repo) / "config.yaml", encoding="utf-8") as handle:
        config = yaml.safe_load(handle) or {}
    if config_path and Path(config_path).is_file() and \
            Path(config_path).resolve() != (Path(repo) / "config.yaml").resolve():
        with open(config_path, encoding="utf-8") as handle:
            top = yaml.safe_load(handle) or {}
        config = _laid_over(config, top if isinstance(top, dict) else {})
    return config


# ---------------------------------------------------------------------------------------------
# Paths relative to the checkout and the home directory

class Roots:
    """Absolute folders and what a path under each becomes: a checkout -> relative to it, the
    home directory -> `~`. `/` and the folders of SHARED_FOLDERS are never roots."""

    def __init__(self, checkouts=(), home=None):
        pairs = {}
        for folder in checkouts:
            for form in _forms(folder):
                pairs.setdefault(form, "")
        if home:
            for form in _forms(home):
                pairs.setdefault(form, "~")
        # longest first: a checkout under the home directory becomes relative, not ~/...
        self.pairs = sorted(pairs.items(), key=lambda kv: (-len(kv[0]), kv[0]))
        self._pattern = re.compile(
            r"(?<![\w.~/-])(%s)(?=/|$|[^\w.-])" % "|".join(re.escape(p) for p, _ in self.pairs)
        ) if self.pairs else None

    def text(self, value: str) -> str:
        """Every root in `value` (at a path boundary) replaced: '<root>/x' -> 'x' (a checkout) or
        '~/x' (home); '<root>' alone -> '.' or '~'."""
        if self._pattern is None:
            return value
        lookup = dict(self.pairs)

        def swap(match):
            root, end = match.group(1), match.end()
            new = lookup[root]
            if new == "" and value[end:end + 1] == "/":
                return "\0"  # the slash after a checkout goes too (marked, removed below)
            return new or "."

        return self._pattern.sub(swap, value).replace("\0/", "")

    def value(self, obj):
        """`obj` (JSON-like) with every string's roots replaced; keys too."""
        if isinstance(obj, str):
            return self.text(obj)
        if isinstance(obj, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v)
                    for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [self.value(v) for v in obj]
        return obj

    def member(self, name: str, data: bytes) -> bytes:
        """An archive member's bytes with its paths made relative: in a JSON file each string
        literal (decoded, rewritten, encoded again only where it changed, so the other bytes
        stay), in a CSV file its text; other members as they are."""
        if not name.endswith(TEXT_MEMBERS) or self._pattern is None:
            return data
        text = data.decode("utf-8")
        if not name.endswith(".json"):
            return self.text(text).encode("utf-8")

        def swap(match):
            old = json.loads(match.group(0))
            new = self.text(old)
            return match.group(0) if new == old else json.dumps(new)

        new = JSON_STRING.sub(swap, text)
        if new == text:
            return data
        try:
            same = _canonical(json.loads(new)) == _canonical(self.value(json.loads(text)))
        except ValueError as exc:
            raise PublishingError("%s: not JSON (%s)" % (name, exc)) from exc
        if not same:
            raise PublishingError("%s: making its paths relative changed more than its paths"
                                  % name)
        return new.encode("utf-8")

    def left_in(self, text: str) -> list[str]:
        """The roots still in `text` (none after `text()`)."""
        return sorted({m.group(1) for m in self._pattern.finditer(text)}) if self._pattern \
            else []


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True)


def _forms(folder) -> list[str]:
    """A folder as written (absolute, without a trailing slash) and resolved (symlinks), each
    also JSON-escaped where that differs."""
    found = []
    for form in {os.path.abspath(str(folder)), os.path.realpath(str(folder))}:
        form = form.rstrip("/")
        if len(Path(form).parts) < 2 or form in SHARED_FOLDERS:  # would rewrite others' paths
            continue
        found.append(form)
        escaped = json.dumps(form)[1:-1]
        if escaped != form:
            found.append(escaped)
    return found


def publisher_roots(results, extra=(), home=None) -> Roots:
    """The roots of a publish: the checkout that publishes (REPO), the git tree holding the
    results folder (e.g. the frozen worktree the run used) or else the results folder's parent,
    any `extra` checkouts, and the home directory ($HOME)."""
    results = Path(results).resolve()
    checkouts = [REPO, git_toplevel(results.parent) or results.parent, *extra]
    return Roots([c for c in checkouts if c], home or os.path.expanduser("~"))


# ---------------------------------------------------------------------------------------------
# Which run of a machine key the derived files show

def read_shown(machine_dir) -> dict | None:
    """docs/data/<key>/shown.json, checked: {"run": <run id>, "why": <text>}; None without one."""
    path = Path(machine_dir) / SHOWN
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise PublishingError("%s: not readable JSON (%s)" % (path, exc)) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("run"), str) or not doc["run"]:
        raise PublishingError('%s: needs {"run": "<run id>", "why": "..."}, found %r'
                              % (path, doc))
    if not (Path(machine_dir) / doc["run"] / RUN_JSON).is_file():
        raise PublishingError("%s names run %r, which is not under %s/" % (
            path, doc["run"], machine_dir))
    return doc


def write_shown(machine_dir, run_id: str, why: str = "") -> dict:
    """Name the run a key shows (the maintainer's choice), atomically."""
    from tfspeed import atomic

    if not (Path(machine_dir) / run_id / RUN_JSON).is_file():
        raise PublishingError("no published run %s under %s/ (there: %s)" % (
            run_id, machine_dir, ", ".join(sorted(
                p.parent.name for p in Path(machine_dir).glob("*/" + RUN_JSON))) or "none"))
    doc = {"run": run_id, "why": why or "chosen by the maintainer (make publish --show)"}
    atomic.write_text(str(Path(machine_dir) / SHOWN), json.dumps(doc, indent=1) + "\n")
    return doc


def breadth(run: dict) -> int:
    """How full a study the run is: its config's grids (the default study has every grid, a
    preset such as the headline's one)."""
    grids = (run.get("config") or {}).get("grids")
    return len(grids) if isinstance(grids, list) else 0


def shown_per_machine(runs: list[dict]) -> list[dict]:
    """The run each machine key's derived files come from, with `shown_why`: the one its
    shown.json names (next to the runs' folders, `path`), else the fullest study (most grids),
    newest among equals (last process end, then run id). Sorted by key."""
    by_key: dict = {}
    for run in runs:
        by_key.setdefault(run["machine"], []).append(run)
    out = []
    for key in sorted(by_key):
        folders = {Path(r["path"]).parent for r in by_key[key] if r.get("path")}
        named = read_shown(folders.pop()) if len(folders) == 1 else None
        if named:
            run = next(r for r in by_key[key] if r["run_id"] == named["run"])
            out.append(dict(run, shown_why="%s names it: %s" % (SHOWN, named.get("why") or "")))
            continue
        best = max(by_key[key], key=lambda r: (breadth(r), str(r.get("ended_utc")), r["run_id"]))
        fuller = [r for r in by_key[key] if breadth(r) < breadth(best)]
        why = "the newest of the fullest studies (%d grids)" % breadth(best)
        if fuller:
            why += "; preferred over %s (fewer grids)" % ", ".join(r["run_id"] for r in fuller)
        out.append(dict(best, shown_why=why))
    return out


def env_builds(run: dict, records: list[dict]) -> dict:
    """The envs a run built itself (cell files' provenance.env.reused false), how many of them
    were built after its first process (inside its wall time) and their install and bytecode
    seconds: {"envs", "built", "inside", "inside_s"}."""
    from datetime import datetime

    envs = {}
    for rec in records:
        manifest = ((rec.get("provenance") or {}).get("env")) or {}
        if isinstance(manifest, dict) and rec.get("env"):
            envs.setdefault(rec["env"], manifest)
    start = str(run.get("started_utc") or "")
    built = {k: m for k, m in envs.items() if m.get("reused") is False}
    inside = {}
    for name, m in built.items():
        try:
            when = datetime.fromisoformat(str(m.get("built_utc")).replace("Z", "+00:00"))
            first = datetime.fromisoformat(start.replace("Z", "+00:00"))
        except ValueError:
            continue
        if when >= first:
            inside[name] = m
    seconds = sum(float(m.get(k) or 0) for m in inside.values() for k in ("install_s",
                                                                          "bytecode_s"))
    return {"envs": len(envs), "built": len(built), "inside": len(inside), "inside_s": seconds}
