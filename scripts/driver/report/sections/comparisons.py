"""Comparisons: every comparison table (one factor changed), best vs best across frameworks, the
seed's tables in its layout, and every cell. A cells' row that a table derived from duets answers
(ANSWERED: graph vs eager from duets_graph_vs_eager) shows the duets' verdict, marked
descriptive, in place of the cells' own, and is counted apart (as the releases' rows that
duets_releases answers are: driver/report/releases.py)."""
import re

import pandas as pd

from driver.report import source_table as seedtable
from driver.report import split
from driver.report.answer import row_kind
from driver.report.fmt import cell, fmt_ms, fmt_num, fold_constants, is_true, num, records, text
from driver.report.releases import descriptive, duet_answer, duet_answers
from driver.report.sections.pairs import mark_paired
from driver.report.views import column
from driver.stats.verdicts import words
from tfspeed.cells import AXES

ID, TITLE, ORDER = "tables", "Comparisons", 40

# comparison table -> (the duets-derived table that answers its rows, the left side's name)
ANSWERED = {"graph_vs_eager": ("duets_graph_vs_eager", "graph")}


def build(data) -> dict:
    return {"groups": mark_paired(mark_answered(split.split_views(data.tabs), data.tabs),
                                  data.tabs),
            "best": split.best_vs_best(data.table("frameworks_best"), data.min_effect,
                                       data.table("duets_frameworks")),
            "best_duets": split.frameworks_duets(data.table("duets_frameworks"),
                                                 data.min_effect),
            "seed": seedtable.seed_blocks(data.cells, data.tabs, data.reference_env, data.order),
            "cells": cells_table(data.cells)}


def mark_answered(groups: list[dict], tabs: dict) -> list[dict]:
    """In each ANSWERED comparison's one-factor view, the rows the duets answer: the verdict cell
    says the duets' verdict, marked descriptive; the view's counts keep the other rows only, its
    `descriptive` counts these, and its digest and note say so. The view's rows are its table's
    one-factor rows in order (split.split_views)."""
    for entry in groups:
        source, subject = ANSWERED.get(entry["name"], (None, None))
        view = entry["main"]
        if source is None or not view.get("full"):
            continue
        answers = duet_answers(tabs.get(source, pd.DataFrame()), subject=subject)
        if not answers:
            continue
        ones = [r for r in records(tabs.get(entry["name"], pd.DataFrame()))
                if row_kind(r, entry["name"]) == "one"]
        counts, n = dict(view.get("counts") or {}), 0
        for r, row in zip(ones, view["full"]["rows"]):
            said = duet_answer(r, answers, later="env", earlier="env", later_keras="keras",
                               earlier_keras="keras")
            if said is None:
                continue
            row[0] = cell(descriptive(said), "", title="the cells' own verdict: "
                          + words(text(r.get("verdict"))).word)
            w = words(text(r.get("verdict"))).word
            counts[w] = counts.get(w, 0) - 1
            n += 1
        if not n:
            continue
        view["counts"] = {w: c for w, c in counts.items() if c > 0}
        view["descriptive"] = n
        view["digest"] = split.digest(dict(view, rows=view["rows"] - n)) + (
            f"; {n} more descriptive (the duets answer them)")
        view["note"] = ((view.get("note") or "") + f" {n} of these rows are answered by the "
                        f"duets ({source}, in the duets section): their verdict is the duets', "
                        "marked descriptive, and they are counted apart; the at-a-glance colours "
                        "are the cells' own.").strip()
    return groups


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
