"""The answer in one sentence per question a TensorFlow user asks, first on the page and in
docs/RESULTS.md, each computed from the tables (never typed):

- training in graph mode (tf.function, TF 1's sessions): TF 2.x against the reference TF 1;
- training in eager mode with today's Keras (Keras 3, the tf.keras of TF >= 2.16);
- training in eager mode with Keras 2 (tf.keras up to TF 2.15, the legacy tf_keras after);
- inference on a small batch: calling the model, model(x), against predict().

The training sentences come from the duets table (each version timed in turns beside TF 1 in
two live workers, driver/tables/duets.py) and, where a study has no duets, from the
tf2_vs_tf1 table's like-for-like rows; inference from call_vs_predict. Each sentence says its
numbers (the versions' range of ratios) and how sure the run is, in the words every other part
of the page uses (driver/stats/verdicts.py): *slower* or *faster* when a version's tested
interval leaves 1 out, *within ±10 %* when its equivalence interval lies inside the margin
(*equivalent*), and *undecided* (too close to call) otherwise.
"""
import math

import numpy as np
import pandas as pd

from driver.report.answer import headline_rows, like_for_like, norm_verdict
from driver.report.bottom_line import HEADLINE_API, duet_rows
from driver.report.fmt import col, ncol, num, records, text, version_key
from driver.stats.verdicts import EQUIVALENT, LEFT_FASTER, RIGHT_FASTER


def _x(value: float) -> str:
    return f"{value:.2f}x"


def _span(values) -> str:
    vals = [v for v in values if math.isfinite(v)]
    if not vals:
        return "no ratio"
    lo, hi = min(vals), max(vals)
    return _x(lo) if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}x"


def _versions(vers: list[str]) -> str:
    vers = sorted({v for v in vers if v}, key=version_key)
    if not vers:
        return ""
    return f"TF {vers[0]}" if len(vers) == 1 else f"TF {vers[0]}–{vers[-1]}"


def summary(rows: pd.DataFrame) -> dict:
    """Counts and ranges of a set of TF 2.x vs TF 1 rows (one per version): how many are
    slower, faster, equivalent (within the margin) and undecided, the ratios' range and median,
    and the versions of each kind with their tested interval."""
    recs = sorted(records(rows), key=lambda r: version_key(
        text(r.get("left_framework_version")) or text(r.get("left_env"))))
    out = {"n": 0, "slower": [], "faster": [], "equivalent": [], "undecided": [],
           "ratios": [], "versions": []}
    for r in recs:
        ratio = num(r.get("ratio"))
        if not math.isfinite(ratio):
            continue
        version = text(r.get("left_framework_version")) or text(r.get("left_env"))
        item = {"version": version, "ratio": ratio, "lo": num(r.get("ratio_ci_low")),
                "hi": num(r.get("ratio_ci_high"))}
        verdict = norm_verdict(r.get("verdict"))
        kind = {RIGHT_FASTER: "slower", LEFT_FASTER: "faster",
                EQUIVALENT: "equivalent"}.get(verdict, "undecided")
        out[kind].append(item)
        out["ratios"].append(ratio)
        out["versions"].append(version)
        out["n"] += 1
    out["median"] = float(np.median(out["ratios"])) if out["ratios"] else math.nan
    return out


def training_sentence(s: dict, reference: str, margin: float) -> tuple[str, str]:
    """(sentence, css class) for one set of versions against the reference: the verdict in
    words with the count of versions that carry it (how sure the run is), the ratios' range,
    the versions that go the other way and those too close to call."""
    n = s["n"]
    if not n:
        return f"no TF 2.x version was compared with {reference}.", "nodata"
    n_slow, n_fast, n_eq = len(s["slower"]), len(s["faster"]), len(s["equivalent"])
    of = f"{{}} of {n} versions" if n > 1 else "{}"
    within = f"within ±{margin * 100:.0f} %"
    extra = []
    if n_slow == 0 and n_fast:
        lead, cls = f"as fast as {reference} or faster in " + of.format(n_fast + n_eq), "faster"
    elif n_slow == 0 and n_eq:
        lead, cls = f"as fast as {reference}, {within} in " + of.format(n_eq), "equal"
    elif n_slow * 2 > n:
        lead = f"slower, typically {_x(s['median'])} {reference}'s step time"
        lead += "" if n == 1 else f"; slower in {n_slow} of {n} versions"
        cls = "slower"
    elif n_slow * 4 <= n:
        lead, cls = f"as fast as {reference} or faster in " + of.format(n_fast + n_eq), "faster"
        extra.append("slower: " + ", ".join(f"TF {i['version']} ({_x(i['ratio'])})"
                                            for i in s["slower"]))
    else:
        lead = (f"slower in {n_slow}, faster in {n_fast}, {within} in {n_eq} of {n} versions")
        cls = "mixed"
    und = s["undecided"]
    if und:
        extra.append("undecided: " + ", ".join(f"TF {i['version']}" for i in und)
                     if len(und) <= 2 else f"{len(und)} undecided")
    body = f"{lead} ({_span(s['ratios'])})"
    return body + "".join(f"; {e}" for e in extra) + ".", cls


def _cells_part(tf2: pd.DataFrame, mode: str, lefts: set[str]) -> pd.DataFrame:
    """The tf2_vs_tf1 rows of a mode (train_on_batch, numpy) whose TF 2 side uses one of
    `lefts` against TF 1's tf.keras: Keras 3 is not like for like, so it is taken apart here."""
    if tf2.empty:
        return pd.DataFrame()
    df = tf2[(col(tf2, "mode").map(text) == mode) & (col(tf2, "api").map(text) == HEADLINE_API)
             & (col(tf2, "right_keras").map(text) == "tf.keras")]
    if "input" in df.columns:
        df = df[col(df, "input").map(text) == "numpy"]
    df = df[col(df, "left_keras").map(text).isin(lefts)]
    if "keras3" in lefts:
        return df
    return headline_rows(like_for_like(df)) if not df.empty else df


def training_rows(tabs: dict) -> dict:
    """The rows behind the three training questions, from the duets when there are any."""
    duets = tabs.get("duets", pd.DataFrame())
    tf2 = tabs.get("tf2_vs_tf1", pd.DataFrame())
    if not duets.empty and "mode" in duets.columns:
        # the Keras each version's users get by default, and the legacy tf_keras beside Keras 3
        eager = duet_rows(duets, "eager")
        k3 = col(eager, "keras").map(text) == "keras3"
        k2 = pd.concat([eager[~k3], duet_rows(duets, "eager", legacy=True)])
        return {"graph": duet_rows(duets, "graph"), "keras3": eager[k3], "keras2": k2,
                "source": "duets"}
    return {"graph": _cells_part(tf2, "graph", {"tf.keras", "tf_keras", "keras"}),
            "keras3": _cells_part(tf2, "eager", {"keras3"}),
            "keras2": _cells_part(tf2, "eager", {"tf.keras", "tf_keras", "keras"}),
            "source": "cells"}


def inference(tabs: dict) -> dict | None:
    """model(x) against predict() on one small batch, TF 2 only: from call_vs_predict, whose
    ratio is call / predict (below 1: calling the model is faster)."""
    cvp = tabs.get("call_vs_predict", pd.DataFrame())
    if cvp.empty or "ratio" not in cvp.columns:
        return None
    major = col(cvp, "framework_version").map(lambda v: version_key(text(v))[0] if text(v) else 0)
    tf2 = cvp[major >= 2]
    out = {}
    for mode in ("eager", "graph"):
        part = tf2[col(tf2, "mode").map(text) == mode]
        if part.empty:
            continue
        ratio = 1.0 / ncol(part, "ratio")  # predict / call: how many times slower predict is
        lo, hi = 1.0 / ncol(part, "ratio_ci_high"), 1.0 / ncol(part, "ratio_ci_low")
        verdicts = [norm_verdict(v) for v in col(part, "verdict")]
        out[mode] = {"span": _span(ratio.tolist()), "n": len(part),
                     "call_faster": verdicts.count(LEFT_FASTER),
                     "predict_faster": verdicts.count(RIGHT_FASTER),
                     "ci": _span(lo.tolist() + hi.tolist()),
                     "versions": _versions(col(part, "framework_version").map(text).tolist())}
    return out or None


def inference_sentence(inf: dict | None) -> tuple[str, str]:
    """'call model(x), not predict(): predict() takes <lo>–<hi>x as long in eager mode (<k> of
    <n> versions), ...' where calling the model is decided faster; the other modes as they are."""
    if not inf:
        return ("not measured in this study (no model(x) against predict() rows: add the "
                "apis call and predict to a grid).", "nodata")
    slower, other = [], []
    for mode in ("eager", "graph"):
        m = inf.get(mode)
        if not m:
            continue
        which = f"{m['call_faster']} of {m['n']} versions" if m["n"] > 1 else m["versions"]
        if m["call_faster"]:
            slower.append(f"{m['span']} as long in {mode} mode ({which})")
        elif m["predict_faster"]:
            other.append(f"predict() is faster in {mode} mode ({m['versions']})")
        else:
            other.append(f"undecided in {mode} mode ({m['versions']})")
    if slower:
        out = "call model(x), not predict(): predict() takes " + ", ".join(slower)
        return out + "".join(f"; {o}" for o in other) + ".", "slower"
    return "predict() against model(x): " + "; ".join(other) + ".", "mixed"


def questions(tabs: dict, min_effect: float, reference: str) -> dict:
    """{"items": [{"id", "question", "text", "cls", "n"}], "source": "duets" | "cells"}: one
    sentence per question, in the page's order."""
    rows = training_rows(tabs)
    items = []
    k3 = summary(rows["keras3"])
    k3_versions = _versions(k3["versions"])
    k2 = summary(rows["keras2"])
    for qid, question, s in (
            ("graph", "Training, graph mode (tf.function)", summary(rows["graph"])),
            ("keras3", "Training, eager, today's Keras"
             + (f" (Keras 3, {k3_versions})" if k3_versions else " (Keras 3)"), k3),
            ("keras2", "Training, eager, Keras 2 (tf.keras to TF 2.15, tf_keras after)", k2)):
        if not s["n"] and qid == "keras3":
            continue  # a study without TF >= 2.16 has no Keras 3 question to answer
        sentence, cls = training_sentence(s, reference, min_effect)
        items.append({"id": qid, "question": question, "text": sentence, "cls": cls,
                      "n": s["n"], "summary": s})
    sentence, cls = inference_sentence(inference(tabs))
    items.append({"id": "inference", "question": "Inference, small batch", "text": sentence,
                  "cls": cls, "n": 0, "summary": None})
    return {"items": items, "source": rows["source"]}
