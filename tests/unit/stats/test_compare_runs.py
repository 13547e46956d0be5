"""make compare-runs on two small tables folders written here: agreement, flips, moved cells."""
import json
import subprocess
import sys
from pathlib import Path

import compare_runs
import pandas as pd

SCRIPT = Path(compare_runs.__file__)


def tables(folder, verdicts, medians):
    folder.mkdir(parents=True)
    rows = [{"env": "tf2.0", "left_cell_id": f"c{i}.graph", "right_cell_id": f"c{i}.eager",
             "ratio": 0.8 if v == "left_faster" else 1.2 if v == "right_faster" else 1.0,
             "verdict": v} for i, v in enumerate(verdicts)]
    pd.DataFrame(rows).to_csv(folder / "graph_vs_eager.csv", index=False)
    cells = [{"env": "tf2.0", "cell_id": f"c{i}", "status": "ok", "median_s": m,
              "ci_low_s": m * 0.97, "ci_high_s": m * 1.03} for i, m in enumerate(medians)]
    pd.DataFrame(cells).to_csv(folder / "cells.csv", index=False)
    return folder


def test_agreement_flips_and_moved_cells(tmp_path):
    tables(tmp_path / "a" / "tables", ["left_faster", "equivalent", "inconclusive",
                                           "right_faster"], [0.010, 0.020, 0.030])
    tables(tmp_path / "b" / "tables", ["left_faster", "inconclusive", "inconclusive",
                                           "left_faster"], [0.0101, 0.025, 0.030])
    out = compare_runs.compare_runs(tmp_path / "a", tmp_path / "b")
    assert out["comparisons_matched"] == 4 and out["agreement"] == 0.5
    assert out["flips"] == 1 and out["flip_rows"][0]["verdict_a"] == "right_faster"
    assert out["cells_moved_beyond_ci"] == 1 and out["moved_cells"][0]["cell_id"] == "c1"


def test_command_line_prints_a_json_line(tmp_path):
    a = tables(tmp_path / "a", ["left_faster"], [0.01])
    b = tables(tmp_path / "b", ["left_faster"], [0.01])
    run = subprocess.run([sys.executable, str(SCRIPT), str(a), str(b)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout.strip().splitlines()[-1])
    assert summary["agreement"] == 1.0 and summary["flips"] == 0


def test_a_folder_without_tables_is_named(tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and str(tmp_path) in run.stderr
