"""The report (scripts/driver/report/render.py and the views it runs, report/template.html.j2) and
`make publish` (scripts/publish.py).

The report is rendered from a synthetic study written to tmp_path (cells.csv, the comparison
tables, cell files), so these tests need no framework and no pipeline run. One failed cell
carries `<script>alert(1)</script>` in its reason and log tail: the page must show it as text.
The browser tests open the page in real headless Chromium (tests/browser.py) and first prove
that the checker catches a console error and an outside request on a deliberately bad page.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import browser  # noqa: E402
import publish  # noqa: E402

from driver.report import claims as report_claims  # noqa: E402
from driver.report import figures  # noqa: E402
from driver.report import render as report  # noqa: E402
from driver.tables import aggregate as tab  # noqa: E402
from driver.tables import ordering  # noqa: E402
from driver.tables.registry import NAMES  # noqa: E402

TEMPLATE = REPO / "report" / "template.html.j2"
XSS = "<script>alert(1)</script>"
SECTION_IDS = [s for s, _ in report.SECTIONS]
ENVS = {"tf1.14": "1.14.0", "tf2.3": "2.3.4", "tf2.21": "2.21.0"}
MACHINE = "xeon-test"
CONFIG = {"envs": "cpu", "reference_env": "tf1.14", "repeats": 1, "noisy_threshold": 0.1,
          "cell_timeout_s": 900, "cell_memory_mb": 16000,
          "stop": {"rule": "adaptive", "target_rel": 0.01, "min_samples": 30,
                   "max_samples": 5000, "budget_s": 6, "level": 0.95},
          "grids": [{"name": "factors", "pairs": [["small", "small"]]}]}
MACHINE_FACTS = {"cpu_model": "Intel(R) Xeon(R) Test CPU <b>bold</b>", "cpu_count": 2,
                 "cpu_flags": ["avx2", "fma"], "gpus": None, "hostname": "vm",
                 "mem_total_gb": 23.5, "platform": "Linux-test"}


def _axes(keras, mode, api, inp, model="small", data="small", device="cpu"):
    return {"model": model, "data": data, "keras": keras, "mode": mode, "api": api,
            "input": inp, "device": device}


def _cell_id(axes):
    slug = {"tf.keras": "tfkeras", "tf.python.keras": "tfpykeras"}.get(axes["keras"],
                                                                       axes["keras"])
    return "%s-%s.%s.%s.%s.%s.%s" % (axes["model"], axes["data"], slug, axes["mode"],
                                     axes["api"], axes["input"], axes["device"])


def synthetic_study(root: Path, n_samples=60, big_cell_samples=0):
    """Write a small study: cell files, cells.csv and every table. Returns the render kwargs."""
    rng = np.random.default_rng(7)
    records = []
    for env, version in ENVS.items():
        flavours = ["keras", "tf.keras"] if env == "tf1.14" else ["tf.keras", "tf.python.keras"]
        for keras in flavours:
            for mode in ("eager", "graph"):
                for api in ("train_on_batch", "fit"):
                    for inp in ("numpy", "tfdata"):
                        axes = _axes(keras, mode, api, inp)
                        base = 0.020 * (1.3 if env != "tf1.14" else 1.0) * (
                            0.8 if mode == "graph" else 1.0) * (2.0 if api == "fit" else 1.0) * (
                            15 if keras == "tf.python.keras" else 1.0)
                        n = n_samples
                        samples = base * rng.lognormal(0.0, 0.05, n)
                        if env == "tf2.21" and keras == "tf.keras" and mode == "eager" \
                                and api == "train_on_batch" and inp == "numpy":
                            samples = samples * np.linspace(1.0, 1.5, n)  # a rising stem plot
                            if big_cell_samples:
                                samples = base * rng.lognormal(0, 0.05, big_cell_samples) * \
                                    np.linspace(1.0, 1.5, big_cell_samples)
                        # three fresh processes per cell: verdicts come from processes
                        for rep in range(3):
                            rec = _record(env, version, axes, "ok",
                                          samples=samples * (1.0 + 0.01 * (rep - 1)))
                            rec["repeat"] = rep
                            records.append(rec)
    records.append(_record("tf2.21", "2.21.0", _axes("keras3", "eager", "fit", "numpy"), "failed",
                           reason="crashed: " + XSS, log_tail="Traceback\n  " + XSS + "\nEOF"))
    records.append(_record("tf2.21", "2.21.0", _axes("keras3", "graph", "fit", "numpy"),
                           "skipped", reason="Keras 3 has no v1 graph mode & <no> graph"))
    cell_dir = root / "results" / "cells" / MACHINE
    paths = []
    for rec in records:
        path = cell_dir / rec["env"] / ("%s.r%d.json" % (rec["cell_id"], rec["repeat"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec))
        paths.append(str(path))
    return aggregate(root, paths)


def aggregate(root: Path, paths):
    """The real aggregation on cell files; returns the render kwargs for what it wrote."""
    tables_dir = root / "results" / "tables"
    result = tab.tabulate(paths, "tf1.14", 0.1, 0.95, config=CONFIG)
    tables = {name: str(tables_dir / ("%s.csv" % name)) for name in NAMES}
    tab.write_outputs(result, tables_dir / "cells.csv", tables, root / "results" / "study.xlsx",
                      tables_dir / "processes.json", tables_dir / "facts.json")
    return {"cells_csv": str(tables_dir / "cells.csv"), "tables": list(tables.values()),
            "processes_json": str(tables_dir / "processes.json"),
            "facts_json": str(tables_dir / "facts.json"), "template": str(TEMPLATE),
            "machine": MACHINE, "config": CONFIG}


def _record(env, version, axes, status, samples=None, reason="", log_tail=None):
    rec = dict(axes, schema_version=1, cell_id=_cell_id(axes), env=env, machine=MACHINE,
               repeat=0, status=status, reason=reason, framework="tensorflow",
               framework_version=version, python="3.7.17" if env == "tf1.14" else "3.11.9",
               started_utc="2026-05-0%dT10:00:00+00:00" % (1 + len(env) % 3),
               flops_per_step=1033777152,
               provenance={"machine": MACHINE_FACTS,
                           "env": {"python": "3.7.17", "python_executable": "/x/%s/bin/python"
                                   % env, "spec_hash": "abc123" + env, "install_s": 42.0,
                                   "spec_file": "envs/%s.yaml" % env,
                                   "package_sources": {
                                       "find_links": ["/opt/wheels"], "extra_index_urls": [],
                                       "packages": ["tensorflow"],
                                       "skipped": ["extra_index_urls https://idx.example/simple/:"
                                                   " does not answer (dns)"]},
                                   "resolved": {"tensorflow": version + "+local"},
                                   "packages": {"tensorflow": version, "numpy": "1.21.6",
                                                "evil<pkg>": "<1.0>"}},
                           "load_before": [0.5, 0.4, 0.3], "load_after": [0.9, 0.5, 0.3]})
    if samples is not None:
        s = np.asarray(samples)
        rec.update(stopped_by="count", rule={"kind": "fixed", "iterations": len(s)},
                   python_executable="/x/bin/python")
        lo, hi = np.percentile(s, [40, 60])
        drift = bool(s[-len(s) // 4:].mean() / s[: len(s) // 4].mean() > 1.1)
        rec.update(samples_s=s.tolist(), first_call_s=float(s[0] * 30),
                   summary={"median_s": float(np.median(s)), "ci_low_s": float(lo),
                            "ci_high_s": float(hi), "noisy": False, "drift": drift,
                            "drift_ratio": float(np.median(s[-len(s) // 4:]) /
                                                 np.median(s[: len(s) // 4])),
                            "n": len(s)})
    if log_tail is not None:
        rec["log_tail"] = log_tail
    return rec


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    root = tmp_path_factory.mktemp("study")
    kwargs = synthetic_study(root)
    out = root / "results" / "report.html"
    selfbench = root / "results" / "selfbench.json"
    selfbench.write_text(json.dumps({"overhead_rel": 3.2e-5, "ci_rel_median": 0.011,
                                     "spread_ours": 0.02, "spread_seed": 0.11,
                                     "timed_share": 0.41, "note": "<i>synthetic</i>"}))
    info = report.render(out_html=str(out), selfbench_path=str(selfbench), **kwargs)
    return {"root": root, "html": out.read_text(encoding="utf-8"), "path": out, "info": info,
            "kwargs": kwargs}


# ----------------------------------------------------------------------------- the page itself


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
    verdict = html[positions[0]:positions[1]]
    assert "Intel(R) Xeon(R) Test CPU" in verdict
    assert "tensorflow 1.14.0, 2.3.4, 2.21.0" in verdict
    assert "TF2 is slower than TF1" in verdict and "holds" in verdict
    assert "tf.python.keras is 10-100x slower than tf.keras" in verdict
    assert "DON&#39;T" in verdict or "DON'T" in verdict
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
    assert 'class="pos' in tables and 'n.s.' in tables or 'class="neg' in tables


def test_self_contained(rendered):
    html = rendered["html"]
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "@import" not in html
    assert not re.search(r"url\(\s*['\"]?(?!#)", html)  # only SVG-internal url(#id) refs
    assert re.search(r'http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;',
                     html) or "default-src 'none'" in html
    assert "<svg" in html and "data:image/png;base64," in html
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
    assert len(y) <= figures.MAX_PLOT_POINTS and block == 17


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

needs_chromium = pytest.mark.skipif(
    not os.path.exists(browser.CHROMIUM),
    reason="Chromium is not installed at /usr/bin/chromium (Debian: apt-get install chromium); "
           "CI installs it")


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
    # 8 ok eager cells of tf2.21 plus its failed keras3 eager cell
    assert result["probes"]["filtered"] == 9
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
    assert result["dom"]["sections"] == SECTION_IDS
    assert out.stat().st_size < 10 * 2**20


# ----------------------------------------------------------------------------- make publish


def _results(root: Path):
    res = root / "results"
    (res / "tables").mkdir(parents=True)
    (res / "report.html").write_text("<!doctype html><title>r</title><p>report</p>")
    (res / "study.xlsx").write_bytes(b"PK\x03\x04 not really a workbook")
    pd.DataFrame({"machine": ["m1"], "env": ["tf2.21"], "framework": ["tensorflow"],
                  "framework_version": ["2.21.0"], "status": ["ok"]}).to_csv(
        res / "tables" / "cells.csv", index=False)
    (res / "tables" / "tf2_vs_tf1.csv").write_text("a,b\n1,2\n")
    return res


def test_publish_copies_and_is_idempotent(tmp_path):
    res = _results(tmp_path)
    docs = tmp_path / "docs"
    publish.publish(res, docs)
    assert (docs / "index.html").read_text() == (res / "report.html").read_text()
    assert (docs / "study.xlsx").read_bytes() == (res / "study.xlsx").read_bytes()
    assert (docs / "tables" / "cells.csv").exists()
    assert (docs / "tables" / "tf2_vs_tf1.csv").exists()
    assert (docs / ".nojekyll").exists()
    note = (docs / "PROVENANCE.md").read_text()
    assert "m1" in note and "2.21.0" in note and "index.html" in note
    before = {p: p.read_bytes() for p in docs.rglob("*") if p.is_file()}
    publish.publish(res, docs)
    after = {p: p.read_bytes() for p in docs.rglob("*") if p.is_file()}
    assert before == after  # idempotent: the same inputs give the same files
    # a table that is gone from results/ is gone from docs/ too; other docs files stay
    (docs / "keep.txt").write_text("mine")
    (res / "tables" / "tf2_vs_tf1.csv").unlink()
    publish.publish(res, docs)
    assert not (docs / "tables" / "tf2_vs_tf1.csv").exists()
    assert (docs / "keep.txt").exists()
    assert not [p for p in docs.iterdir() if p.name.startswith(".publish")]


def test_publish_refuses_incomplete_results(tmp_path):
    res = _results(tmp_path)
    (res / "report.html").unlink()
    with pytest.raises(publish.PublishError, match="report.html"):
        publish.publish(res, tmp_path / "docs")
    assert not (tmp_path / "docs" / "index.html").exists()


def test_publish_command_line(tmp_path):
    res = _results(tmp_path)
    docs = tmp_path / "site"
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "publish.py"),
                          "--results", str(res), "--docs", str(docs)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert (docs / "index.html").exists()
    assert math.isfinite(len(out.stdout))
    shutil.rmtree(docs)


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
         params=NS(machine="m", config={"machines": "all"}, selfbench=%(sb)r))
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
