"""Formatting for people: numbers as the report writes them (ms, %, ratios, p-values), tolerant
of missing values, and the table cells the template renders."""
import math
import re

import numpy as np
import pandas as pd

from driver.stats.verdicts import INCONCLUSIVE, words
from driver.tables.bundle import num, text  # noqa: F401 - the report's modules read them here
from tfspeed.versions import sort_key


def version_key(text) -> tuple:
    """'2.15.1' -> (2, 15, 1); names such as 'tf1.14' or 'torch2.3' sort by their numbers
    (tfspeed/versions.py: sort_key)."""
    return sort_key(text)


def is_true(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return str(value).strip().lower() in ("true", "1", "yes", "y", "t")


def fmt_ms(seconds, digits=2) -> str:
    s = num(seconds)
    return "–" if math.isnan(s) else f"{s * 1e3:,.{digits}f}"


def fmt_pct(p) -> str:
    p = num(p)
    return "–" if math.isnan(p) else f"{p:+,.1f}"


def fmt_ratio(r) -> str:
    r = num(r)
    return "–" if math.isnan(r) else f"{r:.3g}"


def fmt_p(p) -> str:
    p = num(p)
    if math.isnan(p):
        return "–"
    return "<0.001" if p < 1e-3 else f"{p:.3f}"


def fmt_num(x, spec=".3g") -> str:
    x = num(x)
    return "–" if math.isnan(x) else format(x, spec)


def col(df: pd.DataFrame, name, default=None) -> pd.Series:
    if name in df.columns:
        return df[name]
    return pd.Series([default] * len(df), index=df.index, dtype=object)


def ncol(df: pd.DataFrame, name) -> pd.Series:
    return pd.to_numeric(col(df, name), errors="coerce")


def wall_text(seconds) -> str:
    """A wall time as '0 h 35 min 02 s' ('unknown' when not a number)."""
    try:
        seconds = int(round(float(seconds)))
    except (TypeError, ValueError):
        return "unknown"
    return "%d h %02d min %02d s" % (seconds // 3600, seconds % 3600 // 60, seconds % 60)


def cell(text_="", cls="", v=None, title=None) -> dict:
    """One table cell for the template: display text, CSS class, sort value, tooltip."""
    return {"text": text_, "cls": cls, "v": sort_value(v), "title": title}


def sort_value(v) -> str | None:
    """A cell's sort key as the page stores it: numbers to 6 significant digits (enough to order
    any two rows the table tells apart; the CSVs keep every digit), anything else as text."""
    if v is None:
        return None
    if isinstance(v, (float, np.floating)) and math.isfinite(v):
        return f"{float(v):.6g}"
    return str(v)


def pct_cell(row) -> dict:
    """The seed's % for one comparison row, coloured by sign, marked when not significant."""
    p = num(row.get("pct"))
    if math.isnan(p):
        return cell("–", "na")
    verdict = words(text(row.get("verdict")).lower().replace(" ", "_"))
    # coloured when decided: by the verdict where the row has one (the tested interval)
    sig = (verdict.cls in ("pos", "neg")) if text(row.get("verdict")) else \
        is_true(row.get("significant"))
    cls = ("pos" if p > 0 else "neg" if p < 0 else "zero") + ("" if sig else " ns")
    tip = (f"left {fmt_ms(row.get('left_median_s'))} ms, right {fmt_ms(row.get('right_median_s'))}"
           f" ms: left {ratio_text(row.get('ratio'), p)}; tested interval "
           f"{fmt_ratio(row.get('ratio_ci_low'))}-{fmt_ratio(row.get('ratio_ci_high'))}; "
           f"{verdict.word}")
    mark = "" if sig else (verdict.mark or words(INCONCLUSIVE).mark)
    out = cell(fmt_pct(p) + mark, cls, v=p, title=tip)
    out["sub"] = f"{fmt_ms(row.get('left_median_s'))} / {fmt_ms(row.get('right_median_s'))} ms"
    return out


def ratio_text(ratio, pct=None) -> str:
    """The one convention for a ratio of step times (left / right): '17.0x slower (-1,600 %)',
    '1.25x faster (+25 %)', the % being the source study's (+ when the left side is faster)."""
    r = num(ratio)
    if math.isnan(r) or r <= 0:
        return "–"
    p = num(pct)
    if math.isnan(p):
        p = (1 / r - 1) * 100 if r < 1 else -(r - 1) * 100
    if abs(r - 1) < 5e-4:
        return f"1.00x ({p:+,.0f} %)"
    word = "slower" if r > 1 else "faster"
    big = max(r, 1 / r)
    return f"{big:,.{1 if big >= 10 else 2}f}x {word} ({p:+,.0f} %)"


def records(df: pd.DataFrame) -> list[dict]:
    return df.to_dict("records") if len(df) else []


def config_label(row, axes=("keras", "mode", "api", "input", "device"), sep=" · ") -> str:
    return sep.join(text(row.get(a)) for a in axes if text(row.get(a)))


def fold_constants(table: dict) -> dict:
    """A table for the template without its word columns that hold one value in every row (one
    machine, one device): those are said once above it (`constant`: (header, value, CSV name)),
    so that no column repeats, and wraps, the same words in every row. Number columns stay."""
    rows, columns = table.get("rows") or [], table.get("columns") or []
    if len(rows) < 2:
        return {**table, "constant": table.get("constant", [])}
    same = [i for i, c in enumerate(columns) if not c.get("num")
            and len({r[i]["text"] for r in rows}) == 1 and rows[0][i]["text"]]
    constant = [(columns[i]["label"], rows[0][i]["text"], columns[i].get("csv", columns[i]["label"]))
                for i in same]
    keep = [i for i in range(len(columns)) if i not in same]
    return {**table, "columns": [columns[i] for i in keep],
            "rows": [[r[i] for i in keep] for r in rows],
            "constant": [*table.get("constant", []), *constant]}


def machines_of(df: pd.DataFrame) -> list[str]:
    """The machine keys of a table's rows, sorted; [""] for a table without a machine column
    (one machine, unnamed), [] for no rows. The A/A twin keys (`<machine>.twin`) are the same
    machine and are left out."""
    if not len(df):
        return []
    if "machine" not in df.columns:
        return [""]
    keys = sorted({text(m) for m in df["machine"]} - {""})
    return [k for k in keys if not k.endswith(".twin")] or [""]


def of_machine(df: pd.DataFrame, key: str) -> pd.DataFrame:
    """A table's rows of one machine key ("": all rows, for a table without machines)."""
    if not key or "machine" not in df.columns:
        return df
    return df[df["machine"].map(text) == key]


# what a CPU model string says that a reader does not need
CPU_NOISE = re.compile(r"\((R|TM)\)|\bCPU\b|\bProcessor\b|@.*$|\d+-Core", re.I)


def cores_of(key: str, facts: dict | None = None) -> int | None:
    """A machine's logical cores: its facts' cpu_count, else its key's '<n>c' part."""
    n = (facts or {}).get("cpu_count")
    if n:
        return int(n)
    found = re.search(r"-(\d+)c(?:-|$)", key or "")
    return int(found.group(1)) if found else None


def machine_names(keys, facts: dict | None = None, cells: pd.DataFrame | None = None) -> dict:
    """{key: '2-core AMD EPYC'}: each machine in plain words, the one naming of the whole report:
    its CPU model (the machine facts', driver/tables/facts.py, else the one the cells recorded)
    and cores; two machines of one name are told apart by a number ('2-core Intel Xeon no. 2',
    in key order); a machine with no CPU model keeps its key."""
    facts = facts or {}
    out = {}
    for key in sorted(k for k in keys if k):
        model = text((facts.get(key) or {}).get("cpu_model"))
        if not model and cells is not None and len(cells) and {"machine", "cpu_model"} <= set(
                cells.columns):
            found = cells.loc[cells["machine"].map(text) == key, "cpu_model"].dropna()
            model = text(found.mode().iloc[0]) if len(found) else ""
        model = " ".join(CPU_NOISE.sub(" ", model).split())
        if not model:
            out[key] = key
            continue
        n = cores_of(key, facts.get(key))
        out[key] = f"{n}-core {model}" if n else model
    seen: dict = {}
    for key in sorted(out):
        seen.setdefault(out[key], []).append(key)
    for name, same in seen.items():
        if len(same) > 1:
            for i, key in enumerate(same, 1):
                out[key] = f"{name} no. {i}"
    return out
