"""How the report's tables show: headers in words with the CSV's names in their tooltips
(driver/tables/labels.py), envs and versions in numeric order, the comparisons' glance and
digest (driver/report/views.py, split.py), the table macro (report/_macros.html.j2) and cells
named in words in Failures. The browser side (sorting by a click, frames that scroll) is
tests/browser/test_report_tables.py."""

from __future__ import annotations

import re
from html import unescape

import jinja2
import pandas as pd
import pytest
from report_study import REPO

from driver.report import split, views
from driver.report.fmt import fold_constants, pct_cell, version_key
from driver.report.sections.failures import cell_words
from driver.tables import labels

# Column names of the CSVs that tables show (the audit found these in the page's headers).
RAW = ["left_env", "left_framework_version", "left_keras", "right_keras", "framework_version",
       "p95_over_median", "p99_over_median", "max_over_median", "spike_factor", "median_s",
       "first_call_s", "right_env", "cpu_mhz", "mem_total_gb"]


def _labels(view: dict) -> list[str]:
    """Every header a comparison view puts on the page."""
    out = [c["label"] for c in view["full"]["columns"]]
    if view["glance"]:
        out += [h["label"] for h in view["glance"]["row_headers"] + view["glance"]["col_headers"]]
    return out + [k for k, _, _ in view["constants"]]


def _comparison(envs=("tf2.2", "tf2.10", "tf2.9"), verdict="left_faster") -> pd.DataFrame:
    """A TF2 vs TF1 table as aggregation writes it: one row per TF 2 env and mode."""
    rows = []
    for env in envs:
        for mode in ("graph", "eager"):
            rows.append({
                "machine": "m1", "model": "small", "data": "small", "keras": "tf.keras",
                "mode": mode, "api": "train_on_batch", "input": "numpy", "device": "cpu",
                "left_env": env, "left_framework_version": env[2:] + ".1",
                "right_env": "tf1.14", "right_framework_version": "1.14.0",
                "left_keras": "tf.keras", "right_keras": "tf.keras",
                "ratio": 0.8, "pct": 25.0, "ratio_ci_low": 0.7, "ratio_ci_high": 0.9,
                "verdict": verdict, "significant": verdict != "inconclusive",
                "left_median_s": 0.004, "right_median_s": 0.005, "p_adjusted": 0.001})
    return pd.DataFrame(rows)


def test_headers_are_words():
    for name in RAW:
        said = labels.header(name)
        assert labels.raw_headers([said]) == [], (name, said)
    assert labels.header("left_env", ("TF 2", "TF 1")) == "TF 2 env"
    assert labels.header("right_framework_version", ("TF 2", "TF 1")) == "TF 1 release"
    assert labels.header("p95_over_median") == "p95 / median"
    assert labels.header("tf2.10") == "TF 2.10"
    assert labels.header("tf1.14 Graph ms") == "TF 1.14 Graph ms"
    assert labels.header("keras3-jax") == "Keras 3 on JAX"
    assert labels.header("torch2.3") == "PyTorch 2.3"
    # words and the names of values stay as they are
    for words in ("median ms", "tf.keras", "tf_keras", "train_on_batch()", "TF 2 / TF 1"):
        assert labels.header(words) == words


def test_the_raw_header_check_catches_a_planted_name():
    assert labels.raw_headers(["TF 2 env", "left_env", "p (adjusted)"]) == ["left_env"]
    assert labels.raw_headers(["tf2.0 Graph ms", "TF 2.0 Graph ms"]) == ["tf2.0 Graph ms"]
    assert labels.raw_headers(["keras3-torch", "Keras 3 on PyTorch"]) == ["keras3-torch"]
    assert labels.raw_headers(["tf_keras", "train_on_batch", "tf.keras"]) == []
    view = views.comparison_view("tf2_vs_tf1", _comparison())
    assert labels.raw_headers(_labels(view)) == []
    view["full"]["columns"][3]["label"] = "left_framework_version"  # planted
    assert labels.raw_headers(_labels(view)) == ["left_framework_version"]


def test_comparison_headers_keep_the_csv_names_in_tooltips():
    view = views.comparison_view("tf2_vs_tf1", _comparison())
    glance = view["glance"]
    assert [h["label"] for h in glance["col_headers"]] == ["TF 2.2", "TF 2.9", "TF 2.10"]
    assert [h["csv"] for h in glance["col_headers"]][0] == "left_env tf2.2"
    assert [(h["label"], h["csv"]) for h in glance["row_headers"]] == [("mode", "mode")]
    # the sides equal in every row are said once, in words: TF 1's env with its release
    said = {k: (v, csv) for k, v, csv in view["constants"]}
    assert said["TF 1 env"] == ("TF 1.14 (1.14.0)", "right_env, right_framework_version")
    assert said["Keras"] == ("tf.keras", "keras")
    assert "right_env" not in said and "right_framework_version" not in said
    full = {c["label"]: c.get("csv") for c in view["full"]["columns"]}
    assert full["TF 2 is"] == "verdict" and full["p (adjusted)"] == "p_adjusted"
    assert "95 % CI" not in full and "tested interval" in full


def _graph_vs_eager(envs) -> pd.DataFrame:
    """A graph-vs-eager table: the env shared by both sides, two APIs."""
    return pd.DataFrame([{
        "machine": "m1", "env": env, "framework_version": env[2:] + ".1", "model": "small",
        "data": "small", "keras": "tf.keras", "api": api, "input": "numpy", "device": "cpu",
        "left_mode": "graph", "right_mode": "eager", "ratio": 0.5, "pct": 100.0,
        "ratio_ci_low": 0.4, "ratio_ci_high": 0.6, "verdict": "left_faster",
        "left_median_s": 0.005, "right_median_s": 0.01, "p_adjusted": 0.001}
        for env in envs for api in ("train_on_batch", "fit")])


def test_glance_envs_sort_by_number():
    envs = ["tf2.10", "tf2.2", "tf2.9"]
    assert sorted(envs) == ["tf2.10", "tf2.2", "tf2.9"]  # text order: the fault to avoid
    assert sorted(envs, key=version_key) == ["tf2.2", "tf2.9", "tf2.10"]
    assert sorted(["2.10.1", "2.2.3", "2.9.0"], key=version_key) == ["2.2.3", "2.9.0", "2.10.1"]
    view = views.comparison_view("graph_vs_eager", _graph_vs_eager(envs))
    assert [h["label"] for h in view["glance"]["col_headers"]] == ["TF 2.2", "TF 2.9", "TF 2.10"]
    assert [r["key_values"][0]["text"] for r in view["glance"]["rows"]] == [
        "train_on_batch()", "fit() 1 step/call"]  # the study's order of APIs
    # more envs than fit across: the matrix turns, the envs are its rows, in number order
    many = [f"tf2.{i}" for i in range(views.ENV_COLUMNS_MAX + 1)]
    view = views.comparison_view("graph_vs_eager", _graph_vs_eager(many[::-1]))
    keys = [r["key_values"][0] for r in view["glance"]["rows"]]
    assert [k["text"] for k in keys] == [f"TF 2.{i}" for i in range(views.ENV_COLUMNS_MAX + 1)]
    assert keys[0]["title"] == "tf2.0 2.0.1"  # the env id and its release in the tooltip


def test_glance_cells_say_the_words_of_the_page():
    view = views.comparison_view("tf2_vs_tf1", _comparison(verdict="inconclusive"))
    tips = [c["title"] for r in view["glance"]["rows"] for c in r["cells"] if c.get("title")]
    assert tips and all("undecided" in t and "inconclusive" not in t for t in tips)
    assert all("TF 2 4.00 ms, TF 1 5.00 ms" in t and "tested interval 0.7-0.9" in t
               for t in tips)
    # the medians are in the tooltip, not under the % (the caption says so)
    assert all("sub" not in c for r in view["glance"]["rows"] for c in r["cells"])
    old = pct_cell({"pct": -246.3, "ratio": 3.463, "verdict": "inconclusive",
                    "ratio_ci_low": 0.9, "ratio_ci_high": 9})
    assert "3.46x slower" in old["title"] and "undecided" in old["title"]
    assert "inconclusive" not in old["title"]


def test_digest_counts_the_verdicts():
    df = _comparison()
    df.loc[0, "verdict"] = "right_faster"
    df.loc[1, "verdict"] = "inconclusive"  # an older table's code
    view = views.comparison_view("tf2_vs_tf1", df)
    assert split.digest(view) == "6 pairs: TF 2 slower in 1, faster in 4, undecided in 1"
    assert split.digest({"rows": 0}) == "no rows"


def _macro_env(with_header: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(REPO / "report")),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    if with_header:
        env.globals["header"] = labels.header
    return env


@pytest.mark.parametrize("with_header", [True, False])
def test_the_table_macro_shows_words(with_header):
    """A column with its own csv name shows its label; a bare one reads through `header` where
    the page's environment has it (render.py), and as it is where not."""
    src = ('{% from "_macros.html.j2" import table %}{{ table(t) }}')
    t = {"id": "t-x", "rows": [[{"text": "1", "cls": "", "v": None, "title": None}] * 2],
         "columns": [{"label": "median ms", "csv": "median_s", "num": True},
                     {"label": "p95_over_median", "num": True}]}
    html = _macro_env(with_header).from_string(src).render(t=t, errors={})
    heads = [unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<th\b.*?</th>", html)]
    assert heads[0] == "median ms" and 'title="CSV: median_s"' in html
    if with_header:
        assert heads[1] == "p95 / median" and 'title="CSV: p95_over_median"' in html
        assert labels.raw_headers(heads) == []
    else:
        assert heads[1] == "p95_over_median" and labels.raw_headers(heads) == ["p95_over_median"]


def _section(html: str, sid: str) -> str:
    start = html.index(f'<section id="{sid}"')
    return html[start:html.index("</section>", start)]


def test_the_pages_comparisons_and_cells_have_word_headers(rendered):
    """The synthetic study's page: every header of the comparisons (the seed's layout aside:
    driver/report/source_table.py) and of every cell is words, nothing says inconclusive."""
    section = _section(rendered["html"], "tables")
    section = re.sub(r'<table id="t-seed.*?</table>', "", section, flags=re.S)
    heads = [unescape(re.sub(r"<[^>]+>", "", h)).strip()
             for h in re.findall(r"<th\b.*?</th>", section, flags=re.S)]
    assert len(heads) > 30
    assert labels.raw_headers(heads) == []
    assert "inconclusive" not in section.lower()
    assert 'title="CSV: left_env' in section or 'title="CSV: left_env tf2' in section


def test_failures_name_cells_in_words(rendered):
    assert cell_words("tf2.0", "small-small.tfpykeras.eager.train_on_batch.numpy.cpu") == (
        "TF 2.0: tf.python.keras, Eager, train_on_batch(), NumPy input (small model, small "
        "data, CPU)")
    assert cell_words("tf2.0", "not-a-cell") == "TF 2.0: not-a-cell"
    section = _section(rendered["html"], "failures")
    assert "TF 2.21: keras3, Eager, fit() 1 step/call, NumPy input" in section
    assert re.search(r'title="env tf2\.21, cell small-small\.keras3\.eager\.fit\.numpy\.cpu"',
                     section)


def test_columns_with_one_value_are_said_once():
    def c(x):
        return {"text": x, "cls": "", "v": None, "title": None}

    t = {"id": "t-x", "columns": [{"label": "machine", "csv": "machine", "num": False},
                                  {"label": "mode", "num": False},
                                  {"label": "TF 2.0", "csv": "tf2.0", "num": True}],
         "rows": [[c("m1"), c("graph"), c("1.0")], [c("m1"), c("eager"), c("1.0")]]}
    out = fold_constants(t)
    assert [x["label"] for x in out["columns"]] == ["mode", "TF 2.0"]  # numbers stay
    assert out["rows"] == [[c("graph"), c("1.0")], [c("eager"), c("1.0")]]
    assert out["constant"] == [("machine", "m1", "machine")]
    one = fold_constants({**t, "rows": t["rows"][:1]})  # one row: nothing to fold
    assert one["columns"] == t["columns"] and one["constant"] == []


@pytest.mark.parametrize("reached", [True, False])
def test_failures_explain_not_reached_only_where_a_cell_was(reached):
    """The sentence on cells the time budget did not reach shows only where one is listed."""
    from driver.report.sections.failures import failures_view
    item = {"status": "skipped", "machine": "m1", "env": "tf2.0",
            "cell": "small-small.keras.eager.fit.numpy.cpu", "repeat": "0",
            "reason": "not reached" if not reached else "impossible", "log_tail": "",
            "path": "", "not_reached": not reached}
    view = failures_view(pd.DataFrame({"machine": ["m1"]}), [item])
    html = _macro_env(True).get_template("sections/_failures.html.j2").render(
        failures=view, errors={})
    assert view["not_reached"] is (not reached)
    assert ("or was not reached" in html) is (not reached)
    assert "The study went on without them." in html
