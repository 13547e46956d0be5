"""The published report (docs/index.html) holds what README.md says it has: the bottom line and
one sentence per mode and API on its first screen (the very sentences the tables give, computed
here from docs/tables), then what changed in each release, which configuration to use, the
source study's DO / DON'T lists, coverage, every comparison table, the performance history,
stability, failed cells, environments, the method, and the machines side by side.

Skipped only while docs/data holds no published run (then docs/index.html is a placeholder that
claims nothing: tests/unit/docs/test_published.py checks that). `check_report` is also run on a
planted publication there, so this check is exercised whether or not a run is published.
"""
import glob
import json
from pathlib import Path

import pytest
import republish
from markupsafe import escape

from driver.report import answer
from driver.report.bottom_line import bottom_line, more_lines
from driver.report.questions import questions
from driver.tables import bundle

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
# README.md's "What it answers" and "What you get": section id -> what the README calls it
SECTIONS = {"verdict": "a bottom line, then one sentence and a forest plot per mode and API",
            "machines": "the machines side by side",
            "changes": "what changed from each release to the next",
            "guidance": "which configuration to use, the source study's DO / DON'T lists",
            "coverage": "coverage", "tables": "every comparison table",
            "history": "the performance history", "stability": "stability",
            "failures": "failed cells", "environments": "environments", "method": "the method"}


def check_report(docs: Path) -> None:
    """docs/index.html against README.md's promises and the tables published beside it."""
    html = (docs / "index.html").read_text(encoding="utf-8")
    missing = [what for sid, what in SECTIONS.items() if '<section id="%s"' % sid not in html]
    assert not missing, "the published report lacks: %s" % "; ".join(missing)
    assert html.index('<section id="verdict"') < html.index('<section id="changes"')
    tables = docs / "tables"
    tabs = bundle.read_tables(sorted(glob.glob(str(tables / "*.csv"))))
    runs = republish.newest_per_machine(republish.find_runs(docs / "data"))
    config = max(runs, key=lambda r: (str(r.get("ended_utc")), r["run_id"]))["config"]
    # the machines named as the page names them: from the published machine facts
    named = json.loads((tables / "facts.json").read_text(encoding="utf-8")).get("machines")
    bottom = bottom_line(tabs, tabs["cells"], config.get("reference_env", "tf1.14"),
                         facts=named)
    assert bottom["lines"], "no bottom line from the published tables"
    first = html[:html.index('<section id="machines"')]
    asked = questions(tabs, float(config.get("min_effect", 0.10)), bottom["reference"],
                      facts=named)["items"]
    claims = [{"what": q["label"], "text": ln["text"]} for q in asked for ln in q["lines"]]
    for line in claims + more_lines(bottom):
        # the answer and the rest of the bottom line, near the top, as the tables give them
        assert str(escape(line["what"])) in first and str(escape(line["text"])) in first, line
    sentences = answer.answer(tabs, float(config.get("min_effect", 0.10)))["sentences"]
    assert sentences, "no per-mode sentence from the published tables"
    answered = "duets" in tabs and not tabs["duets"].empty
    for item in sentences:
        # where the duets answer (train_on_batch in both modes), the cells' sentence is not
        # restated with other numbers: the cells' rows are shown under their own heading
        if answered and "train_on_batch()" in item["what"]:
            assert str(escape(item["text"])) not in first, item
            continue
        assert str(escape(item["text"])) in first, item
    facts = json.loads((tables / "facts.json").read_text(encoding="utf-8"))
    for key in facts.get("machines") or {}:
        assert key in html


def test_published_report_has_what_the_readme_promises():
    if not republish.find_runs(DOCS / "data"):
        pytest.skip("docs/data holds no published run yet: docs/index.html is a placeholder")
    check_report(DOCS)
