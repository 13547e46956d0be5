"""Where the time goes: first call vs steps, achieved FLOP/s against the machine's measured peak
(template `_time.html.j2`: the module is not named `time`, which is the standard library's)."""
import math

import pandas as pd

from driver.report.figures import COMPUTE_BOUND, OVERHEAD_BOUND, achieved_flops, time_figures
from driver.report.fmt import cell, col, config_label, fmt_ms, fmt_num, ncol, num, records, text
from driver.study import layout

ID, TITLE, ORDER = "time", "Where the time goes", 60


def build(data) -> dict:
    peaks = measured_peaks(data.cells)
    tt = time_table(data.ok, peaks)
    return {"figures": time_figures(data.ok, data.order, peaks), **tt,
            "compute_bound": COMPUTE_BOUND, "overhead_bound": OVERHEAD_BOUND,
            # a twin key (<machine>.twin) is its machine's A/A copy: one peak per machine
            "peaks": [(m, "not measured" if math.isnan(p) else f"{p * 1e-9:,.1f} GFLOP/s")
                      for m, p in sorted(peaks.items()) if not layout.is_twin(m)]}


def measured_peaks(cells: pd.DataFrame) -> dict:
    """machine -> attainable FLOP/s: the `peak_flops` that aggregation put on every cell of a
    machine (its fastest matmul cell); NaN for a machine without a matmul cell."""
    if not len(cells):
        return {}
    peaks = ncol(cells, "peak_flops").groupby(col(cells, "machine").map(text)).max()
    return {machine: float(peak) for machine, peak in peaks.items()}


def time_table(ok: pd.DataFrame, peaks: dict) -> dict:
    """Per cell: first call, median, their ratio, achieved FLOP/s, efficiency, retraces; a
    machine column first where the cells are of several machines (an A/A twin key's cells are
    their machine's, marked so)."""
    df = ok.copy()
    machine = col(df, "machine").map(text)
    several = len({layout.base_machine(m) for m in machine} - {""}) > 1
    df["_ach"] = achieved_flops(df)
    eff = ncol(df, "efficiency")
    peak_of = col(df, "machine").map(lambda m: peaks.get(text(m), math.nan))
    df["_eff"] = eff.where(eff.notna(), df["_ach"] / pd.to_numeric(peak_of, errors="coerce"))
    columns = [{"label": c, "num": n} for c, n in (("machine", False),) * several + (
        ("env", False), ("model-data", False), ("configuration", False),
        ("first call ms", True), ("median ms", True), ("first / median", True),
        ("GFLOP/s", True), ("of peak", True), ("bound", False), ("retraces", True))]
    rows = []
    for r in records(df):
        first, med = num(r.get("first_call_s")), num(r.get("median_s"))
        e = num(r.get("_eff"))
        bound = ("–" if math.isnan(e) else "compute" if e >= COMPUTE_BOUND
                 else "overhead" if e < OVERHEAD_BOUND else "mixed")
        m = text(r.get("machine"))
        where = layout.base_machine(m) + (" (A/A twin)" if layout.is_twin(m) else "")
        rows.append([cell(where)] * several + [
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
        counts[row[8 + several]["text"]] = counts.get(row[8 + several]["text"], 0) + 1
    return {"table": {"id": "t-time", "columns": columns, "rows": rows}, "bounds": counts,
            "retraced": int((ncol(df, "retraces") > 0).sum())}
