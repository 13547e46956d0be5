"""Same-env comparisons timed as pairs in one process (config `pairs`): per comparison table,
each pair's row of the pairs table (driver/tables/duets.py) with its ratio, tested interval,
equivalence interval and verdict, and one sentence per table counting its verdicts; then the
pairs' own check, the A/A rows (a cell against itself in one worker), how many of them were
called different, and their lean (left over right, pooled over them with its interval:
calibration.lean, the figure compare-runs pools over runs). Every count is built here from the
rows it covers (`summary`), once. A study without pairs (config `pairs.tables: []`) says so, and
how many rows of those tables its cells left undecided, with the config key that would time
them as pairs."""
import math

from driver.report.fmt import cell, ncol, records, text
from driver.report.sections.duets import count_cell, ratio_cells
from driver.stats import calibration, verdicts
from driver.study.duetplan import PAIR_TABLES
from driver.tables.registry import BY_NAME as REGISTRY

ID, TITLE, ORDER = "pairs", "Pairs in one process", 41

COLUMNS = (("env", False), ("mode", False), ("Keras", False), ("other axes", False),
           ("left / right", True), ("tested interval", True), ("equivalence interval", True),
           ("verdict", False), ("pairs", True))

def summary(rows) -> dict:
    """{"n", "faster", "slower", "equivalent", "undecided"} over rows (dicts with `verdict`)."""
    codes = [verdicts.norm_code(r.get("verdict")) for r in rows]
    return {"n": len(codes), "faster": codes.count(verdicts.LEFT_FASTER),
            "slower": codes.count(verdicts.RIGHT_FASTER),
            "equivalent": codes.count(verdicts.EQUIVALENT),
            "undecided": codes.count(verdicts.UNDECIDED)}


def sentence(name: str, counts: dict) -> str:
    """A table's verdicts in words, from summary()."""
    left, right = REGISTRY[name].left, REGISTRY[name].right
    return (f"{counts['n']} rows: {left} faster in {counts['faster']}, slower in "
            f"{counts['slower']}, equivalent within the margin in {counts['equivalent']}, "
            f"undecided in {counts['undecided']} (left: {left}, right: {right}).")


def lean_words(lean: dict) -> str:
    """The A/A pairs' lean in words (calibration.lean's dict), or "" without an interval."""
    if "low" not in lean:
        return ""
    low, mean, high = (math.exp(lean[k]) for k in ("low", "mean", "high"))
    words = (f"their lean, left side over right, pooled over the {lean['n']} rows: "
             f"{mean:.3f} (95 % CI {low:.3f}–{high:.3f})")
    return words + ("" if lean["ok"] else ": the interval leaves 1 out, so the side labels "
                    "lean in these rows")


def table_rows(rows, name: str, table_id: str) -> dict:
    # the pair's sides differ in the table's axis; the row names the other of api and input
    other = "input" if PAIR_TABLES[name][0] == "api" else "api"
    out = []
    for r in rows:
        verdict = text(r.get("verdict"))
        out.append([
            cell(text(r.get("env"))), cell(text(r.get("mode"))), cell(text(r.get("keras"))),
            cell(f"{other} {text(r.get(other))}"),
            *ratio_cells(r),
            cell(verdicts.verdict_word(verdict, REGISTRY[name].left),
                 cls=verdicts.words(verdict).cls),
            count_cell(r),
        ])
    return {"id": table_id, "columns": [{"label": c, "num": n} for c, n in COLUMNS],
            "rows": out}


def cells_open(data) -> list[dict]:
    """Without pairs: per comparison table that pairs can time, its cells' rows and how many of
    them the cells left undecided (counted from the rows' verdicts)."""
    out = []
    for name in PAIR_TABLES:
        tab = data.table(name)
        if not tab.empty:
            counts = summary(records(tab))
            out.append({"name": name, "title": REGISTRY[name].title, "n": counts["n"],
                        "undecided": counts["undecided"]})
    return out


def build(data) -> dict:
    pairs = data.table("pairs")
    if pairs.empty:
        return {"tables": [], "cells_open": cells_open(data)}
    out = []
    for name in sorted(set(pairs["table"].dropna())):
        rows = records(pairs[pairs["table"] == name])
        out.append({"name": name, "title": REGISTRY[name].title,
                    "sentence": sentence(name, summary(rows)),
                    "rows": table_rows(rows, name, f"pairs-{name}")})
    aa = data.table("pairs_aa")
    aa_counts = summary(records(aa))
    lean = calibration.lean(ncol(aa, "log_ratio"), ncol(aa, "se_log"), ncol(aa, "n")) \
        if not aa.empty else {"n": 0}
    return {"tables": out, "aa": aa_counts, "lean": lean_words(lean),
            "aa_different": aa_counts["faster"] + aa_counts["slower"],
            "replicates": int(ncol(pairs, "n").max()), "min_effect": data.min_effect}
