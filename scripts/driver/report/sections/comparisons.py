"""Comparisons: every comparison table (one factor changed), best vs best across frameworks, the
seed's tables in its layout, and every cell."""
import re

import pandas as pd

from driver.report import source_table as seedtable
from driver.report import split
from driver.report.fmt import cell, fmt_ms, fmt_num, fold_constants, is_true, num, records, text
from driver.report.views import column
from tfspeed.cells import AXES

ID, TITLE, ORDER = "tables", "Comparisons", 40


def build(data) -> dict:
    return {"groups": split.split_views(data.tabs),
            "best": split.best_vs_best(data.table("frameworks_best"), data.min_effect),
            "seed": seedtable.seed_blocks(data.cells, data.tabs, data.reference_env, data.order),
            "cells": cells_table(data.cells)}


def spike_columns(cells: pd.DataFrame) -> list[str]:
    """Tail and spike columns (p95, p99, max over median, spike count) where aggregation wrote
    them; none in older tables."""
    return [c for c in cells.columns if re.search(r"(^|_)p9[59](_|$)|spike|max_over_median", c)]


def cells_table(cells: pd.DataFrame) -> dict:
    """Every cell, sortable and filterable."""
    cols = [c for c in ["machine", "env", "framework_version", *AXES] if c in cells.columns]
    spikes = spike_columns(cells)
    columns = ([column(c) for c in cols]
               + [column(c, num_=n) for c, n in (
                   ("status", False), ("n_samples", True), ("median_s", True))]
               + [{"label": "interval ms", "csv": "ci_low_s, ci_high_s", "num": True},
                  column("first_call_s", num_=True)]
               + [column(c, num_=True) for c in spikes]
               + [{"label": "flags", "csv": "noisy, drift, foreign_cpu_flag, too_few_samples",
                   "num": False}])
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
    # a column with one value in every row (one machine, one device) is said once, above
    return fold_constants({"id": "t-cells", "columns": columns, "rows": rows})
