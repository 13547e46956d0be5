"""The comparison tables as the template renders them (each table's full view and its matrix "at a
glance"), for the comparisons section's groups (driver/report/split.py). The other tables'
views live with their sections (driver/report/sections/). Each view takes what aggregation wrote
and returns plain data."""

import pandas as pd

from driver.report.fmt import (
    cell,
    col,
    fmt_ms,
    fmt_p,
    fmt_ratio,
    is_true,
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
