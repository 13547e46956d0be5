"""The source study's release claims (seed 000's updates on TF 2.1, 2.2 and 2.3), judged on this
study's comparison rows like its DO / DON'T lines (driver/report/source_claims.py): holds / does
not hold / undecided / not testable here, with the evidence. Verdicts come from aggregation
(adjacent_releases, tf2_vs_tf1: the study's one BH family); nothing is tested here.

The rows of a release: its `adjacent_releases` rows (against the version before it in the study)
and, where the claim is about "any previous version" or "the best of TF 1 and TF 2", its
`tf2_vs_tf1` rows (against the TF 1 reference). Only rows that change the version alone (same
Keras flavour on both sides; no matmul) count. Where the duets time the same release step
(duets_releases: the headline's configuration), the duets' verdict and ratio stand for the
cells' row. With several machines each claim is judged per machine, on that machine's rows.
"""
import pandas as pd

from driver.report.answer import row_kind
from driver.report.fmt import machine_names, machines_of, num, of_machine, records, text
from driver.report.releases import duet_answer, duet_answers
from driver.stats import verdicts
from driver.stats.verdicts import verdict_word as say
from tfspeed.versions import version_tuple

MINOR_FACTOR = 1.25  # a "minor" improvement: less than this many times as fast

CLAIMS = [
    ("2.1", "TF 2.1: the results are mixed (some configurations faster, one slower, "
            "dramatically)"),
    ("2.2", "TF 2.2: only a minor improvement in Eager speed"),
    ("2.3", "TF 2.3: all cases run as fast as, or notably faster than, any previous version"),
    ("2.1-large", "TF 2.1: Large-Large is slower, especially in Graph execution (1.6x to 2.5x)"),
]


def _release(row: dict, minor: tuple) -> bool:
    version = text(row.get("left_framework_version"))
    return version_tuple(version)[:2] == minor and text(row.get("line"), "TensorFlow") in (
        "TensorFlow",)


def release_rows(tabs: dict, minor: tuple, with_reference: bool = False, **axes) -> list[dict]:
    """The one-factor rows of release `minor` (e.g. (2, 1)) as (table, row), later side left."""
    names = ["adjacent_releases"] + (["tf2_vs_tf1"] if with_reference else [])
    answers = duet_answers(tabs.get("duets_releases", pd.DataFrame()))
    out = []
    for name in names:
        df = tabs.get(name)
        for r in records(df) if df is not None else []:
            if not _release(r, minor) or row_kind(r, name) != "one":
                continue
            if all(text(r.get(a)) in allowed for a, allowed in axes.items()):
                said = duet_answer(r, answers) if name == "adjacent_releases" else None
                if said is not None:  # the duets answer this step: their verdict, not the cells'
                    r = {**r, "verdict": said["verdict"], "ratio": said["ratio"], "_duets": True}
                out.append({**r, "_table": name})
    return out


def _counts(rows: list[dict]) -> dict:
    v = [text(r.get("verdict")) for r in rows]
    return {"faster": v.count(verdicts.LEFT_FASTER), "slower": v.count(verdicts.RIGHT_FASTER),
            "equivalent": v.count(verdicts.EQUIVALENT),
            "undecided": v.count(verdicts.INCONCLUSIVE) + v.count("")}


def _span(values: list[float]) -> str:
    values = sorted(v for v in values if v == v)
    if not values:
        return ""
    lo, hi = f"{values[0]:.2f}x", f"{values[-1]:.2f}x"
    return lo if lo == hi else f"{lo}–{hi}"


def _evidence(rows: list[dict], c: dict) -> str:
    against = sorted({text(r.get("right_env")) for r in rows})
    speed = [1 / num(r.get("ratio")) for r in rows
             if text(r.get("verdict")) == verdicts.LEFT_FASTER and num(r.get("ratio")) > 0]
    slow = [num(r.get("ratio")) for r in rows if text(r.get("verdict")) == verdicts.RIGHT_FASTER]
    parts = [f"{len(rows)} comparison{'s' if len(rows) != 1 else ''} of "
             f"{text(rows[0].get('left_env'))} with {', '.join(against)}",
             f"{say(verdicts.LEFT_FASTER)} in {c['faster']}"
             + (f" ({_span(speed)} as fast)" if speed else ""),
             f"{say(verdicts.RIGHT_FASTER)} in {c['slower']}"
             + (f" ({_span(slow)} the time)" if slow else ""),
             f"{say(verdicts.EQUIVALENT)} in {c['equivalent']}",
             f"{say(verdicts.INCONCLUSIVE)} in {c['undecided']}"]
    duets = sum(1 for r in rows if r.get("_duets"))
    if duets:
        parts.append(f"{duets} of them from the duets (their verdict, not the cells')")
    return "; ".join(parts)


def _result(words, status, cls, evidence):
    return {"kind": "release", "words": words, "status": status, "cls": cls,
            "evidence": evidence}


NOT_TESTABLE = "not testable here"


def judge_mixed(tabs, words):
    rows = release_rows(tabs, (2, 1))
    if not rows:
        return _result(words, NOT_TESTABLE, "nodata", "no configuration measured in TF 2.1 and "
                       "the version before it")
    c = _counts(rows)
    if c["faster"] and c["slower"]:
        status, cls = "holds", "holds"
    elif c["undecided"] == 0 and not (c["faster"] and c["slower"]):
        status, cls = "does not hold", "fails"
    else:
        status, cls = "undecided", "ns"
    return _result(words, status, cls, _evidence(rows, c))


def judge_minor_eager(tabs, words):
    rows = release_rows(tabs, (2, 2), mode=["eager"])
    if not rows:
        return _result(words, NOT_TESTABLE, "nodata", "no eager configuration measured in TF 2.2 "
                       "and the version before it")
    c = _counts(rows)
    big = [r for r in rows if text(r.get("verdict")) == verdicts.LEFT_FASTER
           and 1 / num(r.get("ratio")) >= MINOR_FACTOR]
    if c["slower"] > len(rows) / 2 or big or c["equivalent"] == len(rows):
        status, cls = "does not hold", "fails"
    elif c["faster"] and not c["slower"]:
        status, cls = "holds", "holds"
    else:
        status, cls = "undecided", "ns"
    note = (f" (minor: less than {MINOR_FACTOR:g}x as fast"
            + (f"; {len(big)} row{'s' if len(big) != 1 else ''} beyond it" if big else "") + ")")
    return _result(words, status, cls, _evidence(rows, c) + note)


def judge_as_fast_as_any(tabs, words):
    rows = release_rows(tabs, (2, 3), with_reference=True)
    if not rows:
        return _result(words, NOT_TESTABLE, "nodata", "no configuration measured in TF 2.3 and "
                       "an earlier version")
    c = _counts(rows)
    if c["slower"]:
        status, cls = "does not hold", "fails"
    elif c["undecided"]:
        status, cls = "undecided", "ns"
    else:
        status, cls = "holds", "holds"
    return _result(words, status, cls, _evidence(rows, c) + " (earlier versions not named here "
                   "are not compared pairwise: see the change points)")


def judge_large_slower(tabs, words):
    rows = release_rows(tabs, (2, 1), with_reference=True, model=["large"], data=["large"])
    graph = [r for r in rows if text(r.get("mode")) == "graph"]
    rows = graph or rows
    if not rows:
        return _result(words, NOT_TESTABLE, "nodata", "no large model with large data measured "
                       "in TF 2.1 and an earlier version")
    c = _counts(rows)
    if c["slower"] > len(rows) / 2:
        status, cls = "holds", "holds"
    elif c["faster"] + c["equivalent"] > len(rows) / 2:
        status, cls = "does not hold", "fails"
    else:
        status, cls = "undecided", "ns"
    where = "graph rows" if graph else "no graph row; eager rows"
    return _result(words, status, cls, f"{where}: " + _evidence(rows, c))


JUDGES = {"2.1": judge_mixed, "2.2": judge_minor_eager, "2.3": judge_as_fast_as_any,
          "2.1-large": judge_large_slower}


def release_claims(tabs: dict, facts: dict | None = None) -> list[dict]:
    """Each claim judged; with several machines once per machine, on its rows alone, the
    evidence naming the machine (machine_names: from `facts`, else the cells' CPU model)."""
    keys = sorted(set().union(*(machines_of(df) for df in tabs.values()
                                if isinstance(df, pd.DataFrame))) - {""})
    if len(keys) < 2:
        return [JUDGES[key](tabs, words) for key, words in CLAIMS]
    names = machine_names(keys, facts, tabs.get("cells"))
    out = []
    for key, words in CLAIMS:
        for machine in keys:
            mine = {n: of_machine(df, machine) if isinstance(df, pd.DataFrame) else df
                    for n, df in tabs.items()}
            got = JUDGES[key](mine, words)
            out.append({**got, "machine": machine,
                        "evidence": f"{names[machine]}: {got['evidence']}"})
    return out
