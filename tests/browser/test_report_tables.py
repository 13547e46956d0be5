"""The report's tables in headless Chromium (tests/support/browser.py), on the synthetic study's
page: a click on an env or release header sorts by number (TF 2.3 before TF 2.21, 2.3.4
before 2.21.0), and a table wider than the window scrolls inside its frame, its first column in
view, the page itself never wider than the window. The Python side is
tests/unit/report/test_tables_view.py."""
from __future__ import annotations

import browser
import pytest
from browser import needs_chromium

from driver.report.fmt import version_key

# Click a header of the every-cell table (by its words) once, then read that column.
SORT = """(name => { const t = document.getElementById('t-cells');
  const h = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent.trim() === name);
  if (h < 0) return null;
  t.tHead.rows[0].cells[h].click();
  return Array.from(t.tBodies[0].rows).map(r => r.cells[h].textContent.trim()); })"""

# The every-cell table's frame scrolled to its right: how wide the page, the frame and the table
# are, and where the first column's cell sits against the frame's left edge.
FRAME = """(() => { const t = document.getElementById('t-cells');
  t.closest('details').open = true;
  const frame = t.parentElement; frame.scrollLeft = 10000;
  const cell = t.tBodies[0].rows[0].cells[0];
  return {page: document.documentElement.scrollWidth - document.documentElement.clientWidth,
          frame: frame.clientWidth, table: t.scrollWidth, scrolled: frame.scrollLeft,
          overflow: getComputedStyle(frame).overflowX,
          first: Math.round(cell.getBoundingClientRect().left - frame.getBoundingClientRect().left)};
})()"""


def in_version_order(values: list[str]) -> bool:
    """Ascending by number ('tf2.3' < 'tf2.21', '2.3.4' < '2.21.0'), equal values side by side."""
    return values == sorted(values, key=version_key)


def test_the_order_check_can_fail():
    assert not in_version_order(["tf1.14", "tf2.21", "tf2.3"])  # text order
    assert not in_version_order(["2.21.0", "2.3.4"])
    assert in_version_order(["tf1.14", "tf2.3", "tf2.3", "tf2.21"])


@needs_chromium
def test_a_click_sorts_envs_and_releases_by_number(rendered):
    probes = {name: f"{SORT}({name!r})" for name in ("env", "release")}
    result = browser.inspect(rendered["path"], width=1400, height=900, probes=probes,
                             timeout=300)
    assert result["errors"] == []
    envs, releases = result["probes"]["env"], result["probes"]["release"]
    assert envs and releases, result["probes"]
    # the study has versions whose text order is not their number order: the check can tell
    assert sorted(set(envs)) != sorted(set(envs), key=version_key)
    assert in_version_order(envs), envs
    assert in_version_order(releases), releases


@needs_chromium
@pytest.mark.parametrize("width", [800, 1400])
def test_a_wide_table_scrolls_in_its_frame(rendered, width):
    result = browser.inspect(rendered["path"], width=width, height=900,
                             probes={"frame": FRAME}, timeout=300)
    f = result["probes"]["frame"]
    assert f["page"] <= 0, f  # the page is never wider than the window
    assert f["overflow"] == "auto"
    if width == 800:  # the every-cell table is wider than an 800 px window: its frame scrolls
        assert f["table"] > f["frame"] and f["scrolled"] > 0, f
        assert abs(f["first"]) <= 1, f  # the first column stays in view
