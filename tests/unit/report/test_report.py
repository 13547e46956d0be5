"""The report (scripts/driver/report/render.py and the views it runs, report/template.html.j2).

The report is rendered from a synthetic study written to tmp_path (cells.csv, the comparison
tables, cell files), so these tests need no framework and no pipeline run. One failed cell
carries `<script>alert(1)</script>` in its reason and log tail: the page must show it as text.
The browser tests open the page in real headless Chromium (tests/support/browser.py) and first prove
that the checker catches a console error and an outside request on a deliberately bad page.
"""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pandas as pd
from report_study import (
    REPO,
    SECTION_IDS,
    TEMPLATE,
    XSS,
    synthetic_study,
)

from driver.report import claims as report_claims
from driver.report import figures
from driver.report import render as report
from driver.tables import ordering


def test_render_escapes_untrusted_text(rendered):
    html = rendered["html"]
    assert rendered["info"]["section_errors"] == {}
    # the failed cell's reason and log tail, shown as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 2  # reason and log tail
    assert XSS not in html
    # our one script is the only script element
    assert len(re.findall(r"<script\b", html)) == 1
    # other untrusted strings: CPU model, package names and versions, skip reason
    assert "<b>bold</b>" not in html and "&lt;b&gt;bold&lt;/b&gt;" in html
    assert "evil&lt;pkg&gt;" in html and "evil<pkg>" not in html
    assert "&lt;no&gt; graph" in html
    assert "synthetic" in html and "<i>synthetic</i>" not in html


def test_sections_in_order_and_content(rendered):
    html = rendered["html"]
    positions = [html.find('<section id="%s"' % s) for s in SECTION_IDS]
    assert all(p >= 0 for p in positions), positions
    assert positions == sorted(positions)
    verdict = html[positions[0]:positions[SECTION_IDS.index("coverage")]]  # to "Which configuration"
    assert "Intel(R) Xeon(R) Test CPU" in verdict
    assert "tensorflow 1.14.0, 2.3.4, 2.21.0" in verdict
    assert "TF 1-style graph, train_on_batch():" in verdict  # the bottom line
    at = SECTION_IDS.index("guidance")
    guide = html[positions[at]:positions[at + 1]]
    assert "TF2 is slower than TF1" in guide and "holds" in guide
    assert "tf.python.keras is 10-100x slower than tf.keras" in guide
    assert "DON&#39;T" in guide or "DON'T" in guide
    assert "Training, small model, small data" in guide and "How to switch" in guide
    method = html[positions[SECTION_IDS.index("method")]:]
    assert "timing_slot=1" in method and "flock" in method
    # each env says where its packages came from and what they installed as
    assert "/opt/wheels (for tensorflow); skipped extra_index_urls https://idx.example" in html
    assert "tensorflow 2.21.0+local" in html
    assert "overhead_rel" in method and "3.2e-05" in method
    # empty tables say so
    at = SECTION_IDS.index("tables")
    tables = html[positions[at]:positions[at + 1]]
    assert "no rows" in tables
    assert 'class="pos' in tables and ' ?' in tables or 'class="neg' in tables
    assert "n.s." not in tables and "inconclusive" not in tables  # one verdict vocabulary


def test_self_contained(rendered):
    html = rendered["html"]
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html
    assert not re.search(r"url\(\s*['\"]?(?!#)", html)  # only SVG-internal url(#id) refs
    assert re.search(r'http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;',
                     html) or "default-src 'none'" in html
    assert "<svg" in html  # every figure inline SVG (the stem plots too: vector, 9 pt text)
    assert "<?xml" not in html and "<!--" not in html
    assert rendered["info"]["bytes"] < 10 * 1024 * 1024


def test_claims_judge_known_cases():
    rows = pd.DataFrame({"speedup": [2.0, 3.0, 1.5, 0.9], "sig": [True, True, True, False]})
    assert report_claims.judge(rows)["status"] == "holds"
    assert report_claims.judge(rows, min_factor=10)["status"].startswith("does not hold")
    against = pd.DataFrame({"speedup": [0.5, 0.6, 0.7], "sig": [True, True, True]})
    assert report_claims.judge(against)["status"] == "does not hold"
    ns = pd.DataFrame({"speedup": [1.01, 0.99], "sig": [False, False]})
    assert report_claims.judge(ns)["status"] == "not significant"
    assert report_claims.judge(pd.DataFrame(columns=["speedup", "sig"]))["status"] == "no data"
    # a 10x claim where no pair gets anywhere near 10x fails, significant or not
    weak = pd.DataFrame({"speedup": [1.2, 0.9, 1.4], "sig": [False, True, False]})
    assert report_claims.judge(weak, min_factor=10)["status"].startswith("does not hold: at most 1.40x")


def test_missing_inputs_do_not_crash(tmp_path):
    """No cells, a table with odd columns, empty bundles: still a page, every section there."""
    empty = tmp_path / "cells.csv"
    empty.write_text("")
    odd = tmp_path / "tf2_vs_tf1.csv"
    odd.write_text("foo,bar\n1,2\n")
    processes, facts_json = tmp_path / "processes.json", tmp_path / "facts.json"
    processes.write_text("{}")
    facts_json.write_text("{}")
    out = tmp_path / "report.html"
    info = report.render(str(empty), [str(odd)], str(processes), str(facts_json), str(TEMPLATE),
                         str(out), "m", {}, None)
    html = out.read_text()
    assert info["section_errors"] == {}
    for s in SECTION_IDS:
        assert '<section id="%s"' % s in html
    assert "no rows" in html
    assert "make selfbench</code> was not run" in html


def test_large_study_stays_small(tmp_path):
    """Thousands of samples in a cell are drawn as block medians; the page stays light."""
    kwargs = synthetic_study(tmp_path, n_samples=400, big_cell_samples=5000)
    out = tmp_path / "report.html"
    info = report.render(out_html=str(out), **kwargs)
    assert info["section_errors"] == {}
    assert info["bytes"] < 3 * 1024 * 1024
    x, y, block = figures.plot_points(np.arange(5000.0))
    assert len(y) <= figures.MAX_PLOT_POINTS and block == -(-5000 // figures.MAX_PLOT_POINTS)


def test_svg_text_is_escaped():
    fig = figures.Figure(figsize=(2, 1))
    ax = fig.add_subplot()
    ax.set_title(XSS + " --> &")
    svg = figures.fig_svg(fig)
    assert "<script" not in svg and "&lt;script&gt;" in svg
    assert "<!--" not in svg and "<?xml" not in svg


def test_version_order():
    cells = pd.DataFrame({"env": ["tf2.10", "tf1.14", "tf2.3", "tf2.21"],
                          "framework": ["tensorflow"] * 4,
                          "framework_version": ["2.10.1", "1.14.0", "2.3.4", "2.21.0"]})
    assert ordering.env_order(cells) == ["tf1.14", "tf2.3", "tf2.10", "tf2.21"]


# ----------------------------------------------------------------------------- in a real browser

# make publish and make republish: tests/unit/docs/test_published.py


def test_runs_as_a_snakemake_script(tmp_path):
    """As Snakemake's `script:` runs it: a copy of the script under .snakemake/scripts with a
    preamble in front (so no `from __future__` import may open the file), a `snakemake` global,
    stderr to the rule's log."""
    kwargs = synthetic_study(tmp_path, n_samples=20)
    copy = tmp_path / ".snakemake" / "scripts" / "tmpabc.render_report.py"
    copy.parent.mkdir(parents=True)
    copy.write_text("\n######## snakemake preamble start (automatically inserted) #####\n"
                    "import sys; sys.path.extend([%r])\n" % str(REPO / "scripts")
                    + (REPO / "scripts" / "render_report.py").read_text())
    log = tmp_path / "logs" / "report.log"
    log.parent.mkdir()
    out = tmp_path / "results" / "report.html"
    code = """
import runpy, sys
from types import SimpleNamespace as NS
smk = NS(input=NS(cells_csv=%(cells)r, tables=%(tables)r, processes=%(proc)r,
                  facts=%(facts)r, template=%(tpl)r),
         output=NS(html=%(out)r), log=[%(log)r],
         params=NS(machine="m", config={"machines": "all"}, selfbench=%(sb)r,
                   previous_tables=%(tables)r))
runpy.run_path(%(script)r, init_globals={"snakemake": smk}, run_name="__snakemake__")
""" % {"cells": kwargs["cells_csv"], "tables": kwargs["tables"],
       "proc": kwargs["processes_json"], "facts": kwargs["facts_json"],
       "tpl": kwargs["template"], "out": str(out),
       "log": str(log), "sb": str(tmp_path / "results" / "selfbench.json"),
       "script": str(copy)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr + log.read_text()
    assert out.exists() and "wrote" in log.read_text()
    assert out.stat().st_mode & 0o044  # readable by others, not mkstemp's 0600
    assert run.stderr == ""  # everything went to the log
    assert "make selfbench</code> was not run" in out.read_text()
    # params.previous_tables (config previous_results): the run against itself agrees
    assert "agree with the previous run" in out.read_text()
