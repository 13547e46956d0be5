"""Environments: the machines' and envs' facts, laid out from what aggregation gathered
(driver/tables/facts.py: machines, environments)."""
import json
import math

import numpy as np

from driver.report.fmt import num, text, version_key
from driver.study import layout
from driver.tables.labels import env_label, header

ID, TITLE, ORDER = "environments", "Environments", 90


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


def _joined(mapping, form) -> str:
    return ", ".join(form.format(k, v) for k, v in mapping.items()) if isinstance(mapping, dict) \
        else ""


def env_view(e: dict) -> dict:
    """One env's facts as (name, text) pairs, empty ones left out, and its packages."""
    m = e.get("manifest") or {}
    pk = m.get("packages") or {}
    packages = (sorted((text(k), text(v)) for k, v in pk.items()) if isinstance(pk, dict)
                else [(text(p), "") for p in pk] if isinstance(pk, list) else [])
    install_s = num(m.get("install_s"))
    facts = [("framework", e.get("framework") or text(m.get("framework_version"))),
             ("python", text(m.get("python")) or e.get("python")),
             ("interpreter", text(m.get("python_executable"))),
             ("spec file", text(m.get("spec_file"))),
             ("spec hash", ", ".join(e.get("hashes") or []) or text(m.get("spec_hash"))),
             ("installer", text(m.get("installer"))),
             ("package sources", sources_text(m.get("package_sources"))),
             ("installed as", _joined(m.get("resolved"), "{} {}")),
             ("install time", "" if math.isnan(install_s) else f"{install_s:.0f} s"),
             ("built", text(m.get("built_utc"))),
             ("variables", _joined(m.get("variables"), "{}={}")),
             ("cell files", str(e.get("cells")))]
    return {"machine": e.get("machine"), "env": e.get("env"), "label": env_label(e.get("env")),
            "facts": [(k, v) for k, v in facts if v], "packages": packages}


def machine_view(machine: str, facts: dict, loads: list, keys: list) -> dict:
    """A machine's facts in the order its provenance lists them, and its load before cells: (name
    in words, value, the fact's own name)."""
    keys = [k for k in keys if k in facts] + [k for k in facts if k not in keys]
    rows = [(header(k), text(json.dumps(facts[k], sort_keys=True)
                             if isinstance(facts[k], (list, dict)) else facts[k], "none"), text(k))
            for k in keys]
    if loads:
        rows.append(("1-min load before cells", f"min {min(loads):.2f}, median "
                     f"{float(np.median(loads)):.2f}, max {max(loads):.2f}", ""))
    return {"machine": machine, "facts": rows}


def same_packages(views) -> list[dict]:
    """The env views with each package list printed once: an env whose packages equal those of
    the same env on an earlier machine says so ("same_as": that machine) instead of listing them
    again (the lists were most of the section's bytes on a page of two machines)."""
    out, seen = [], {}
    for v in views:
        key = (v["env"], tuple(v["packages"]))
        v = dict(v, same_as=seen.get(key, "") if v["packages"] else "")
        seen.setdefault(key, v["machine"])
        out.append(v)
    return out


def build(data) -> dict:
    gathered = data.study.get("environments") or {}
    envs = sorted(gathered.get("envs") or [], key=lambda e: (e["machine"], version_key(e["env"])))
    loads, keys = gathered.get("loads_before") or {}, gathered.get("machine_keys") or {}
    # the twin keys (layout.is_twin: the A/A check's copies of cells) are the same machines and
    # envs: named once, not listed again
    twins = sorted({e["machine"] for e in envs if layout.is_twin(e["machine"])}
                   | {m for m in data.machine_facts if layout.is_twin(m)})
    return {"envs": same_packages(env_view(e) for e in envs
                                  if not layout.is_twin(e["machine"])),
            "machines": [machine_view(m, f, loads.get(m) or [], keys.get(m) or [])
                         for m, f in sorted(data.machine_facts.items())
                         if not layout.is_twin(m)],
            "twins": twins}
