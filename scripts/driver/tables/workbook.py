"""The workbook for people (results/study.xlsx): every table as a sheet in milliseconds, with
frozen headers, number formats, colours by significance, print set-up, and an `about` sheet that
explains each sheet (from the registry), the formula, the machine and the config."""
import datetime
import json
import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
import yaml
from xlsxwriter.utility import xl_col_to_name

from driver.stats import verdicts as verdicts_
from driver.stats.verdicts import WORDS
from driver.tables import columns
from driver.tables.ordering import env_order
from driver.tables.pooling import first
from driver.tables.registry import BY_NAME, EXTRA_SHEETS, NAMES, REGISTRY
from driver.tables.source_layout import BLOCK, SEED_INDEX, VERDICT_PREFIX
from driver.tables.summaries import VERSION_INDEX

ABOUT_WIDTH = 110
# Frozen key columns of the sheets that are not registered tables (those say theirs in the registry).
EXTRA_KEY_COLUMNS = {"seed_view": len(SEED_INDEX), "cells": 2}


def sheet_order() -> list[str]:
    """The workbook's sheets: the about sheet, the seed view, every registered table, the cells."""
    return ["about", "seed_view", *NAMES, "cells"]


def about_sheets() -> dict[str, str]:
    return {"seed_view": EXTRA_SHEETS["seed_view"], **{t.name: t.description for t in REGISTRY},
            "cells": EXTRA_SHEETS["cells"]}


class _ConfigDumper(yaml.SafeDumper):
    """Block style, but lists of plain values on one line, as config.yaml writes them."""


_ConfigDumper.add_representer(list, lambda dumper, data: dumper.represent_sequence(
    "tag:yaml.org,2002:seq", data,
    flow_style=all(not isinstance(x, (list, dict)) for x in data)))



def about_frame(cells: pd.DataFrame, reference_env: str, level: float, noisy_threshold: float,
                config: Mapping | None, now: datetime.datetime) -> pd.DataFrame:
    counts = cells["status"].value_counts().to_dict() if not cells.empty else {}
    machines = sorted(set(cells["machine"])) if not cells.empty else []
    cpu = {m: first(cells.loc[cells["machine"] == m, "cpu_model"].dropna()) for m in machines}
    gpu = {m: first(cells.loc[cells["machine"] == m, "gpu"].dropna()) for m in machines}
    rows = [
        ("title", "tfspeed: Why is TensorFlow 2 much slower than TensorFlow 1? (reran as cells)"),
        ("generated", now.strftime("%Y-%m-%d %H:%M UTC")),
        ("machines", "; ".join(f"{m} (CPU: {cpu[m] or '?'}; GPU: {gpu[m] or 'none'})"
                               for m in machines) or "none"),
        ("envs", ", ".join(env_order(cells)) if not cells.empty else "none"),
        ("cells", ", ".join(f"{counts.get(s, 0)} {s}" for s in ("ok", "failed", "skipped"))),
        ("reference env", reference_env),
        ("units", "Times are seconds per training step in the CSV files (results/tables/*.csv) "
                  "and milliseconds in this workbook (columns named *_ms), except seed_view, "
                  "which keeps the seed's seconds per iteration."),
        ("% formula", "The source study's: (1 - longer/shorter) * 100 in magnitude, i.e. "
                      "(longer/shorter - 1) * 100, of the two medians."),
        ("% sign", "+ when the first-named (left) side is faster: TF2 vs TF1: + if TF2 is "
                   "faster; GvE (Graph vs Eager): + if Graph is faster; likewise keras vs "
                   "tf.keras, numpy vs tf.data, fit vs train_on_batch, GPU vs CPU. Example: left "
                   "1 s, right 2 s -> +100.0 %; left 3 s, right 2 s -> -50.0 %."),
        ("median", "A cell's step time: the geometric mean of its processes' medians (each "
                   "process a fresh Python; repeats in config), with a "
                   f"{level:.0%} Student-t CI from the processes (none with one process)."),
        ("ratio", "left / right cell estimate (< 1: left faster), with its CI at ci_level from "
                  "the study's model of the processes' log medians (moderated variances, paired "
                  "where the two cells share rounds; docs/METHOD.md); p: its test of ratio 1; "
                  "p_adjusted: Benjamini-Hochberg over every comparison of the study; ci_level: "
                  "1 - R q / (m k) (R of the m comparisons called different; k: candidates, "
                  "1 unless the row was picked), so that the CI excludes 1 exactly when "
                  "p_adjusted <= q."),
        ("verdict", "left_faster / right_faster: the CI (at ci_level, the level BH tests at: "
                    "it excludes 1 exactly when p_adjusted <= q) excludes 1; equivalent, decided "
                    "first: the equivalence interval (tost_ci_low/high) within 1 +- min_effect; "
                    "undecided: neither (the run cannot tell; expected for a true difference "
                    "near the margin). significant = left_faster or right_faster. "
                    "Non-significant rows are grey; significant % cells are green (left faster) "
                    "or red (left slower)."),
        ("flags", f"noisy: the processes' log medians spread by more than {noisy_threshold} "
                  "(between_sd); drift: in some process, a Kendall trend of 16 block medians "
                  "with p < 0.01 and last/first-quarter ratio (drift_ratio) off by > 5 %: the "
                  "seed's 'rising stem plot'. within_ci_rel: a process's own CI half-width."),
    ]
    rows += [(f"sheet {name}", text.format(ref=reference_env))
             for name, text in about_sheets().items()]
    text = yaml.dump(json.loads(json.dumps(config or {}, default=str)), Dumper=_ConfigDumper,
                     sort_keys=False, width=100)
    rows.append(("config (YAML)", ""))
    rows += [("", line) for line in text.splitlines()]
    return pd.DataFrame(rows, columns=["topic", "text"])


def _to_ms(df: pd.DataFrame) -> pd.DataFrame:
    """Seconds columns (*_s) as milliseconds (*_ms) for the workbook."""
    out = df.copy()
    rename = {}
    for col in out.columns:
        if isinstance(col, str) and col.endswith("_s"):
            out[col] = pd.to_numeric(out[col], errors="coerce") * 1000.0
            rename[col] = col[:-2] + "_ms"
    return out.rename(columns=rename)


def _number_format(col: str) -> str | None:
    """Excel number format of a sheet's column: milliseconds and the seed view's columns by their
    headers, every other column as driver/tables/columns.py declares it. `_)` leaves a little
    space after right-aligned numbers so that they do not run into the text of the next column."""
    if col.endswith("_ms") or col.endswith(" ms"):
        return "0.00_)"
    if col.endswith("s/iter"):
        return "0.0000_)"
    if "%" in col:
        return columns.PCT
    entry = columns.COLUMNS.get(col)
    return entry.excel if entry else None


def _width(df: pd.DataFrame, col, fmt: str | None) -> float:
    header = len(str(col))
    values = df[col].dropna()
    if values.empty:
        body = 0
    elif fmt and pd.api.types.is_numeric_dtype(values):
        body = 11
    else:
        body = int(values.astype(str).str.len().max())
    return float(min(max(min(header, 24), body, 6) + 2, 60))


def write_workbook(path: Path | str, sheets: Mapping[str, pd.DataFrame]) -> None:
    """The workbook, via pandas' ExcelWriter on XlsxWriter; formatting through the worksheets it
    returns: frozen header row, widths, number formats, autofilter, conditional colours."""
    with pd.ExcelWriter(path, engine="xlsxwriter") as writer:
        book = writer.book
        header = book.add_format({"bold": True, "text_wrap": True, "valign": "bottom",
                                  "bg_color": "#DDE5EE", "bottom": 1})
        green = book.add_format({"bg_color": "#C6EFCE", "font_color": "#006100"})
        red = book.add_format({"bg_color": "#FFC7CE", "font_color": "#9C0006"})
        grey = book.add_format({"font_color": "#9A9A9A"})
        wrap = book.add_format({"text_wrap": True, "valign": "top"})
        mono = book.add_format({"font_name": "Courier New", "font_size": 9})
        bold = book.add_format({"bold": True, "valign": "top"})
        formats: dict[str, object] = {}
        for name in sheet_order():
            if name not in sheets:
                continue
            df = sheets[name]
            if name == "about":
                df.to_excel(writer, sheet_name=name, index=False)
                ws = writer.sheets[name]
                ws.set_column(0, 0, 26, bold)
                ws.set_column(1, 1, ABOUT_WIDTH, wrap)
                in_yaml = False
                for i, (topic, text) in enumerate(df.itertuples(index=False), start=1):
                    in_yaml = in_yaml or topic == "config (YAML)"
                    if in_yaml:
                        ws.write_string(i, 1, text, mono)
                    else:  # row heights by hand: spreadsheet apps do not size wrapped rows
                        ws.write_string(i, 1, text, wrap)
                        ws.set_row(i, 15 * max(1, math.ceil(len(text) / (ABOUT_WIDTH * 1.05))))
                for j, col in enumerate(df.columns):
                    ws.write(0, j, col, header)
                ws.freeze_panes(1, 0)
                _page_setup(ws, pages_wide=1)
                continue
            verdict_cols = [c for c in df.columns if str(c).startswith(VERDICT_PREFIX)]
            verdicts = df[verdict_cols]
            df = df.drop(columns=verdict_cols)
            df.to_excel(writer, sheet_name=name, index=False)
            ws = writer.sheets[name]
            ncol, nrow = len(df.columns), len(df)
            for j, col in enumerate(df.columns):
                fmt_text = _number_format(str(col))
                fmt = None
                if fmt_text:
                    fmt = formats.setdefault(fmt_text, book.add_format({"num_format": fmt_text}))
                elif col in ("significant", "noisy", "drift", "list", "status"):
                    fmt = formats.setdefault("center", book.add_format({"align": "center"}))
                ws.set_column(j, j, _width(df, col, fmt_text), fmt)
                ws.write(0, j, col, header)
            ws.set_row(0, 30)
            key_cols = BY_NAME[name].key_columns if name in BY_NAME else \
                EXTRA_KEY_COLUMNS.get(name, 0)
            ws.freeze_panes(1, key_cols)
            if nrow:
                ws.autofilter(0, 0, nrow, ncol - 1)
            _conditional(ws, df, nrow, ncol, green, red, grey)
            if verdict_cols:
                _colour_by_verdict(ws, df, verdicts, book)
            if name == "seed_view":
                _block_borders(ws, df, nrow, ncol, book)
            _page_setup(ws, pages_wide=1 if ncol <= 32 else 2)


def _colour_by_verdict(ws, df: pd.DataFrame, verdicts: pd.DataFrame, book) -> None:
    """seed_view's % cells by their comparison's verdict: green (left faster), red (left
    slower), black (equivalent), grey (undecided); written per cell, as there is no column
    to test."""
    styles = {code: book.add_format({"num_format": _number_format("pct"), **dict(w.sheet)})
              for code, w in WORDS.items()}
    for verdict_col in verdicts.columns:
        col = verdict_col[len(VERDICT_PREFIX):]
        j = list(df.columns).index(col)
        for i, (value, verdict) in enumerate(zip(df[col], verdicts[verdict_col]), start=1):
            if pd.isna(value):
                continue
            ws.write_number(i, j, float(value), styles[verdicts_.norm_code(verdict)])


def _block_borders(ws, df: pd.DataFrame, nrow: int, ncol: int, book) -> None:
    """A line above the first row of each of seed_view's blocks (a configuration)."""
    cols = [list(df.columns).index(c) for c in BLOCK if c in df.columns]
    if not nrow or not cols:
        return
    changed = ",".join(f"${xl_col_to_name(j)}2<>${xl_col_to_name(j)}1" for j in cols)
    ws.conditional_format(1, 0, nrow, ncol - 1, {
        "type": "formula", "criteria": f"=OR({changed})",
        "format": book.add_format({"top": 2, "top_color": "#4A5B70"})})


def _page_setup(ws, pages_wide: int) -> None:
    """Printing (and PDF export): landscape A4, the header row on every page, one or two pages
    wide."""
    ws.set_landscape()
    ws.set_paper(9)
    ws.set_margins(left=0.4, right=0.4, top=0.5, bottom=0.6)
    ws.repeat_rows(0)
    ws.set_footer("&L&A&R&P / &N")
    ws.fit_to_pages(pages_wide, 0)


def _conditional(ws, df: pd.DataFrame, nrow: int, ncol: int, green, red, grey) -> None:
    if not nrow:
        return
    cols = list(df.columns)
    last = nrow  # zero-based last data row (the header is row 0)
    if "significant" in cols and "pct" in cols:
        sig = xl_col_to_name(cols.index("significant"))
        j = cols.index("pct")
        pct = xl_col_to_name(j)
        ws.conditional_format(1, j, last, j, {"type": "formula", "format": green,
                                              "criteria": f"=AND(${sig}2, ${pct}2>0)"})
        ws.conditional_format(1, j, last, j, {"type": "formula", "format": red,
                                              "criteria": f"=AND(${sig}2, ${pct}2<0)"})
        ws.conditional_format(1, 0, last, ncol - 1, {"type": "formula", "format": grey,
                                                     "criteria": f"=NOT(${sig}2)"})
    if "list" in cols:
        j = cols.index("list")
        ws.conditional_format(1, j, last, j, {"type": "cell", "criteria": "==",
                                              "value": '"DO"', "format": green})
        ws.conditional_format(1, j, last, j, {"type": "cell", "criteria": "==",
                                              "value": '"DONT"', "format": red})
    if "status" in cols:
        j = cols.index("status")
        letter = xl_col_to_name(j)
        ws.conditional_format(1, j, last, j, {"type": "cell", "criteria": "==",
                                              "value": '"failed"', "format": red})
        ws.conditional_format(1, 0, last, ncol - 1, {"type": "formula", "format": grey,
                                                     "criteria": f'=${letter}2<>"ok"'})


def workbook_sheets(tables: Mapping[str, pd.DataFrame], cells: pd.DataFrame,
                    seed: pd.DataFrame, about: pd.DataFrame) -> dict[str, pd.DataFrame]:
    sheets = {"about": about, "seed_view": seed}
    for name in NAMES:
        df = tables[name]
        if name == "versions":
            env_cols = [c for c in df.columns if c not in VERSION_INDEX + ["fastest_env"]]
            df = df.copy()
            df[env_cols] = df[env_cols] * 1000.0
            df = df.rename(columns={c: f"{c} ms" for c in env_cols})
        else:  # the axis columns say what the ids say; the CSVs keep them for tracing
            df = _to_ms(df.drop(columns=["left_cell_id", "right_cell_id", "cell_id"],
                                errors="ignore"))
        sheets[name] = df
    sheets["cells"] = _to_ms(cells)
    return sheets
