"""The report, rendered from what aggregation wrote and nothing else: the typed tables
(driver/tables/bundle.py) and the processes' samples and facts beside them (driver/tables/facts.py). It never
opens a cell file.

What the page promises, and how it is kept:
- Self-contained: figures are inline SVG (matplotlib, text as <text>) or PNG data URIs, the one
  script (report/report.js) and the style sheet (report/report.css) are inline, and a
  Content-Security-Policy meta tag forbids every fetch (`default-src 'none'`, images from data:
  only) and every script but ours (by its sha256).
- Nothing from the data is trusted as markup: the Jinja2 environment autoescapes everything, and
  only SVG/PNG that this package generated is inserted unescaped.
- A section whose builder fails shows the error instead of taking the whole report down.
"""
import base64
import datetime
import hashlib
import logging
import math
import traceback
from pathlib import Path

import jinja2
import pandas as pd

from driver.report import answer, sections, split, views
from driver.report import source_claims as seedcheck
from driver.report import source_table as seedtable
from driver.report.claims import claims, guidance_view
from driver.report.coverage import coverage
from driver.report.figures import COMPUTE_BOUND, MAX_PLOT_POINTS, OVERHEAD_BOUND, time_figures
from driver.report.fmt import col, is_true, num, text
from driver.report.forest import forest_svg, history_panels
from driver.tables import bundle, facts, ordering
from driver.tables.registry import COMPARISONS
from tfspeed.atomic import write_text

log = logging.getLogger("tfspeed.report")

SECTIONS = [
    ("verdict", "Answer"),
    ("coverage", "Coverage"),
    ("tables", "Comparisons"),
    ("history", "Performance history"),
    ("time", "Where the time goes"),
    ("stability", "Stability"),
    ("failures", "Failed and skipped cells"),
    ("environments", "Environments"),
    ("method", "Method"),
]
REPORT_SIZE_LIMIT = 10 * 1024 * 1024


def _guard(name, errors, fn, *args):
    """Build one section; a failure becomes a message in that section, not a broken report."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - any failure must leave the rest of the report
        log.error("section %s failed:\n%s", name, traceback.format_exc())
        errors[name] = f"{type(exc).__name__}: {exc}"
        return None


def build_context(cells: pd.DataFrame, tabs: dict, samples: dict, study: dict, machine,
                  config, selfbench_path=None, now=None) -> dict:
    """Everything the template needs, as plain data. cells and tabs: typed frames; samples:
    facts.read_samples; study: facts.read_facts."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    errors: dict = {}
    versions = tabs.get("versions", pd.DataFrame())
    order = study.get("env_order") or []
    if not order and len(cells) and {"env", "framework", "framework_version"} <= set(cells.columns):
        order = ordering.env_order(cells)
    status = col(cells, "status").map(text)
    ok = cells[status == "ok"] if len(cells) else cells
    peaks = views.measured_peaks(cells)
    machine_facts = study.get("machines") or {}
    twins = tabs.get("twins", pd.DataFrame())

    min_effect = num(config.get("min_effect", 0.05))
    min_effect = 0.05 if math.isnan(min_effect) else min_effect
    reference_env = text(config.get("reference_env"), "tf1.14")

    def first_screen():
        ans = answer.answer(tabs, min_effect)
        for panel in ans["panels"]:
            panel["svg"] = forest_svg(panel, min_effect, ans["reference"])
        return {**ans, "min_effect": min_effect,
                "seed": seedcheck.seed_checks(tabs, cells),
                "rules": seedcheck.machine_rules(tabs)}

    def verdict():
        machines = sorted(set(machine_facts) | {text(m) for m in col(cells, "machine").dropna()}
                          | {text(machine)} - {""})
        return {
            "machines": [{"key": m, "text": sections.describe_machine(machine_facts.get(m, {}))}
                         for m in machines],
            "dates": study.get("dates") or "unknown",
            "versions": sections.versions_covered(cells),
            "envs": order,
            "counts": {s: int((status == s).sum()) for s in ("ok", "failed", "skipped")},
            "n_cells": len(cells),
            "claims": claims(tabs, cells),
            "guidance": guidance_view(tabs.get("guidance", pd.DataFrame())),
            "n_drift": int(col(ok, "drift", False).map(is_true).sum()),
            "n_noisy": int(col(ok, "noisy", False).map(is_true).sum()),
            "n_busy": int(col(ok, "foreign_cpu_flag", False).map(is_true).sum()),
            "twins": len(twins),
            "twins_different": int(col(twins, "significant", False).map(is_true).sum()),
            "foreign_max": num(config.get("foreign_cpu_max_share")),
        }

    def tables_section():
        return {"groups": split.split_views(tabs),
                "best": split.best_vs_best(tabs.get("frameworks_best", pd.DataFrame()),
                                           min_effect),
                "seed": seedtable.seed_blocks(cells, tabs, reference_env, order),
                "cells": views.cells_table(cells)}

    def history():
        return {**history_panels(ok, order, reference_env),
                "versions": views.versions_view(versions, order)}

    def time_section():
        tt = views.time_table(ok, peaks)
        return {"figures": time_figures(ok, order, peaks), **tt,
                "peaks": [(m, "not measured" if math.isnan(p) else f"{p * 1e-9:,.1f} GFLOP/s")
                          for m, p in sorted(peaks.items())]}

    ctx = {
        "sections": SECTIONS,
        "machine": text(machine),
        "generated": now.strftime("%Y-%m-%d %H:%M UTC"),
        "answer": _guard("answer", errors, first_screen),
        "verdict": _guard("verdict", errors, verdict),
        "coverage": _guard("coverage", errors, coverage, cells, machine_facts, config),
        "tables": _guard("tables", errors, tables_section),
        "history": _guard("history", errors, history),
        "time": _guard("time", errors, time_section),
        "stability": _guard("stability", errors, views.stability_view, ok, samples, order),
        "failures": _guard("failures", errors, sections.failures_view, cells,
                           study.get("failures") or []),
        "environments": study.get("environments") or {"envs": [], "machines": []},
        "method": _guard("method", errors, sections.method_view, config, selfbench_path),
        "compute_bound": COMPUTE_BOUND,
        "overhead_bound": OVERHEAD_BOUND,
        "max_points": MAX_PLOT_POINTS,
        "table_links": [f"tables/{n}.csv" for n in ["cells", *COMPARISONS, "versions",
                                                      "guidance"]],
    }
    ctx["errors"] = errors
    return ctx


def render_html(ctx: dict, template) -> str:
    template = Path(template)
    folder = template.parent
    script = (folder / "report.js").read_text(encoding="utf-8")
    style = (folder / "report.css").read_text(encoding="utf-8")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
           f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")
    return env.get_template(template.name).render(**ctx, script_js=script, style_css=style,
                                                  csp=csp)


def render(cells_csv, tables, processes_json, facts_json, template, out_html, machine, config,
           selfbench_path=None, now=None) -> dict:
    """Render the report to `out_html` from aggregation's outputs; returns {"bytes",
    "section_errors", "cells"}. tables: paths named <name>.csv."""
    cells = bundle.read_table(cells_csv)
    tabs = bundle.read_tables(tables)
    samples = facts.read_samples(processes_json)
    study = facts.read_facts(facts_json)
    ctx = build_context(cells, tabs, samples, study, machine, config, selfbench_path, now)
    html = render_html(ctx, template)
    write_text(str(out_html), html)
    size = len(html.encode("utf-8"))
    if size > REPORT_SIZE_LIMIT:
        log.warning("the report is %.1f MB, over the 10 MB goal", size / 2**20)
    for name, err in ctx["errors"].items():
        log.warning("section %s shows an error: %s", name, err)
    log.info("wrote %s (%.2f MB)", out_html, size / 2**20)
    return {"bytes": size, "section_errors": dict(ctx["errors"]),
            "cells": ctx["verdict"]["n_cells"] if ctx["verdict"] else None}
