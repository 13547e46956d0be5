"""Which configuration to use: first TensorFlow today (>= 2.16, Keras 3 the default), per task
(training, inference), model and data, the USE / AVOID rules merged across versions with their
intervals and the lines of code that select them, and the call-vs-predict rule; then, folded,
the same rules over every framework and version, the filterable versions table, this machine's
one-factor rules (those about fit() one step per call apart, last) and the source study's DO /
DON'T and claims checked here."""
import math

import pandas as pd

from driver.report import guidance as rules_of
from driver.report import source_claims as seedcheck
from driver.report.claims import claims
from driver.report.fmt import cell, col, fmt_ms, fold_constants, machine_names, num, records, text
from driver.tables import labels, summaries

ID, TITLE, ORDER = "guidance", "Which configuration", 20


# a one-factor rule about fit() one step per call: fit()'s set-up paid in every step, which a
# fit() over an epoch pays once; real, but not how most users call fit(), so shown last
ARTEFACT = labels.API["fit"]


def build(data) -> dict:
    # TensorFlow today: the guidance table's rules over the TF >= 2.16 cells alone, against the
    # fastest of them (the table aggregation writes holds the study's scope)
    # on the machines the study's guidance table covers (not the A/A twin key)
    cells, study = data.cells, data.table("guidance")
    if cells is not None and not cells.empty and not study.empty and "machine" in cells:
        cells = cells[cells["machine"].isin(set(study["machine"]))]
    current = (summaries.guidance_table(cells, scope="tf_today")
               if cells is not None and not cells.empty else pd.DataFrame())
    duets = data.table("duets")
    today = rules_of.rules(current, data.cells, duets)
    blocks = rules_of.rules(study, data.cells, duets)
    machine = seedcheck.machine_rules(data.tabs)
    artefact = [r for r in machine if r["kind"] == "DONT" and ARTEFACT in r["text"]]
    return {"today": today, "today_range": rules_of.scope_range(current),
            "blocks": blocks, "switch": rules_of.switch_lines(blocks + today),
            "predict": rules_of.call_vs_predict(data.table("call_vs_predict"), machine_names(
                set(col(data.table("call_vs_predict"), "machine").map(text)) - {""},
                data.machine_facts, data.cells)),
            "seed": seedcheck.seed_checks(data.tabs, data.cells),
            "rules": [r for r in machine if r not in artefact], "artefact": artefact,
            "rules_machines": len({r.get("machine") for r in machine} - {""}),
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
    return fold_constants({"id": "t-versions", "columns": columns, "rows": rows})
