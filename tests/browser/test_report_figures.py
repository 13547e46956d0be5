"""The report's figures as a reader's browser sees them (real headless Chromium, 1400 px): no
element id twice in the page (every inline SVG's ids are tagged per figure), every figure of the
history, time and stability sections with a caption and an accessible name, and the stability
section short while its details are closed. The probe is shown to count a planted duplicate."""

from __future__ import annotations

import browser
import pytest
from browser import needs_chromium
from report_study import render_synthetic

pytestmark = needs_chromium

SECTIONS = ("history", "time", "stability")
PROBES = {
    "dup_ids": """(() => { const c = {}; document.querySelectorAll('[id]').forEach(e =>
        c[e.id] = (c[e.id] || 0) + 1); return Object.entries(c).filter(([k, v]) => v > 1)
        .map(([k, v]) => k + ' x' + v); })()""",
    "figures": """Array.from(document.querySelectorAll('%s')).map(f => ({
        section: (f.closest('section') || {}).id || '',
        caption: ((f.querySelector('figcaption') || {}).textContent || '').trim(),
        named: Array.from(f.querySelectorAll('svg, img')).every(e =>
          (e.getAttribute('aria-label') || e.getAttribute('alt') || '').trim().length > 0
          && (e.tagName.toLowerCase() !== 'svg' || !!e.querySelector('title')))}))"""
    % ", ".join(f"#{s} figure" for s in SECTIONS),
    "ticks": "document.querySelectorAll('svg.fig g[id^=\"axes_\"] g[id^=\"xtick_\"]').length",
    "stability_px": "document.getElementById('stability').getBoundingClientRect().height",
}


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    return render_synthetic(tmp_path_factory.mktemp("figures-browser"))


def test_no_duplicate_ids_and_every_figure_captioned(page, tmp_path):
    r = browser.inspect(page["path"], width=1400, height=900, probes=PROBES, timeout=300)
    assert not r["errors"], r["errors"][:3]
    p = r["probes"]
    assert p["dup_ids"] == []
    figs = p["figures"]
    assert {f["section"] for f in figs} == set(SECTIONS)
    assert [f for f in figs if not f["caption"]] == []
    assert [f for f in figs if not f["named"]] == []
    assert p["ticks"] > 0  # the tagged ids keep the prefixes the screen tests select by
    assert p["stability_px"] <= 2 * 900

    # the probe counts a planted duplicate (an id copied from a figure)
    html = page["html"]
    planted = tmp_path / "planted.html"
    i = html.index('id="axes_1-')
    dup = html[i:html.index('"', i + 4) + 1]
    planted.write_text(html.replace("</main>", f"<div {dup}></div></main>", 1), encoding="utf-8")
    r2 = browser.inspect(planted, width=1400, height=900, probes={"dup_ids": PROBES["dup_ids"]},
                         timeout=300)
    assert len(r2["probes"]["dup_ids"]) == 1
