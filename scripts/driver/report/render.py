"""The report, rendered from what aggregation wrote and nothing else: the typed tables
(driver/tables/bundle.py) and the processes' samples and facts beside them (driver/tables/facts.py). It never
opens a cell file.

What the page promises, and how it is kept:
- Self-contained: figures are inline SVG (matplotlib, text as <text>) or PNG data URIs, the one
  script (report/report.js) and the style sheets (report/*.css) are inline, and a
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
import traceback
from pathlib import Path

import jinja2
import pandas as pd

from driver.report import sections as section_modules
from driver.report.data import ReportData
from driver.report.fmt import text
from driver.tables import labels
from driver.tables.registry import NAMES
from driver.tables.results import TABLES_DIR, Results, table_file
from tfspeed.atomic import write_text

log = logging.getLogger("tfspeed.report")

MODULES = section_modules.modules()
SECTIONS = [(m.ID, m.TITLE) for m in MODULES]
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
                  config, selfbench_path=None, now=None, previous=None) -> dict:
    """Everything the template needs, as plain data: each section module's build() under its ID
    (driver/report/sections/). cells and tabs: typed frames; samples: facts.read_samples; study:
    facts.read_facts."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    data = ReportData(cells=cells, tabs=tabs, samples=samples or {}, study=study or {},
                      machine=text(machine), config=dict(config or {}),
                      selfbench_path=selfbench_path, now=now, previous=previous)
    errors: dict = {}
    ctx = {
        "sections": [{"id": m.ID, "title": m.TITLE,
                      "template": section_modules.template_name(m.ID)} for m in MODULES],
        "machine": text(machine),
        "generated": now.strftime("%Y-%m-%d %H:%M UTC"),
        "table_links": [f"{TABLES_DIR}/{table_file(n)}" for n in ["cells", *NAMES]],
    }
    for mod in MODULES:
        ctx[mod.ID] = _guard(mod.ID, errors, mod.build, data)
    ctx["errors"] = errors
    ctx["ctx_sections"] = {m.ID: ctx[m.ID] for m in MODULES}
    # a section that only some studies have (OPTIONAL = True: the user's own model) is left out
    # of the navigation when its data is empty; its template shows nothing then
    ctx["sections"] = [s for m, s in zip(MODULES, ctx["sections"])
                       if not getattr(m, "OPTIONAL", False) or ctx[m.ID] or s["id"] in errors]
    return ctx


def style_files(folder) -> list[Path]:
    """The report's style sheets: report/report.css first, then report/*.css by name (one
    file per concern, so that each has one owner)."""
    return sorted(Path(folder).glob("*.css"), key=lambda p: (p.name != "report.css", p.name))


def render_html(ctx: dict, template) -> str:
    template = Path(template)
    folder = template.parent
    script = (folder / "report.js").read_text(encoding="utf-8")
    style = "\n".join(p.read_text(encoding="utf-8") for p in style_files(folder))
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    env.globals["header"] = labels.header  # a table's bare column names, in words
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    csp = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
           f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")
    return env.get_template(template.name).render(**ctx, script_js=script, style_css=style,
                                                  csp=csp)


def render(cells_csv, tables, processes_json, facts_json, template, out_html, machine, config,
           selfbench_path=None, now=None, previous_tables=None) -> dict:
    """Render the report to `out_html` from aggregation's outputs; returns {"bytes",
    "section_errors", "cells"}. tables: paths named <name>.csv; previous_tables: a previous
    run's, for the bottom line's agreement line."""
    results = Results.from_files(cells_csv, tables, processes_json, facts_json)
    previous = Results.from_files(tables=previous_tables) if previous_tables else None
    return render_results(results, template, out_html, machine, config, selfbench_path, now,
                          previous)


def render_results(results: Results, template, out_html, machine, config, selfbench_path=None,
                   now=None, previous: Results | None = None) -> dict:
    """Render the report to `out_html` from a results folder (driver/tables/results.py);
    `previous`: a previous run's, for the bottom line's agreement line."""
    ctx = build_context(results.cells(), results.tables(), results.samples(), results.facts(),
                        machine, config, selfbench_path, now,
                        previous.tables(cells=True) if previous is not None else None)
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
