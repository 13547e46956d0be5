"""What the report shows besides the tables, taken from the cell files by aggregation and written
beside the tables (results/tables/processes.json, facts.json), so the report never opens a cell
file: every process's samples and status, the machines' and envs' facts, and failures with their
log tails."""
import json
import math
from collections.abc import Sequence

import numpy as np

from driver.report.fmt import num, text, version_key
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


def sources_text(sources) -> str:
    """The package sources an env was built with (its manifest), skipped ones with their reason."""
    if not isinstance(sources, dict):
        return ""
    used = [*(sources.get("find_links") or []), *(sources.get("extra_index_urls") or [])]
    parts = []
    if used:
        served = ", ".join(sources.get("packages") or []) or "every package"
        parts.append(f"{', '.join(map(text, used))} (for {served})")
    parts += [f"skipped {text(line)}" for line in sources.get("skipped") or []]
    return "; ".join(parts) or ("PyPI only" if "find_links" in sources else "")


def environments_view(recs: list[dict]) -> dict:
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
    out = []
    for (_machine, _env), e in sorted(envs.items(), key=lambda kv: (kv[0][0],
                                                                    version_key(kv[0][1]))):
        m = e["manifest"]
        pk = m.get("packages") or {}
        packages = (sorted((text(k), text(v)) for k, v in pk.items()) if isinstance(pk, dict)
                    else [(text(p), "") for p in pk] if isinstance(pk, list) else [])
        facts = [("framework", e["framework"] or text(m.get("framework_version"))),
                 ("python", text(m.get("python")) or e["python"]),
                 ("interpreter", text(m.get("python_executable"))),
                 ("spec file", text(m.get("spec_file"))),
                 ("spec hash", ", ".join(sorted(e["hashes"])) or text(m.get("spec_hash"))),
                 ("installer", text(m.get("installer"))),
                 ("package sources", sources_text(m.get("package_sources"))),
                 ("installed as", ", ".join(f"{k} {v}" for k, v in (m.get("resolved") or {})
                                            .items()) if isinstance(m.get("resolved"), dict)
                  else ""),
                 ("install time", f"{num(m.get('install_s')):.0f} s"
                  if not math.isnan(num(m.get("install_s"))) else ""),
                 ("built", text(m.get("built_utc"))),
                 ("variables", ", ".join(f"{k}={v}" for k, v in (m.get("variables") or {})
                                         .items()) if isinstance(m.get("variables"), dict)
                  else ""),
                 ("cell files", str(e["cells"]))]
        out.append({"machine": e["machine"], "env": e["env"],
                    "facts": [(k, v) for k, v in facts if v], "packages": packages})
    machines = []
    for machine, facts in sorted(machine_facts(recs).items()):
        loads_before = [num((r.get("provenance") or {}).get("load_before", [None])[0])
                        for r in recs if text(r.get("machine")) == machine
                        and isinstance((r.get("provenance") or {}).get("load_before"), list)]
        loads = [v for v in loads_before if not math.isnan(v)]
        rows = []
        for k, v in facts.items():
            if isinstance(v, (list, dict)):
                v = json.dumps(v, sort_keys=True)
            rows.append((text(k), text(v, "none")))
        if loads:
            rows.append(("1-min load before cells", f"min {min(loads):.2f}, median "
                         f"{float(np.median(loads)):.2f}, max {max(loads):.2f}"))
        machines.append({"machine": machine, "facts": rows})
    return {"envs": out, "machines": machines}


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
                      "log_tail": text(rec.get("log_tail")), "path": str(path)})
    return items


def _key_text(key) -> str:
    return "/".join(key)


def write_bundle(recs: list[dict], paths: Sequence[str], processes_path, facts_path,
                 env_order: Sequence[str] = ()) -> None:
    """processes.json: per cell, every ok process's samples in repeat order (with the boundaries
    between processes); facts.json: machines, envs, measurement dates, failures."""
    from tfspeed.atomic import write_text

    samples = {_key_text(k): {"samples": [float(x) for x in v["samples"]],
                              "bounds": v["bounds"], "summary": v["summary"], "axes": v["axes"]}
               for k, v in samples_by_cell(recs).items()}
    facts = {"machines": machine_facts(recs), "environments": environments_view(recs),
             "dates": measurement_dates(recs), "failures": process_failures(recs, paths),
             "env_order": list(env_order)}
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
