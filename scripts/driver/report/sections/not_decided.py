"""What more time would decide: per machine, the paired rows the run left undecided (the
not_decided table, driver/tables/not_decided.py): the rows whose second look the time budget did
not reach, with its minutes and the command that continues the run, and the rows still open after
their second look, with about how many more replicates would decide them. One sentence per
machine, built here from that machine's rows (`sentence`), and a table of the rows."""
import math

from driver.report.fmt import cell, machine_names, ncol, records, text
from driver.tables.not_decided import NOT_REACHED, RELEASES, STILL_OPEN

ID, TITLE, ORDER = "not_decided", "What more time would decide", 13

COLUMNS = (("table", False), ("env", False), ("row", False), ("state", False),
           ("replicates so far", True), ("ratio", True), ("more replicates", True),
           ("minutes", True))


def sentence(name: str, rows: list[dict]) -> str:
    """One machine's undecided paired rows in words, from its rows of the not_decided table."""
    rounds = [r for r in rows if r.get("paired_table") == "cells"]
    releases = [r for r in rows if r.get("paired_table") == RELEASES]
    rows = [r for r in rows if r.get("paired_table") not in ("cells", RELEASES)]
    reached = [r for r in rows if r.get("state") == NOT_REACHED]
    still = [r for r in rows if r.get("state") == STILL_OPEN]
    cells = ""
    if rounds:
        # round 0 runs while it fits, process by process; a later round whole or not at all
        said = [("%d processes of round 0" if text(r.get("cell_id")) == "round 0" else
                 text(r.get("cell_id")) + " (%d processes)") % int(r["replicates"])
                for r in rounds]
        cells = (" The cells' %s did not fit either (about %.0f min)."
                 % (", ".join(said), sum(float(r["minutes"]) for r in rounds)))
    if releases:
        late = sum(r.get("state") == NOT_REACHED for r in releases)
        said = [f"{late} not reached"] if late else []
        if len(releases) > late:
            said.append(f"{len(releases) - late} open after their rows' second look")
        cells = f" Undecided releases: {'; '.join(said)}." + cells
    if not rows:
        return f"On the {name}, every paired row was decided." + cells
    parts = []
    if reached:
        minutes = sum(float(r["minutes"]) for r in reached)
        parts.append(f"{len(reached)} open after the first look whose second look did not fit "
                     f"the time budget (about {minutes:.0f} min of duets would reach them)")
    if still:
        known = [r for r in still if isinstance(r.get("minutes"), float)
                 and not math.isnan(r["minutes"])]
        more = (f"; at their measured spread, {len(known)} of them would take about "
                f"{sum(r['minutes'] for r in known):.0f} min more" if known else "")
        parts.append(f"{len(still)} still open after their second look{more}")
    many = len(rows) != 1
    return (f"On the {name}, {len(rows)} paired row{'s' if many else ''} "
            f"{'are' if many else 'is'} undecided: " + "; ".join(parts) + "." + cells)


def build(data) -> dict:
    table = data.table("not_decided")
    if table.empty:
        return {"machines": [], "any_paired": not data.table("duets").empty}
    names = machine_names(set(table["machine"].map(text)), data.machine_facts)
    out = []
    for key in sorted(names):
        rows = records(table[table["machine"].map(text) == key])
        commands = sorted({text(r.get("command")) for r in rows if text(r.get("command"))})
        out.append({"name": names[key], "sentence": sentence(names[key], rows),
                    "commands": commands, "rows": [_row(r) for r in rows]})
    return {"machines": out, "columns": COLUMNS, "any_paired": True,
            "n": int(ncol(table, "n").notna().sum())}


def _num(v, fmt):
    return cell(fmt % v, "num", v) if isinstance(v, (int, float)) and v == v else cell("", "num")


def _row(r: dict) -> list:
    return [cell(text(r.get("table")) or text(r.get("paired_table"))), cell(text(r.get("env"))),
            cell(text(r.get("cell_id")).replace("~", " vs ")), cell(text(r.get("state"))),
            _num(r.get("n"), "%d"), _num(r.get("ratio"), "%.3f"),
            _num(r.get("replicates"), "%d"), _num(r.get("minutes"), "%.1f")]
