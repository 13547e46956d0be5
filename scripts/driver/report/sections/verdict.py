"""The answer, first on the page: the bottom line, the forest plots of TF 2 against TF 1 per
mode and API with the per-mode sentences, and the study at a glance (machine, dates, counts)."""
import pandas as pd

from driver.report import answer
from driver.report.bottom_line import bottom_line
from driver.report.fmt import col, is_true, num, records, text, version_key
from driver.report.forest import forest_svg
from driver.study import fingerprint, layout

ID, TITLE, ORDER = "verdict", "Answer", 10


def describe_machine(facts: dict) -> str:
    if not facts:
        return "unknown machine (no cell file carried its provenance)"
    parts = [text(facts.get("cpu_model"), "unknown CPU")]
    if facts.get("cpu_count"):
        parts[0] += f" ({facts['cpu_count']} logical cores)"
    gpus = facts.get("gpus")
    if gpus:
        names = [text(g.get("name")) if isinstance(g, dict) else text(g) for g in gpus]
        parts.append("GPU: " + ", ".join(n for n in names if n))
    else:
        parts.append("no GPU")
    if facts.get("mem_total_gb"):
        parts.append(f"{facts['mem_total_gb']} GB RAM")
    parts += fingerprint.describe(facts)  # the fingerprint and the probe (docs/machines.md)
    return "; ".join(parts)


def versions_covered(cells: pd.DataFrame) -> list[str]:
    """'tensorflow 1.14.0, 2.21.0' per framework, from every cell (ok or not)."""
    pairs = set()
    for row in records(cells):
        fw, ver = text(row.get("framework")), text(row.get("framework_version"))
        if ver:
            pairs.add((fw or "tensorflow", ver))
    out = []
    for fw in sorted({p[0] for p in pairs}):
        vers = sorted((v for f, v in pairs if f == fw), key=version_key)
        out.append(f"{fw} " + ", ".join(vers))
    return out


def build(data) -> dict:
    ans = answer.answer(data.tabs, data.min_effect)
    for panel in ans["panels"]:
        panel["svg"] = forest_svg(panel, data.min_effect, ans["reference"])
    # a twin key (<machine>.twin) is the A/A check's copy of its machine, not a machine
    machines = sorted(m for m in set(data.machine_facts)
                      | {text(m) for m in col(data.cells, "machine").dropna()}
                      | {text(data.machine)} - {""} if not layout.is_twin(m))
    twins = data.table("twins")
    ok = data.ok
    return {
        "answer": {**ans, "min_effect": data.min_effect},
        "bottom": bottom_line(data.tabs, data.cells, data.reference_env,
                              previous=data.previous),
        "machines": [{"key": m, "text": describe_machine(data.machine_facts.get(m, {}))}
                     for m in machines],
        "dates": data.study.get("dates") or "unknown",
        "versions": versions_covered(data.cells),
        "envs": data.order,
        "counts": {s: int((data.status == s).sum()) for s in ("ok", "failed", "skipped")},
        "n_cells": len(data.cells),
        "n_drift": int(col(ok, "drift", False).map(is_true).sum()),
        "n_noisy": int(col(ok, "noisy", False).map(is_true).sum()),
        "n_busy": int(col(ok, "foreign_cpu_flag", False).map(is_true).sum()),
        "twins": len(twins),
        "twins_different": int(col(twins, "significant", False).map(is_true).sum()),
        "foreign_max": num(data.config.get("foreign_cpu_max_share")),
    }
