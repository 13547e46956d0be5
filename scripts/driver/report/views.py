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
from driver.tables.labels import header, value_label
from driver.tables.ordering import AXIS_ORDER
from driver.tables.registry import BY_NAME, REGISTRY
from tfspeed.cells import AXES

# Columns that identify a cell or a side of a comparison (never numbers to format).
ID_COLS = ["machine", "env", "framework", "framework_version", "python", "keras_version", *AXES]

# The "at a glance" matrix of each comparison: these axes become its columns, the rest its rows.
GLANCE_COLUMNS = {t.name: list(t.glance) for t in REGISTRY}  # each table's `glance`
# TF 2 against TF 1 reads best as the performance history does: one row per configuration, its
# versions across (a dozen rows, not one per version and configuration)
GLANCE_COLUMNS["tf2_vs_tf1"] = ["left_env"]
# Columns of envs or versions are short ('TF 2.10'): this many still fit a screen's width
ENV_COLUMNS_MAX = 26

GLANCE_DEFAULT = ["env"]

# Each comparison's two sides in words, for its headers ("TF 2 env", "TF 1 release"); a table
# not named here calls them first and second (its `sign` says which is which).
SIDE_WORDS = {"tf2_vs_tf1": ("TF 2", "TF 1"), "adjacent_releases": ("later", "earlier"),
              "graph_vs_eager": ("graph", "eager"), "numpy_vs_tfdata": ("NumPy", "tf.data"),
              "fit_vs_train_on_batch": ("fit()", "train_on_batch()"),
              "fit_epoch_vs_train_on_batch": ("fit() epoch", "train_on_batch()"),
              "gpu_vs_cpu": ("GPU", "CPU"), "twins": ("twin", "original")}
SIDES_DEFAULT = ("first-named", "second")


def column(name: str, sides=SIDES_DEFAULT, num_: bool = False) -> dict:
    """A table column: its header in words, the CSV's name in its tooltip."""
    return {"label": header(name, sides), "csv": name, "num": num_}


def key_cell(name: str, value, release=None) -> dict:
    """An identifying cell in words ('TF 2.10', 'train_on_batch()', 'NumPy'); sorted and
    filtered by what it shows, the raw value (and an env's release) in its tooltip."""
    shown = value_label(name, text(value))
    tip = " ".join(x for x in (text(value) if shown != text(value) else "", text(release)) if x)
    return cell(shown, title=tip or None)


def same_sides(df: pd.DataFrame, left: list[str], right: list[str]) -> list[str]:
    """The identifiers whose left and right values are equal in every row (e.g. the Keras of
    both sides in most TF2 vs TF1 rows): shown once, under their shared name."""
    out = []
    for c in left:
        base = c[5:]
        if "right_" + base in right and base not in df.columns and \
                col(df, c).map(text).equals(col(df, "right_" + base).map(text)):
            out.append(base)
    return out


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


def _glance_cell(row, sides, compact: bool = True) -> dict:
    """One cell of the at-a-glance matrix: the source study's %, the ratio, its interval, the
    two medians and the verdict in the tooltip."""
    if row is None:
        return cell("", "na")
    out = pct_cell(row)
    out.pop("sub", None)
    out["title"] = glance_tip(row, sides)
    return out


def glance_tip(row, sides) -> str:
    """A glance cell's tooltip in words: '<left> / <right> ms: TF 2 <r>x slower, tested
    interval <lo>-<hi>; TF 2 slower'."""
    verdict = words(text(row.get("verdict")).lower().replace(" ", "_"))
    said = f"{sides[0]} {verdict.word}" if verdict.word in ("faster", "slower") else verdict.word
    return (f"{sides[0]} {fmt_ms(row.get('left_median_s'))} ms, {sides[1]} "
            f"{fmt_ms(row.get('right_median_s'))} ms: {sides[0]} "
            f"{ratio_text(row.get('ratio'), row.get('pct'))}; tested interval "
            f"{fmt_ratio(row.get('ratio_ci_low'))}-{fmt_ratio(row.get('ratio_ci_high'))}; {said}")


def _level(row) -> str:
    level = num(row.get("ci_level"))
    return "" if level != level else f"{level:.1%} interval (the level the verdict is tested at)"


def comparison_view(name: str, df: pd.DataFrame) -> dict:
    """One comparison table for the template: the seed-shaped glance matrix and the full rows,
    headers and identifiers in words (the CSV's names in the tooltips)."""
    entry = BY_NAME.get(name)
    title, sign = (entry.title, entry.sign) if entry else (name, "+ when the left side is faster")
    sides = SIDE_WORDS.get(name, SIDES_DEFAULT)
    view = {"name": name, "title": title, "sign": sign, "rows": 0, "glance": None,
            "full": None, "constants": [], "n_sig": 0, "counts": {}}
    if df.empty:
        return view
    shared, left, right = identifier_columns(df)
    merged = same_sides(df, left, right)
    if merged:  # a side-identifier equal on both sides is one column
        df = df.assign(**{b: df["left_" + b] for b in merged})
        left = [c for c in left if c[5:] not in merged]
        right = [c for c in right if c[6:] not in merged]
        shared = [c for c in ID_COLS if c in df.columns]
    idcols = shared + left + right
    constants = [c for c in idcols if col(df, c).map(text).nunique() <= 1]
    varying = [c for c in idcols if c not in constants]
    view["constants"] = _constants(df, constants, sides)
    view["rows"] = len(df)
    view["n_sig"] = int(col(df, "significant", False).map(is_true).sum())
    counts = {}
    for r in records(df):
        w = words(text(r.get("verdict")).lower().replace(" ", "_")).word
        counts[w] = counts.get(w, 0) + 1
    view["counts"] = {w: counts[w] for w in ("slower", "faster", "equivalent", "undecided")
                      if counts.get(w)}
    view["sides"] = sides

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
    by_env = all("env" in c or "version" in c for c in colkeys)
    if n_col > (ENV_COLUMNS_MAX if by_env else 8) and n_row < n_col:
        # pivoted: a wide, mostly empty matrix turns on its side
        colkeys, rowkeys = rowkeys, colkeys
    # an env's release says nothing its env does not: in the env's tooltip
    releases = {k: k.replace("framework_version", "env") for k in varying
                if k.endswith("framework_version") and k.replace("framework_version", "env")
                in rowkeys}
    rowkeys = [k for k in rowkeys if k not in releases]
    if len(rowkeys) > 6:  # a matrix keyed by that many columns reads worse than the rows
        colkeys = []
    if colkeys and rowkeys:
        col_values = []
        for r in recs:
            k = tuple(text(r.get(c)) for c in colkeys)
            if k not in col_values:
                col_values.append(k)
        col_values.sort(key=lambda k: _axis_key(colkeys, k))
        matrix, release_of = {}, {}
        for r in recs:
            rk = tuple(text(r.get(c)) for c in rowkeys)
            ck = tuple(text(r.get(c)) for c in colkeys)
            matrix.setdefault(rk, {}).setdefault(ck, r)
            for rel, env in releases.items():
                release_of[(rk, env)] = text(r.get(rel))
        view["glance"] = {
            "row_headers": [column(c, sides) for c in rowkeys],
            "col_headers": [{"label": " · ".join(value_label(c, v) for c, v in zip(colkeys, k)),
                             "csv": " · ".join(f"{c} {v}" for c, v in zip(colkeys, k)),
                             "num": True, "cls": "env" if by_env else ""}
                            for k in col_values],
            "col_axes": " · ".join(header(c, sides) for c in colkeys),
            "rows": [{"key_values": [key_cell(c, v, release_of.get((rk, c)))
                                     for c, v in zip(rowkeys, rk)],
                      "cells": [_glance_cell(matrix[rk].get(ck), sides) for ck in col_values]}
                     for rk in sorted(matrix, key=lambda k: _axis_key(rowkeys, k))],
        }
    # The full rows: the verdict and the ratio first, the constant columns in the caption.
    shared_v = [c for c in shared if c in varying]
    columns = ([{"label": f"{sides[0]} is", "csv": "verdict", "num": False},
                {"label": f"{sides[0]} vs {sides[1]}", "csv": "ratio, pct", "num": True},
                {"label": "tested interval", "csv": "ratio_ci_low, ratio_ci_high", "num": True}]
               + [column(c, sides) for c in shared_v]
               + [{"label": sides[0], "csv": ", ".join(left) or None, "num": False},
                  {"label": sides[1], "csv": ", ".join(right) or None, "num": False},
                  {"label": f"{sides[0]} ms", "csv": "left_median_s", "num": True},
                  {"label": f"{sides[1]} ms", "csv": "right_median_s", "num": True},
                  {"label": "p (adjusted)", "csv": "p_adjusted", "num": True}])
    # the level the intervals are tested at: in the header when one level covers most rows, in
    # a row's tooltip only where it differs (a tooltip per row doubled the table's bytes)
    levels = [_level(r) for r in recs]
    common = max(sorted(set(levels)), key=levels.count) if levels else ""  # ties: the first
    if common:
        columns[2] = dict(columns[2], csv=f"ratio_ci_low, ratio_ci_high; {common} unless a "
                                         f"cell says otherwise")
    rows = []
    for r, level in zip(recs, levels):
        lname = " ".join(value_label(c, r.get(c)) for c in left if text(r.get(c))) or sides[0]
        rname = " ".join(value_label(c, r.get(c)) for c in right if text(r.get(c))) or sides[1]
        key = text(r.get("verdict")).lower().replace(" ", "_")
        # an older table's code that is no verdict now ("not significant") reads by its
        # significance; a legacy "undecided" code is not significant either
        verdict = words(key).word if key in WORDS else (
            "faster or slower" if is_true(r.get("significant")) else words(INCONCLUSIVE).word)
        rows.append([
            # the verdict column: only a verdict that decided nothing is muted
            cell(verdict, "ns" if words(key).cls == words(INCONCLUSIVE).cls else ""),
            cell(ratio_text(r.get("ratio"), r.get("pct")), "num", v=num(r.get("ratio"))),
            cell(f"{fmt_ratio(r.get('ratio_ci_low'))} – {fmt_ratio(r.get('ratio_ci_high'))}",
                 "num", v=num(r.get("ratio_ci_low")),
                 title=level if level and level != common else None),
        ] + [key_cell(c, r.get(c)) for c in shared_v] + [
            cell(lname), cell(rname),
            cell(fmt_ms(r.get("left_median_s")), "num", v=num(r.get("left_median_s"))),
            cell(fmt_ms(r.get("right_median_s")), "num", v=num(r.get("right_median_s"))),
            cell(fmt_p(r.get("p_adjusted")), "num", v=num(r.get("p_adjusted"))),
        ])
    view["full"] = {"id": f"t-{name}", "columns": columns, "rows": rows}
    return view


def _constants(df: pd.DataFrame, constants: list[str], sides) -> list[tuple[str, str, str]]:
    """The identifiers equal in every row as (header, value, CSV names) in words: an env and
    its release together ('TF 1 env', 'TF 1.14 (1.14.0)')."""
    values = {c: text(df[c].iloc[0]) for c in constants if text(df[c].iloc[0])}
    out = []
    for c, v in values.items():
        if c.endswith("framework_version") and c.replace("framework_version", "env") in values:
            continue
        shown, csv = value_label(c, v), c
        rel = c.replace("env", "framework_version") if c.endswith("env") else None
        if rel and rel in values:
            shown, csv = f"{shown} ({values[rel]})", f"{c}, {rel}"
        out.append((header(c, sides), shown, csv))
    return out
