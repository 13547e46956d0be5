"""`make decisions` (scripts/decisions.py): what one run decided, counted from planted tables by
hand, per machine, with Clopper-Pearson CIs."""
import json
import subprocess
import sys
from pathlib import Path

import decisions
import pandas as pd
from scipy import stats as sps


def write(folder: Path):
    folder.mkdir(parents=True)
    pd.DataFrame([
        {"machine": "m1", "env": "tf2.1", "cell_id": "a", "mode": "graph", "n": 4, "n_look1": 4,
         "verdict": "equivalent"},
        {"machine": "m1", "env": "tf2.2", "cell_id": "a", "mode": "graph", "n": 10, "n_look1": 4,
         "verdict": "undecided"},
        {"machine": "m2", "env": "tf2.1", "cell_id": "a", "mode": "graph", "n": 4, "n_look1": 4,
         "verdict": "right_faster"},
    ]).to_csv(folder / "duets.csv", index=False)
    # graph_vs_eager: two big effects (one decided), two near 1 (one equivalent), one between
    pd.DataFrame([
        {"machine": "m1", "ratio": 1.30, "verdict": "left_faster"},
        {"machine": "m1", "ratio": 0.80, "verdict": "undecided"},
        {"machine": "m1", "ratio": 1.02, "verdict": "equivalent"},
        {"machine": "m1", "ratio": 0.97, "verdict": "undecided"},
        {"machine": "m1", "ratio": 1.07, "verdict": "equivalent"},
    ]).to_csv(folder / "graph_vs_eager.csv", index=False)
    pd.DataFrame([{"machine": "m1", "ratio": 1.0, "verdict": v}
                  for v in ("equivalent", "equivalent", "left_faster")]
                 ).to_csv(folder / "twins.csv", index=False)
    pd.DataFrame([{"machine": "m1", "env": "tf1.14", "cell_id": "a", "mode": "graph", "n": 4,
                   "ratio": 1.01, "verdict": "equivalent"}]).to_csv(folder / "duets_aa.csv",
                                                                   index=False)
    pd.DataFrame([{"machine": "m1", "mode": "graph", "round": 2, "shift": 0.05, "moved": True},
                  {"machine": "m1", "mode": "graph", "round": 1, "shift": -0.01, "moved": False}]
                 ).to_csv(folder / "duet_rounds.csv", index=False)
    return folder


def test_counts_per_machine_with_cis(tmp_path):
    figs = decisions.figures(write(tmp_path / "tables"))
    m1 = figs["m1"]
    assert m1["headline"]["graph"] == {"decided": 1, "rows": 2, "second_look": 1}
    assert figs["m2"]["headline"]["graph"]["decided"] == 1
    assert (m1["cells"]["effect_10"]["k"], m1["cells"]["effect_10"]["n"]) == (1, 2)
    assert (m1["cells"]["within_5"]["k"], m1["cells"]["within_5"]["n"]) == (1, 2)
    ci = sps.binomtest(1, 2).proportion_ci()
    assert m1["cells"]["within_5"]["ci"] == [ci.low, ci.high]
    assert m1["twins"]["equivalent"]["k"] == 2 and m1["twins"]["different"]["k"] == 1
    assert m1["aa_duets"]["different"]["k"] == 0
    assert m1["rounds_moved"] == ["graph round 2: 1.051"]


def test_command_line(tmp_path):
    folder = write(tmp_path / "tables")
    run = subprocess.run([sys.executable, decisions.__file__, str(folder)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "headline, graph: 1 of 2 rows decided (1 extended" in run.stdout
    assert json.loads(run.stdout.strip().splitlines()[-1])["m1"]["twins"]["equivalent"]["n"] == 3
    bad = subprocess.run([sys.executable, decisions.__file__, str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "nope" in bad.stderr
