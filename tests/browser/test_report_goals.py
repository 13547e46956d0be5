"""The report a TensorFlow user can act on (issue 35), checked on the default study's report as
published: docs/index.html, which `make republish` renders with the current code from the runs
under docs/data (tests/unit/docs/test_published.py keeps it the current code's). In headless
Chromium at 1400 and 800 px and printed to PDF; screenshots and the PDF stay under
build/report-test/goals-* for a reader to look at.

Each goal is a named limit below and each check a function of what the page shows;
test_checks_can_fail plants a miss for each check that reads text or numbers.
"""
from __future__ import annotations

import base64
import csv
import gzip
import io
import re
from pathlib import Path
from urllib.parse import unquote

import browser
import pdfpages
import pytest
from browser import needs_chromium
from report_study import REPO

DOCS = REPO / "docs"
PAGE = DOCS / "index.html"
SHOTS = REPO / "build" / "report-test"

# The goals.
# words before the first figure: the answer of one machine, and as many more for each further
# machine as its own answer line takes (every figure is one machine's, so the answer grows with
# the machines the page holds)
MAX_WORDS_BEFORE_FIGURE = 150
MAX_WORDS_PER_MORE_MACHINE = 100
SCREEN_PX = 900  # one screen at 1400 px: the 1400 x 900 window the review used
MAX_SCREENS = 20
MAX_BYTES = 2 * 1024 * 1024
MAX_PAGES = 25
MIN_PAGE_FILL = 0.5  # a page (but the last) whose content ends above its middle is half blank
MIN_LAST_PAGE_FILL = 0.1  # the last page holds more than the footer
QUESTIONS = ("q-graph", "q-keras2", "q-inference")  # training and inference, on the first screen

# Words a reader should not meet outside the method section: statistics' names and column names.
JARGON = ("bound_pct", "Benjamini", "p_threshold", "left_env", "framework_version",
          "p95_over_median", "spike_factor", "inconclusive")

WORDS = """(() => { const main = document.querySelector('main'), f = main.querySelector('figure');
  const w = document.createTreeWalker(main, NodeFilter.SHOW_TEXT); const out = [];
  for (let n = w.nextNode(); n; n = w.nextNode()) {
    if (f && (f.contains(n) || (f.compareDocumentPosition(n) & Node.DOCUMENT_POSITION_FOLLOWING)))
      break;
    const el = n.parentElement;
    if (!el || !el.getClientRects().length || el.closest('[aria-hidden="true"]')) continue;
    out.push(n.textContent); }
  return out.join(' '); })()"""

FACTS = """(() => {
  const ids = {}; document.querySelectorAll('[id]').forEach(e => ids[e.id] = (ids[e.id] || 0) + 1);
  const header = document.querySelector('header.top');
  const method = document.querySelector('#method');
  const text = Array.from(document.querySelectorAll('main > section'))
    .filter(s => s.id !== 'method').map(s => s.innerText).join('\\n');
  return {
    height: document.documentElement.scrollHeight,
    duplicate_ids: Object.values(ids).filter(v => v > 1).length,
    uncaptioned: Array.from(document.querySelectorAll('figure'))
      .filter(f => !(f.querySelector('figcaption') || {}).textContent).length,
    figures: document.querySelectorAll('figure').length,
    questions: Array.from(document.querySelectorAll('ul.bottom-line li')).map(li =>
      [li.id, Math.round(li.getBoundingClientRect().bottom + scrollY)]),
    legend: Array.from(document.querySelectorAll('#forest-legend .key'))
      .map(k => [k.className, k.textContent.trim()]),
    stamp: header && header.querySelector('.stamp') ? header.querySelector('.stamp').innerText : '',
    outside_method: text,
    titles: Array.from(document.querySelectorAll('[title]')).map(e => e.getAttribute('title')),
    downloads: Array.from(document.querySelectorAll('a[download]'))
      .map(a => [a.getAttribute('download'), a.getAttribute('href')]),
    twins: (document.querySelector('#run-details .kpis') || {textContent: ''}).textContent,
    aa: (document.querySelector('#twins + p') || {textContent: ''}).textContent,
    has_method: !!method,
  }; })()"""

# After a jump to a section: its heading's top against the sticky header's bottom.
JUMP = """(() => { const h = document.querySelector('#tables h2'),
  top = document.querySelector('header.top');
  const sticky = getComputedStyle(top).position === 'sticky';
  return [Math.round(h.getBoundingClientRect().top),
          sticky ? Math.round(top.getBoundingClientRect().bottom) : 0]; })()"""


def word_count(text: str) -> int:
    """Words as a reader counts them: runs of characters holding a letter or a digit."""
    return len([w for w in text.split() if re.search(r"\w", w)])


def jargon_found(text: str) -> list[str]:
    return [w for w in JARGON if w in text]


def half_blank(fill: list[float]) -> list[int]:
    """Pages (1-based) whose content ends above their middle, the last page aside, and the last
    when it holds next to nothing (the footer alone)."""
    bad = [i + 1 for i, f in enumerate(fill[:-1]) if f < MIN_PAGE_FILL]
    if fill and fill[-1] < MIN_LAST_PAGE_FILL:
        bad.append(len(fill))
    return bad


def download_rows(href: str) -> int:
    """Data rows of a CSV carried in a data: link (gzipped and base64, or plain)."""
    head, _, body = href.partition(",")
    if head == "data:application/gzip;base64":
        text = gzip.decompress(base64.b64decode(body)).decode("utf-8")
    else:
        assert head.startswith("data:text/csv"), head
        text = unquote(body)
    return sum(1 for _ in csv.reader(io.StringIO(text))) - 1


def stamp_ok(stamp: str) -> bool:
    """The header says the version, the date, the duration and the commit of the run; with
    several machines each machine's own run ("<machine> over <duration> at commit <c>; ...")."""
    run = r"over (?:\d+ h )?\d+ min at commit [0-9a-f]{7}"
    return bool(re.search(r"\d+\.\d+\.\d+ · measured \d{4}-\d\d-\d\d(?: to \d{4}-\d\d-\d\d)?"
                          r"(?: %s|: [^;·]+ %s(?:; [^;·]+ %s)+)" % (run, run, run), stamp))


def test_checks_can_fail():
    """Each check catches what it looks for."""
    assert word_count("Is TF 2 slower · ± ( )") == 4
    assert jargon_found("the bound_pct of a row") == ["bound_pct"]
    assert half_blank([0.36, 0.9, 0.25]) == [1] and half_blank([0.9, 0.9, 0.06]) == [3]
    assert half_blank([0.9, 0.6, 0.3]) == []
    assert stamp_ok("0.9.0 · measured 2026-11-26 over 1 h 6 min at commit fb584cb")
    assert stamp_ok("0.9.0 · measured 2026-11-26: 2-core AMD EPYC over 1 h 6 min at commit "
                    "fb584cb; 2-core Intel Xeon over 54 min at commit e200e18")
    assert not stamp_ok("0.9.0 · measured 2026-11-26: 2-core AMD EPYC; 2-core Intel Xeon")
    assert download_rows("data:text/csv;charset=utf-8,a%2Cb%0A1%2C2%0A3%2C4%0A") == 2
    assert stamp_ok("0.9.0 · measured 2026-11-26 over 54 min at commit e200e18 · report x")
    assert not stamp_ok("0.9.0 · measured 2026-11-26 · report x")  # no duration, no commit


@pytest.fixture(scope="module")
def published():
    if not PAGE.is_file() or not (DOCS / "tables" / "duets.csv").is_file():
        pytest.skip("no published default-study report with duets under docs/")
    return PAGE


@needs_chromium
@pytest.mark.parametrize("width", [1400, 800])
def test_first_screen_and_page(published, width):
    SHOTS.mkdir(parents=True, exist_ok=True)
    result = browser.inspect(published, screenshot=SHOTS / f"goals-{width}.png", width=width,
                             height=SCREEN_PX, probes={"words": WORDS, "facts": FACTS},
                             timeout=300)
    assert result["errors"] == []
    words = word_count(result["probes"]["words"])
    machines = {r["machine"] for r in csv.DictReader(open(DOCS / "tables" / "duets.csv",
                                                          encoding="utf-8"))}
    limit = MAX_WORDS_BEFORE_FIGURE + MAX_WORDS_PER_MORE_MACHINE * (len(machines) - 1)
    assert words <= limit, (words, limit, result["probes"]["words"])
    f = result["probes"]["facts"]
    bottoms = dict(f["questions"])
    for q in QUESTIONS:  # training and inference answered on the first screen
        assert 0 < bottoms[q] <= SCREEN_PX, (width, q, bottoms)
    if width == 1400:
        assert f["height"] <= MAX_SCREENS * SCREEN_PX, f["height"]
    assert f["duplicate_ids"] == 0 and f["uncaptioned"] == 0, (f["duplicate_ids"],
                                                                f["uncaptioned"])
    shapes = [symbol for _, symbol in f["legend"]]
    assert len(shapes) >= 4 and len(set(shapes)) == len(shapes), f["legend"]  # not hue alone
    assert stamp_ok(f["stamp"]), f["stamp"]
    assert jargon_found(f["outside_method"]) == []
    assert not [t for t in f["titles"] if "inconclusive" in t]
    # the A/A count is one number wherever the page gives it
    twins = len(list(csv.DictReader(open(DOCS / "tables" / "twins.csv", encoding="utf-8"))))
    assert f"of {twins} A/A twin rows" in f["twins"] and f" ({twins} twin rows)" in f["aa"]
    # downloads inside the page carry the published tables whole
    links = dict(f["downloads"])
    assert "duets.csv.gz" in links
    for name, href in links.items():
        rows = len(list(csv.DictReader(open(DOCS / "tables" / name.removesuffix(".gz"),
                                            encoding="utf-8"))))
        assert download_rows(href) == rows, name


@needs_chromium
@pytest.mark.parametrize("width", [1400, 800])
def test_a_jump_lands_below_the_navigation(published, width):
    result = browser.inspect(published, width=width, height=SCREEN_PX, fragment="tables",
                             probes={"jump": JUMP}, timeout=300)
    heading_top, header_bottom = result["probes"]["jump"]
    assert heading_top >= header_bottom, (width, heading_top, header_bottom)


@needs_chromium
def test_size_and_print(published):
    assert published.stat().st_size <= MAX_BYTES, published.stat().st_size
    pdf = SHOTS / "goals.pdf"
    SHOTS.mkdir(parents=True, exist_ok=True)
    from test_report_screen import PRINTED, pdf_pages

    printed = browser.inspect(published, width=1047, height=740, media="print",
                              probes={"tables": PRINTED}, pdf=pdf, timeout=300)
    tables = printed["probes"]["tables"]
    cut = [t for t in tables if t["right"] > t["page"] + 1 or t["wide"] > t["page"] + 1]
    assert cut == []
    assert pdf_pages(pdf) <= MAX_PAGES
    fill = pdfpages.page_fill(pdf)
    assert len(fill) == pdf_pages(pdf)
    assert half_blank(fill) == [], [round(x, 2) for x in fill]


def test_page_fill_reads_a_real_pdf(tmp_path):
    """The PDF reader against a page Chromium printed: a short page is mostly blank, a long one
    is full down to its last page."""
    if not Path(browser.CHROMIUM).exists():
        pytest.skip("no Chromium")
    short = tmp_path / "short.html"
    short.write_text("<!doctype html><p>one line</p>", encoding="utf-8")
    long = tmp_path / "long.html"
    long.write_text("<!doctype html>" + "<p>line</p>" * 120, encoding="utf-8")
    fills = []
    for page in (short, long):
        pdf = tmp_path / (page.stem + ".pdf")
        browser.inspect(page, width=1047, height=740, media="print", pdf=pdf, timeout=120)
        fills.append(pdfpages.page_fill(pdf))
    assert len(fills[0]) == 1 and fills[0][0] < 0.2
    assert len(fills[1]) >= 2 and all(f > 0.8 for f in fills[1][:-1])
