"""One source for each statement of the answer: a Claim is a sentence built once from the rows it
covers (their ids and numbers kept with it), and the report's first screen, docs/RESULTS.md and
the README's answer block (driver/report/readme_block.py) all print the same Claim objects.

A claim splits its rows into groups by the verdict of each row (driver/stats/verdicts.py decides;
this module only names), in four words and no more (VERDICT_WORDS): *faster* and *slower* (decided,
outside the margin), *as fast* (equivalent: inside ±m %, on whichever side of 1) and *not
decided*. The exact ratio and interval of each row stay in the tables and plots. A claim says its
answer first (answer_word: the one word, "mostly <word>" where more than half the rows share it,
else "it depends"), then every group's count and the range of exactly its own rows'
ratios, so no range covers a row its count leaves out. A table with several machine keys gives
one claim per machine and question (twin keys, the A/A check's copies, are not machines), each
machine named in plain words (machine_names: "2-core AMD EPYC"); the key stays in the tables.
How the claims are shown (counts alone, lines per question, Markdown, the fit() note beside the
answer) is driver/report/claim_lines.py.

The modes as TensorFlow users know them (MODES): *graph* is the TF 1-style graph
(`tf.compat.v1.disable_eager_execution()` in TF 2; tfspeed/backends/tf.py: setup), *eager* is
TF 2's default, where Keras compiles the train step with tf.function unless `run_eagerly=True`,
and *function* is a custom training step the user wraps in `@tf.function` (a mode of its own,
never in the answer's training rows)."""
import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from driver.report.answer import headline_rows, like_for_like, norm_verdict
from driver.report.bottom_line import HEADLINE_API, duet_rows
from driver.report.fmt import col, num, records, text, version_key
from driver.report.fmt import machine_names as fmt_machine_names
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

LABELS = {"graph": "Training in the TF 1-style graph", "keras3": "Training with Keras 3, eager",
          "keras2": "Training with Keras 2, eager",
          "inference": "Inference on one small batch: is predict() slower than calling model(x)?"}

# the four verdict words of an answer line, in the order a sentence lists groups whose counts tie
KINDS = VERDICT_WORDS = ("faster", "as fast", "slower", "not decided")
# between a line's answer and its counts (closed up, as an em dash is set)
DASH = "—"


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
    machine: str  # the key, as the tables have it
    label: str  # the question: "Training, TF 1-style graph"
    scope: str  # what this machine's rows are: "tf.keras to TF 2.15.1, tf_keras from TF 2.16.2"
    text: str
    cls: str
    groups: tuple  # Group
    name: str = ""  # the machine in plain words ("2-core AMD EPYC")

    @property
    def rows(self) -> tuple:
        return tuple(r for g in self.groups for r in g.rows)

    @property
    def row_ids(self) -> tuple:
        return tuple(r.id for r in self.rows)

    def count(self, kind: str) -> int:
        return sum(len(g.rows) for g in self.groups if g.kind == kind)


def kind_of(verdict: str, lo: float = math.nan, hi: float = math.nan) -> str:
    """The group a row belongs to, from its verdict alone: an equivalent row is "as fast"
    whichever side of 1 its interval lies (its exact ratio and interval are in the tables)."""
    del lo, hi  # the verdict says it all; kept for callers that pass the interval
    return {RIGHT_FASTER: "slower", LEFT_FASTER: "faster", EQUIVALENT: "as fast"}.get(
        verdict, "not decided")


def x(value: float) -> str:
    return f"{value:.2f}x"


def span_text(lo: float, hi: float) -> str:
    return x(lo) if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}x"


def word(kind: str, prefix: str = "") -> str:
    """A group's verdict word; `prefix` ("predict() ") before faster and slower."""
    return prefix + kind if kind in ("faster", "slower") else kind


def answer_word(groups: tuple, prefix: str = "") -> str:
    """A claim's (or one mode's) answer before its counts: the one word of every row, "mostly
    <word>" where more than half the rows share it, else "it depends"."""
    n = sum(len(g.rows) for g in groups)
    if not n:
        return "not measured"
    top = groups[0]  # the largest group (groups_of)
    if len(top.rows) == n:
        return word(top.kind, prefix)
    if 2 * len(top.rows) > n:
        return (f"{prefix}mostly {top.kind}" if top.kind in ("faster", "slower")
                else f"mostly {top.kind}")
    return "it depends"


def says_first(groups: tuple, prefix: str = "") -> bool:
    """Does the answer name the first group's word ("mostly slower" for the slower group)? Its
    count then goes without the word: "mostly slower—in <k> of <n> versions (...)"."""
    said = answer_word(groups, prefix).removeprefix(prefix).removeprefix("mostly ")
    return bool(groups) and said == groups[0].kind


def answered(groups: tuple, prefix: str = "") -> str:
    """'<answer>—<group>; <group>...': a claim's (or one mode's) answer, then its groups."""
    n = sum(len(g.rows) for g in groups)
    bare = says_first(groups, prefix)
    return answer_word(groups, prefix) + DASH + "; ".join(
        group_text(g, n, i == 0, prefix, bare=bare and i == 0) for i, g in enumerate(groups))


def group_text(group: Group, n: int, first: bool, prefix: str = "", bare: bool = False) -> str:
    """'<word> in <k>[ of <n>] version[s] (<lo>–<hi>x[, median <m>x][: TF a, TF b])': the range
    and median of this group's rows alone, and the versions where there are three or fewer;
    `bare`: without the word (the answer before it says it)."""
    k = len(group.rows)
    count = f"{k} of {n} versions" if first and n > 1 else f"{k} version" if k == 1 \
        else f"{k} versions"
    lo, hi = group.span
    detail = span_text(lo, hi)
    if k >= 3:
        detail += f", median {x(float(np.median([r.ratio for r in group.rows])))}"
    if k <= 3:
        detail += ": " + ", ".join(f"TF {r.version}" for r in group.rows)
    return ("" if bare else f"{word(group.kind, prefix)} ") + f"in {count} ({detail})"


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
    body = answered(groups)
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


def machine_keys(tabs: dict) -> list[str]:
    """The machines the answer covers (twin keys left out; [""] when the tables name none)."""
    return _machines(tabs.get("duets"), tabs.get("tf2_vs_tf1"), tabs.get("call_vs_predict"))


def on_machine(df: pd.DataFrame, machine: str) -> pd.DataFrame:
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
    duets = on_machine(tabs.get("duets", pd.DataFrame()), machine)
    if not duets.empty and "mode" in duets.columns:
        eager = duet_rows(duets, "eager")
        k3 = col(eager, "keras").map(text) == "keras3"
        k2 = pd.concat([eager[~k3], duet_rows(duets, "eager", legacy=True)])
        return {"graph": rows_of(duet_rows(duets, "graph"), "graph"),
                "keras3": rows_of(eager[k3], "eager"), "keras2": rows_of(k2, "eager"),
                "source": "duets"}
    tf2 = on_machine(tabs.get("tf2_vs_tf1", pd.DataFrame()), machine)
    return {"graph": rows_of(_cells_part(tf2, "graph", {"tf.keras", "tf_keras", "keras"})),
            "keras3": rows_of(_cells_part(tf2, "eager", {"keras3"})),
            "keras2": rows_of(_cells_part(tf2, "eager", {"tf.keras", "tf_keras", "keras"})),
            "source": "cells"}


# the inference claim's modes, in its order, with the names its sentence gives them
INFERENCE_MODES = (("eager", "eager"), ("graph", "TF 1-style graph"))
PREDICT = "predict() "  # the inference claim's faster and slower are predict()'s


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


def paired_call_vs_predict(pairs, machine: str) -> dict:
    """{(env, mode, keras): row} of the pairs table's model(x)-against-predict() rows on the
    machine (a pair in one process: left model(x), right predict(), the ratio call / predict as
    the cells' call_vs_predict has it), with the cells' column names, so that the answer takes
    the paired verdict where a pair answers (docs/design.md "Every verdict from a paired row")."""
    pairs = on_machine(pairs if pairs is not None else pd.DataFrame(), machine)
    if pairs.empty or not {"table", "left_cell_id", "right_cell_id"} <= set(pairs.columns):
        return {}
    out = {}
    for r in records(pairs[col(pairs, "table").map(text) == "call_vs_predict"]):
        left, right = (text(r.get(k)).split(".") for k in ("left_cell_id", "right_cell_id"))
        if len(left) < 4 or len(right) < 4 or (left[3], right[3]) != ("call", "predict"):
            continue
        keras = text(r.get("left_keras")) or text(r.get("keras"))
        out[(text(r.get("env")), text(r.get("mode")), keras)] = dict(
            r, framework_version=r.get("left_framework_version"), keras=keras, paired=True)
    return out


def inference_claim(tabs: dict, machine: str, margin: float) -> Claim:
    """model(x) against predict() on one small batch, every version measured, per mode: how many
    times model(x)'s time predict() takes (call_vs_predict's ratio is call / predict)."""
    cvp = on_machine(tabs.get("call_vs_predict", pd.DataFrame()), machine)
    label = LABELS["inference"]
    if cvp.empty or "ratio" not in cvp.columns:
        return Claim("inference", machine, label, "", "not measured in this study (no model(x) "
                     "against predict() rows: add the apis call and predict to a grid).",
                     "nodata", ())
    # TensorFlow's own model(x) against predict() (the envs whose cells say tensorflow, where
    # the cells are at hand; a Keras 3 env on JAX or torch is not a TF version)
    cells = tabs.get("cells")
    if cells is not None and not cells.empty and {"env", "framework"} <= set(cells.columns):
        tf_envs = set(cells.loc[col(cells, "framework").map(text) == "tensorflow", "env"]
                      .map(text))
        cvp = cvp[col(cvp, "env").map(text).isin(tf_envs)]
    if {"left_api", "right_api"} <= set(cvp.columns):
        apis = col(cvp, "left_api").map(text) + "/" + col(cvp, "right_api").map(text)
        cvp = cvp[apis.isin(["call/predict", "predict/call"])]
    paired = paired_call_vs_predict(tabs.get("pairs"), machine)
    parts, groups = [], []
    flip = {LEFT_FASTER: RIGHT_FASTER, RIGHT_FASTER: LEFT_FASTER}
    for mode, name in INFERENCE_MODES:
        rows = []
        for r in records(cvp[col(cvp, "mode").map(text) == mode]):
            # the pair in one process of the same env, mode and Keras decides where it exists
            r = paired.get((text(r.get("env")), mode, text(r.get("keras"))), r)
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
        parts.append(f"{name}: {answered(g, PREDICT)}")
    cls = "slower" if all(grp.kind == "slower" for grp in groups) else "mixed"
    vers = sorted({r.version for g in groups for r in g.rows}, key=version_key)
    scope = f"TF {vers[0]}–{vers[-1]}" if len(vers) > 1 else f"TF {vers[0]}" if vers else ""
    return Claim("inference", machine, label, scope, ". ".join(parts) + "; the ratio is predict()'s "
                 "time over model(x)'s.", cls, tuple(groups))


def claims(tabs: dict, margin: float, reference: str, names: dict | None = None) -> dict:
    """{"machines": [key], "names": {key: plain name}, "source": "duets" | "cells", "items":
    [Claim]}: per question (graph, keras3, keras2, inference), one claim per machine, in that
    order. A study without TF >= 2.16 on any machine has no Keras 3 question. `names`: the
    machines in plain words (machine_names), else read from tabs["cells"]."""
    machines = machine_keys(tabs)
    names = names if names is not None else machine_names(tabs.get("cells"), {}, machines)
    rows = {m: training_rows(tabs, m) for m in machines}
    items = []
    for qid in ("graph", "keras3", "keras2"):
        if qid == "keras3" and not any(rows[m]["keras3"] for m in machines):
            continue
        items += [training_claim(qid, m, rows[m][qid], reference, margin) for m in machines]
    items += [inference_claim(tabs, m, margin) for m in machines]
    items = [replace(c, name=names.get(c.machine) or c.machine) for c in items]
    sources = {rows[m]["source"] for m in machines}
    keys = [m for m in machines if m]
    return {"machines": keys, "names": {m: names.get(m) or m for m in keys}, "items": items,
            "source": "duets" if "duets" in sources else "cells"}


# ---------------------------------------------------------------------------------------------
# The machines in plain words

def machine_names(cells: pd.DataFrame | None, facts: dict, keys) -> dict:
    """{key: '2-core AMD EPYC'}: fmt.machine_names, the report's one naming of machines."""
    return fmt_machine_names(keys, facts, cells)
