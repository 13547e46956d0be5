"""Same-env comparisons timed as pairs in one process (config `pairs`): per comparison table,
each pair's row of the pairs table (driver/tables/duets.py) with its ratio, tested interval,
equivalence interval and verdict, and one sentence per table counting its verdicts; then the
pairs' own check, the A/A rows (a cell against itself in one worker), how many of them were
called different, and their lean (left over right, pooled over them with its interval:
calibration.lean, the figure compare-runs pools over runs). Every count is built here from the
rows it covers (`summary`), once. A study without pairs (config `pairs.tables: []`) says so, and
how many rows of those tables its cells left undecided, with the config key that would time
them as pairs.

A comparison table's cells' row that a pair answers (the same machine, env and both cells) is
descriptive: `mark_paired` puts the pair's verdict in its place in the Comparisons section and
counts it apart, as comparisons.mark_answered does for the rows the duets answer (the words of
driver/report/releases.py: duet_answers, descriptive)."""
import math

import pandas as pd

from driver.report import split
from driver.report.answer import row_kind
from driver.report.fmt import cell, fmt_ratio, ncol, num, records, text
from driver.report.sections.duets import count_cell, ratio_cells
from driver.stats import calibration, verdicts
from driver.study.duetplan import PAIR_TABLES
from driver.tables.registry import BY_NAME as REGISTRY
from tfspeed.cells import parse_cell_id

ID, TITLE, ORDER = "pairs", "Pairs in one process", 41

COLUMNS = (("env", False), ("mode", False), ("Keras", False), ("left vs right", False),
           ("other axes", False), ("left / right", True), ("tested interval", True),
           ("equivalence interval", True), ("verdict", False), ("pairs", True))

def summary(rows) -> dict:
    """{"n", "faster", "slower", "equivalent", "undecided"} over rows (dicts with `verdict`)."""
    codes = [verdicts.norm_code(r.get("verdict")) for r in rows]
    return {"n": len(codes), "faster": codes.count(verdicts.LEFT_FASTER),
            "slower": codes.count(verdicts.RIGHT_FASTER),
            "equivalent": codes.count(verdicts.EQUIVALENT),
            "undecided": codes.count(verdicts.UNDECIDED)}


def side_names(name: str) -> tuple[str, str]:
    """A table's left and right side in words: its own values, or for a table of several value
    pairs (keras_vs_tfkeras, call_vs_predict) the first-named and the other."""
    left, right = REGISTRY[name].left, REGISTRY[name].right
    if left is None:
        return "the first-named", "the other"
    return left, right


def sentence(name: str, counts: dict) -> str:
    """A table's verdicts in words, from summary()."""
    left, right = side_names(name)
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
    # the pair's sides differ in the table's axis (named left vs right); the row names the
    # other of api and input (both in keras_vs_tfkeras)
    axis = PAIR_TABLES[name][0]
    others = [a for a in ("api", "input") if a != axis]
    out = []
    for r in rows:
        verdict = text(r.get("verdict"))
        left, right = (_axes(r.get(f"{s}_cell_id")) for s in ("left", "right"))
        out.append([
            cell(text(r.get("env"))), cell(text(r.get("mode"))), cell(text(r.get("keras"))),
            cell(f"{left.get(axis, '')} vs {right.get(axis, '')}"),
            cell(", ".join(f"{a} {text(r.get(a)) or left.get(a, '')}" for a in others)),
            *ratio_cells(r),
            cell(verdicts.verdict_word(verdict, side_names(name)[0]),
                 cls=verdicts.words(verdict).cls),
            count_cell(r),
        ])
    return {"id": table_id, "columns": [{"label": c, "num": n} for c, n in COLUMNS],
            "rows": out}


def _axes(cell_id) -> dict:
    try:
        return parse_cell_id(text(cell_id))
    except ValueError:
        return {}


# a pairs row and a comparison table's cells' row answer the same question when these agree
ANSWER_KEYS = ("machine", "env", "left_cell_id", "right_cell_id")


def pair_answers(pairs: pd.DataFrame) -> dict:
    """{(table, machine, env, left cell id, right cell id): the pair's words}: the answer a pairs
    row gives to the cells' row of its comparison table (the shape of releases.duet_answers)."""
    out = {}
    for r in records(pairs):
        name = text(r.get("table"))
        if name not in PAIR_TABLES:
            continue
        v = text(r.get("verdict"))
        ratio, lo, hi = (num(r.get(k)) for k in ("ratio", "ratio_ci_low", "ratio_ci_high"))
        out[(name, *(text(r.get(k)) for k in ANSWER_KEYS))] = {
            "verdict": v, "cls": verdicts.words(v).cls, "ratio": ratio,
            "text": f"{verdicts.verdict_word(v, side_names(name)[0])}, {fmt_ratio(ratio)} "
                    f"[{fmt_ratio(lo)}, {fmt_ratio(hi)}]"}
    return out


def pair_answer(name: str, r: dict, answers: dict) -> dict | None:
    """The pair's answer (pair_answers) to a comparison table's cells' row, or None."""
    return answers.get((name, *(text(r.get(k)) for k in ANSWER_KEYS)))


def descriptive(answer: dict) -> str:
    return f"descriptive (a pair in one process answers this: {answer['text']})"


def mark_paired(groups: list[dict], tabs: dict) -> list[dict]:
    """In each comparison table that pairs can time, its one-factor view's rows a pair answers:
    the verdict cell gives the pair's verdict, marked descriptive (the cells' own in its
    tooltip); the view's counts keep the other rows, `paired` counts these, and its digest and
    note say so. The view's rows are its table's one-factor rows in order (split.split_views),
    as comparisons.mark_answered reads them."""
    answers = pair_answers(tabs.get("pairs", pd.DataFrame()))
    if not answers:
        return groups
    for entry in groups:
        name, view = entry["name"], entry["main"]
        if name not in PAIR_TABLES or not view.get("full"):
            continue
        ones = [r for r in records(tabs.get(name, pd.DataFrame()))
                if row_kind(r, name) == "one"]
        counts, n = dict(view.get("counts") or {}), 0
        for r, row in zip(ones, view["full"]["rows"]):
            said = pair_answer(name, r, answers)
            if said is None:
                continue
            own = verdicts.words(text(r.get("verdict"))).word
            row[0] = cell(descriptive(said), "", title="the cells' own verdict: " + own)
            counts[own] = counts.get(own, 0) - 1
            n += 1
        if not n:
            continue
        kept = view["rows"] - n - int(view.get("descriptive") or 0)
        view["counts"] = {w: c for w, c in counts.items() if c > 0}
        view["paired"] = n
        view["digest"] = split.digest(dict(view, rows=kept)) + (
            f"; {n} more descriptive (pairs in one process answer them)")
        view["note"] = ((view.get("note") or "") + f" {n} of these rows are answered by pairs "
                        "in one process (table pairs, in the section Pairs in one process): "
                        "their verdict is the pair's, marked descriptive, and they are counted "
                        "apart; the at-a-glance colours are the cells' own.").strip()
        # its verdicts are the pairs' (section Pairs in one process): the cells' glance, now
        # descriptive where a pair answers, is folded under its digest, a click away
        entry["open"] = False
    return groups


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
        answers = pair_answers(pairs[pairs["table"] == name])
        cells_rows = [r for r in records(data.table(name)) if row_kind(r, name) == "one"]
        out.append({"name": name, "title": REGISTRY[name].title,
                    "sentence": sentence(name, summary(rows)),
                    "answered": sum(pair_answer(name, r, answers) is not None
                                    for r in cells_rows),
                    "cells_rows": len(cells_rows),
                    "rows": table_rows(rows, name, f"pairs-{name}")})
    aa = data.table("pairs_aa")
    aa_counts = summary(records(aa))
    lean = calibration.lean(ncol(aa, "log_ratio"), ncol(aa, "se_log"), ncol(aa, "n")) \
        if not aa.empty else {"n": 0}
    return {"tables": out, "aa": aa_counts, "lean": lean_words(lean),
            "aa_different": aa_counts["faster"] + aa_counts["slower"],
            "replicates": int(ncol(pairs, "n").max()), "min_effect": data.min_effect}
