"""The README's answer block: the published answer (the same claims as the report's first
screen and docs/RESULTS.md, driver/report/statements.py) written between two markers of
README.md by `make republish` (scripts/readme_answer.py), so the README shows the answer without
a figure typed by hand. tests/unit/docs checks the block is what the published tables give.

The block is the compact form of the claims, one line per question with one part per machine
("key: 12 of 22 faster (0.85–0.91x); 1 slower (1.10x: TF 2.0.4)"), so that a machine more adds
a part, not a list of lines: each group says its count, its words (as in statements.group_word,
without the margin, which the block's first line states once) and the range of its own rows,
and the version where it holds one row."""
from pathlib import Path

import pandas as pd

from driver.report.answer import like_for_like
from driver.report.fmt import col, text
from driver.report.questions import questions
from driver.report.statements import WORKLOAD, mode_groups, span_text
from driver.report.statements import _pct as pct_text
from driver.tables.results import Results
from tfspeed import atomic

BEGIN = "<!-- answer: written by make republish from docs/tables; do not edit -->"
END = "<!-- /answer -->"


def reference_of(tabs: dict, fallback: str = "TF 1") -> str:
    """'TF 1.14.0': the TF 1 version the like-for-like tf2_vs_tf1 rows compare with."""
    df = like_for_like(tabs.get("tf2_vs_tf1", pd.DataFrame()))
    refs = sorted({text(r) for r in col(df, "right_framework_version").dropna()}) \
        if not df.empty else []
    if not refs and not tabs.get("duets", pd.DataFrame()).empty:
        refs = sorted({text(r) for r in col(tabs["duets"], "right_framework_version").dropna()})
    return "TF " + ", ".join(refs) if refs else fallback


WORDS = {"faster": "faster", "slower": "slower", "undecided": "undecided", "as fast": "as fast",
         "within, slower": "slower by {pct} within ±{m} %",
         "within, faster": "faster by {pct} within ±{m} %"}


def group_compact(group, n: int, first: bool, margin: float, prefix: str = "") -> str:
    """'<k>[ of <n>] <word> (<lo>–<hi>x[: TF v])': one group of a claim, its own rows' range."""
    k = len(group.rows)
    lo, hi = group.span
    word = WORDS[group.kind].format(pct=pct_text(lo, hi), m=f"{margin * 100:.0f}")
    if group.kind in ("faster", "slower"):
        word = prefix + word
    detail = span_text(lo, hi) + (f": TF {group.rows[0].version}" if k == 1 else "")
    return f"{k} of {n} {word} ({detail})" if first and n > 1 else f"{k} {word} ({detail})"


def claim_compact(claim, margin: float) -> str:
    """A claim's groups in the compact form; inference per mode ('eager, ...; TF 1-style
    graph, ...'), each mode named as the claim's sentence names it (statements.mode_groups)."""
    if not claim.groups:
        return claim.text.rstrip(".")
    if claim.question != "inference":
        n = len(claim.rows)
        return "; ".join(group_compact(g, n, i == 0, margin) for i, g in enumerate(claim.groups))
    parts = []
    for _, name, groups in mode_groups(claim):
        n = sum(len(g.rows) for g in groups)
        parts += [(f"{name}, " if i == 0 else "")
                  + group_compact(g, n, i == 0, margin, prefix="predict() ")
                  for i, g in enumerate(groups)]
    return "; ".join(parts)


def compact_lines(tabs: dict, margin: float, reference: str) -> list[str]:
    """The answer as one line per question, one part per machine (machine key first where there
    are several; the Keras scope in the label's parenthesis where every machine shares it)."""
    found = questions(tabs, margin, reference)
    ref = reference.removeprefix("TF ")
    out = ["Is TensorFlow 2 slower than TensorFlow 1? Per question%s: how many TF 2.x versions "
           "are faster, as fast (equivalent within ±%.0f %%, 1 inside the tested interval), "
           "slower by a few %% but within ±%.0f %%, slower, or undecided, with the range of "
           "their ratios; each row %s (inference: predict()'s time over model(x)'s)." % (
               " and machine" if len(found["machines"]) > 1 else "", margin * 100,
               margin * 100, WORKLOAD.format(reference=ref)), ""]
    for q in found["items"]:
        claims = q["claims"]
        scopes = {c.scope for c in claims}
        shared = len(scopes) == 1 and next(iter(scopes))
        head = f"- **{q['label']}**" + (f" ({shared})" if shared else "") + ":"
        parts = []
        for c in claims:
            who = c.machine + (f" ({c.scope})" if c.scope and not shared else "")
            parts.append((f"{who}: " if len(claims) > 1 else "") + claim_compact(c, margin))
        out.append(head + " " + ". ".join(parts) + ".")
    return out


def block(tables, margin: float) -> str:
    """The block's Markdown (markers included) from a tables folder."""
    tabs = Results(tables).tables(cells=True)
    lines = compact_lines(tabs, margin, reference_of(tabs))
    lines += ["", "Each machine's part describes one published run of it: its intervals hold "
              "within that run, not across runs ([what a claim covers](docs/METHOD.md#the-"
              "headline-in-duets)). Measured on the machines and runs in "
              "[PROVENANCE](docs/PROVENANCE.md); "
              "the full report is [docs/index.html](docs/index.html), every table's verdicts "
              "[docs/RESULTS.md](docs/RESULTS.md)."]
    return "\n".join([BEGIN, *lines, END])


def splice(readme: str, new_block: str, name: str = "README.md") -> str:
    """readme with the text between the markers (markers included) replaced by new_block."""
    if readme.count(BEGIN) != 1 or readme.count(END) != 1 or \
            readme.index(BEGIN) > readme.index(END):
        raise ValueError(f"{name}: needs the line {BEGIN!r} once, then {END!r} once, where the "
                         "answer goes")
    head, rest = readme.split(BEGIN, 1)
    return head + new_block + rest.split(END, 1)[1]


def current(readme: str, name: str = "README.md") -> str:
    """The block README.md holds now (markers included)."""
    splice(readme, "", name)  # checks the markers
    return BEGIN + readme.split(BEGIN, 1)[1].split(END, 1)[0] + END


def write(readme_path, tables, margin: float) -> bool:
    """Write the block into README.md (atomically); True when it changed."""
    path = Path(readme_path)
    old = path.read_text(encoding="utf-8")
    new = splice(old, block(tables, margin), str(path))
    if new != old:
        atomic.write_text(path, new)
    return new != old
