"""The cells' answer, per execution mode and API, folded under the report's first screen (and in
docs/RESULTS.md under its own heading): one sentence per mode and API from the tf2_vs_tf1 table's
verdicts, and the rows of the forest plot behind them. Where the duets answer a question
(driver/report/statements.py), cells_answer leaves it to them.

Which rows answer "is TF 2 slower than TF 1": the like-for-like ones. A row whose sides use
different Keras flavours (Keras 3 vs TF 1's tf.keras) or that is the matmul micro-case (where the
`numpy` mode runs no TensorFlow at all) changes more than the TF version; those rows are shown in
their own tables (driver/report/split.py) and never counted here. From TF 2.16 on, tf.keras is Keras 3
and the Keras 2 it used to be ships as the `tf_keras` package: tf_keras vs TF 1's tf.keras is the
nearest like-for-like row those versions have, so it is counted, and the sentence says so.
"""
import math

import pandas as pd

from driver.report.fmt import col, ncol, num, records, text, version_key
from driver.stats.verdicts import (
    EQUIVALENT,
    INCONCLUSIVE,
    LEFT_FASTER,
    RIGHT_FASTER,
    norm_code,
    verdict_word,
)
from driver.tables import labels
from driver.tables.ordering import AXIS_ORDER

# the verdict names have one owner, driver/stats/verdicts.py; short names for this module and seedcheck
LEFT, RIGHT, EQUIV, INCONCL = LEFT_FASTER, RIGHT_FASTER, EQUIVALENT, INCONCLUSIVE

# A like-for-like TF2 row's Keras, best first: which row of a version speaks for it.
HEADLINE_KERAS = ("tf.keras", "tf_keras", "keras")

API_TEXT, MODE_TEXT = labels.API_PHRASE, labels.MODE_PHRASE  # the words of the sentences


def norm_verdict(value) -> str:
    """A verdict as verdicts.py writes it, from a table of any age (verdicts.norm_code reads
    the older codes): anything else is undecided."""
    v = norm_code(text(value))
    return v if v in (LEFT, RIGHT, EQUIV) else INCONCL


def row_kind(row, table: str = "") -> str:
    """'micro' (the matmul micro-case), 'cross' (the sides' Keras flavours differ, where Keras
    is not the table's factor) or 'one' (the sides differ in the table's factor alone)."""
    if text(row.get("api")) == "matmul" or text(row.get("model")) == "matmul" \
            or text(row.get("left_api")) == "matmul":
        return "micro"
    lk, rk = text(row.get("left_keras")), text(row.get("right_keras"))
    if table != "keras_vs_tfkeras" and lk and rk and lk != rk:
        return "cross"
    return "one"


def like_for_like(df: pd.DataFrame) -> pd.DataFrame:
    """tf2_vs_tf1 rows that answer the question: same Keras flavour on both sides, or tf_keras
    (TF >= 2.16) standing for TF 1's tf.keras (`standin` True); no matmul, no Keras 3."""
    if df.empty:
        return df.assign(standin=pd.Series(dtype=bool))
    kinds = [row_kind(r, "tf2_vs_tf1") for r in records(df)]
    lk, rk = col(df, "left_keras").map(text), col(df, "right_keras").map(text)
    standin = (lk == "tf_keras") & (rk == "tf.keras")
    keep = pd.Series([k == "one" for k in kinds], index=df.index) | standin
    keep &= ~lk.isin(["tf.python.keras", "none"])
    out = df[keep].copy()
    out["standin"] = standin[keep]
    out["verdict_n"] = col(out, "verdict").map(norm_verdict)
    return out


def _rank(axis, value):
    return AXIS_ORDER.get(axis, {}).get(value, 99)


def _version_of(row) -> str:
    return text(row.get("left_framework_version")) or text(row.get("left_env"))


def panel_keys(df: pd.DataFrame) -> list[tuple]:
    """(machine, device, mode, api) of every panel, graph before eager, train_on_batch first."""
    keys = {(text(r.get("machine")), text(r.get("device")), text(r.get("mode")),
             text(r.get("api"))) for r in records(df)}
    return sorted(keys, key=lambda k: (k[0], _rank("device", k[1]), _rank("mode", k[2]),
                                       _rank("api", k[3])))


def headline_rows(part: pd.DataFrame) -> pd.DataFrame:
    """One row per TF version: tf.keras before tf_keras before keras, numpy before tf.data, the
    smallest model and data (the configuration every version of the history grid holds)."""
    rows = records(part)
    best = {}
    for r in rows:
        key = (HEADLINE_KERAS.index(text(r.get("left_keras")))
               if text(r.get("left_keras")) in HEADLINE_KERAS else 9,
               _rank("input", text(r.get("input"))), _rank("model", text(r.get("model"))),
               _rank("data", text(r.get("data"))))
        v = _version_of(r)
        if v not in best or key < best[v][0]:
            best[v] = (key, r)
    chosen = [best[v][1] for v in sorted(best, key=version_key)]
    return pd.DataFrame(chosen)


def _span(values, fmt="{:.2f}") -> str:
    values = sorted(v for v in values if not math.isnan(v))
    if not values:
        return ""
    lo, hi = fmt.format(values[0]), fmt.format(values[-1])
    return lo if lo == hi else f"{lo}–{hi}"


def sentence(mode: str, api: str, head: pd.DataFrame, reference: str, min_effect: float) -> dict:
    """One answer: how many versions are equivalent / slower / faster / undecided."""
    n = len(head)
    verdicts = list(col(head, "verdict_n"))
    ratio = list(ncol(head, "ratio"))
    versions = [_version_of(r) for r in records(head)]
    slower = [r for v, r in zip(verdicts, ratio) if v == RIGHT]
    faster = [1 / r for v, r in zip(verdicts, ratio) if v == LEFT and r > 0]
    n_eq, n_inc = verdicts.count(EQUIV), verdicts.count(INCONCL)
    parts = []
    if slower:
        parts.append(f"{verdict_word(RIGHT)} in {len(slower)} ({_span(slower)}x "
                     f"{reference}'s step time)")
    if faster:
        parts.append(f"{verdict_word(LEFT)} in {len(faster)} ({_span(faster)}x as fast)")
    # the answer's four words (statements.VERDICT_WORDS): within the margin is "as fast"
    if n_eq:
        parts.append(f"as fast in {n_eq}")
    if n_inc:
        parts.append(f"not decided in {n_inc}")
    if parts:  # the first count says of how many: "slower in 2 of 3 versions (...)"
        first, _, rest = parts[0].partition(" (")
        parts[0] = f"{first} of {n} version{'s' if n != 1 else ''}" + (f" ({rest}" if rest else "")
    what = f"{MODE_TEXT.get(mode, mode)}, {API_TEXT.get(api, api)}"
    standin = [_version_of(r) for r in records(head) if bool(r.get("standin"))]
    note = (f"TF {standin[0]}{'–' + standin[-1] if len(standin) > 1 else ''}: tf_keras (the "
            "Keras 2 that tf.keras was) vs TF 1's tf.keras" if standin else "")
    if not n:
        return {"what": what, "text": "no like-for-like pair", "cls": "nodata", "note": "",
                "versions": "", "mode": mode, "api": api}
    worst = max(ratio) if ratio else math.nan
    cls = ("slower" if len(slower) > n / 2 else "equivalent" if n_eq > n / 2
           else "faster" if len(faster) > n / 2 else "mixed")
    return {"what": what, "text": "TF 2.x is " + ", ".join(parts) + ".", "cls": cls,
            "note": note, "mode": mode, "api": api,
            "versions": f"{versions[0]} to {versions[-1]}" if n > 1 else versions[0],
            "worst": worst}


def answer(tabs: dict, min_effect: float, reference: str = "TF 1.14") -> dict:
    """The first screen: sentences and forest panels, from the tf2_vs_tf1 table alone."""
    df = like_for_like(tabs.get("tf2_vs_tf1", pd.DataFrame()))
    if df.empty:
        return {"sentences": [], "panels": [], "n_rows": 0, "reference": reference}
    refs = sorted({text(r) for r in col(df, "right_framework_version").dropna()})
    if refs:
        reference = "TF " + ", ".join(refs)
    keys = panel_keys(df)
    machines = {k[0] for k in keys}
    devices = {k[1] for k in keys}
    sentences, panels = [], []
    for machine, device, mode, api in keys:
        part = df[(col(df, "machine").map(text) == machine) & (col(df, "device").map(text) == device)
                  & (col(df, "mode").map(text) == mode) & (col(df, "api").map(text) == api)]
        head = headline_rows(part)
        s = sentence(mode, api, head, reference, min_effect)
        where = [w for w, many in ((machine, len(machines) > 1), (device.upper(), len(devices) > 1))
                 if many]
        if where:
            s["what"] += " (" + ", ".join(where) + ")"
        sentences.append(s)
        panels.append({"title": s["what"], "rows": forest_rows(part, head)})
    return {"sentences": sentences, "panels": panels, "n_rows": len(df), "reference": reference}


DUETS_ANSWER = ("the duets answer this (the answer above); these cells' rows are in the forest "
                "plot below")


def cells_answer(tabs: dict, min_effect: float, reference: str = "TF 1.14") -> dict:
    """answer() for the cells' section under the duets' answer: one answer per question, so a
    graph or eager train_on_batch() sentence the duets answer is not restated with the cells'
    numbers (its rows stay in the forest plots, shown as what they are)."""
    out = answer(tabs, min_effect, reference)
    duets = tabs.get("duets", pd.DataFrame())
    if duets.empty or "mode" not in duets.columns:
        return out
    answered = {(text(m), text(a)) for m, a in zip(col(duets, "mode"), col(duets, "api"))}
    for s in out["sentences"]:
        if (s.get("mode"), s.get("api")) in answered:
            s.update(text=DUETS_ANSWER, cls="nodata", note="")
    return out


def forest_rows(part: pd.DataFrame, head: pd.DataFrame) -> list[dict]:
    """Every like-for-like row of a panel in version order; the headline row of each version
    first, labelled by its version alone, the others by what differs."""
    head_ids = {(text(r.get("left_env")), text(r.get("left_cell_id"))) for r in records(head)}
    out = []
    for r in records(part):
        is_head = (text(r.get("left_env")), text(r.get("left_cell_id"))) in head_ids
        extra = [text(r.get(c)) for c in ("left_keras", "input") if text(r.get(c))]
        extra += [f"{text(r.get('model'))}-{text(r.get('data'))}"]
        out.append({"version": _version_of(r), "head": is_head,
                    "label": _version_of(r) if is_head else " · ".join(extra),
                    "ratio": num(r.get("ratio")), "lo": num(r.get("ratio_ci_low")),
                    "hi": num(r.get("ratio_ci_high")), "eq_lo": num(r.get("tost_ci_low")),
                    "eq_hi": num(r.get("tost_ci_high")),
                    "verdict": r.get("verdict_n", INCONCL), "standin": bool(r.get("standin"))})
    out.sort(key=lambda x: (version_key(x["version"]), not x["head"], x["label"]))
    return out
