"""The typed loader: what aggregation writes under results/tables/, read back with declared column
types, so that readers (the report, compare-runs, tests) get numbers as numbers, flags as booleans
and versions as strings ('2.10' must not become 2.1), without coercing field by field."""
import math
from pathlib import Path

import pandas as pd

from driver.tables.columns import column
from tfspeed.atomic import write_text


def num(value) -> float:
    """A float, or NaN for anything that is not a finite-looking number."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


def text(value, empty="") -> str:
    """A value as text; `empty` for None, NaN and pandas' missing values."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return empty
    try:
        if pd.isna(value):
            return empty
    except (TypeError, ValueError):
        pass
    return str(value)


def column_type(name: str) -> str:
    """"text", "number" or "bool", as driver/tables/columns.py declares the column (a side's
    column as its base column); a column it does not name (an env's column of `versions`) is a
    number."""
    entry = column(name)
    return entry.type if entry else "number"


def _as_bool(value):
    if pd.isna(value) or value == "":
        return pd.NA
    return str(value).strip().lower() in ("true", "1", "yes")


def read_table(path) -> pd.DataFrame:
    """A table CSV with its declared types; an empty (header-only) file gives an empty frame with
    those columns; a missing file is an error naming it (the rule declared it as an input)."""
    path = Path(path)
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        return pd.DataFrame()
    out = {}
    for name in raw.columns:
        kind = column_type(name)
        values = raw[name]
        if kind == "text":
            out[name] = values.where(values != "", None).astype(object)
        elif kind == "bool":
            out[name] = values.map(_as_bool).astype("boolean")
        else:
            out[name] = pd.to_numeric(values.replace("", None), errors="raise")
    return pd.DataFrame(out, columns=list(raw.columns))


def read_tables(paths) -> dict[str, pd.DataFrame]:
    """{name: frame} of table files named <name>.csv."""
    return {Path(p).stem: read_table(p) for p in paths}


def write_table(df: pd.DataFrame, path) -> None:
    """A table as CSV, atomically (a reader finds the whole file or the previous one)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    write_text(str(path), df.to_csv(index=False))
