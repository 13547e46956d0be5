"""Which configuration to use: per task (training, inference), model and data the rules merged
across versions with the line of code that selects each mode, the filterable versions table,
this machine's one-factor rules, and the source study's DO / DON'T and claims checked here."""
import math

import pandas as pd

from driver.report import guidance as rules_of
from driver.report import source_claims as seedcheck
from driver.report.claims import claims
from driver.report.fmt import cell, fmt_ms, num, records, text

ID, TITLE, ORDER = "guidance", "Which configuration", 20


def build(data) -> dict:
    blocks = rules_of.rules(data.table("guidance"), data.cells)
    return {"blocks": blocks, "switch": rules_of.switch_lines(blocks),
            "seed": seedcheck.seed_checks(data.tabs, data.cells),
            "rules": seedcheck.machine_rules(data.tabs),
            "claims": claims(data.tabs, data.cells),
            "versions": versions_view(data.table("versions"), data.order)}


def versions_view(versions: pd.DataFrame, order: list[str]) -> dict | None:
    """The performance history as a table: median ms per configuration and env, the fastest
    env of each row in bold."""
    if versions.empty:
        return None
    envs = [c for c in versions.columns if c in order]
    if not envs:  # an unknown layout: every column that holds numbers is an env
        envs = [c for c in versions.columns
                if pd.to_numeric(versions[c], errors="coerce").notna().any()]
    labels = [c for c in versions.columns if c not in envs and c != "fastest_env"]
    tail = ["fastest_env"] if "fastest_env" in versions.columns else []
    columns = ([{"label": c, "num": False} for c in labels]
               + [{"label": e, "num": True} for e in envs]
               + [{"label": "fastest", "num": False} for _ in tail])
    rows = []
    for r in records(versions):
        values = [num(r.get(e)) for e in envs]
        finite = [v for v in values if not math.isnan(v)]
        best = min(finite) if finite else None
        rows.append([cell(text(r.get(c))) for c in labels]
                    + [cell(fmt_ms(v), "num best" if best is not None and v == best else "num",
                            v=v) for v in values]
                    + [cell(text(r.get(c))) for c in tail])
    return {"id": "t-versions", "columns": columns, "rows": rows}
