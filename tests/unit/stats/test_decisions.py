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
    pd.DataFrame([{"machine": "m1", "mode": "graph", "round": 2, "shift": 0.05, "moved": True,
                   "p_round": 0.01, "sd_round": 0.02},
                  {"machine": "m1", "mode": "graph", "round": 1, "shift": -0.01, "moved": False,
                   "p_round": 0.01, "sd_round": 0.02}]
                 ).to_csv(folder / "duet_rounds.csv", index=False)
    pd.DataFrame([{"machine": "m1", "mode": "eager", "ratio": r, "verdict": v}
                  for r, v in ((0.5, "left_faster"), (1.0, "equivalent"), (1.1, "undecided"))]
                 ).to_csv(folder / "duets_releases.csv", index=False)
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
    assert m1["rounds_sd"] == {"graph": {"sd_round": 0.02, "p_round": 0.01}}
    # releases from duets: counted on their own, never among the cells' comparisons
    assert (m1["releases"]["eager"]["decided"]["k"], m1["releases"]["eager"]["decided"]["n"],
            m1["releases"]["eager"]["equivalent"]) == (2, 3, 1)


def test_command_line(tmp_path):
    folder = write(tmp_path / "tables")
    run = subprocess.run([sys.executable, decisions.__file__, str(folder)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "headline, graph: 1 of 2 rows decided (1 extended" in run.stdout
    assert "releases from duets, eager: decided 2 of 3" in run.stdout
    assert json.loads(run.stdout.strip().splitlines()[-1])["m1"]["twins"]["equivalent"]["n"] == 3
    bad = subprocess.run([sys.executable, decisions.__file__, str(tmp_path / "nope")],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "nope" in bad.stderr


def test_pairs_are_counted_and_set_beside_the_cells_rows_they_share(tmp_path):
    """Pairs: the goals' shares over the pairs table, the A/A pairs called different, and per
    row both tables hold whether the pair, the cells, both or neither decided it (counted here by
    hand: a row both decided, one only the pair did, one only the cells did, one neither did, and
    a pair whose row the cells' table lacks)."""
    folder = write(tmp_path / "tables")
    verdict_pairs = [("a", "left_faster", "right_faster", 1.3),
                     ("b", "equivalent", "undecided", 1.01),
                     ("c", "undecided", "equivalent", 1.2),
                     ("d", "undecided", "undecided", 0.98),
                     ("e", "right_faster", None, 0.8)]
    pd.DataFrame([{"machine": "m1", "env": "tf1.14", "table": "fit_vs_train_on_batch",
                   "cell_id": f"{k}~x", "left_cell_id": k, "right_cell_id": "x",
                   "mode": "graph", "n": 4, "ratio": r, "verdict": pv}
                  for k, pv, _, r in verdict_pairs]).to_csv(folder / "pairs.csv", index=False)
    pd.DataFrame([{"machine": "m1", "env": "tf1.14", "left_env": "tf1.14", "left_cell_id": k,
                   "right_cell_id": "x", "ratio": r, "verdict": cv}
                  for k, _, cv, r in verdict_pairs if cv]
                 ).to_csv(folder / "fit_vs_train_on_batch.csv", index=False)
    pd.DataFrame([{"machine": "m1", "env": "tf1.14", "cell_id": "a~a", "mode": "graph", "n": 4,
                   "ratio": v, "verdict": w} for v, w in ((1.0, "equivalent"),
                                                          (0.9, "right_faster"))]
                 ).to_csv(folder / "pairs_aa.csv", index=False)
    p = decisions.figures(folder)["m1"]["pairs"]
    assert p["against_cells"] == {"both": 1, "pair_only": 1, "cells_only": 1, "neither": 1}
    assert (p["decided"]["k"], p["decided"]["n"]) == (3, 5)
    assert (p["effect_10"]["k"], p["effect_10"]["n"]) == (2, 3)  # 1.3 and 0.8 of 1.3, 1.2, 0.8
    assert (p["within_5"]["k"], p["within_5"]["n"]) == (1, 2)
    assert (p["aa_different"]["k"], p["aa_different"]["n"]) == (1, 2)
    # the cells' shares leave the pairs out: graph_vs_eager's 1 of 2 and the cells' own
    # fit_vs_train_on_batch rows, 1.3 and 1.2 both decided
    cells = decisions.figures(folder)["m1"]["cells"]["effect_10"]
    assert (cells["k"], cells["n"]) == (1 + 2, 2 + 2)
