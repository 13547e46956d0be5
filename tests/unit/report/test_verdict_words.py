"""One table of verdict words (driver/stats/verdicts.py: WORDS): every display word, CSS class,
colour and marker of a verdict comes from it, so a display planted there shows up in the report,
and the verdict codes the tables write stay as they are."""
import re

import pytest
from helpers import REPO

from driver.report import render
from driver.stats import verdicts
from driver.tables.results import Results

TEMPLATE = REPO / "report" / "template.html.j2"
PUBLISHED = REPO / "docs" / "tables"
GOLDEN = REPO / "tests" / "fixtures" / "golden"
REPORT_CODE = REPO / "scripts" / "driver" / "report"


@pytest.fixture(scope="module")
def published():
    for folder in (PUBLISHED, GOLDEN):  # the published tables, else the golden fixtures
        res = Results(folder)
        if res.has_cells():
            return res
    pytest.skip("no tables")


def _html(res: Results) -> str:
    """The report of `res`, with the comparison tables' verdicts cycled through every code (the
    golden fixtures' are all inconclusive)."""
    tabs = dict(res.tables())
    for name in ("tf2_vs_tf1", "graph_vs_eager", "frameworks_best", "adjacent_releases"):
        if name in tabs and len(tabs[name]):
            df = tabs[name].copy()
            df["verdict"] = [verdicts.VERDICTS[i % 4] for i in range(len(df))]
            tabs[name] = df
    ctx = render.build_context(res.cells(), tabs, res.samples(), res.facts(), "m",
                               {"min_effect": 0.10})
    assert not ctx["errors"]
    return render.render_html(ctx, TEMPLATE)


def test_one_word_per_verdict_and_the_codes_unchanged():
    assert set(verdicts.WORDS) == set(verdicts.VERDICTS)
    assert verdicts.VERDICTS == ("left_faster", "right_faster", "equivalent", "undecided")
    shown = [w.word for w in verdicts.WORDS.values()]
    assert len(set(shown)) == len(shown)
    # colour is never the only cue: the undecided and equivalent markers differ from the others
    assert len({w.marker for w in verdicts.WORDS.values()}) >= 3
    assert verdicts.verdict_word(verdicts.RIGHT_FASTER, "TF 2") == "TF 2 slower"
    assert verdicts.verdict_word(verdicts.INCONCLUSIVE, "TF 2") == "undecided"
    assert verdicts.words("no such code") == verdicts.WORDS[verdicts.INCONCLUSIVE]


def test_a_planted_verdict_display_shows_up_in_the_report(published, monkeypatch):
    before = _html(published)
    for v, w in list(verdicts.WORDS.items()):
        monkeypatch.setitem(verdicts.WORDS, v, w._replace(word=f"planted{v.replace('_', '')}"))
    monkeypatch.setitem(verdicts.WORDS, verdicts.INCONCLUSIVE,
                        verdicts.WORDS[verdicts.INCONCLUSIVE]._replace(colour="#0a0b0c"))
    after = _html(published)
    for v in verdicts.VERDICTS:
        assert f"planted{v.replace('_', '')}" in after, v
    assert "#0a0b0c" in after.lower()  # the forest plots' colour of an undecided row
    # the report's own word for "inconclusive" is gone wherever it named a verdict
    assert after.count("undecided") < before.count("undecided")


def test_no_report_module_types_a_verdict_display():
    """The report names verdicts by the codes' constants and shows them through WORDS: no module
    of driver/report/ spells a code as a string or maps codes to words of its own."""
    code = re.compile(r"""["'](left_faster|right_faster|inconclusive)["']""")
    offenders = {}
    for path in sorted(REPORT_CODE.rglob("*.py")):
        hits = code.findall(path.read_text(encoding="utf-8"))
        if hits:
            offenders[path.relative_to(REPORT_CODE).as_posix()] = hits
    assert not offenders, offenders


def test_the_results_page_says_the_reports_word(published, monkeypatch):
    """docs/RESULTS.md (driver/report/results_page.py) heads its verdict counts with the
    report's words: it said "inconclusive" where the report says "undecided"."""
    from driver.report import results_page

    page = results_page.results_page(published.folder, 0.10)
    assert "| equivalent | undecided |" in page and "inconclusive" not in page
    monkeypatch.setitem(verdicts.WORDS, verdicts.INCONCLUSIVE,
                        verdicts.WORDS[verdicts.INCONCLUSIVE]._replace(word="plantedword"))
    assert "| equivalent | plantedword |" in results_page.results_page(published.folder, 0.10)
