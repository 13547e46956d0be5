"""The report's sections about the study itself rather than its timings: the machines and
versions covered, failures, environments, and the method with the harness's own figures."""
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from driver.report.fmt import num, records, text, version_key

SELFBENCH_GOALS = {
    "overhead_rel": ("harness overhead per sample, as a share of the small cell's median step",
                     "<= 1e-4"),
    "ci_rel_median": ("median CI half-width / median over the quick preset's cells", "<= 0.02"),
    "spread_ours": ("relative spread of our pooled median over 5 fresh processes",
                    "<= 1/3 of spread_seed"),
    "spread_seed": ("relative spread of the seed's time() mean of 200 calls, same processes", ""),
    "timed_share": ("share of the quick study's wall time inside timed loops", ""),
    "aa_false_positive_rate": ("A/A pairs (one cell's processes split in two halves) called "
                               "faster or slower by the study's verdicts", "<= 0.05"),
    "mde_80": ("smallest ratio the default design detects with 80 % power", "<= 1.10"),
    "orchestrator_cpu_share": ("CPU of Snakemake and the supervisors during timed windows, in "
                               "cores", "<= 0.01"),
}


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


def read_selfbench(path) -> dict | None:
    """The harness figures of `make selfbench` (a JSON object, or its last JSON line)."""
    if not path or not os.path.exists(path):
        return None
    try:
        raw = Path(path).read_text(encoding="utf-8")
        try:
            data = json.loads(raw)
        except ValueError:
            lines = [ln for ln in raw.splitlines() if ln.strip().startswith("{")]
            data = json.loads(lines[-1]) if lines else None
    except (OSError, ValueError) as exc:
        return {"error": f"{path} unreadable: {exc}", "rows": []}
    if not isinstance(data, dict):
        return {"error": f"{path} holds no JSON object", "rows": []}
    rows = []
    for key, (meaning, goal) in SELFBENCH_GOALS.items():
        value = num(data.get(key))
        rows.append({"key": key, "meaning": meaning, "goal": goal,
                     "value": "not measured" if math.isnan(value) else f"{value:.3g}"})
    extra = [(k, text(v) if not isinstance(v, (dict, list)) else json.dumps(v, sort_keys=True))
             for k, v in sorted(data.items()) if k not in SELFBENCH_GOALS]
    return {"error": None, "rows": rows, "extra": extra}


def method_view(config: Mapping, selfbench_path) -> dict:
    config = dict(config or {})
    stop = dict(config.get("stop") or {})
    rule = text(stop.get("rule"), "unknown")
    if rule == "fixed":
        iters = stop.get("iterations", "seed")
        rule_text = ("fixed: the seed's counts (200 / 100 / 50 steps for the small / medium / "
                     "large model)" if iters == "seed" else f"fixed: {iters} timed steps per cell")
    elif rule == "adaptive":
        rule_text = (f"adaptive: sample until the {num(stop.get('level', 0.95)):.0%} CI of the "
                     f"median is within ±{num(stop.get('target_rel', 0.01)):.1%} of it, with at "
                     f"least {text(stop.get('min_samples'), '?')} and at most "
                     f"{text(stop.get('max_samples'), '?')} samples and at most "
                     f"{text(stop.get('budget_s'), '?')} s of sampling per process")
    else:
        rule_text = rule
    return {
        "rule": rule_text,
        "level": num(stop.get("level", 0.95)),
        "repeats": text(config.get("repeats"), "1"),
        "noisy_threshold": num(config.get("noisy_threshold", 0.10)),
        "timeout": text(config.get("cell_timeout_s"), "?"),
        "memory": text(config.get("cell_memory_mb"), "?"),
        "reference_env": text(config.get("reference_env"), "?"),
        "q": num(config.get("fdr_q", 0.05)),
        "min_effect": num(config.get("min_effect", 0.05)),
        "selfbench": read_selfbench(selfbench_path),
        "selfbench_path": str(selfbench_path or "results/selfbench.json"),
        "config_json": json.dumps(config, indent=2, sort_keys=True, default=str),
    }


def failures_view(cells: pd.DataFrame, failures: list[dict]) -> dict:
    """Failed and skipped processes with reasons and log tails (as aggregation wrote them), and
    cells.csv rows that no process explains."""
    items = list(failures)
    seen = {(f["machine"], f["env"], f["cell"]) for f in items}
    for r in records(cells):
        status = text(r.get("status"), "unknown")
        key = (text(r.get("machine")), text(r.get("env")), text(r.get("cell_id")))
        if status == "ok" or key in seen:
            continue
        items.append({"status": status, "machine": key[0], "env": key[1], "cell": key[2],
                      "repeat": "", "reason": text(r.get("reason")), "log_tail": "", "path": ""})
    counts = {}
    for it in items:
        counts[it["status"]] = counts.get(it["status"], 0) + 1
    return {"entries": items, "counts": counts, "problems": []}
