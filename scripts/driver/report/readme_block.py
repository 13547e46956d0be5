"""The README's answer block: the published answer (the same claims as the report's first
screen and docs/RESULTS.md, driver/report/statements.py) written between two markers of
README.md by `make republish` and `make publish` (scripts/readme_answer.py), so the README shows
the answer without a figure typed by hand. tests/unit/docs checks the block is what the
published tables give.

The block is the compact form of the claims, one line per question with one part per machine,
the machine in plain words ("<cores>-core <CPU>: mostly faster—<k> of <n> (<lo>–<hi>x); <k>
slower (<r>x: TF <v>)"), so that a machine more adds a part, not a list of lines: each part
says its answer first, then each group's count, its verdict word (one of four) and the range of
its own rows, and the version where it holds one row. Then what the answer did not measure
(claim_lines.fit_note)."""
from pathlib import Path

import pandas as pd

from driver.report.answer import like_for_like
from driver.report.claim_lines import fit_markdown
from driver.report.fmt import col, text
from driver.report.questions import questions
from driver.report.statements import DASH, answer_word, mode_groups, says_first, span_text, word
from driver.tables.results import Results
from tfspeed import atomic

COMPACT_MODE = {"graph": "graph"}  # the graph line's label says "TF 1-style graph" once
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


def group_compact(group, n: int, first: bool, prefix: str = "", bare: bool = False) -> str:
    """'<k>[ of <n>] <word> (<lo>–<hi>x[: TF v])': one group of a claim, its own rows' range
    (and the version of a lone slower or faster row); `bare`: without its word, which the
    answer before it says ("mostly slower—<k> of <n> (<lo>–<hi>x)")."""
    k = len(group.rows)
    lo, hi = group.span
    # the version of a lone slower or faster row (TF 2.0's step, say): the others' are in the
    # report and RESULTS.md, where a README line of three machines has no room for them
    lone = k == 1 and group.kind in ("slower", "faster")
    detail = span_text(lo, hi) + (f": TF {group.rows[0].version}" if lone else "")
    w = "" if bare else " " + word(group.kind, prefix)
    return f"{k} of {n}{w} ({detail})" if first and n > 1 else f"{k}{w} ({detail})"


def claim_compact(claim) -> str:
    """A claim's answer, then its groups in the compact form; inference per mode ('eager,
    <answer> — ...; TF 1-style graph, <answer> — ...'), each mode named as the claim's sentence
    names it (statements.mode_groups)."""
    if not claim.groups:
        return claim.text.rstrip(".")
    if claim.question != "inference":
        return _groups(claim.groups)
    parts = []
    for mode, name, groups in mode_groups(claim):
        name = COMPACT_MODE.get(mode, name)
        # the label asks whether predict() is slower: its faster and slower are predict()'s
        parts.append(f"{name}, {_groups(groups)}")
    return "; ".join(parts)


def _groups(groups: tuple) -> str:
    """The answer, then each group; the first without its word where the answer says it."""
    n = sum(len(g.rows) for g in groups)
    return answer_word(groups) + DASH + "; ".join(
        group_compact(g, n, i == 0, bare=i == 0 and says_first(groups))
        for i, g in enumerate(groups))



def compact_lines(tabs: dict, margin: float, reference: str, facts: dict | None = None,
                  link: str = "docs/index.html") -> list[str]:
    """The answer as one line per question, one part per machine (its plain name first where
    there are several; the Keras scope in the label's parenthesis where every machine shares
    it), then what it did not measure."""
    found = questions(tabs, margin, reference, facts)
    out = [found["intro"], ""]
    for q in found["items"]:
        claims = q["claims"]
        scopes = {c.scope for c in claims}
        shared = len(scopes) == 1 and next(iter(scopes))
        head = f"- **{q['label']}**" + (f" ({shared})" if shared else "") + ":"
        parts = []
        for c in claims:
            who = c.name + (f" ({c.scope})" if c.scope and not shared else "")
            parts.append((f"{who}: " if len(claims) > 1 else "") + claim_compact(c))
        out.append(head + " " + ". ".join(parts) + ".")
    if found["fit"]:
        out += fit_markdown(found["fit"], f"{link}#{found['fit']['anchor']}")
    return out


def block(tables, margin: float) -> str:
    """The block's Markdown (markers included) from a tables folder."""
    res = Results(tables)
    tabs = res.tables(cells=True)
    lines = compact_lines(tabs, margin, reference_of(tabs), res.facts().get("machines"))
    lines += ["", "One published run per machine ([what a claim covers](docs/METHOD.md#the-"
              "headline-in-duets)): [runs](docs/PROVENANCE.md), [report](docs/index.html), "
              "[every verdict](docs/RESULTS.md)."]
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
