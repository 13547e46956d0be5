"""The report's tables as the template renders them: comparisons, the history table, where the
time goes, stability, every cell. Each view takes what aggregation wrote (typed frames, the
processes' samples) and returns plain data."""
import math
import re

import numpy as np
import pandas as pd

from driver.report.figures import (
    COMPUTE_BOUND,
    MAX_PLOT_POINTS,
    OVERHEAD_BOUND,
    achieved_flops,
    stability_grid,
)
from driver.report.fmt import (
    cell,
    col,
    config_label,
    fmt_ms,
    fmt_num,
    fmt_p,
    fmt_ratio,
    is_true,
    ncol,
    num,
    pct_cell,
    ratio_text,
    records,
    text,
    version_key,
)
from driver.stats.verdicts import INCONCLUSIVE, WORDS, words
from driver.tables.ordering import AXIS_ORDER
from driver.tables.registry import BY_NAME, REGISTRY
from tfspeed.cells import AXES

# Columns that identify a cell or a side of a comparison (never numbers to format).
ID_COLS = ["machine", "env", "framework", "framework_version", "python", "keras_version", *AXES]

# The "at a glance" matrix of each comparison: these axes become its columns, the rest its rows.
GLANCE_COLUMNS = {t.name: list(t.glance) for t in REGISTRY}  # each table's `glance`

GLANCE_DEFAULT = ["env"]



def identifier_columns(df: pd.DataFrame) -> tuple[list[str], list[str], list[str]]:
    """(shared axes, left_* identifiers, right_* identifiers) of a comparison table."""
    shared = [c for c in ID_COLS if c in df.columns]
    # left_/right_cell_id are for tracing a row back to its files, not for reading
    left = [c for c in df.columns if c.startswith("left_") and c[5:] in ID_COLS]
    right = [c for c in df.columns if c.startswith("right_") and c[6:] in ID_COLS]
    return shared, left, right


def side_label(row, cols) -> str:
    return " ".join(text(row.get(c)) for c in cols if text(row.get(c)) and
                    not c.endswith("cell_id"))


def _axis_key(columns, values) -> tuple:
    """The study's order for a row or column key: envs and versions by number, axes in the
    order tfspeed.cells lists them, anything else as text."""
    out = []
    for c, v in zip(columns, values):
        base = c.removeprefix("left_").removeprefix("right_")
        if "env" in base or "version" in base:
            out.append((0, version_key(v), v))
        elif base in AXIS_ORDER:
            out.append((1, (AXIS_ORDER[base].get(v, 99),), v))
        else:
            out.append((2, (), v))
    return tuple(out)


def _glance_cell(row, compact: bool) -> dict:
    if row is None:
        return cell("", "na")
    out = pct_cell(row)
    if compact:
        out.pop("sub", None)
    return out


def comparison_view(name: str, df: pd.DataFrame) -> dict:
    """One comparison table for the template: the seed-shaped glance matrix and the full rows."""
    entry = BY_NAME.get(name)
    title, sign = (entry.title, entry.sign) if entry else (name, "+ when the left side is faster")
    view = {"name": name, "title": title, "sign": sign, "rows": 0, "glance": None,
            "full": None, "constants": [], "n_sig": 0}
    if df.empty:
        return view
    shared, left, right = identifier_columns(df)
    idcols = shared + left + right
    constants = [c for c in idcols if col(df, c).map(text).nunique() <= 1]
    view["constants"] = [(c, text(df[c].iloc[0])) for c in constants if text(df[c].iloc[0])]
    varying = [c for c in idcols if c not in constants]
    view["rows"] = len(df)
    view["n_sig"] = int(col(df, "significant", False).map(is_true).sum())

    # The glance matrix: the seed's tables put the % of each configuration side by side.
    colkeys = [c for c in GLANCE_COLUMNS.get(name, GLANCE_DEFAULT) if c in varying]
    rowkeys = [c for c in varying if c not in colkeys]
    if colkeys:  # a column that follows the column keys (an env's version) would split rows
        keyed = df[colkeys].map(text)
        rowkeys = [c for c in rowkeys if keyed.assign(_v=col(df, c).map(text))
                   .groupby(colkeys)["_v"].nunique().max() > 1]
    recs = records(df)
    n_col = len({tuple(text(r.get(c)) for c in colkeys) for r in recs}) if colkeys else 0
    n_row = len({tuple(text(r.get(c)) for c in rowkeys) for r in recs}) if rowkeys else 0
    if n_col > 8 and n_row < n_col:  # pivoted: a wide, mostly empty matrix turns on its side
        colkeys, rowkeys = rowkeys, colkeys
    if len(rowkeys) > 6:  # a matrix keyed by that many columns reads worse than the rows
        colkeys = []
    if colkeys and rowkeys:
        col_values = []
        for r in recs:
            k = tuple(text(r.get(c)) for c in colkeys)
            if k not in col_values:
                col_values.append(k)
        col_values.sort(key=lambda k: _axis_key(colkeys, k))
        matrix = {}
        for r in recs:
            rk = tuple(text(r.get(c)) for c in rowkeys)
            ck = tuple(text(r.get(c)) for c in colkeys)
            matrix.setdefault(rk, {}).setdefault(ck, r)
        compact = len(col_values) > 8  # many columns: the medians stay in the tooltip
        view["glance"] = {
            "row_headers": rowkeys,
            "col_headers": [" · ".join(k) for k in col_values],
            "col_axes": " · ".join(colkeys),
            "rows": [{"key_values": list(rk),
                      "cells": [_glance_cell(matrix[rk].get(ck), compact)
                                for ck in col_values]}
                     for rk in sorted(matrix, key=lambda k: _axis_key(rowkeys, k))],
        }
    # The full rows: the verdict and the ratio first, the constant columns in the caption.
    shared_v = [c for c in shared if c in varying]
    columns = ([{"label": "left is", "num": False},
                {"label": "left vs right", "num": True}, {"label": "95 % CI", "num": True}]
               + [{"label": c, "num": False} for c in shared_v]
               + [{"label": "left", "num": False}, {"label": "right", "num": False},
                  {"label": "left ms", "num": True}, {"label": "right ms", "num": True},
                  {"label": "p (BH)", "num": True}])
    rows = []
    for r in recs:
        lname, rname = side_label(r, left) or "left", side_label(r, right) or "right"
        key = text(r.get("verdict")).lower().replace(" ", "_")
        verdict = words(key).word if key in WORDS else (
            "faster or slower" if is_true(r.get("significant")) else words(INCONCLUSIVE).word)
        rows.append([
            # the verdict column: only a verdict that decided nothing is muted
            cell(verdict, "ns" if words(key).cls == words(INCONCLUSIVE).cls else ""),
            cell(ratio_text(r.get("ratio"), r.get("pct")), "num", v=num(r.get("ratio"))),
            cell(f"{fmt_ratio(r.get('ratio_ci_low'))} – {fmt_ratio(r.get('ratio_ci_high'))}",
                 "num", v=num(r.get("ratio_ci_low"))),
        ] + [cell(text(r.get(c))) for c in shared_v] + [
            cell(lname), cell(rname),
            cell(fmt_ms(r.get("left_median_s")), "num", v=num(r.get("left_median_s"))),
            cell(fmt_ms(r.get("right_median_s")), "num", v=num(r.get("right_median_s"))),
            cell(fmt_p(r.get("p_adjusted")), "num", v=num(r.get("p_adjusted"))),
        ])
    view["full"] = {"id": f"t-{name}", "columns": columns, "rows": rows}
    return view


def versions_view(versions: pd.DataFrame, order: list[str]) -> dict | None:
    """The performance history as a table: median ms per configuration and env, the fastest
    env of each row in bold."""
    if versions.empty:
        return None
    envs = [c for c in versions.columns if c in order]
    if not envs:  # an unknown layout: every column that holds numbers is an env
        envs = [c for c in versions.columns
                if pd.to_numeric(versions[c], errors="coerce").notna().any()]
    labels = [c for c in versions.columns if c not in envs and c != "fastest_env"]
    tail = ["fastest_env"] if "fastest_env" in versions.columns else []
    columns = ([{"label": c, "num": False} for c in labels]
               + [{"label": e, "num": True} for e in envs]
               + [{"label": "fastest", "num": False} for _ in tail])
    rows = []
    for r in records(versions):
        values = [num(r.get(e)) for e in envs]
        finite = [v for v in values if not math.isnan(v)]
        best = min(finite) if finite else None
        rows.append([cell(text(r.get(c))) for c in labels]
                    + [cell(fmt_ms(v), "num best" if best is not None and v == best else "num",
                            v=v) for v in values]
                    + [cell(text(r.get(c))) for c in tail])
    return {"id": "t-versions", "columns": columns, "rows": rows}


def measured_peaks(cells: pd.DataFrame) -> dict:
    """machine -> attainable FLOP/s: the `peak_flops` that aggregation put on every cell of a
    machine (its fastest matmul cell); NaN for a machine without a matmul cell."""
    if not len(cells):
        return {}
    peaks = ncol(cells, "peak_flops").groupby(col(cells, "machine").map(text)).max()
    return {machine: float(peak) for machine, peak in peaks.items()}


def time_table(ok: pd.DataFrame, peaks: dict) -> dict:
    """Per cell: first call, median, their ratio, achieved FLOP/s, efficiency, retraces."""
    df = ok.copy()
    df["_ach"] = achieved_flops(df)
    eff = ncol(df, "efficiency")
    peak_of = col(df, "machine").map(lambda m: peaks.get(text(m), math.nan))
    df["_eff"] = eff.where(eff.notna(), df["_ach"] / pd.to_numeric(peak_of, errors="coerce"))
    columns = [{"label": c, "num": n} for c, n in (
        ("env", False), ("model-data", False), ("configuration", False),
        ("first call ms", True), ("median ms", True), ("first / median", True),
        ("GFLOP/s", True), ("of peak", True), ("bound", False), ("retraces", True))]
    rows = []
    for r in records(df):
        first, med = num(r.get("first_call_s")), num(r.get("median_s"))
        e = num(r.get("_eff"))
        bound = ("–" if math.isnan(e) else "compute" if e >= COMPUTE_BOUND
                 else "overhead" if e < OVERHEAD_BOUND else "mixed")
        rows.append([
            cell(text(r.get("env"))),
            cell(f"{text(r.get('model'))}-{text(r.get('data'))}"),
            cell(config_label(r)),
            cell(fmt_ms(first), "num", v=first),
            cell(fmt_ms(med), "num", v=med),
            cell(fmt_num(first / med if med > 0 else math.nan, ",.0f"), "num",
                 v=first / med if med > 0 else None),
            cell(fmt_num(num(r.get("_ach")) * 1e-9, ",.2f"), "num", v=num(r.get("_ach"))),
            cell("–" if math.isnan(e) else f"{e:.1%}", "num", v=e),
            cell(bound, {"overhead": "neg", "compute": "pos"}.get(bound, "")),
            cell(text(r.get("retraces"), "–"), "num", v=num(r.get("retraces"))),
        ])
    counts = {}
    for row in rows:
        counts[row[8]["text"]] = counts.get(row[8]["text"], 0) + 1
    return {"table": {"id": "t-time", "columns": columns, "rows": rows}, "bounds": counts,
            "retraced": int((ncol(df, "retraces") > 0).sum())}


def stability_view(ok: pd.DataFrame, samples: dict, order: list[str]) -> dict:
    """Small multiples per machine and env, and the table of flagged cells."""
    flags = {}
    for r in records(ok):
        flags[(text(r.get("machine")), text(r.get("env")), text(r.get("cell_id")))] = r
    groups = {}
    for key, s in samples.items():
        groups.setdefault((key[0], key[1]), []).append((key, s))
    env_rank = {e: i for i, e in enumerate(order)}
    figures = []
    flagged = []
    for (machine, env), items in sorted(groups.items(),
                                        key=lambda kv: (kv[0][0], env_rank.get(kv[0][1], 1e9),
                                                        kv[0][1])):
        panels = []
        for key, s in sorted(items, key=lambda kv: kv[0][2]):
            row = flags.get(key, {})
            summ = s["summary"]
            drift = is_true(row.get("drift")) if "drift" in row else is_true(summ.get("drift"))
            noisy = is_true(row.get("noisy")) if "noisy" in row else is_true(summ.get("noisy"))
            ratio = num(row.get("drift_ratio")) if "drift_ratio" in row else num(
                summ.get("drift_ratio"))
            axes = {a: text(row.get(a), text(s["axes"].get(a))) for a in AXES}
            title = (f"{axes['model']}-{axes['data']} · {axes['keras']}\n{axes['mode']} · "
                     f"{axes['api']} · {axes['input']} · "
                     f"{axes['device']}")
            panels.append({"title": title, "samples": s["samples"], "bounds": s["bounds"],
                           "drift": drift, "noisy": noisy, "drift_ratio": ratio})
            med = float(np.median(s["samples"]))
            q75, q25 = np.percentile(s["samples"], [75, 25])
            if drift or noisy:
                flagged.append([
                    cell(env), cell(config_label(axes, AXES)),
                    cell(str(s["samples"].size), "num", v=s["samples"].size),
                    cell(fmt_ms(med), "num", v=med),
                    cell("drift" if drift else "", "neg" if drift else ""),
                    cell(fmt_num(ratio, ".2f"), "num", v=ratio),
                    cell("noisy" if noisy else "", "warn" if noisy else ""),
                    cell(f"{(q75 - q25) / med:.1%}" if med > 0 else "–", "num",
                         v=(q75 - q25) / med if med > 0 else None),
                    cell(fmt_num(num(row.get("between_sd")), ".1%"), "num",
                         v=num(row.get("between_sd"))),
                ])
        n_big = sum(1 for p in panels if np.asarray(p["samples"]).size > MAX_PLOT_POINTS)
        figures.append({"machine": machine, "env": env, "n": len(panels),
                        "n_drift": sum(p["drift"] for p in panels),
                        "n_noisy": sum(p["noisy"] for p in panels), "downsampled": n_big,
                        "svg": stability_grid(panels)})
    columns = [{"label": c, "num": n} for c, n in (
        ("env", False), ("cell", False), ("samples", True), ("median ms", True),
        ("drift", False), ("last / first quarter", True), ("noisy", False),
        ("IQR / median", True), ("between processes", True))]
    return {"figures": figures, "several_machines": len({f["machine"] for f in figures}) > 1,
            "flagged": {"id": "t-flagged", "columns": columns, "rows": flagged}}


def spike_columns(cells: pd.DataFrame) -> list[str]:
    """Tail and spike columns (p95, p99, max over median, spike count) where aggregation wrote
    them; none in older tables."""
    return [c for c in cells.columns if re.search(r"(^|_)p9[59](_|$)|spike|max_over_median", c)]


def cells_table(cells: pd.DataFrame) -> dict:
    """Every cell, sortable and filterable."""
    cols = [c for c in ["machine", "env", "framework_version", *AXES] if c in cells.columns]
    spikes = spike_columns(cells)
    columns = ([{"label": c, "num": False} for c in cols]
               + [{"label": c, "num": n} for c, n in (
                   ("status", False), ("n", True), ("median ms", True), ("CI ms", True),
                   ("first call ms", True))]
               + [{"label": c.removesuffix("_s") + (" ms" if c.endswith("_s") else ""),
                   "num": True} for c in spikes]
               + [{"label": "flags", "num": False}])
    rows = []
    for r in records(cells):
        status = text(r.get("status"), "?")
        flags = [f for f in ("noisy", "drift") if is_true(r.get(f))]
        if is_true(r.get("foreign_cpu_flag")):
            flags.append(f"busy machine ({num(r.get('foreign_cpu_share')):.2f} cores foreign)")
        if is_true(r.get("too_few_samples")):
            flags.append("too few samples")
        rows.append([cell(text(r.get(c))) for c in cols] + [
            cell(status, "" if status == "ok" else "neg"),
            cell(text(r.get("n_samples")), "num", v=num(r.get("n_samples"))),
            cell(fmt_ms(r.get("median_s")), "num", v=num(r.get("median_s"))),
            cell(f"{fmt_ms(r.get('ci_low_s'))} – {fmt_ms(r.get('ci_high_s'))}", "num",
                 v=num(r.get("ci_low_s"))),
            cell(fmt_ms(r.get("first_call_s")), "num", v=num(r.get("first_call_s"))),
            *[cell(fmt_ms(r.get(c)) if c.endswith("_s") else fmt_num(r.get(c), ".3g"), "num",
                   v=num(r.get(c))) for c in spikes],
            cell(" ".join(flags), "warn" if flags else ""),
        ])
    return {"id": "t-cells", "columns": columns, "rows": rows}
