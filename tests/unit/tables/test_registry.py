"""The table registry is a registry (driver/tables/registry.py): a new comparison table is one entry
and one builder, and aggregation writes its CSV, the workbook gets its sheet and its line on the
about sheet, and the report links it and shows it among the comparisons."""
import openpyxl
import pandas as pd
import pytest
from report_study import synthetic_study

from driver.report import render
from driver.tables import comparisons, registry, summaries

NEW = registry.Table(
    "fit_vs_tob_in_graph", "fit vs train_on_batch in graph mode", "api", "fit", "train_on_batch",
    "+ when fit() is faster", "fit() vs train_on_batch() in v1 graph mode only. Left = fit.",
    build=f"{__name__}:fit_vs_tob_in_graph", chased=True)


def fit_vs_tob_in_graph(cells, comparer, envs):
    """The new table's builder: a one-factor comparison on the graph-mode cells."""
    graph = cells[cells["mode"] == "graph"] if len(cells) else cells
    return comparisons.factor_table(graph, comparer, "api", "fit", "train_on_batch", envs)


@pytest.fixture
def registered():
    registry.register(NEW)
    yield NEW
    registry.unregister(NEW.name)
    assert NEW.name not in registry.NAMES and NEW.name not in registry.COMPARISONS


def test_a_new_comparison_is_one_entry_and_one_builder(tmp_path, registered):
    kwargs = synthetic_study(tmp_path)  # the report tests' study, through the real aggregation
    results = tmp_path / "results"

    csv = pd.read_csv(results / "tables" / f"{NEW.name}.csv")  # its CSV, with verdict columns
    assert len(csv) and set(csv["mode"]) == {"graph"} and csv["verdict"].notna().all()
    assert set(pd.read_csv(results / "tables" / "fit_vs_train_on_batch.csv")["mode"]) == {
        "graph", "eager"}  # the registered table left the others be

    book = openpyxl.load_workbook(results / "study.xlsx")  # its sheet and its about line
    assert NEW.name in book.sheetnames
    assert f"sheet {NEW.name}" in [str(c.value) for c in book["about"]["A"]]

    html = results / "report.html"  # the report links it and shows it with the comparisons
    render.render(out_html=str(html), **kwargs)
    page = html.read_text(encoding="utf-8")
    assert f'href="tables/{NEW.name}.csv"' in page
    assert NEW.title in page


def test_every_entry_names_a_builder_that_exists():
    for table in registry.REGISTRY:
        if table.build is None:
            # made by aggregation itself: from the cell files, and from the duet files
            assert table.name in ("processes", "duets", "duets_aa", "pairs", "pairs_aa",
                                  "duet_rounds", "duets_releases", "duets_graph_vs_eager",
                                  "machines_compared", "not_decided", "duets_own",
                                  "duets_frameworks")
            continue
        assert callable(table.builder()), table.name
    assert registry.BY_NAME["versions"].key_columns == len(summaries.VERSION_INDEX)


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="tf2_vs_tf1"):
        registry.register(registry.BY_NAME["tf2_vs_tf1"])
