"""What the report shows besides the tables, taken from the cell files by aggregation and written
beside the tables (results/tables/processes.json, facts.json), so the report never opens a cell
file: every process's samples and status, the machines' and envs' facts, and failures with their
log tails."""
import datetime
import json
import math
from collections import Counter
from collections.abc import Sequence

import numpy as np

from driver.tables.bundle import num, text
from tfspeed.cells import AXES


def cell_key(rec) -> tuple:
    cid = rec.get("cell_id")
    if not cid:
        cid = ".".join(text(rec.get(a)) for a in AXES)
    return (text(rec.get("machine")), text(rec.get("env")), text(cid))


def samples_by_cell(recs: list[dict]) -> dict:
    """(machine, env, cell_id) -> (pooled samples in repeat order, repeat boundaries, summary)."""
    grouped = {}
    for rec in recs:
        if rec.get("status") != "ok" or not rec.get("samples_s"):
            continue
        grouped.setdefault(cell_key(rec), []).append(rec)
    out = {}
    for key, reps in grouped.items():
        reps.sort(key=lambda r: num(r.get("repeat")) if not math.isnan(num(r.get("repeat")))
                  else 0)
        arrays, bounds, total = [], [], 0
        for rec in reps:
            x = np.asarray([num(v) for v in rec["samples_s"]], dtype=float)
            x = x[np.isfinite(x)]
            if total:
                bounds.append(total - 0.5)
            arrays.append(x)
            total += x.size
        if total:
            out[key] = {"samples": np.concatenate(arrays), "bounds": bounds,
                        "summary": reps[0].get("summary") or {},
                        "axes": {a: reps[0].get(a) for a in AXES}}
    return out


def machine_facts(recs: list[dict]) -> dict:
    """machine key -> the provenance of its most recent cell file (its fingerprint and probe
    included), with `fingerprints`: every fingerprint hash under the key (two: two machines)."""
    out, seen = {}, {}
    for rec in sorted(recs, key=lambda r: text(r.get("started_utc"))):
        facts = (rec.get("provenance") or {}).get("machine")
        if isinstance(facts, dict):
            key = text(rec.get("machine"))
            out[key] = dict(facts)
            fp = facts.get("fingerprint") or {}
            seen.setdefault(key, set()).update([fp["hash"]] if fp.get("hash") else [])
    for key, facts in out.items():
        facts["fingerprints"] = sorted(seen.get(key, ()))
    return out


def measurement_dates(recs: list[dict]) -> str:
    dates = sorted(text(r.get("started_utc"))[:10] for r in recs if r.get("started_utc"))
    if not dates:
        return "unknown"
    return dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"


def environments(recs: list[dict]) -> dict:
    """What the report's environments section lays out (driver/report/sections/environments.py):
    per (machine, env), in the order first met, its count of cell files, spec hashes, Python,
    framework and the manifest of its newest cell file that lists packages; per machine, the
    1-minute load before each cell and the order of its facts."""
    envs = {}
    for rec in sorted(recs, key=lambda r: text(r.get("started_utc"))):
        prov = rec.get("provenance") or {}
        manifest = prov.get("env") if isinstance(prov.get("env"), dict) else {}
        key = (text(rec.get("machine")), text(rec.get("env")))
        e = envs.setdefault(key, {"machine": key[0], "env": key[1], "hashes": set(),
                                  "cells": 0, "manifest": {}})
        e["cells"] += 1
        if manifest.get("spec_hash"):
            e["hashes"].add(text(manifest["spec_hash"]))
        if manifest.get("packages") or not e["manifest"]:
            e["manifest"] = manifest
        e.setdefault("python", text(rec.get("python")))
        e.setdefault("framework", f"{text(rec.get('framework'))} "
                                  f"{text(rec.get('framework_version'))}".strip())
    loads, keys = {}, {}
    for machine, facts in machine_facts(recs).items():
        keys[machine] = list(facts)  # facts.json sorts its keys: the provenance's order, kept
    for rec in recs:
        before = (rec.get("provenance") or {}).get("load_before")
        if isinstance(before, list):
            value = num(before[0])
            if not math.isnan(value):
                loads.setdefault(text(rec.get("machine")), []).append(value)
    return {"envs": [dict(e, hashes=sorted(e["hashes"])) for e in envs.values()],
            "loads_before": loads, "machine_keys": keys}


def process_failures(recs: list[dict], paths: Sequence[str]) -> list[dict]:
    """Every process that is not ok: what, where, why, with the tail of its log."""
    items = []
    for rec, path in sorted(zip(recs, paths), key=lambda rp: (
            text(rp[0].get("env")), cell_key(rp[0])[2], num(rp[0].get("repeat")))):
        status = text(rec.get("status"), "unknown")
        if status == "ok":
            continue
        items.append({"status": status, "machine": text(rec.get("machine")),
                      "env": text(rec.get("env")), "cell": cell_key(rec)[2],
                      "repeat": text(rec.get("repeat")), "reason": text(rec.get("reason")),
                      "log_tail": text(rec.get("log_tail")), "path": str(path),
                      "not_reached": bool(rec.get("not_reached"))})
    return items


def _key_text(key) -> str:
    return "/".join(key)


def _utc(value) -> datetime.datetime | None:
    try:
        when = datetime.datetime.fromisoformat(text(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def run_facts(recs: Sequence[dict], duets: Sequence[dict] = ()) -> dict:
    """When and with which code the study was measured: the commit most cell files name
    (provenance.code.commit) and whether any was dirty, the first start and the last end over
    every cell process and duet (start + its wall time), and the span between them in s."""
    commits = Counter(text(((r.get("provenance") or {}).get("code") or {}).get("commit"))
                      for r in recs)
    commits.pop("", None)
    spans = []
    for rec in recs:
        prov = rec.get("provenance") or {}
        wall = num(prov.get("cell_wall_s"))
        spans.append((_utc(rec.get("started_utc")),
                      wall if math.isfinite(wall) else num(rec.get("timed_wall_s"))))
    spans += [(_utc(d.get("started_utc")), num(d.get("wall_s"))) for d in duets]
    starts = [s for s, _ in spans if s]
    ends = [s + datetime.timedelta(seconds=w if math.isfinite(w) else 0.0)
            for s, w in spans if s]
    out = {"commit": commits.most_common(1)[0][0] if commits else "",
           "dirty": any(((r.get("provenance") or {}).get("code") or {}).get("dirty")
                        for r in recs)}
    if starts:
        first, last = min(starts), max(ends)
        out.update(first_utc=first.isoformat(), last_utc=last.isoformat(),
                   wall_s=round((last - first).total_seconds(), 1))
    return out


def runs_by_machine(recs: Sequence[dict], duets: Sequence[dict] = ()) -> dict:
    """{machine key: run_facts of its own cells and duets}: a study of several machines has a
    commit and a span per machine (a twin key's cells count under its machine); the pooled `run`
    would give one machine's commit and the gap from the first start to the last end."""
    from driver.study.layout import base_machine

    def key(rec):
        return base_machine(text(rec.get("machine")))

    keys = sorted({key(r) for r in [*recs, *duets]} - {""})
    return {k: run_facts([r for r in recs if key(r) == k], [d for d in duets if key(d) == k])
            for k in keys}


def write_bundle(recs: list[dict], paths: Sequence[str], processes_path, facts_path,
                 env_order: Sequence[str] = (), duets: Sequence[dict] = ()) -> None:
    """processes.json: per cell, every ok process's samples in repeat order (with the boundaries
    between processes); facts.json: machines, envs, measurement dates, failures, the run (its
    commit and span, over the cells and the duets)."""
    from tfspeed.atomic import write_text

    samples = {_key_text(k): {"samples": [float(x) for x in v["samples"]],
                              "bounds": v["bounds"], "summary": v["summary"], "axes": v["axes"]}
               for k, v in samples_by_cell(recs).items()}
    facts = {"machines": machine_facts(recs), "environments": environments(recs),
             "dates": measurement_dates(recs), "failures": process_failures(recs, paths),
             "env_order": list(env_order), "run": run_facts(recs, duets),
             "runs": runs_by_machine(recs, duets)}
    write_text(str(processes_path), json.dumps(samples, sort_keys=True))
    write_text(str(facts_path), json.dumps(facts, sort_keys=True, default=str))


def read_samples(path) -> dict:
    """processes.json back as {(machine, env, cell_id): {"samples": array, ...}}."""
    with open(path, encoding="utf-8") as handle:
        raw = json.load(handle)
    return {tuple(k.split("/", 2)): dict(v, samples=np.asarray(v["samples"], dtype=float))
            for k, v in raw.items()}


def read_facts(path) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)
