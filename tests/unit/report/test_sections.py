"""The report's sections as modules (driver/report/sections/): found by a loop, each with its own
template, in ORDER; a section whose build raises shows its error and the rest renders."""
import glob
import math

import pytest
from helpers import REPO

from driver.report import render, sections
from driver.tables import bundle

TEMPLATE = REPO / "report" / "template.html.j2"
PUBLISHED = REPO / "docs" / "tables"


def test_every_module_has_its_template_and_a_unique_place():
    mods = sections.modules()
    ids = [m.ID for m in mods]
    assert ids[0] == "verdict" and len(ids) == len(set(ids)) >= 9
    assert [m.ORDER for m in mods] == sorted(m.ORDER for m in mods)
    for m in mods:
        assert (REPO / "report" / sections.template_name(m.ID)).is_file(), m.ID
        assert m.TITLE and callable(m.build)
    assert render.SECTIONS == [(m.ID, m.TITLE) for m in mods]


@pytest.fixture(scope="module")
def published():
    if not (PUBLISHED / "cells.csv").exists():
        pytest.skip("no published tables")
    tabs = bundle.read_tables(sorted(glob.glob(str(PUBLISHED / "*.csv"))))
    return bundle.read_table(PUBLISHED / "cells.csv"), tabs


def test_a_failing_section_leaves_the_others(published, monkeypatch):
    cells, tabs = published
    broken = next(m for m in render.MODULES if m.ID == "history")

    def boom(data):
        raise RuntimeError("planted failure")

    monkeypatch.setattr(broken, "build", boom)
    ctx = render.build_context(cells, tabs, {}, {}, "m", {})
    assert ctx["errors"] == {"history": "RuntimeError: planted failure"}
    assert ctx["history"] is None and ctx["verdict"]["n_cells"] == len(cells)
    html = render.render_html(ctx, TEMPLATE)
    assert "This section could not be built: RuntimeError: planted failure" in html
    # every section is on the page, in order; an optional one (the user's own model) only
    # where the study has its data
    shown = [m for m in render.MODULES if not getattr(m, "OPTIONAL", False) or ctx[m.ID]]
    for m in shown:
        assert f'<section id="{m.ID}"' in html
    pos = [html.index(f'<section id="{m.ID}"') for m in shown]
    assert pos == sorted(pos)
    assert "scripts/report.py" not in html and "scripts/render_report.py" in html


def test_a_new_section_is_one_module_and_one_template(published, tmp_path, monkeypatch):
    """A section added to the package is found, built and rendered with no other change."""
    import shutil
    import sys
    import types

    cells, tabs = published
    mod = types.ModuleType("driver.report.sections.zzprobe")
    mod.ID, mod.TITLE, mod.ORDER = "zzprobe", "Probe", 95
    mod.build = lambda data: {"n": len(data.cells)}
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    monkeypatch.setattr(render, "MODULES", sorted([*render.MODULES, mod],
                                                  key=lambda m: m.ORDER))
    folder = tmp_path / "report"
    shutil.copytree(REPO / "report", folder)
    (folder / sections.template_name("zzprobe")).write_text(
        '<section id="zzprobe"><h2>Probe</h2>{{ zzprobe.n }} cells</section>\n')
    ctx = render.build_context(cells, tabs, {}, {}, "m", {})
    html = render.render_html(ctx, folder / "template.html.j2")
    assert f'<section id="zzprobe"><h2>Probe</h2>{len(cells)} cells</section>' in html
    assert html.index('id="zzprobe"') > html.index('id="stability"')
    assert '<a href="#zzprobe">Probe</a>' in html


def test_modules_without_the_contract_are_refused(monkeypatch, tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "bad.py").write_text("ID = 'bad'\n")
    monkeypatch.setattr(sections, "__path__", [str(pkg)])
    monkeypatch.setattr(sections, "__name__", "probe_pkg")
    import sys
    monkeypatch.syspath_prepend(str(tmp_path))
    (pkg / "__init__.py").write_text("")
    monkeypatch.setitem(sys.modules, "probe_pkg", __import__("pkg"))
    with pytest.raises(AttributeError, match="has no TITLE"):
        sections.modules()


def test_method_section_reads_the_aa_rate_selfbench_writes(tmp_path):
    """selfbench writes `aa_rate` as a rate with its CI; the Method section shows it (it once
    looked up another key and always said "not measured")."""
    import json

    from driver.report.sections import method

    path = tmp_path / "selfbench.json"
    path.write_text(json.dumps({"aa_rate": {"k": 2, "n": 24, "rate": 2 / 24, "ci_low": 0.01,
                                            "ci_high": 0.27, "nominal": 0.02, "ok": True},
                                "overhead_rel": 3e-5}))
    rows = {r["key"]: r["value"] for r in method.read_selfbench(path)["rows"]}
    assert rows["aa_rate"].startswith("2 of 24 (8.3%") and rows["aa_rate"].endswith("ok)")
    assert rows["overhead_rel"] == "3e-05"
    assert rows["mde_80"] == "not measured"


def test_the_duets_section_draws_the_tested_interval_and_lists_its_rows():
    """With a duets table the answer (first on the page) draws a forest plot per mode from it,
    with the equivalence interval inside the tested one, and the duets section a table per mode
    (the verdict word, the simultaneous bound); without one it says the study has none."""
    import pandas as pd
    from duetfiles import duet_records

    from driver.tables import duets

    recs = duet_records([("tf2.0", "2.0.4", "graph", "tf.keras", 0.3),
                         ("tf2.21", "2.21.0", "graph", "tf_keras", 0.0),
                         ("tf2.21", "2.21.0", "eager", "keras3", 0.02)], seed=3)
    tabs = {"duets": duets.duets_table(recs)}
    ctx = render.build_context(pd.DataFrame(), tabs, {}, {}, "m", {})
    assert "duets" not in ctx["errors"]
    html = render.render_html(ctx, TEMPLATE)
    top = html[html.index('<section id="verdict"'):]
    top = top[:top.index("</section>")]
    headline = top[top.index('class="forest headline"'):]
    headline = headline[:headline.index("</div>")]
    assert headline.count("<svg") == 2 and headline.count("<figcaption>") == 2
    assert "TF 1-style graph, train_on_batch(): each TF 2.x version" in headline
    assert [q["id"] for q in ctx["verdict"]["questions"]["items"]] == [
        "graph", "keras3", "keras2", "inference"]
    part = html[html.index('<section id="duets"'):]
    part = part[:part.index("</section>")]
    assert part.count("<svg") == 0  # drawn once, in the answer
    assert "TF 2 slower" in part and "equivalent" in part and "TF 1.14.0" in part
    empty = render.render_html(render.build_context(pd.DataFrame(), {}, {}, {}, "m", {}),
                               TEMPLATE)
    assert "No duets in this study" in empty


def test_the_pairs_section_counts_its_rows_verdicts_from_the_rows():
    """With a pairs table the section shows one table per comparison table and a sentence whose
    counts are recomputed here from the rows' verdicts (one fit row slower by a third, one
    equivalent, one left open); the A/A line counts the pairs_aa rows called different; without
    pairs it says the study has none."""
    import re

    import numpy as np
    import pandas as pd

    from driver.stats import calibration, verdicts
    from driver.study.duetplan import PAIR_SEP
    from driver.tables import duets

    rng = np.random.default_rng(4)
    cell = {"model": "small", "data": "small", "keras": "tf.keras", "mode": "graph",
            "api": "fit", "input": "numpy", "device": "cpu"}
    recs = []
    for env, shift, sd in (("tf1.14", 0.29, 0.01), ("tf2.9", 0.0, 0.005), ("tf2.10", 0.0, 0.4)):
        for rep, x in enumerate(rng.normal(shift, sd, 4)):
            recs.append({"machine": "m", "env": env, "cell": cell, "reference_env": env,
                         "reference_cell": dict(cell, api="train_on_batch"), "replicate": rep,
                         "status": "ok", "kind": "pair", "design": {
                             "replicates": 4, "together": True, "table": "fit_vs_train_on_batch"},
                         "log_ratio": float(x), "left_median_s": 0.007 * math.exp(x),
                         "right_median_s": 0.007, "wall_s": 5.0, "reason": ""})
    aa = [dict(r, reference_cell=cell, reference_env=r["env"],
               design={"replicates": 4, "together": True}) for r in recs[:8]]  # two A/A rows
    recs.append(dict(recs[4], replicate=4, status="failed", reason="killed", log_ratio=None))
    tabs = {name: duets.duets_table(recs + aa, kind=name) for name in ("pairs", "pairs_aa")}
    assert PAIR_SEP in tabs["pairs"]["cell_id"].iloc[0]
    ctx = render.build_context(pd.DataFrame(), tabs, {}, {}, "m", {})
    assert "pairs" not in ctx["errors"], ctx["errors"]
    html = render.render_html(ctx, TEMPLATE)
    part = html[html.index('<section id="pairs"'):]
    part = part[:part.index("</section>")]
    codes = [verdicts.norm_code(v) for v in tabs["pairs"]["verdict"]]
    want = (f"3 rows: fit faster in {codes.count(verdicts.LEFT_FASTER)}, slower in "
            f"{codes.count(verdicts.RIGHT_FASTER)}, equivalent within the margin in "
            f"{codes.count(verdicts.EQUIVALENT)}, undecided in {codes.count(verdicts.UNDECIDED)}")
    assert want in part
    assert sorted(codes) == sorted([verdicts.RIGHT_FASTER, verdicts.EQUIVALENT,
                                    verdicts.UNDECIDED])
    aa_codes = [verdicts.norm_code(v) for v in tabs["pairs_aa"]["verdict"]]
    called = sum(c in verdicts.DECIDED for c in aa_codes)
    assert re.search(rf"{called} of the {len(aa_codes)} A/A rows", part)
    aa_tab = tabs["pairs_aa"]
    lean = calibration.lean(aa_tab["log_ratio"], aa_tab["se_log"], aa_tab["n"])
    assert f"pooled over the {len(aa_tab)} rows: {math.exp(lean['mean']):.3f}" in part
    assert ("leaves 1 out" in part) == (not lean["ok"])
    assert part.count("<tr>") == 1 + 3  # header and the three rows
    failed = tabs["pairs"].set_index("env").loc["tf2.9", "n_failed"]
    assert failed == 1 and "4 (1 failed)" in part  # a row's count says what failed
    empty = render.render_html(render.build_context(pd.DataFrame(), {}, {}, {}, "m", {}),
                               TEMPLATE)
    assert "No pairs in this study" in empty
    # without pairs, the cells' rows of a table pairs could time: how many they left open
    cells_rows = pd.DataFrame({"verdict": ["undecided", "left_faster", "undecided", "equivalent"],
                               "env": "tf2.21", "mode": "graph"})
    ctx = render.build_context(pd.DataFrame(), {"fit_vs_train_on_batch": cells_rows}, {}, {},
                               "m", {})
    assert "pairs" not in ctx["errors"], ctx["errors"]
    part = render.render_html(ctx, TEMPLATE)
    part = part[part.index('<section id="pairs"'):]
    open_rows = sum(verdicts.norm_code(v) == verdicts.UNDECIDED for v in cells_rows["verdict"])
    assert f"the cells left undecided {open_rows} of the {len(cells_rows)} rows of fit" in part
    assert "<code>pairs.tables</code>, as <code>presets/pairs.yaml</code>" in part


def _graph_vs_eager_tabs(machines=("m",), reference=True):
    """The duets of two versions in both modes (and, with `reference`, the reference's graph
    against its eager cell) on each machine, the derived table, and the cells' graph_vs_eager
    rows: tf2.2's headline configuration (answered by the duets) and a large-model row (not)."""
    import pandas as pd
    from duetfiles import duet_records

    from driver.tables import duets
    from driver.tables.duets_graph_vs_eager import duets_graph_vs_eager_table

    recs = []
    for i, machine in enumerate(machines):
        recs += duet_records([("tf2.2", "2.2.3", "graph", "tf.keras", 0.1),
                              ("tf2.2", "2.2.3", "eager", "tf.keras", 0.9),
                              ("tf2.10", "2.10.1", "graph", "tf.keras", 0.2),
                              ("tf2.10", "2.10.1", "eager", "tf.keras", 0.2)],
                             sd=0.02, n=5, seed=i, machine=machine)
        if reference:
            ref = duet_records([("tf1.14", "1.14.0", "graph", "tf.keras", -0.5)], sd=0.02, n=10,
                               seed=9 + i, machine=machine)
            recs += [dict(r, reference_cell=dict(r["reference_cell"], mode="eager")) for r in ref]
    tabs = {name: duets.duets_table(recs, kind=name) for name in ("duets", "duets_modes")}
    tabs["duets_graph_vs_eager"] = duets_graph_vs_eager_table(tabs["duets"], tabs["duets_modes"])
    base = {"machine": machines[0], "env": "tf2.2", "framework_version": "2.2.3",
            "model": "small", "data": "small", "keras": "tf.keras", "api": "train_on_batch",
            "input": "numpy", "device": "cpu", "left_mode": "graph", "right_mode": "eager",
            "ratio": 1.3, "pct": -23.0, "ratio_ci_low": 1.1, "ratio_ci_high": 1.5,
            "ci_level": 0.95, "verdict": "right_faster", "left_median_s": 0.013,
            "right_median_s": 0.01, "p_adjusted": 0.01}
    tabs["graph_vs_eager"] = pd.DataFrame([base, dict(base, model="large", verdict="undecided")])
    return tabs


def test_graph_vs_eager_from_the_duets_is_shown_and_answers_the_cells_rows():
    """The duets section shows duets_graph_vs_eager (a machine column only with two machines);
    the comparisons section's graph_vs_eager row of the duets' configuration shows the duets'
    verdict, marked descriptive, counted apart from the cells' verdicts; a row of another
    configuration keeps its own. Without the reference's row, the duets section says why there
    is no graph vs eager per version."""
    import pandas as pd

    from driver.stats import verdicts

    tabs = _graph_vs_eager_tabs()
    derived = tabs["duets_graph_vs_eager"].set_index("env")
    assert derived.loc["tf2.2", "verdict"] == verdicts.LEFT_FASTER  # exp(0.1 - 0.9 - 0.5)
    ctx = render.build_context(pd.DataFrame(), tabs, {}, {}, "m", {})
    assert "duets" not in ctx["errors"] and "tables" not in ctx["errors"], ctx["errors"]
    html = render.render_html(ctx, TEMPLATE)
    part = html[html.index('<section id="duets"'):]
    part = part[:part.index("</section>")]
    assert "Graph vs eager in every version, from these duets" in part
    assert f"Graph vs eager: the {len(derived)} rows" in part and "graph faster" in part
    gve = ctx["duets"]["graph_vs_eager"]["table"]
    assert [c["label"] for c in gve["columns"]][0] == "TF version"
    assert [r[0]["text"] for r in gve["rows"]] == ["1.14.0", "2.2.3", "2.10.1"]
    view = next(g for g in ctx["tables"]["groups"] if g["name"] == "graph_vs_eager")["main"]
    first, second = (row[0]["text"] for row in view["full"]["rows"])
    assert first.startswith("descriptive (the duets answer this: graph faster, ")
    assert second == "undecided"
    assert view["descriptive"] == 1 and view["counts"] == {"undecided": 1}
    assert view["digest"].endswith("; 1 more descriptive (the duets answer them)")
    assert "1 of these rows are answered by the duets" in html
    # two machines: a machine column first
    two = render.build_context(pd.DataFrame(), _graph_vs_eager_tabs(("m", "m2")), {}, {}, "m",
                               {})
    assert two["duets"]["graph_vs_eager"]["table"]["columns"][0]["label"] == "machine"
    assert len(two["duets"]["graph_vs_eager"]["table"]["rows"]) == 6
    # no reference row: no derived rows, and the section says why
    none = _graph_vs_eager_tabs(reference=False)
    assert none["duets_graph_vs_eager"].empty
    html = render.render_html(render.build_context(pd.DataFrame(), none, {}, {}, "m", {}),
                              TEMPLATE)
    assert "no duets row of TF 1.14.0's graph cell against its eager cell" in html
    view = next(g for g in render.build_context(pd.DataFrame(), none, {}, {}, "m", {})[
        "tables"]["groups"] if g["name"] == "graph_vs_eager")["main"]
    assert "descriptive" not in view


def test_twins_asked_for_but_not_reached_say_why():
    """A run whose budget reached no round 1 has no twin (they start there under a time budget):
    the A/A paragraph says so and points to the paired rows' A/A tables; a study without twins
    in its config says it has none."""
    import pandas as pd

    def aa_part(config):
        html = render.render_html(
            render.build_context(pd.DataFrame(), {}, {}, {}, "m", config), TEMPLATE)
        part = html[html.index('<h3 id="twins">'):]
        return part[:part.index("<h3>")]

    asked = aa_part({"twins": 24, "time_budget_min": 54})
    assert "config <code>twins</code> asks for 24" in asked and "round 1" in asked
    assert "<code>duets_aa</code>" in asked
    for config in ({"twins": 0}, {"twins": 24, "time_budget_min": None}):
        none = aa_part(config)
        assert "No A/A twins in this study" in none and "asks for" not in none
