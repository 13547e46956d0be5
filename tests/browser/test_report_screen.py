"""The report's first screen and how it reads (issue 15): answer sentences and forest plots from
the tf2_vs_tf1 verdicts, the seed's DO / DON'T checked line by line, the coverage panel, rows
that change more than one factor kept apart, and, in real headless Chromium at 1400 and 800 px
and printed to PDF: the answer and forest within the first 1000 px, no horizontal overflow,
an accessible name on every figure, every table's columns inside the printed page, readable
contrast. Screenshots and the PDF stay under build/report-test/ for a reader to look at.

Two studies: the synthetic one of test_report.py (three processes per cell, so verdicts are
decided) and the real cell files of a quick run (tests/fixtures/cells, one process per cell),
both through the real aggregation."""

from __future__ import annotations

import re
from pathlib import Path

import browser
import pandas as pd
import pytest
from browser import needs_chromium
from report_study import REPO, SECTION_IDS, aggregate, synthetic_study

from driver.report import (
    answer,  # noqa: E402
    coverage,  # noqa: E402
    split,  # noqa: E402
)
from driver.report import render as report
from driver.report import source_claims as seedcheck  # noqa: E402

SHOTS = REPO / "build" / "report-test"
FIXTURE_CELLS = REPO / "tests" / "fixtures" / "cells"


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    root = tmp_path_factory.mktemp("screen")
    kwargs = synthetic_study(root)
    out = root / "report.html"
    info = report.render(out_html=str(out), **kwargs)
    return {"path": out, "html": out.read_text(encoding="utf-8"), "info": info, "kwargs": kwargs}


@pytest.fixture(scope="module")
def quick_fixture(tmp_path_factory):
    """The checked-in cell files of a real quick run, aggregated and rendered for real."""
    root = tmp_path_factory.mktemp("fixture")
    paths = sorted(str(p) for p in FIXTURE_CELLS.rglob("*.json"))
    assert paths
    kwargs = aggregate(root, paths)
    out = root / "report.html"
    info = report.render(out_html=str(out), **kwargs)
    return {"path": out, "html": out.read_text(encoding="utf-8"), "info": info}


def _tables(kwargs):
    from driver.tables import bundle

    return bundle.read_tables(kwargs["tables"]), bundle.read_table(kwargs["cells_csv"])


def test_answer_sentences_from_verdicts(synthetic):
    tabs, _ = _tables(synthetic["kwargs"])
    ans = answer.answer(tabs, 0.05)
    assert ans["reference"] == "TF 1.14.0"
    whats = [s["what"] for s in ans["sentences"]]
    # one sentence per mode and API, graph and eager both, in the axes' order
    assert whats == ["Eager mode, train_on_batch()", "Eager mode, fit() one step per call",
                     "Eager mode, fit() over an epoch", "TF 1-style graph, train_on_batch()",
                     "TF 1-style graph, fit() one step per call",
                     "TF 1-style graph, fit() over an epoch"]
    for s in ans["sentences"]:  # TF 2 was made 1.3x slower in both TF 2 envs
        assert re.search(r"^TF 2\.x is slower in 2 of 2 versions \(1\.[23]\d", s["text"]), s
        assert "within" not in s["text"]  # no "within 10 % in 0 of 2" beside two slower ones
        assert s["cls"] == "slower"
    # the forest: one panel per sentence, every like-for-like row, versions in order
    rows = ans["panels"][0]["rows"]
    assert [r["version"] for r in rows if r["head"]] == ["2.3.4", "2.21.0"]
    assert all(r["verdict"] == "right_faster" and r["lo"] > 1.0 for r in rows)
    html = synthetic["html"]
    top = html[html.find('<section id="verdict"'):html.find('id="seed-check"')]
    assert "TF 1-style graph, train_on_batch():" in top and 'class="forest headline"' in top
    assert top.count('role="img"') == 6 and top.count("<title>Forest plot") == 6


def test_cross_flavour_and_matmul_rows_are_kept_apart():
    df = pd.DataFrame([
        {"model": "small", "api": "fit", "mode": "graph", "left_keras": "tf.keras",
         "right_keras": "tf.keras", "verdict": "right_faster"},
        {"model": "small", "api": "fit", "mode": "graph", "left_keras": "keras3",
         "right_keras": "tf.keras", "verdict": "right_faster"},
        {"model": "small", "api": "fit", "mode": "graph", "left_keras": "tf_keras",
         "right_keras": "tf.keras", "verdict": "equivalent"},
        {"model": "matmul", "api": "matmul", "mode": "numpy", "left_keras": "none",
         "right_keras": "none", "verdict": "left_faster"},
    ])
    assert [answer.row_kind(r, "tf2_vs_tf1") for r in df.to_dict("records")] == [
        "one", "cross", "cross", "micro"]
    kept = answer.like_for_like(df)
    assert list(kept["left_keras"]) == ["tf.keras", "tf_keras"]  # tf_keras stands in
    assert list(kept["standin"]) == [False, True]
    assert answer.norm_verdict("right faster") == "right_faster"
    assert answer.norm_verdict("not significant") == "undecided"
    assert answer.norm_verdict("inconclusive") == "undecided"  # an older table's code
    views = split.split_views({"tf2_vs_tf1": df.assign(pct=1.0, ratio=1.0)})
    names = [g["name"] for g in views]
    assert names[-1] == "micro" and views[0]["main"]["rows"] == 1
    assert views[0]["extra"][0]["rows"] == 2  # keras3 and tf_keras rows, apart


def test_seed_lines_checked(synthetic):
    tabs, cells = _tables(synthetic["kwargs"])
    checks = {c["words"]: c for c in seedcheck.seed_checks(tabs, cells)}
    assert len(checks) == len(seedcheck.SEED_LINES)
    major = checks["[Major] tf.python.keras; it can run 10-100x slower"]
    assert major["status"] == "holds" and re.search(r"keras tf.keras \(1\d\.\d+x", major["evidence"])
    large = checks["fit() + numpy + tf.keras + TF1/TF2 + Graph + large model & data"]
    assert large["status"] == "not testable here"
    # fit() was made 2x train_on_batch(): the seed's DON'T on eager fit holds
    assert checks["fit() + numpy + tf.keras + TF1/TF2 + Eager"]["status"] == "holds"
    rules = seedcheck.machine_rules(tabs)
    assert any(r["kind"] == "DONT" and r["text"].startswith("DON'T use fit()") for r in rules)
    # failed cells of a DON'T configuration count for it
    failed = pd.DataFrame([{"status": "failed", "keras": "tf.python.keras", "env": "tf2.0",
                            "framework_version": "2.0.4", "api": "fit", "input": "numpy",
                            "mode": "eager", "model": "small", "data": "small"}])
    only_failures = seedcheck.check_line("DONT", "x", {"keras": ["tf.python.keras"]}, {}, failed)
    assert only_failures["status"] == "holds" and "1 cell failed" in only_failures["evidence"]
    assert checks["train_on_batch() + numpy + tf.keras + TF1 + Eager/Graph"]["status"] == "holds"
    # a DO that a one-factor change beats does not hold: eager fit() loses to train_on_batch()
    # and to graph mode in every env of the synthetic study
    eager_fit = {"api": ["fit"], "mode": ["eager"], "keras": ["tf.keras"], "input": ["numpy"]}
    assert seedcheck.check_line("DO", "x", eager_fit, tabs, cells)["status"] == "does not hold"


def test_coverage_says_what_is_missing_and_why(synthetic):
    _, cells = _tables(synthetic["kwargs"])
    cov = coverage.coverage(cells, {"m": {"gpus": None}}, {"grids": [{"pairs": [["small",
                                                                                  "small"]]}]})
    rows = {r["what"]: r for r in cov["rows"]}
    assert ("GPU", "no GPU visible on this machine (the seed ran on a GTX 1070)") in \
        rows["devices"]["missing"]
    assert any(v.startswith("TensorFlow 2.0.0b1") and "PyPI" in why
               for v, why in rows["TensorFlow versions"]["missing"])
    assert any(v == "large model, large data" and "not in this study's grids" in why
               for v, why in rows["model × data"]["missing"])
    assert "1.14.0, 2.3.4, 2.21.0" in rows["TensorFlow versions"]["measured"]


def test_report_from_real_fixture_cells(quick_fixture):
    """The real quick run's cells: one process per cell, so every verdict is undecided, and
    the page says so instead of claiming anything."""
    assert quick_fixture["info"]["section_errors"] == {}
    html = quick_fixture["html"]
    for s in SECTION_IDS:
        assert '<section id="%s"' % s in html
    assert "undecided in" in html and 'class="forest headline"' in html
    assert "The matmul micro-case" in html and "run NumPy alone" in html
    # heading order: no level skipped on the way down
    levels = [int(h) for h in re.findall(r"<h([1-6])\b", html)]
    assert levels[0] == 1 and all(b <= a + 1 for a, b in zip(levels, levels[1:])), levels


# ----------------------------------------------------------------------------- in Chromium

FIGURES_UNNAMED = """Array.from(document.querySelectorAll('svg, img, canvas'))
  .filter(e => !(e.parentElement && e.parentElement.closest('svg')))
  .filter(e => {
    const label = (e.getAttribute('aria-label') || e.getAttribute('alt') || '').trim();
    const title = e.tagName.toLowerCase() === 'svg' && e.querySelector(':scope > title');
    return !(label || (title && title.textContent.trim()));
  }).length"""

# The bottom line's bottom edge and the first forest panel's top, in page pixels.
TOP = """(() => { const a = document.querySelector('ul.bottom-line'),
  f = document.querySelector('.forest svg');
  return [a ? a.getBoundingClientRect().bottom + scrollY : -1,
          f ? f.getBoundingClientRect().top + scrollY : -1]; })()"""

# Per figure panel (matplotlib axes in an inline SVG): how many tick labels carry a number on its
# value axis (x for a forest plot, y otherwise).
TICKS = """(() => Array.from(document.querySelectorAll('svg.fig')).flatMap(svg => {
  const forest = !!svg.closest('.forest');
  return Array.from(svg.querySelectorAll('g[id^="axes_"]')).map(ax => {
    const sel = forest ? 'g[id^="xtick_"] text' : 'g[id^="ytick_"] text';
    return [(svg.getAttribute('aria-label') || '').slice(0, 80),
            Array.from(ax.querySelectorAll(sel)).filter(t => /\\d/.test(t.textContent)).length];
  }); }))()"""

# Tables on the screen wider than the box they sit in (a column out of sight). The versions
# table and the every-cell table are the study's data laid out whole (one column per env, one
# per measure), filterable and sortable: they scroll by design.
CLIPPED = """(() => { const w = document.documentElement.clientWidth;
  return Array.from(document.querySelectorAll('table'))
    .filter(t => t.getClientRects().length && !['t-versions', 't-cells'].includes(t.id))
    .map(t => { const r = t.getBoundingClientRect();
      return [t.id || t.className, Math.round(r.right), t.scrollWidth,
              t.parentElement.clientWidth, w]; })
    .filter(x => x[1] > x[4] + 1 || x[2] > x[3] + 1); })()"""

# The env columns of the versions table, as the page shows them.
VERSION_HEADERS = """Array.from(document.querySelectorAll('#t-versions thead th'))
  .map(th => th.textContent.trim())"""

# Printed: every number in the text (digits with , and ., and a sign after a space or a
# parenthesis: '10-100x' is a range, not -100) whose range spans two lines.
SPLIT_NUMBERS = """(() => { const out = [];
  const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
  const re = /(?:(?<=^|[\\s(])[-+\u2212])?\\d[\\d,.]*\\d/g;  // a sign only where it can be one
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement; if (!el || !el.getClientRects().length || el.closest('svg')) continue;
    let m; re.lastIndex = 0;
    while ((m = re.exec(n.textContent)) !== null) {
      const r = document.createRange(); r.setStart(n, m.index); r.setEnd(n, m.index + m[0].length);
      const tops = new Set(Array.from(r.getClientRects()).filter(x => x.width > 0)
        .map(x => Math.round(x.top)));
      if (tops.size > 1) out.push(m[0]);
    } }
  return out.slice(0, 10); })()"""

OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"

# Tables printed: each displayed and no wider than the page (its columns all rendered). Tables
# inside a closed disclosure print as its one-line summary (the digest): they stay in the file.
PRINTED = """(() => { const w = document.documentElement.clientWidth;
  return Array.from(document.querySelectorAll('table'))
    .filter(t => !t.closest('details:not([open])')).map(t => {
    const r = t.getBoundingClientRect();
    return {id: t.id || t.className, shown: t.getClientRects().length > 0,
            right: Math.round(r.right), wide: t.scrollWidth, page: w}; }); })()"""

# Every text run against the background it sits on (WCAG relative luminance), lowest first.
CONTRAST = """(() => {
  const lum = c => { const m = c.match(/[0-9.]+/g).map(Number);
    const [r, g, b] = m.slice(0, 3).map(v => { v /= 255;
      return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  const bg = e => { for (; e; e = e.parentElement) { const c = getComputedStyle(e).backgroundColor;
    if (c && !/rgba\\(.*, 0\\)$/.test(c) && c !== 'transparent') return c; } return 'rgb(255,255,255)'; };
  const out = [];
  document.querySelectorAll('main *').forEach(e => {
    if (e.closest('svg') || !e.getClientRects().length) return;
    const own = Array.from(e.childNodes).some(n => n.nodeType === 3 && n.textContent.trim());
    if (!own) return;
    const s = getComputedStyle(e); if (s.visibility === 'hidden' || +s.opacity < 1) return;
    const a = lum(s.color), b = lum(bg(e));
    out.push([(Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), e.tagName + '.' + e.className]);
  });
  out.sort((x, y) => x[0] - y[0]); return out.slice(0, 5); })()"""


def pdf_pages(path: Path) -> int:
    """Pages of a PDF that Chromium wrote (its page objects are plain dictionaries)."""
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", path.read_bytes()))


def env_versions_in_order(headers: list[str]) -> bool:
    from driver.report.fmt import version_key

    envs = [h for h in headers if re.fullmatch(r"(?:tf|TF )\d+\.\d+", h)]
    key = [version_key(re.sub(r"^(?:tf|TF )", "", h)) for h in envs]
    return key == sorted(key)


def _check_page(path: Path, tag: str):
    SHOTS.mkdir(parents=True, exist_ok=True)
    probes = {"top": TOP, "overflow": OVERFLOW, "unnamed": FIGURES_UNNAMED,
              "contrast": CONTRAST, "ticks": TICKS, "clipped": CLIPPED,
              "versions": VERSION_HEADERS}
    for width in (1400, 800):
        result = browser.inspect(path, screenshot=SHOTS / f"{tag}-{width}.png", width=width,
                                 height=1000, probes=probes, timeout=300)
        assert result["errors"] == [] and browser.outside_requests(result) == []
        p = result["probes"]
        bottom_line_end, forest_top = p["top"]
        # the whole bottom line and the first forest panel on the first screen
        assert 0 < bottom_line_end < 1000 and 0 <= forest_top < 1000, (width, p["top"])
        assert p["unnamed"] == 0
        assert p["contrast"][0][0] >= 4.5, p["contrast"]
        assert p["ticks"] and all(n >= 2 for _, n in p["ticks"]), \
            [t for t in p["ticks"] if t[1] < 2]
        assert env_versions_in_order(p["versions"] or []), p["versions"]
        if width == 1400:
            assert p["clipped"] == [], p["clipped"]
        if width == 800:
            assert p["overflow"] <= 0, p["overflow"]
    pdf = SHOTS / f"{tag}.pdf"
    printed = browser.inspect(path, width=1047, height=740, media="print",
                              probes={"tables": PRINTED, "split": SPLIT_NUMBERS}, pdf=pdf,
                              timeout=300)
    tables = printed["probes"]["tables"]
    assert tables and all(t["shown"] for t in tables), [t for t in tables if not t["shown"]]
    clipped = [t for t in tables if t["right"] > t["page"] + 1 or t["wide"] > t["page"] + 1]
    assert clipped == []
    assert printed["probes"]["split"] == [], printed["probes"]["split"]
    assert pdf.stat().st_size > 20_000
    assert 1 <= pdf_pages(pdf) <= 30, pdf_pages(pdf)


def test_checks_can_fail(tmp_path):
    """The page checks catch what they look for: versions out of order, a PDF's page count."""
    assert not env_versions_in_order(["config", "tf2.10", "tf2.2"])
    assert env_versions_in_order(["config", "tf1.14", "tf2.2", "tf2.10"])
    assert not env_versions_in_order(["config", "TF 2.10", "TF 2.2"])  # the page's words
    assert env_versions_in_order(["config", "TF 1.14", "TF 2.2", "TF 2.10"])
    fake = tmp_path / "x.pdf"
    fake.write_bytes(b"<< /Type /Pages >> << /Type /Page >> << /Type /Page\n>>")
    assert pdf_pages(fake) == 2


@needs_chromium
def test_first_screen_in_chromium_synthetic(synthetic):
    _check_page(synthetic["path"], "screen-synthetic")


@needs_chromium
def test_first_screen_in_chromium_real_cells(quick_fixture):
    _check_page(quick_fixture["path"], "screen-fixture")


@needs_chromium
@pytest.mark.e2e
def test_first_screen_in_chromium_quick_run(quick_run):
    """The report the workflow rendered from the quick preset (needs the framework envs)."""
    work, _ = quick_run
    _check_page(work / "results" / "report.html", "screen-quick")
