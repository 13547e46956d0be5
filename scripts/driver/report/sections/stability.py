"""Stability: every cell's trend (last-quarter / first-quarter median) in one overview, the stem
plots of the most drifting or scattered flagged cells (at most MAX_STEMS; every flagged cell in
the flagged table), and every cell's numbers per env in tables; the stem plots of steady cells
are left out (they took most of the page's bytes)."""
import math
import os

import numpy as np
import pandas as pd

from driver.report.figures import (
    MAX_PLOT_POINTS,
    drift_key,
    drift_overview,
    drift_words,
    stem_panel,
)
from driver.report.fmt import cell, config_label, fmt_ms, fmt_num, is_true, num, records, text
from driver.stats import drift as drift_test
from driver.study import layout
from tfspeed.cells import AXES

ID, TITLE, ORDER = "stability", "Stability", 70
# At most this many stem plots on the page (a noisy machine flags a hundred cells or more, and
# each plot weighs about 6 KB): the most drifting cells first, then the most scattered; every
# flagged cell stays in the flagged table.
MAX_STEMS = 8


def severity(drift: bool, ratio: float, between_sd: float) -> tuple:
    """The order stem plots are chosen in: drifting cells by |log trend|, then by scatter."""
    trend = abs(math.log(ratio)) if drift and math.isfinite(ratio) and ratio > 0 else 0.0
    return (drift, trend, between_sd if math.isfinite(between_sd) else 0.0)


def build(data) -> dict:
    return {**stability_view(data.ok, data.samples, data.order),
            "max_points": MAX_PLOT_POINTS, "key": drift_key(), "min_change": drift_test.MIN_CHANGE,
            "noisy_threshold": num((data.config or {}).get("noisy_threshold", 0.10))}


def quarter_ratio(samples) -> float:
    """Median of the last quarter of the samples over that of the first (NaN under 8)."""
    s = np.asarray(samples, dtype=float)
    if s.size < 8:
        return math.nan
    q = s.size // 4
    first = float(np.median(s[:q]))
    return float(np.median(s[-q:])) / first if first > 0 else math.nan


def _range(values, fmt) -> str:
    v = [x for x in values if math.isfinite(x)]
    if not v:
        return "–"
    lo, hi = min(v), max(v)
    return format(lo, fmt) if lo == hi else f"{format(lo, fmt)}–{format(hi, fmt)}"


def stability_view(ok: pd.DataFrame, samples: dict, order: list[str]) -> dict:
    """The overview figure, the flagged cells' stem plots and table, and per env the range of
    every cell's trend and spread."""
    flags = {}
    for r in records(ok):
        flags[(text(r.get("machine")), text(r.get("env")), text(r.get("cell_id")))] = r
    env_rank = {e: i for i, e in enumerate(order)}
    machines = sorted({key[0] for key in samples})
    several = len(machines) > 1
    # machines told apart by what differs in their names ("intel-xeon-2c-4db20bbf.twin": ".twin")
    common = len(os.path.commonprefix(machines)) if several else 0
    tag = {m: (m[common:] or "") for m in machines}
    cells, stems, flagged, per_env = [], [], [], {}
    for key, s in sorted(samples.items(), key=lambda kv: (kv[0][0], env_rank.get(kv[0][1], 1e9),
                                                          kv[0][1], kv[0][2])):
        machine, env = key[0], key[1]
        row = flags.get(key, {})
        summ = s["summary"]
        drift = is_true(row.get("drift")) if "drift" in row else is_true(summ.get("drift"))
        noisy = is_true(row.get("noisy")) if "noisy" in row else is_true(summ.get("noisy"))
        ratio = num(row.get("drift_ratio")) if "drift_ratio" in row else num(
            summ.get("drift_ratio"))
        if math.isnan(ratio):
            ratio = quarter_ratio(s["samples"])
        axes = {a: text(row.get(a), text(s["axes"].get(a))) for a in AXES}
        # an A/A twin key (<machine>.twin) is its machine's copy of the cells, not a machine
        where = (f"{env} on {layout.base_machine(machine)}"
                 + (" (A/A twin)" if layout.is_twin(machine) else "") if several else env)
        short = f"{env} {tag[machine]}".strip() if several else env
        med = float(np.median(s["samples"]))
        q75, q25 = np.percentile(s["samples"], [75, 25])
        spread = (q75 - q25) / med if med > 0 else math.nan
        label = (f"{where} · {axes['model']}-{axes['data']} · {axes['keras']}\n{axes['mode']} · "
                 f"{axes['api']} · {axes['input']} · {axes['device']}")
        cells.append({"env": short, "ratio": ratio, "drift": drift, "noisy": noisy})
        e = per_env.setdefault(where, {"n": 0, "drift": 0, "noisy": 0, "ratios": [],
                                       "spreads": [], "big": 0})
        e["n"] += 1
        e["drift"] += drift
        e["noisy"] += noisy
        e["ratios"].append(ratio)
        e["spreads"].append(spread)
        e["big"] += np.asarray(s["samples"]).size > MAX_PLOT_POINTS
        if drift or noisy:
            said = [drift_words(ratio)[0] if drift else "", "noisy" if noisy else "",
                    f"{s['samples'].size} steps, median {fmt_ms(med)} ms"]
            stems.append({"title": label.replace("\n", ", "),
                          "caption": "; ".join(w for w in said if w),
                          "rank": severity(drift, ratio, num(row.get("between_sd"))),
                          "plot": {"title": label, "samples": s["samples"],
                                   "bounds": s["bounds"], "drift": drift, "noisy": noisy,
                                   "drift_ratio": ratio}})
            flagged.append([
                cell(where), cell(config_label(axes, AXES)),
                cell(str(s["samples"].size), "num", v=s["samples"].size),
                cell(fmt_ms(med), "num", v=med),
                cell("drift" if drift else "", "neg" if drift else ""),
                cell(fmt_num(ratio, ".2f"), "num", v=ratio),
                cell("noisy" if noisy else "", "warn" if noisy else ""),
                cell(f"{spread:.1%}" if math.isfinite(spread) else "–", "num",
                     v=spread if math.isfinite(spread) else None),
                cell(fmt_num(num(row.get("between_sd")), ".1%"), "num",
                     v=num(row.get("between_sd"))),
            ])
    columns = [{"label": c, "num": n} for c, n in (
        ("env", False), ("cell", False), ("samples", True), ("median ms", True),
        ("drift", False), ("last / first quarter", True), ("noisy", False),
        ("spread of steps (IQR / median)", True), ("scatter between processes", True))]
    env_columns = [{"label": c, "num": n} for c, n in (
        ("env", False), ("cells", True), ("drifting", True), ("noisy", True),
        ("last / first quarter, every cell", True), ("spread of steps (IQR / median), every cell", True))]
    env_rows = [[cell(env), cell(str(e["n"]), "num", v=e["n"]),
                 cell(str(e["drift"]), "num", v=e["drift"]),
                 cell(str(e["noisy"]), "num", v=e["noisy"]),
                 cell(_range(e["ratios"], ".2f"), "num"),
                 cell(_range(e["spreads"], ".1%"), "num")]
                for env, e in per_env.items()]
    n_slow = sum(1 for c in cells if c["drift"] and c["ratio"] >= 1)
    chosen = set(sorted(range(len(stems)), key=lambda i: stems[i]["rank"],
                        reverse=True)[:MAX_STEMS])
    shown = [{"title": f["title"], "caption": f["caption"], "svg": stem_panel(f["plot"])}
             for i, f in enumerate(stems) if i in chosen]
    x_order = list(dict.fromkeys(c["env"] for c in cells))
    return {"overview": drift_overview(cells, x_order) if cells else "",
            "n_cells": len(cells), "n_envs": len({key[1] for key in samples}),
            "n_machines": len({layout.base_machine(m) for m in machines}),
            "n_drift": sum(c["drift"] for c in cells), "n_slower": n_slow,
            "n_faster": sum(1 for c in cells if c["drift"] and c["ratio"] < 1),
            "n_noisy": sum(c["noisy"] for c in cells),
            "n_downsampled": sum(e["big"] for e in per_env.values()),
            "stems": shown, "n_flagged": len(stems), "several_machines": several,
            "flagged": {"id": "t-flagged", "columns": columns, "rows": flagged},
            "envs": {"id": "t-stability-envs", "columns": env_columns, "rows": env_rows}}
