"""Method: how cells are timed and judged, the A/A check in words, the harness's own figures
(`make selfbench`), the study's config, and the data behind the page (the headline's tables
carried inside it as download links)."""
import base64
import gzip
import json
import math
import os
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from driver.report.fmt import col, num, records, text
from driver.stats.verdicts import EQUIVALENT, LEFT_FASTER, RIGHT_FASTER
from driver.tables.results import table_file

ID, TITLE, ORDER = "method", "Method", 100

SELFBENCH_GOALS = {
    "overhead_rel": ("harness overhead per sample, as a share of the small cell's median step",
                     "<= 1e-4"),
    "ci_rel_median": ("median CI half-width / median over the quick preset's cells", "<= 0.02"),
    "spread_ours": ("relative spread of our pooled median over 5 fresh processes",
                    "<= 1/3 of spread_seed"),
    "spread_seed": ("relative spread of the seed's time() mean of 200 calls, same processes", ""),
    "timed_share": ("share of the quick study's wall time inside timed loops", ""),
    "aa_rate": ("A/A pairs (the same cell twice) with p at or below the study's per-test "
                "threshold, with its binomial CI: calibrated when the CI holds the threshold",
                "CI holds the nominal rate"),
    "mde_80": ("smallest ratio the default design detects with 80 % power", "<= 1.10"),
    "orchestrator_cpu_share": ("CPU of Snakemake and the supervisors during timed windows, in "
                               "cores", "<= 0.01"),
}


def figure_text(value) -> str:
    """A selfbench figure: a number, or a rate {k, n, rate, ci_low, ci_high, nominal, ok}
    (driver/stats/calibration.py: rate) with its CI and whether it holds the nominal value."""
    if isinstance(value, Mapping) and "rate" in value:
        if not value.get("n"):
            return "not measured"
        return (f"{value['k']} of {value['n']} ({num(value['rate']):.1%}, CI "
                f"{num(value['ci_low']):.1%}–{num(value['ci_high']):.1%}; nominal "
                f"{num(value['nominal']):.1%}: {'ok' if value.get('ok') else 'MISCALIBRATED'})")
    number = num(value)
    return "not measured" if math.isnan(number) else f"{number:.3g}"


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
        rows.append({"key": key, "meaning": meaning, "goal": goal,
                     "value": figure_text(data.get(key))})
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
        "min_effect": num(config.get("min_effect", 0.10)),
        "selfbench": read_selfbench(selfbench_path),
        "selfbench_path": str(selfbench_path or "results/selfbench.json"),
        "config_json": json.dumps(config, indent=2, sort_keys=True, default=str),
    }


# Tables carried inside the page as data: links, so that they download wherever the file goes
# (the rest sit beside it, in tables/); the headline's and the guidance's, gzipped (a tenth of
# the CSV's bytes inside the page; pandas and R read .csv.gz as they are).
EMBEDDED_TABLES = ("duets", "tf2_vs_tf1", "call_vs_predict", "guidance")


def data_link(name: str, df: pd.DataFrame) -> dict:
    """A table as a gzipped download link inside the page: {"name" (<table>.csv.gz), "href",
    "rows", "kb" (the CSV's size unzipped), "kb_inside" (what the page carries)}. The same bytes
    for the same table (no time stamp in the gzip header), so a republished page is unchanged."""
    body = df.to_csv(index=False).encode("utf-8")
    packed = base64.b64encode(gzip.compress(body, compresslevel=9, mtime=0)).decode("ascii")
    return {"name": table_file(name) + ".gz", "href": "data:application/gzip;base64," + packed,
            "rows": len(df), "kb": round(len(body) / 1024), "kb_inside": round(len(packed) / 1024)}


def aa_view(twins: pd.DataFrame, rate: pd.DataFrame) -> dict | None:
    """The A/A check in words: how many twin rows (the same cell timed twice, as if on two
    machines) the study calls faster or slower, against what a calibrated method gives."""
    if twins.empty:
        return None
    verdicts = col(twins, "verdict").map(text).map(
        lambda v: v if v in (LEFT_FASTER, RIGHT_FASTER, EQUIVALENT) else "undecided")
    out = {"n": len(twins), "called": int(verdicts.isin([LEFT_FASTER, RIGHT_FASTER]).sum()),
           "equivalent": int((verdicts == EQUIVALENT).sum()),
           "undecided": int((verdicts == "undecided").sum()), "ci": None}
    if not rate.empty:
        r = records(rate)[0]
        out["ci"] = (f"{num(r.get('ci_low')) * 100:.0f}–{num(r.get('ci_high')) * 100:.0f} %"
                     if math.isfinite(num(r.get("ci_low"))) else None)
        out["threshold"] = num(r.get("threshold"))
    return out


def build(data) -> dict:
    view = method_view(data.config, data.selfbench_path)
    view["downloads"] = [data_link(n, data.table(n)) for n in EMBEDDED_TABLES
                         if not data.table(n).empty]
    view["aa"] = aa_view(data.table("twins"), data.table("twins_rate"))
    # twins asked for but none ran: under a time budget they start in round 1 (plan.py)
    config = data.config or {}
    view["twins_asked"] = (int(config.get("twins") or 0)
                           if config.get("time_budget_min") is not None else 0)
    return view
