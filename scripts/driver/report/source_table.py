"""The source study's BENCHMARKS tables in its own layout for the report: the workbook's seed_view
(driver.tables.source_layout) cut into its blocks, one per Keras flavour, API, input and device (the seed's
blocks), rows model x data, columns ms per step of the reference env and one TF 2 env in Graph
and Eager, then TF2 vs TF1 % and GvE %. Each block shows only the columns it has values in; a
block's note (a flavour without a TF 1 counterpart) goes under its caption."""
import math

import pandas as pd

from driver.report.fmt import cell, fmt_pct, num, records, text
from driver.stats.verdicts import DECIDED, INCONCLUSIVE, words
from driver.tables.labels import API_CELL as API
from driver.tables.source_layout import BLOCK, NOTE, VERDICT_PREFIX, seed_view


def seed_blocks(cells: pd.DataFrame, tabs: dict, reference_env: str, envs: list) -> list[dict]:
    if cells.empty or "status" not in cells.columns:
        return []
    df = seed_view(cells, tabs, reference_env, envs)
    if df.empty:
        return []
    value_cols = [c for c in df.columns if c not in BLOCK + ["model", "data", NOTE]
                  and not c.startswith(VERDICT_PREFIX)]
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
                    # a % whose comparison called no direction: muted, and marked as its
                    # verdict is (driver/stats/verdicts.py: WORDS)
                    verdict = text(r.get(VERDICT_PREFIX + c), INCONCLUSIVE)
                    extra = "" if verdict in DECIDED else " ns"
                    mark = words(verdict).mark
                    cls = ("pos" if v > 0 else "neg" if v < 0 else "zero") + extra
                    row.append(cell(fmt_pct(v) + mark, cls, v=v, title=words(verdict).word))
            rows.append(row)
        # the API as labelled everywhere ("fit() 1 step/call", "fit() epoch/call")
        title = " + ".join([API.get(text(k["api"]), text(k["api"])), text(k["input"]),
                            text(k["keras"])]) + \
            f" + {text(k['device']).upper()}" + (f" ({k['machine']})" if several else "")
        notes = sorted({text(n) for n in part[NOTE] if text(n)}) if NOTE in part else []
        if notes:
            title += " — " + "; ".join(notes)
        out.append({"title": title, "table": {"id": "t-seed-" + str(len(out)),
                                              "columns": columns, "rows": rows}})
    return out
