"""The source study's BENCHMARKS tables in its own layout for the report: one block per Keras
flavour, API, input and device (the seed's blocks), rows model x data, columns seconds per
iteration of each TF env in Graph and Eager, then TF2 vs TF1 % and GvE %. Each block shows only
the columns it has values in (the workbook's seed_view sheet holds every column)."""
import math

import pandas as pd

from driver.fmt import cell, fmt_pct, is_true, num, records, text
from driver.seedview import SIG_PREFIX, seed_view

BLOCK = ["machine", "device", "keras", "api", "input"]


def seed_blocks(cells: pd.DataFrame, tabs: dict, reference_env: str, envs: list) -> list[dict]:
    if cells.empty or "status" not in cells.columns:
        return []
    df = seed_view(cells, tabs, reference_env, envs)
    if df.empty:
        return []
    value_cols = [c for c in df.columns if c not in BLOCK + ["model", "data"]
                  and not c.startswith(SIG_PREFIX)]
    out = []
    several = df["machine"].nunique() > 1
    for key, part in df.groupby(BLOCK, sort=False):
        k = dict(zip(BLOCK, key))
        cols = [c for c in value_cols if part[c].notna().any()]
        columns = ([{"label": "model", "num": False}, {"label": "data", "num": False}]
                   + [{"label": c.replace(" s/iter", " ms"), "num": True} for c in cols])
        rows = []
        for r in records(part):
            row = [cell(text(r.get("model"))), cell(text(r.get("data")))]
            for c in cols:
                v = num(r.get(c))
                if c.endswith("s/iter"):
                    row.append(cell("–" if math.isnan(v) else f"{v * 1e3:,.2f}", "num", v=v))
                elif math.isnan(v):
                    row.append(cell("–", "na"))
                else:
                    sig = is_true(r.get(SIG_PREFIX + c))
                    cls = ("pos" if v > 0 else "neg" if v < 0 else "zero") + ("" if sig else " ns")
                    row.append(cell(fmt_pct(v) + ("" if sig else " n.s."), cls, v=v))
            rows.append(row)
        title = " + ".join(text(k[a]) for a in ("api", "input", "keras")) + \
            f" + {text(k['device']).upper()}" + (f" ({k['machine']})" if several else "")
        out.append({"title": title, "table": {"id": "t-seed-" + str(len(out)),
                                              "columns": columns, "rows": rows}})
    return out
