"""The files aggregation writes: every table's CSV and the workbook (driver/tables/workbook.py).
"""


import numpy as np
import openpyxl
import pandas as pd
import pytest
from cellfiles import run, write_cell, write_processes

from driver.tables import registry
from driver.tables import source_layout as seedview

# --- files and the workbook ---------------------------------------------------------------------

def test_every_table_written_even_empty(seed_case):
    _, out, tables = seed_case
    for name, path in tables.items():
        df = pd.read_csv(path)
        assert len(df.columns) > 0, name
    assert len(pd.read_csv(tables["gpu_vs_cpu"])) == 0
    assert "left_median_s" in pd.read_csv(tables["gpu_vs_cpu"]).columns


def test_a_study_whose_every_cell_was_skipped_still_tabulates(tmp_path):
    """A run whose time budget reached none of round 0's cells (every one skipped, not reached,
    driver/study/budget.py: round0_gate): every table is written, the cells' table lists them;
    an empty selection of rows once selected no columns and the guidance table failed."""
    files = [write_cell(tmp_path / "cells", env, status="skipped", reason="not reached: ...",
                        mode=mode) for env in ("tf1.14", "tf2.21") for mode in ("graph", "eager")]
    frames, out, tables = run(tmp_path, [str(f) for f in files])
    assert all(path.exists() for path in tables.values())
    assert list(frames["cells"]["status"]) == ["skipped"] * 4
    assert frames["guidance"].empty


def test_workbook(grid_case):
    path = grid_case[1] / "study.xlsx"
    book = openpyxl.load_workbook(path)
    expected = {"about", "seed_view", "cells", *registry.NAMES}
    assert expected <= set(book.sheetnames)
    assert book.sheetnames[0] == "about"
    sheet = book["tf2_vs_tf1"]
    header = [c.value for c in sheet[1]]
    assert "left_median_ms" in header and "pct" in header and "significant" in header
    assert sheet.freeze_panes == "A2"
    pct_col = header.index("pct") + 1
    assert "0.0" in sheet.cell(row=2, column=pct_col).number_format
    ms_col = header.index("left_median_ms") + 1
    assert sheet.cell(row=2, column=ms_col).number_format.startswith("0.00")
    cells = pd.read_csv(grid_case[1] / "tables" / "cells.csv")
    first = cells.dropna(subset=["median_s"]).iloc[0]
    xl = pd.read_excel(path, sheet_name="cells")
    assert xl.dropna(subset=["median_ms"]).iloc[0]["median_ms"] == \
        pytest.approx(first["median_s"] * 1000)
    assert len(sheet.conditional_formatting) >= 2
    about = pd.read_excel(path, sheet_name="about")
    text = " ".join(about["text"].dropna().astype(str))
    assert "longer/shorter" in text and "+ if TF2 is faster" in text and "Graph is faster" in text
    assert "reference_env: tf1.14" in text
    seed = book["seed_view"]
    seed_header = [c.value for c in seed[1]]
    assert not any(str(h).startswith(seedview.VERDICT_PREFIX) for h in seed_header)
    assert "left_cell_id" not in header  # the CSV keeps the ids, the workbook the axes
    assert pd.read_csv(grid_case[1] / "tables" / "tf2_vs_tf1.csv")["left_cell_id"].notna().all()


def test_workbook_greys_non_significant(tmp_path):
    root = tmp_path / "cells"
    rng = np.random.default_rng(3)
    noisy = [list(0.02 * (1 + 0.05 * rng.standard_normal(40)).clip(0.5)) for _ in range(2)]
    files = [write_cell(root, "tf2.0", mode="graph", samples=noisy[0]),
             write_cell(root, "tf2.0", mode="eager", samples=noisy[1]),
             *write_processes(root, "tf1.14", 0.010, mode="graph"),
             *write_processes(root, "tf1.14", 0.030, mode="eager")]
    _, out, _ = run(tmp_path, files)
    book = openpyxl.load_workbook(out / "study.xlsx")
    seed = book["seed_view"]
    header = [c.value for c in seed[1]]
    tf1 = seed.cell(row=2, column=header.index("GvE % tf1.14") + 1)
    tf2 = seed.cell(row=2, column=header.index("GvE % tf2.0") + 1)
    assert tf1.value == pytest.approx(200.0, rel=1e-3)
    assert tf1.fill.fgColor.rgb.endswith("C6EFCE")  # significant, graph faster: green
    assert tf2.font.color.rgb.endswith("9A9A9A")  # not significant: grey
    gve = book["graph_vs_eager"]
    rules = [r for rng_ in gve.conditional_formatting for r in rng_.rules]
    assert any("NOT(" in (r.formula or [""])[0] for r in rules)


def test_workbook_colours_significant_seed_view(seed_case):
    book = openpyxl.load_workbook(seed_case[1] / "study.xlsx")
    seed = book["seed_view"]
    header = [c.value for c in seed[1]]
    slower = seed.cell(row=2, column=header.index("GvE % tf2.0") + 1)  # graph slower: red
    faster = seed.cell(row=2, column=header.index("TF2 vs TF1 % tf2.0 Eager") + 1)
    assert slower.value == pytest.approx(-100.0 / 3.0)
    assert slower.fill.fgColor.rgb.endswith("FFC7CE")
    assert faster.fill.fgColor.rgb.endswith("C6EFCE")
    assert '"%"' in faster.number_format


