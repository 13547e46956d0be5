"""One source for each statement of the answer: a Claim is a sentence built once from the rows it
covers (their ids and numbers kept with it), and the report's first screen, docs/RESULTS.md and
the README's answer block (driver/report/readme_block.py) all print the same Claim objects.

A claim splits its rows into groups by what each row's intervals say (driver/stats/verdicts.py
decides; this module only names): *slower* / *faster* (the verdict), *within ±m %* (equivalent,
its equivalence interval inside the margin), split by the tested interval into *as fast* (it
holds 1), *slower by a–b %, within ±m %* (it lies above 1) and *faster by a–b %, within ±m %*
(below 1), and *undecided*. Every group says its count and the range of exactly its own rows'
ratios, so no range covers a row its count leaves out. A table with several machine keys gives
one claim per machine and question (twin keys, the A/A check's copies, are not machines).

The modes as TensorFlow users know them (MODES): *graph* is the TF 1-style graph
(`tf.compat.v1.disable_eager_execution()` in TF 2; tfspeed/backends/tf.py: setup), *eager* is
TF 2's default, where Keras compiles the train step with tf.function unless `run_eagerly=True`,
and *function* is a custom training step the user wraps in `@tf.function` (a mode of its own,
never in the answer's training rows)."""
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from driver.report.answer import headline_rows, like_for_like, norm_verdict
from driver.report.bottom_line import HEADLINE_API, duet_rows
from driver.report.fmt import col, num, records, text, version_key
from driver.stats.verdicts import EQUIVALENT, LEFT_FASTER, RIGHT_FASTER
from driver.study import layout

MODES = {
    "graph": "TF 1-style graph: `tf.compat.v1.disable_eager_execution()` in TF 2, sessions in TF 1",
    "eager": "TF 2's default; Keras still compiles the train step with `tf.function` unless "
             "`run_eagerly=True`",
    "function": "your own training step wrapped in `@tf.function`",
}
WORKLOAD = ("one `train_on_batch()` step of the study's small Conv1D model on a numpy batch, "
            "its ratio TF 2.x's step time over TF {reference}'s in the same mode")

LABELS = {"graph": "Training, TF 1-style graph", "keras3": "Training, eager, Keras 3",
          "keras2": "Training, eager, Keras 2",
          "inference": "Inference, one small batch, predict() against model(x)"}

# group kinds, in the order a sentence lists them when their counts tie
KINDS = ("faster", "as fast", "within, slower", "within, faster", "slower", "undecided")


@dataclass(frozen=True)
class Row:
    """One row a claim covers: its id (machine:env:mode:keras), version, Keras and numbers."""
    id: str
    version: str
    keras: str
    ratio: float
    lo: float
    hi: float
    verdict: str


@dataclass(frozen=True)
class Group:
    kind: str  # one of KINDS
    rows: tuple  # Row, in version order

    @property
    def span(self) -> tuple[float, float]:
        r = [x.ratio for x in self.rows]
        return min(r), max(r)


@dataclass(frozen=True)
class Claim:
    question: str  # graph, keras3, keras2, inference
    machine: str
    label: str  # the question: "Training, TF 1-style graph"
    scope: str  # what this machine's rows are: "tf.keras to TF 2.15.1, tf_keras from TF 2.16.2"
    text: str
    cls: str
    groups: tuple  # Group

    @property
    def rows(self) -> tuple:
        return tuple(r for g in self.groups for r in g.rows)

    @property
    def row_ids(self) -> tuple:
        return tuple(r.id for r in self.rows)

    def count(self, kind: str) -> int:
        return sum(len(g.rows) for g in self.groups if g.kind == kind)


def kind_of(verdict: str, lo: float, hi: float) -> str:
    """The group a row belongs to, from its verdict and its tested interval [lo, hi]."""
    if verdict == RIGHT_FASTER:
        return "slower"
    if verdict == LEFT_FASTER:
        return "faster"
    if verdict == EQUIVALENT:
        if lo > 1:
            return "within, slower"
        if hi < 1:
            return "within, faster"
        return "as fast"
    return "undecided"


def x(value: float) -> str:
    return f"{value:.2f}x"


def span_text(lo: float, hi: float) -> str:
    return x(lo) if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}x"


def _pct(lo: float, hi: float) -> str:
    a, b = sorted((abs(lo - 1) * 100, abs(hi - 1) * 100))
    a, b = round(a), round(b)
    return f"{b} %" if a == b else f"{a}–{b} %"


def group_word(group: Group, margin: float, slower="slower", faster="faster") -> str:
    """What a group's rows are, in words that say what their intervals say."""
    within = f"within ±{margin * 100:.0f} %"
    lo, hi = group.span
    return {"faster": faster, "slower": slower, "undecided": "undecided",
            "as fast": f"as fast, {within},",
            "within, slower": f"{slower} by {_pct(lo, hi)}, {within},",
            "within, faster": f"{faster} by {_pct(lo, hi)}, {within},"}[group.kind]


def group_text(group: Group, n: int, first: bool, margin: float, **words) -> str:
    """'<word> in <k>[ of <n>] version[s] (<lo>–<hi>x[, median <m>x][: TF a, TF b])': the range
    and median of this group's rows alone, and the versions where there are three or fewer."""
    k = len(group.rows)
    count = f"{k} of {n} versions" if first and n > 1 else f"{k} version" if k == 1 \
        else f"{k} versions"
    lo, hi = group.span
    detail = span_text(lo, hi)
    if k >= 3:
        detail += f", median {x(float(np.median([r.ratio for r in group.rows])))}"
    if k <= 3:
        detail += ": " + ", ".join(f"TF {r.version}" for r in group.rows)
    return f"{group_word(group, margin, **words)} in {count} ({detail})"


def groups_of(rows: list) -> tuple:
    """Rows into groups, the largest first (ties in KINDS order)."""
    found = {}
    for r in rows:
        found.setdefault(kind_of(r.verdict, r.lo, r.hi), []).append(r)
    return tuple(Group(k, tuple(v)) for k, v in sorted(
        found.items(), key=lambda kv: (-len(kv[1]), KINDS.index(kv[0]))))


def rows_of(df: pd.DataFrame, mode: str = "") -> list:
    """The Rows of a table part (duets or tf2_vs_tf1: the TF 2 side is `left`), version order."""
    out = []
    for r in records(df):
        ratio = num(r.get("ratio"))
        if not math.isfinite(ratio):
            continue
        version = text(r.get("left_framework_version")) or text(r.get("left_env"))
        keras = text(r.get("keras")) or text(r.get("left_keras"))
        env = text(r.get("env")) or text(r.get("left_env"))
        out.append(Row(f"{text(r.get('machine'))}:{env}:{mode or text(r.get('mode'))}:{keras}",
                       version, keras, ratio, num(r.get("ratio_ci_low")),
                       num(r.get("ratio_ci_high")), norm_verdict(r.get("verdict"))))
    return sorted(out, key=lambda r: version_key(r.version))


def keras_text(rows) -> str:
    """Which Keras the rows use, by version: 'tf.keras to TF 2.15.1, tf_keras from TF 2.16.2'."""
    runs = []
    for r in rows:
        if runs and runs[-1][0] == r.keras:
            runs[-1][2] = r.version
        else:
            runs.append([r.keras, r.version, r.version])
    if len(runs) == 1:
        return runs[0][0]
    parts = []
    for i, (keras, first, last) in enumerate(runs):
        parts.append(f"{keras} to TF {last}" if i == 0 else f"{keras} from TF {first}"
                     if i == len(runs) - 1 else f"{keras} TF {first}–{last}")
    return ", ".join(parts)


def training_claim(qid: str, machine: str, rows: list, reference: str, margin: float) -> Claim:
    label = LABELS[qid]
    scope = keras_text(rows) if rows else ""
    if qid == "keras3" and rows:
        vers = sorted({r.version for r in rows}, key=version_key)
        scope = f"TF {vers[0]}" if len(vers) == 1 else f"TF {vers[0]}–{vers[-1]}"
    if not rows:
        return Claim(qid, machine, label, "", f"no TF 2.x version was compared with "
                     f"{reference}.", "nodata", ())
    groups = groups_of(rows)
    n = len(rows)
    body = "; ".join(group_text(g, n, i == 0, margin) for i, g in enumerate(groups))
    slow = sum(len(g.rows) for g in groups if g.kind == "slower")
    fast = sum(len(g.rows) for g in groups if g.kind == "faster")
    cls = "slower" if slow * 2 > n else "faster" if fast * 2 > n else \
        "equal" if not slow and not fast else "mixed"
    return Claim(qid, machine, label, scope, body + ".", cls, groups)


def _machines(*frames) -> list[str]:
    keys = set()
    for df in frames:
        if df is not None and not df.empty:
            keys |= {text(m) for m in col(df, "machine").dropna()}
    return sorted(k for k in keys if not layout.is_twin(k)) or [""]


def _on(df: pd.DataFrame, machine: str) -> pd.DataFrame:
    if df.empty or not machine or "machine" not in df.columns:
        return df
    return df[col(df, "machine").map(text) == machine]


def _cells_part(tf2: pd.DataFrame, mode: str, lefts: set) -> pd.DataFrame:
    """tf2_vs_tf1 rows of a mode (train_on_batch, numpy) whose TF 2 side uses one of `lefts`
    against TF 1's tf.keras (Keras 3 is not like for like, so it is taken apart here)."""
    if tf2.empty:
        return pd.DataFrame()
    df = tf2[(col(tf2, "mode").map(text) == mode) & (col(tf2, "api").map(text) == HEADLINE_API)
             & (col(tf2, "right_keras").map(text) == "tf.keras")]
    if "input" in df.columns:
        df = df[col(df, "input").map(text) == "numpy"]
    df = df[col(df, "left_keras").map(text).isin(lefts)]
    if "keras3" in lefts or df.empty:
        return df
    return headline_rows(like_for_like(df))


def training_rows(tabs: dict, machine: str = "") -> dict:
    """{question: [Row]} behind the three training questions on one machine, from the duets when
    the study has any, else from tf2_vs_tf1's like-for-like rows; and "source"."""
    duets = _on(tabs.get("duets", pd.DataFrame()), machine)
    if not duets.empty and "mode" in duets.columns:
        eager = duet_rows(duets, "eager")
        k3 = col(eager, "keras").map(text) == "keras3"
        k2 = pd.concat([eager[~k3], duet_rows(duets, "eager", legacy=True)])
        return {"graph": rows_of(duet_rows(duets, "graph"), "graph"),
                "keras3": rows_of(eager[k3], "eager"), "keras2": rows_of(k2, "eager"),
                "source": "duets"}
    tf2 = _on(tabs.get("tf2_vs_tf1", pd.DataFrame()), machine)
    return {"graph": rows_of(_cells_part(tf2, "graph", {"tf.keras", "tf_keras", "keras"})),
            "keras3": rows_of(_cells_part(tf2, "eager", {"keras3"})),
            "keras2": rows_of(_cells_part(tf2, "eager", {"tf.keras", "tf_keras", "keras"})),
            "source": "cells"}


# the inference claim's modes, in its order, with the names its sentence gives them
INFERENCE_MODES = (("eager", "eager"), ("graph", "TF 1-style graph"))


def mode_groups(claim: Claim) -> list[tuple[str, str, tuple]]:
    """The inference claim's groups per mode, as its sentence lists them: [(mode, name,
    groups)], modes without rows left out (inference_claim groups each mode's rows apart, so
    every group's rows share one mode: the third part of their ids)."""
    out = []
    for mode, name in INFERENCE_MODES:
        groups = tuple(g for g in claim.groups if g.rows[0].id.split(":")[2] == mode)
        if groups:
            out.append((mode, name, groups))
    return out


def inference_claim(tabs: dict, machine: str, margin: float) -> Claim:
    """model(x) against predict() on one small batch, every version measured, per mode: how many
    times model(x)'s time predict() takes (call_vs_predict's ratio is call / predict)."""
    cvp = _on(tabs.get("call_vs_predict", pd.DataFrame()), machine)
    label = LABELS["inference"]
    if cvp.empty or "ratio" not in cvp.columns:
        return Claim("inference", machine, label, "", "not measured in this study (no model(x) "
                     "against predict() rows: add the apis call and predict to a grid).",
                     "nodata", ())
    parts, groups = [], []
    flip = {LEFT_FASTER: RIGHT_FASTER, RIGHT_FASTER: LEFT_FASTER}
    for mode, name in INFERENCE_MODES:
        rows = []
        for r in records(cvp[col(cvp, "mode").map(text) == mode]):
            ratio = num(r.get("ratio"))
            if not math.isfinite(ratio) or ratio <= 0:
                continue
            v = norm_verdict(r.get("verdict"))
            rows.append(Row(f"{text(r.get('machine'))}:{text(r.get('env'))}:{mode}:"
                            f"{text(r.get('keras'))}", text(r.get("framework_version")),
                            text(r.get("keras")), 1 / ratio, 1 / num(r.get("ratio_ci_high")),
                            1 / num(r.get("ratio_ci_low")), flip.get(v, v)))
        if not rows:
            continue
        rows.sort(key=lambda r: version_key(r.version))
        g = groups_of(rows)
        groups += g
        parts.append(f"{name}: " + "; ".join(
            group_text(grp, len(rows), i == 0, margin, slower="predict() slower",
                       faster="predict() faster") for i, grp in enumerate(g)))
    cls = "slower" if all(grp.kind == "slower" for grp in groups) else "mixed"
    vers = sorted({r.version for g in groups for r in g.rows}, key=version_key)
    scope = f"TF {vers[0]}–{vers[-1]}" if len(vers) > 1 else f"TF {vers[0]}" if vers else ""
    return Claim("inference", machine, label, scope, ". ".join(parts) + "; the ratio is predict()'s "
                 "time over model(x)'s.", cls, tuple(groups))


def claims(tabs: dict, margin: float, reference: str) -> dict:
    """{"machines": [key], "source": "duets" | "cells", "items": [Claim]}: per question (graph,
    keras3, keras2, inference), one claim per machine, in that order. A study without TF >= 2.16
    on any machine has no Keras 3 question."""
    machines = _machines(tabs.get("duets"), tabs.get("tf2_vs_tf1"), tabs.get("call_vs_predict"))
    rows = {m: training_rows(tabs, m) for m in machines}
    items = []
    for qid in ("graph", "keras3", "keras2"):
        if qid == "keras3" and not any(rows[m]["keras3"] for m in machines):
            continue
        items += [training_claim(qid, m, rows[m][qid], reference, margin) for m in machines]
    items += [inference_claim(tabs, m, margin) for m in machines]
    sources = {rows[m]["source"] for m in machines}
    return {"machines": [m for m in machines if m], "items": items,
            "source": "duets" if "duets" in sources else "cells"}


TALLY_WORDS = {"faster": "faster", "slower": "slower", "undecided": "undecided",
               "as fast": "as fast", "within, slower": "within ±{m} % but slower",
               "within, faster": "within ±{m} % but faster"}


def tally(claim: Claim, margin: float) -> str:
    """The claim in counts alone, for a first screen that holds several machines: '11 of 22 as
    fast, 9 undecided, 1 slower' (groups as the sentence orders them; the inference claim per
    mode, its words 'predict() slower'/'predict() faster'). The same rows as claim.text."""
    if not claim.rows:
        return claim.text
    m = f"{margin * 100:.0f}"

    def counts(groups: tuple, n: int, pre: str) -> str:
        out = []
        for i, g in enumerate(groups):
            word = TALLY_WORDS[g.kind].format(m=m)
            if pre and g.kind in ("faster", "slower"):
                word = f"{pre} {word}"
            k = len(g.rows)
            out.append(f"{k} of {n} {word}" if i == 0 else f"{k} {word}")
        return ", ".join(out)

    if claim.question != "inference":
        return counts(claim.groups, len(claim.rows), "")
    return "; ".join(f"{name}: {counts(groups, sum(len(g.rows) for g in groups), 'predict()')}"
                     for _, name, groups in mode_groups(claim))


def by_question(found: dict, margin: float = 0.10) -> list[dict]:
    """The claims grouped for display, questions in order: [{"id", "label", "claims", "lines"}],
    each line {"who", "text", "cls", "machine", "tally"}: with one machine, who is the claim's
    scope (its label's parenthesis); with several, the machine key and its scope, one line per
    machine; tally is the claim in counts alone (the first screen of several machines)."""
    out: dict = {}
    several = len(found["machines"]) > 1
    for c in found["items"]:
        q = out.setdefault(c.question, {"id": c.question, "label": c.label, "claims": [],
                                        "lines": []})
        q["claims"].append(c)
        who = f"{c.machine} ({c.scope})" if several and c.scope else c.machine if several \
            else c.scope
        q["lines"].append({"who": who, "text": c.text, "cls": c.cls, "machine": c.machine,
                           "tally": tally(c, margin)})
    return list(out.values())


def line_markdown(q: dict) -> list[str]:
    """A question as Markdown list lines (RESULTS.md and the README block): one bullet, or with
    several machines a bullet with one sub-bullet per machine."""
    if len(q["lines"]) == 1:
        ln = q["lines"][0]
        return [f"- **{q['label']}**" + (f" ({ln['who']})" if ln["who"] else "")
                + f": {ln['text']}"]
    return [f"- **{q['label']}**:"] + [f"  - {ln['who']}: {ln['text']}" for ln in q["lines"]]
