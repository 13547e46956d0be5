"""The report's figures as a page of many: ids unique across inline SVGs (references still
resolve, the same figure gets the same ids), the compacted SVG draws the same paths, verdict
markers differ by shape as well as colour (and the forest's legend is made from them), the
equivalence interval drawn inside the tested one, the stability section's stem plots only for
flagged cells, and a byte budget per figure that the synthetic study's report keeps."""

from __future__ import annotations

import io
import math
import re

import matplotlib
import numpy as np
import pandas as pd
import pytest
from report_study import render_synthetic

from driver.report import figures, forest, svgtext
from driver.report.sections import stability
from driver.stats import verdicts

ID = re.compile(r'\sid="([^"]+)"')
REF = re.compile(r'url\(#([^)]+)\)|href="#([^"]+)"')


def _figure(points=3, title="t"):
    fig = figures.Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.plot(range(points), np.linspace(1, 2, points), "o-")
    ax.set_title(title)
    return fig


def _raw_svg(fig) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "tfspeed"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


def _refs(svg: str) -> set[str]:
    return {a or b for a, b in REF.findall(svg)}


def test_matplotlib_alone_repeats_ids_across_figures():
    """The fault unique_ids mends: two figures straight from matplotlib share their ids (clip
    paths, marker definitions, axes groups), so a page of them repeats ids."""
    a, b = _raw_svg(_figure(title="a")), _raw_svg(_figure(title="b"))
    assert set(ID.findall(a)) & set(ID.findall(b))


def test_two_figures_share_no_id_and_every_reference_resolves():
    a = figures.fig_svg(_figure(title="a"), "figure a")
    b = figures.fig_svg(_figure(title="b"), "figure b")
    ids_a, ids_b = ID.findall(a), ID.findall(b)
    assert ids_a and ids_b
    assert not set(ids_a) & set(ids_b)
    assert len(ids_a) == len(set(ids_a)) and len(ids_b) == len(set(ids_b))
    for svg, ids in ((a, ids_a), (b, ids_b)):
        refs = _refs(svg)
        assert refs, "a line plot with markers refers to its marker and clip path"
        assert refs <= set(ids), refs - set(ids)
        # the prefixes the browser tests select by stay (tests/browser/test_report_screen.py)
        for prefix in svgtext.KEPT_ID_PREFIXES:
            assert any(i.startswith(prefix) for i in ids), prefix
    # deterministic: the same figure, the same text and ids
    assert figures.fig_svg(_figure(title="a"), "figure a") == a


def test_unique_ids_rewrites_every_kind_of_reference():
    svg = ('<svg><defs><path id="m1" d="M0 0"/><clipPath id="p1"><rect/></clipPath></defs>'
           '<g id="axes_1"><use xlink:href="#m1"/><use href="#m1"/>'
           '<path clip-path="url(#p1)" d="M0 0"/></g><g id="patch_1"/></svg>')
    out = svgtext.unique_ids(svg)
    ids = set(ID.findall(out))
    assert len(ids) == 3 and all(re.fullmatch(r"(m0|p1|axes_1)-[0-9a-f]{8}", i) for i in ids)
    assert _refs(out) == {i for i in ids if not i.startswith("axes_")}
    assert "patch_1" not in out  # an id nothing refers to is dropped
    assert 'href="#m1"' not in out and "url(#p1)" not in out


def test_bare_groups_dropped_and_the_rest_kept():
    svg = '<svg><g><g id="a"><g><path d="M0 0"/></g></g><g style="x"><g/></g></g></svg>'
    assert svgtext._drop_bare_groups(svg) == '<svg><g id="a"><path d="M0 0"/></g><g style="x"><g/></g></svg>'


def test_short_path_draws_the_same_segments():
    d = "M 30.19 146.4 L 30.19 95.22 M 31.81 146.4 L 40 146.4 L 40 90 z M -1 -2 C 1 2 3 4 5 6"
    assert svgtext.short_path(d) == "M30.19 146.4V95.22M31.81 146.4H40V90zM-1-2C1 2 3 4 5 6"
    # a command it does not know leaves the path as it came
    assert svgtext.short_path("M 0 0 A 1 1 0 0 1 2 2") == "M 0 0 A 1 1 0 0 1 2 2"


def test_compact_svg_keeps_the_drawing():
    raw = _raw_svg(_figure(points=50))
    small = svgtext.compact_svg(raw)
    assert len(small) < 0.75 * len(raw)
    count = lambda s, tag: len(re.findall(rf"<{tag}\b", s))  # noqa: E731
    for tag in ("path", "use", "text", "g", "clipPath"):
        assert count(small, tag) == count(raw, tag), tag
    # every element keeps its style: inline as it was, or through its class's one rule
    rules = dict(re.findall(r"\.(s[0-9a-f]{6})\{([^}]*)\}", small))
    assert rules, "repeated styles become classes"

    def styles(svg, resolve):
        out = []
        for m in re.finditer(r"<(?!style\b)(\w+)\b([^>]*)>", svg):
            st, cl = re.search(r' style="([^"]*)"', m.group(2)), re.search(r' class="([^"]*)"',
                                                                         m.group(2))
            out.append((m.group(1), st.group(1) if st else resolve.get(cl.group(1)) if cl else None))
        return out

    # (the font list, the same for every text, moved to report/figures.css)
    assert styles(small, rules) == [(t, svgtext._FONTS.sub("", st) if st else st)
                                    for t, st in styles(raw, {})]
    # coordinates kept to 0.1 pt
    x_raw = [float(v) for v in re.findall(r'<use [^>]*\bx="([-\d.]+)"', raw)]
    x_small = [float(v) for v in re.findall(r'<use [^>]*\bx="([-\d.]+)"', small)]
    assert len(x_raw) == len(x_small) and max(abs(p - q) for p, q in zip(x_raw, x_small)) <= 0.05


def test_every_verdict_has_its_own_marker_and_legend_symbol():
    markers = [verdicts.WORDS[v].marker for v in verdicts.VERDICTS]
    assert len(set(markers)) == len(markers)
    # slower and faster, the pair that differs by hue (red / green), differ by shape too
    assert verdicts.WORDS[verdicts.RIGHT_FASTER].marker != verdicts.WORDS[verdicts.LEFT_FASTER].marker
    items = forest.legend_items()
    by_word = {i["word"]: i for i in items}
    assert list(by_word)[:4] == ["TF 2 slower", "TF 2 faster", "equivalent", "undecided"]
    symbols = [i["symbol"] for i in items]
    assert len(set(symbols)) == len(symbols) and all(len(s) == 1 for s in symbols)
    for v, item in zip((verdicts.RIGHT_FASTER, verdicts.LEFT_FASTER, verdicts.EQUIVALENT,
                        verdicts.INCONCLUSIVE), items):
        assert item["symbol"] == forest.MARKER_SYMBOLS[verdicts.WORDS[v].marker]
    assert items[-1]["cls"] == "k-open" and "open marker" in items[-1]["word"]
    assert len(forest.legend_items(standin="")) == 4


def _row(label, verdict, ratio, lo, hi, **extra):
    return {"label": label, "verdict": verdict, "ratio": ratio, "lo": lo, "hi": hi,
            "head": True, "standin": False, **extra}


def _markers(svg: str) -> set[str]:
    """The marker shapes an SVG defines (matplotlib puts each in <defs> once)."""
    return set(re.findall(r'<defs><path id="m[^"]*" d="([^"]+)"', svg))


def test_forest_draws_slower_and_faster_with_different_shapes():
    one = {"title": "t", "rows": [_row("2.1", verdicts.RIGHT_FASTER, 1.5, 1.3, 1.7),
                                  _row("2.2", verdicts.RIGHT_FASTER, 1.6, 1.4, 1.8)]}
    two = {"title": "t", "rows": [_row("2.1", verdicts.RIGHT_FASTER, 1.5, 1.3, 1.7),
                                  _row("2.2", verdicts.LEFT_FASTER, 0.6, 0.5, 0.7)]}
    n_one = len(_markers(forest.forest_svg(one, 0.1, "TF 1.14")))
    assert len(_markers(forest.forest_svg(two, 0.1, "TF 1.14"))) == n_one + 1


def _widths(svg: str) -> list[float]:
    return [float(w) for w in re.findall(r"stroke-width: ([\d.]+)", svg)]


def test_forest_draws_the_equivalence_interval_as_a_thick_bar_inside():
    plain = {"title": "t", "rows": [_row("2.1", verdicts.EQUIVALENT, 1.01, 0.95, 1.07)]}
    with_eq = {"title": "t", "rows": [_row("2.1", verdicts.EQUIVALENT, 1.01, 0.95, 1.07,
                                           eq_lo=0.97, eq_hi=1.05)]}
    a, b = forest.forest_svg(plain, 0.1, "TF 1.14"), forest.forest_svg(with_eq, 0.1, "TF 1.14")
    assert forest.EQ_BAR_WIDTH not in _widths(a)
    assert forest.EQ_BAR_WIDTH in _widths(b) and forest.CI_LINE_WIDTH in _widths(b)
    assert "thick bars: the equivalence intervals" in b and "thick bars" not in a
    nan_eq = {"title": "t", "rows": [_row("2.1", verdicts.EQUIVALENT, 1.01, 0.95, 1.07,
                                          eq_lo=math.nan, eq_hi=None)]}
    assert forest.EQ_BAR_WIDTH not in _widths(forest.forest_svg(nan_eq, 0.1, "TF 1.14"))


def test_budget_check_catches_a_heavy_figure():
    """The budget is a real limit: a figure of every sample of a long run exceeds it."""
    fig = figures.Figure(figsize=(4, 2))
    ax = fig.add_subplot()
    ax.plot(np.random.default_rng(1).random(5000), "o")  # markers: no path simplification
    heavy = figures.fig_svg(fig, "heavy")
    assert svgtext.figures_over_budget(f"<p>{heavy}</p>") == [("heavy", len(heavy.encode()))]
    assert svgtext.figures_over_budget(figures.fig_svg(_figure(), "light")) == []


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    return render_synthetic(tmp_path_factory.mktemp("figures"))


def _section(html: str, sid: str) -> str:
    m = re.search(r'<section id="%s".*?</section>' % sid, html, re.S)
    assert m, sid
    return m.group(0)


def test_synthetic_report_keeps_the_figure_budget_and_unique_ids(page):
    html = page["html"]
    assert html.count("<svg") >= 5
    assert svgtext.figures_over_budget(html) == []
    ids = ID.findall(html)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})[:5]


def test_every_figure_of_history_time_and_stability_has_a_caption_and_a_name(page):
    for sid in ("history", "time", "stability"):
        sec = _section(page["html"], sid)
        figs = re.findall(r"<figure\b.*?</figure>", sec, re.S)
        assert figs, sid
        for f in figs:
            assert "<figcaption>" in f, (sid, f[:200])
            assert re.search(r'<svg [^>]*aria-label="[^"]+"', f) and "<title>" in f, sid


def test_stability_draws_stems_for_flagged_cells_only(page):
    sec = _section(page["html"], "stability")
    stems = re.findall(r'aria-label="Stem plot of the (\d+) timed steps', sec)
    flagged = re.search(r"(\d+) flagged cells \(drifting or noisy\): their numbers", sec)
    assert flagged and len(stems) == int(flagged.group(1)) >= 1  # the synthetic rising cell
    # the overview names every cell; the per-env table counts the same cells
    n = int(re.search(r"of (\d+) cells by env", sec).group(1))
    env_table = re.search(r'<table id="t-stability-envs".*?</table>', sec, re.S).group(0)
    counts = [int(c) for c in re.findall(r'<tr><td>[^<]*</td><td data-v="(\d+)"',
                                         env_table)]
    assert sum(counts) == n > len(stems)


def test_quarter_ratio():
    assert stability.quarter_ratio(np.r_[np.ones(4), np.ones(4) * 2]) == 2.0
    assert math.isnan(stability.quarter_ratio(np.ones(7)))


def test_drift_overview_key_comes_from_its_markers():
    key = figures.drift_key()
    assert [k["symbol"] for k in key] == [figures.MARKER_SYMBOLS[m]
                                          for m, _ in figures.DRIFT_MARKERS.values()]
    assert len({k["symbol"] for k in key}) == len(key) == 3
    # slower and faster over time differ by shape as well as colour
    assert figures.DRIFT_MARKERS["slower"][0] != figures.DRIFT_MARKERS["faster"][0]


def _contrast(hex_colour: str) -> float:
    """WCAG contrast of a colour against white."""
    def lin(x):
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(int(hex_colour[i:i + 2], 16) / 255) for i in (1, 3, 5))
    return 1.05 / (0.2126 * r + 0.7152 * g + 0.0722 * b + 0.05)


def test_drift_key_colours_are_readable_as_text():
    assert min(_contrast(c) for c, _ in [(m[1], 0) for m in figures.DRIFT_MARKERS.values()]) < 4.5
    assert all(_contrast(k["colour"]) >= 4.5 for k in figures.drift_key())


def test_stem_plots_capped_most_severe_first(monkeypatch):
    """Past MAX_STEMS flagged cells the page draws the most drifting, then the most scattered;
    every flagged cell stays in the flagged table."""
    monkeypatch.setattr(stability, "MAX_STEMS", 2)
    rng = np.random.default_rng(1)
    rows, samples = [], {}
    for i, (drift, ratio, sd) in enumerate([(False, 1.0, 0.30), (True, 1.5, 0.01),
                                            (False, 1.0, 0.12), (True, 1.1, 0.02),
                                            (False, 1.0, 0.0)]):
        cid = f"c{i}"
        rows.append({"machine": "m", "env": "tf2.1", "cell_id": cid, "drift": drift,
                     "noisy": not drift and sd > 0.1, "drift_ratio": ratio, "between_sd": sd})
        samples[("m", "tf2.1", cid)] = {"samples": rng.uniform(1, 2, 64), "bounds": [64],
                                        "summary": {}, "axes": {"model": "small"}}
    view = stability.stability_view(pd.DataFrame(rows), samples, ["tf2.1"])
    assert view["n_flagged"] == 4 and len(view["flagged"]["rows"]) == 4
    assert len(view["stems"]) == 2
    # the two drifting cells (c1, c3) win over the scattered ones (c0, c2), in page order
    captions = [f["caption"] for f in view["stems"]]
    assert not any("noisy" in c for c in captions), captions
    assert [c.split(";")[0] for c in captions] == [stability.drift_words(1.5)[0],
                                                  stability.drift_words(1.1)[0]]
    assert stability.severity(True, 1.5, 0.0) > stability.severity(True, 1.1, 0.5) \
        > stability.severity(False, 1.0, 0.9) > stability.severity(False, 1.0, 0.1)


def test_env_packages_listed_once_across_machines():
    from driver.report.sections.environments import same_packages
    pk = [("numpy", "1.26.4"), ("tensorflow", "2.15.1")]
    views = [{"machine": "a", "env": "tf2.15", "packages": pk},
             {"machine": "b", "env": "tf2.15", "packages": pk},
             {"machine": "b", "env": "tf2.16", "packages": pk},
             {"machine": "c", "env": "tf2.15", "packages": pk[:1]}]
    out = same_packages(views)
    assert [v["same_as"] for v in out] == ["", "a", "", ""]


def test_a_comparison_opens_only_while_its_glance_is_short():
    from driver.report import split
    short = {"rows": 10, "glance": {"rows": [0] * split.OPEN_MAX_ROWS}}
    long = {"rows": 90, "glance": {"rows": [0] * (split.OPEN_MAX_ROWS + 1)}}
    flat = {"rows": 3, "glance": None, "full": {"rows": [0, 1, 2]}}
    assert split.open_glance(short) and not split.open_glance(long) and split.open_glance(flat)
    assert not split.open_glance({"rows": 0, "glance": None, "full": None})


def test_machine_tags_tell_machines_apart():
    from driver.report.sections.duets import machine_tags, panel
    assert machine_tags(["amd-epyc-2c-a59bbdd3", "intel-xeon-2c-4db20bbf"]) == {
        "amd-epyc-2c-a59bbdd3": "amd", "intel-xeon-2c-4db20bbf": "intel"}
    assert machine_tags(["amd-epyc-2c-a59bbdd3", "amd-epyc-2c-44e20b91"]) == {
        "amd-epyc-2c-a59bbdd3": "a59bbdd3", "amd-epyc-2c-44e20b91": "44e20b91"}
    rows = [{"machine": m, "left_framework_version": "2.0.4", "keras": "tf.keras"}
            for m in ("amd-epyc-2c-a", "intel-xeon-2c-b")]
    assert [r["label"] for r in panel(rows, "t")["rows"]] == ["2.0.4 tf.keras · amd",
                                                             "2.0.4 tf.keras · intel"]
    assert panel(rows[:1], "t")["rows"][0]["label"] == "2.0.4 tf.keras"


def test_history_one_panel_per_configuration_and_its_count_of_the_rest():
    """A configuration gets one panel, every machine a line in it, when some machine measured it
    in min_versions versions; the sentence's count of configurations without a panel counts
    exactly the others (twin keys neither draw nor count)."""
    rows = []

    def add(machine, api, envs):
        for i, env in enumerate(envs):
            rows.append({"framework": "tensorflow", "machine": machine, "model": "small",
                         "data": "small", "keras": "tf.keras", "mode": "eager", "api": api,
                         "input": "numpy", "device": "cpu", "env": env,
                         "framework_version": env[2:] + ".0", "median_s": 0.01 + i * 1e-3,
                         "ci_low_s": 0.009, "ci_high_s": 0.02})

    envs = ["tf2.1", "tf2.2", "tf2.3"]
    add("amd-a", "fit", envs)             # 3 versions here ...
    add("intel-b", "fit", envs[:2])       # ... 2 there: one panel, two lines
    add("amd-a", "predict", envs[:2])     # 2 and 2: no panel, counted
    add("intel-b", "predict", envs[:2])
    add("amd-a.twin", "call", envs[:1])   # a twin key: neither
    out = forest.history_panels(pd.DataFrame(rows), envs, "tf2.1", min_versions=3)
    assert len(out["panels"]) == 1 and out["fewer"] == 1
    assert out["machines"] == ["amd-a", "intel-b"]
    assert "amd-a: from" in out["panels"][0]["caption"]
    assert "intel-b: from" in out["panels"][0]["caption"]
