"""The README's answer block: the published answer (the same claims as the report's first
screen and docs/RESULTS.md, driver/report/statements.py) written between two markers of
README.md by `make republish` (scripts/readme_answer.py), so the README shows the answer without
a figure typed by hand. tests/unit/docs checks the block is what the published tables give."""
from pathlib import Path

import pandas as pd

from driver.report.answer import like_for_like
from driver.report.fmt import col, text
from driver.report.results_page import answer_lines
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


def block(tables, margin: float) -> str:
    """The block's Markdown (markers included) from a tables folder."""
    tabs = Results(tables).tables(cells=True)
    lines = answer_lines(tabs, margin, reference_of(tabs), modes=False)  # defined below it
    lines += ["", "Measured on the machines and runs in [PROVENANCE](docs/PROVENANCE.md); "
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
