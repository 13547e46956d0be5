"""The report page in real headless Chromium (tests/support/browser.py): first proof that the
checker catches a console error and an outside request on a deliberately bad page, then the
synthetic study's page and the quick run's page.
"""
from __future__ import annotations

import re

import browser
import pytest
from browser import needs_chromium
from report_study import (
    REPO,
    SECTION_IDS,
)


@needs_chromium
def test_browser_checker_catches_a_bad_page(tmp_path):
    """The checker must be able to fail: a console error and an outside request are caught."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!doctype html><title>bad</title><section id="verdict">x</section>'
                   '<img src="http://example.invalid/x.png">'
                   '<script>console.error("deliberate")</script>'
                   '<script>alert(1)</script>')
    result = browser.inspect(bad, settle_s=0.5)
    assert any("deliberate" in e for e in result["errors"]), result
    assert browser.outside_requests(result) == ["http://example.invalid/x.png"]
    assert result["dialogs"] == ["1"]
    assert result["dom"]["sections"] == ["verdict"]


@needs_chromium
def test_report_in_chromium(rendered):
    shots = REPO / "build" / "report-test"
    shots.mkdir(parents=True, exist_ok=True)
    # The inline script: filter the cells table, then sort it by median (twice: descending).
    probes = {
        "filtered": """(() => { const i = document.querySelector('input[data-table="t-cells"]');
            i.value = 'tf2.21 eager'; i.dispatchEvent(new Event('input'));
            return Array.from(document.querySelectorAll('#t-cells tbody tr'))
              .filter(r => !r.hidden).length; })()""",
        "sorted": """(() => { const t = document.getElementById('t-cells');
            const h = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent ===
              'median ms');
            t.tHead.rows[0].cells[h].click(); t.tHead.rows[0].cells[h].click();
            return Array.from(t.tBodies[0].rows).map(r => r.cells[h].getAttribute('data-v'))
              .filter(v => v !== null && v !== 'nan').map(Number); })()""",
    }
    result = browser.inspect(rendered["path"], screenshot=shots / "report-top.png",
                             screenshot_full=shots / "report-full.png", probes=probes)
    assert result["errors"] == [], result["errors"]
    assert browser.outside_requests(result) == [], result["requests"]
    assert result["dialogs"] == []  # the escaped alert(1) never ran
    assert result["dom"]["sections"] == SECTION_IDS
    assert not [u for u in result["dom"]["external"] if re.match(r"^([a-z]+:)?//", u)]
    assert result["dom"]["text_length"] > 2000
    assert (shots / "report-top.png").stat().st_size > 10_000
    # 8 ok eager cells of tf2.21, its 2 eager fit-over-an-epoch cells, its failed keras3 one
    assert result["probes"]["filtered"] == 11
    values = result["probes"]["sorted"]
    assert len(values) > 40 and values == sorted(values, reverse=True)


@needs_chromium
@pytest.mark.e2e
def test_real_quick_report_in_chromium(quick_run):
    """The report the workflow rendered from the quick preset's real cells, opened in Chromium."""
    work, _ = quick_run
    out = work / "results" / "report.html"
    shots = REPO / "build" / "report-test"
    shots.mkdir(parents=True, exist_ok=True)
    result = browser.inspect(out, screenshot=shots / "quick-report-top.png")
    assert result["errors"] == [] and browser.outside_requests(result) == []
    assert result["dialogs"] == []
    # the quick preset has models of its own: its page opens them with their answer (an
    # optional section, after the answer), the rest as every study has them
    assert result["dom"]["sections"] == SECTION_IDS[:1] + ["own_answer"] + SECTION_IDS[1:]
    assert out.stat().st_size < 10 * 2**20


