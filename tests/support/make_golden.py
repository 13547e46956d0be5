"""Write the golden outputs of aggregation for the checked-in cell files (tests/fixtures/cells/,
real files from a quick run): tests/fixtures/golden/<table>.csv and workbook.json (every sheet's
cell values). tests/unit/tables/test_golden.py checks that aggregation still gives exactly these.

Run it only when a change to the tables is intended, and say so in the commit:
    .venv/bin/python tests/support/make_golden.py
"""
import datetime
import json
import sys
import tempfile
from pathlib import Path

import openpyxl

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS.parent / "scripts"))

from driver.tables import aggregate as tab  # noqa: E402
from driver.tables.registry import NAMES  # noqa: E402

FIXTURES = TESTS / "fixtures"
CELLS = FIXTURES / "cells"
GOLDEN = FIXTURES / "golden"
# Fixed inputs: the about sheet carries the time and the config; the bootstrap has a fixed seed.
NOW = datetime.datetime(2026, 11, 22, 12, 0, tzinfo=datetime.timezone.utc)
CONFIG = {"reference_env": "tf1.14", "note": "golden"}


def cell_files():
    return sorted(str(p) for p in CELLS.glob("*/*/*.json"))


def aggregate(out: Path) -> dict:
    """Run the aggregation on the fixtures into `out`; return {table: csv path, "xlsx": path}."""
    result = tab.tabulate(cell_files(), "tf1.14", 0.1, 0.95, config=CONFIG, now=NOW)
    tables = {name: out / f"{name}.csv" for name in NAMES}
    tab.write_outputs(result, out / "cells.csv", tables, out / "study.xlsx",
                      out / "processes.json", out / "facts.json")
    return {"cells": out / "cells.csv", **tables, "xlsx": out / "study.xlsx"}


def workbook_values(path) -> dict:
    book = openpyxl.load_workbook(path)
    return {ws.title: [[c for c in row] for row in ws.iter_rows(values_only=True)]
            for ws in book.worksheets}


def main():
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        outputs = aggregate(Path(tmp))
        for name, path in outputs.items():
            if name != "xlsx":
                (GOLDEN / f"{name}.csv").write_text(Path(path).read_text())
        values = workbook_values(outputs["xlsx"])
    (GOLDEN / "workbook.json").write_text(json.dumps(values, indent=0, default=str) + "\n")
    print(f"golden outputs of {len(cell_files())} cell files -> {GOLDEN}")


if __name__ == "__main__":
    main()
