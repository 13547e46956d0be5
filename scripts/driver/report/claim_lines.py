"""How the answer's claims (driver/report/statements.py) are shown: counts alone (tally), per
question with one line per machine (by_question), as Markdown (line_markdown), the line above the
answer (intro); and, beside it, what the answer did not measure: Keras 3's fit() over an epoch
against TF 1's, from tf2_vs_tf1's rows (fit_note, fit_markdown), on the study's CPUs in plain
words (cpus_text)."""
import pandas as pd

from driver.report.fmt import col, cores_of, text
from driver.report.statements import (
    DASH,
    PREDICT,
    Claim,
    answer_word,
    groups_of,
    mode_groups,
    on_machine,
    rows_of,
    says_first,
    span_text,
    word,
)


def cpus_text(keys, facts: dict | None = None) -> str:
    """'2-core CPUs' (the cores of every machine), 'CPUs with 2 and 4 cores', or 'CPUs'."""
    cores = sorted({c for c in (cores_of(k, (facts or {}).get(k)) for k in keys) if c})
    if len(cores) == 1:
        return f"{cores[0]}-core CPUs" if len(list(keys)) > 1 else f"a {cores[0]}-core CPU"
    if cores:
        return "CPUs with " + " and ".join(map(str, cores)) + " cores"
    return "CPUs"


# ---------------------------------------------------------------------------------------------
# How the answer is shown: counts alone, per question, in Markdown

def tally(claim: Claim, margin: float = 0.10) -> str:
    """The claim's answer and its counts alone, for a first screen that holds several machines:
    'mostly as fast—<k> of <n>, <k> not decided, <k> slower' (groups as the sentence orders
    them; the inference claim per mode, its words 'predict() slower'/'predict() faster'). The
    same rows as claim.text."""
    del margin  # the four words carry no margin
    if not claim.rows:
        return claim.text

    def counts(groups: tuple, n: int, pre: str) -> str:
        out = []
        for i, g in enumerate(groups):
            k = len(g.rows)
            w = "" if i == 0 and says_first(groups, pre) else " " + word(g.kind, pre)
            out.append(f"{k} of {n}{w}" if i == 0 else f"{k}{w}")
        return answer_word(groups, pre) + DASH + ", ".join(out)

    if claim.question != "inference":
        return counts(claim.groups, len(claim.rows), "")
    return "; ".join(f"{name}: {counts(groups, sum(len(g.rows) for g in groups), PREDICT)}"
                     for _, name, groups in mode_groups(claim))


def by_question(found: dict, margin: float = 0.10) -> list[dict]:
    """The claims grouped for display, questions in order: [{"id", "label", "claims", "lines"}],
    each line {"who", "text", "cls", "machine", "name", "tally"}: with one machine, who is the
    claim's scope (its label's parenthesis); with several, the machine in plain words and its
    scope, one line per machine; tally is the claim in counts alone (the first screen of several
    machines); machine is the key."""
    out: dict = {}
    several = len(found["machines"]) > 1
    for c in found["items"]:
        q = out.setdefault(c.question, {"id": c.question, "label": c.label, "claims": [],
                                        "lines": []})
        q["claims"].append(c)
        name = c.name or c.machine
        who = f"{name} ({c.scope})" if several and c.scope else name if several else c.scope
        q["lines"].append({"who": who, "text": c.text, "cls": c.cls, "machine": c.machine,
                           "name": name, "tally": tally(c, margin)})
    return list(out.values())


def line_markdown(q: dict) -> list[str]:
    """A question as Markdown list lines (RESULTS.md and the README block): one bullet, or with
    several machines a bullet with one sub-bullet per machine."""
    if len(q["lines"]) == 1:
        ln = q["lines"][0]
        return [f"- **{q['label']}**" + (f" ({ln['who']})" if ln["who"] else "")
                + f": {ln['text']}"]
    return [f"- **{q['label']}**:"] + [f"  - {ln['who']}: {ln['text']}" for ln in q["lines"]]


def intro(found: dict, reference: str, margin: float) -> str:
    """The line above the answer: the question, how a line reads (its answer, then the counts,
    in the four words), what a ratio is, and the machines in plain words."""
    names = [found["names"][m] for m in found["machines"]]
    where = f" On a {names[0]}." if len(names) == 1 else ""
    return ("Is TensorFlow 2 slower than TensorFlow 1? Each part answers first (faster, as fast: "
            f"within ±{margin * 100:.0f} %, slower, not decided), then counts TF 2.x versions "
            "per verdict; a ratio is TF 2.x's time for one `train_on_batch()` step of a small "
            f"Conv1D model ÷ {reference}'s, same mode." + where)


# ---------------------------------------------------------------------------------------------
# What the answer did not measure: fit() over an epoch with Keras 3 (tf2_vs_tf1's rows)

CLS = {"slower": "slower", "faster": "faster", "as fast": "equal"}  # a line's style
FIT_ANCHOR = "cmp-tf2_vs_tf1-cross"  # the report's table of rows that also change the Keras


def fit_rows(tabs: dict, machine: str) -> list:
    """tf2_vs_tf1's Keras 3 fit() over an epoch against TF 1's tf.keras on one machine, numpy
    input where it was measured: [Row], version order."""
    tf2 = on_machine(tabs.get("tf2_vs_tf1", pd.DataFrame()), machine)
    if tf2.empty or "api" not in tf2.columns:
        return []
    df = tf2[(col(tf2, "api").map(text) == "fit_epoch")
             & (col(tf2, "left_keras").map(text) == "keras3")
             & (col(tf2, "right_keras").map(text) == "tf.keras")]
    if "input" in df.columns and (col(df, "input").map(text) == "numpy").any():
        df = df[col(df, "input").map(text) == "numpy"]
    return rows_of(df)


def fit_note(tabs: dict, found: dict, reference: str, facts: dict | None = None) -> dict | None:
    """The answer's limit, beside it: it covers one train_on_batch() step of the small model on
    the study's CPUs; fit() over an epoch with Keras 3, against TF 1's fit(), per machine.
    {"label", "lines": [{"machine", "name", "text", "cls"}], "anchor"}; None without such
    rows."""
    lines, differs = [], False
    keras3 = {c.machine: c for c in found["items"] if c.question == "keras3"}
    for m in found["machines"] or [""]:
        rows = fit_rows(tabs, m)
        if not rows:
            continue
        groups = groups_of(rows)
        lo, hi = min(r.ratio for r in rows), max(r.ratio for r in rows)
        vers = [r.version for r in rows]
        which = f"TF {vers[0]}" if len(vers) == 1 else f"TF {vers[0]}–{vers[-1]}"
        lines.append({"machine": m, "name": found["names"].get(m, m),
                      "text": f"{answer_word(groups)}, {span_text(lo, hi)} ({which})",
                      "cls": CLS.get(answer_word(groups), "mixed")})
        claim = keras3.get(m)
        differs |= claim is None or not claim.groups or \
            {g.kind for g in groups} != {claim.groups[0].kind}
    if not lines:
        return None
    story = "tells a different story" if differs else "gives the same answer"
    label = (f"Not in this answer (one `train_on_batch()` step, small model, "
             f"{cpus_text(found['machines'], facts)}): Keras 3's `fit()` over an epoch against "
             f"{reference}'s {story}")
    return {"id": "fit", "label": label, "lines": lines, "anchor": FIT_ANCHOR}


def fit_markdown(note: dict | None, link: str) -> list[str]:
    """The note as one Markdown bullet: 'name: text' per machine (the text alone with one)."""
    if not note:
        return []
    parts = [(f"{ln['name']}: " if len(note["lines"]) > 1 else "") + ln["text"]
             for ln in note["lines"]]
    return [f"- **{note['label']}**: " + "; ".join(parts) + f" ([the rows]({link}))."]
