"""Columns with one owner (driver/tables/columns.py): every column aggregation writes has its entry,
and the typed loader and the workbook read their types and formats from it."""
import pandas as pd
import pytest
from cellfiles import grid, run

from driver.tables import bundle, columns, workbook

TEXT = {"machine", "env", "framework", "framework_version", "python", "keras", "keras_version",
        "mode", "api", "input", "device", "model", "data", "status", "reason", "numpy_version",
        "optimizer", "cpu_model", "gpu", "started_utc", "cell_id", "stopped_by", "threads",
        "verdict", "list", "configuration", "fastest_env", "allocation", "task", "family"}
BOOL = {"significant", "noisy", "drift", "warmup_capped", "too_few_samples"}


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("columns")
    frames, out, tables = run(tmp, grid(tmp / "cells"))
    return {name: pd.read_csv(path, nrows=0).columns for name, path in
            {"cells": out / "tables" / "cells.csv", **tables}.items()}, frames


def test_every_column_written_has_an_entry(written):
    headers, frames = written
    envs = set(frames["cells"]["env"])
    missing = {(name, c) for name, cols in headers.items() for c in cols
               if columns.column(c) is None and not (name == "versions" and c in envs)}
    assert missing == set()


def test_the_loader_reads_the_declared_types():
    for name in TEXT:  # identifiers and versions stay text ('2.10' must not become 2.1)
        assert bundle.column_type(name) == bundle.column_type("left_" + name) == "text", name
    for name in BOOL:
        assert bundle.column_type(name) == "bool", name
    assert bundle.column_type("median_s") == bundle.column_type("right_median_s") == "number"
    assert bundle.column_type("tf2.21") == "number"  # an env's column of `versions`


def test_the_workbook_reads_the_declared_formats():
    assert workbook._number_format("pct") == workbook._number_format("GvE % tf2.0") == columns.PCT
    assert workbook._number_format("ratio_ci_low") == columns.RATIO
    assert workbook._number_format("median_ms") == "0.00_)"
    assert workbook._number_format("rate") is None
    for c in columns.COLUMNS.values():
        assert c.type in ("text", "number", "bool") and c.description, c.name
