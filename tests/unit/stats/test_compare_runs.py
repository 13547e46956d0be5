"""make compare-runs on two small tables folders written here: agreement, flips, moved cells."""
import json
import math
import subprocess
import sys
from pathlib import Path

import compare_runs
import pandas as pd
import pytest

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
    tables(tmp_path / "a" / "tables", ["left_faster", "equivalent", "undecided",
                                           "right_faster"], [0.010, 0.020, 0.030])
    tables(tmp_path / "b" / "tables", ["left_faster", "undecided", "undecided",
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


def _duet_run(folder, truth, rng, offset_sd, n, sd, pairs=False):
    """A results folder whose duets (or, pairs=True, pairs in one process) hold one row per
    true log ratio, each with n replicates of sd around it plus a per-run offset of offset_sd."""
    from driver.tables import bundle
    from driver.tables import duets as duet_tables
    from driver.tables.duets_releases import duets_releases_table

    cell = {"model": "small", "data": "small", "input": "numpy", "device": "cpu",
            "api": "fit" if pairs else "train_on_batch", "keras": "tf.keras", "mode": "graph"}
    recs = []
    for i, t in enumerate(truth):
        off = rng.normal(0, offset_sd)
        for r, x in enumerate(rng.normal(t + off, sd, n)):
            rec = {"machine": "m", "env": f"tf2.{i}", "replicate": r, "status": "ok",
                   "cell": cell, "reference_env": "tf1.14", "reference_cell": cell,
                   "left_framework_version": f"2.{i}.0",
                   "log_ratio": x, "left_median_s": 0.01, "right_median_s": 0.01}
            if pairs:
                rec.update(kind="pair", reference_env=f"tf2.{i}",
                           reference_cell=dict(cell, api="train_on_batch"),
                           design={"together": True, "table": "fit_vs_train_on_batch"})
            recs.append(rec)
    folder.mkdir()
    bundle.write_table(duet_tables.duets_table(recs, kind="pairs"), folder / "pairs.csv")
    bundle.write_table(duet_tables.duets_table(recs), folder / "duets.csv")
    bundle.write_table(duets_releases_table(duet_tables.duets_table(recs)),
                       folder / "duets_releases.csv")
    return folder


def test_duets_are_judged_on_their_own_with_the_plain_binomial_ci(tmp_path):
    """Two runs' duets tables: matched by env and cell, the beyond-CI share with its binomial CI
    (rows share no process), and each run's decided rows per mode; a run level shift of the
    rows that their CIs leave out (planted) fails it."""
    import math as _math

    import numpy as _np

    rng = _np.random.default_rng(11)
    truth = rng.normal(0.0, 0.15, 40)

    def run(folder, offset_sd):
        return _duet_run(folder, truth, rng, offset_sd, 6, 0.05)

    good = compare_runs.duets_calibration(run(tmp_path / "a", 0), run(tmp_path / "b", 0))
    assert good["matched"] == 40 and good["ok"]
    assert good["decided"]["graph"]["a"]["rows"] == 40
    planted = 0.05 / _math.sqrt(6) * 2  # each row moved by 2 of its se, per run
    bad = compare_runs.duets_calibration(run(tmp_path / "c", planted), run(tmp_path / "d", planted))
    assert not bad["ok"]
    # the releases from these duets: the same check passes the calibrated runs and fails the
    # planted ones (every duets row moved, so every release row built from it moved too)
    good_rel = compare_runs.duets_calibration(tmp_path / "a", tmp_path / "b",
                                              table="duets_releases")
    assert good_rel["matched"] == 39 and good_rel["ok"]
    assert not compare_runs.duets_calibration(tmp_path / "c", tmp_path / "d",
                                              table="duets_releases")["ok"]


def test_an_older_folders_inconclusive_is_todays_undecided(tmp_path):
    """A results folder written before the verdict code became "undecided" says "inconclusive":
    the two runs agree on those rows (without the mapping they would not)."""
    tables(tmp_path / "old" / "tables", ["inconclusive", "left_faster", "Not significant"],
           [0.010, 0.020])
    tables(tmp_path / "new" / "tables", ["undecided", "left_faster", "undecided"],
           [0.010, 0.020])
    out = compare_runs.compare_runs(tmp_path / "old", tmp_path / "new")
    assert out["comparisons_matched"] == 3 and out["agreement"] == 1.0


def test_a_ci_level_column_gives_the_standard_error(tmp_path):
    """Rows without se_log: their standard error from the CI at the row's own ci_level."""
    folder = tmp_path / "t"
    folder.mkdir()
    se, level = 0.05, 0.999
    from driver.stats import moderated

    half = moderated.t_quantile(0.5 + level / 2, 10.0) * se
    pd.DataFrame([{"env": "tf2.0", "left_cell_id": "c0.graph", "right_cell_id": "c0.eager",
                   "ratio": 1.0, "ratio_ci_low": math.exp(-half), "ratio_ci_high": math.exp(half),
                   "ci_level": level, "df": 10.0,
                   "verdict": "undecided"}]).to_csv(folder / "graph_vs_eager.csv", index=False)
    got = compare_runs.load_comparisons(folder)
    assert got.at[0, "se_log"] == pytest.approx(se)
    assert compare_runs.load_comparisons(folder, 0.95).at[0, "se_log"] == pytest.approx(se)


def test_aa_duet_rows_feed_the_false_positive_figure(tmp_path):
    """duets_aa.csv of every run given: the share called different with its binomial CI (a
    planted excess of false positives fails it), the order bias with its interval; runs without
    A/A rows say so."""
    def aa(folder, verdicts, logs):
        folder.mkdir(parents=True)
        pd.DataFrame([{"env": "tf1.14", "cell_id": f"c.{m}", "mode": m, "n": 4, "verdict": v,
                       "log_ratio": x} for m, v, x in zip(("graph", "eager"), verdicts, logs)]
                     ).to_csv(folder / "duets_aa.csv", index=False)
        return folder

    quiet = [aa(tmp_path / f"q{i}" / "tables", ["equivalent", "equivalent"], [0.01, -0.004])
             for i in range(3)]
    out = compare_runs.aa_rows(quiet)
    assert out["n"] == 6 and out["different"]["k"] == 0 and out["different"]["ok"]
    assert out["equivalent"] == 6 and out["bias"]["low"] < out["bias"]["mean"] < out["bias"]["high"]
    loud = [aa(tmp_path / f"l{i}" / "tables", ["right_faster", "left_faster"], [0.2, -0.2])
            for i in range(3)]
    bad = compare_runs.aa_rows(loud)
    assert bad["different"]["k"] == 6 and not bad["different"]["ok"]
    assert "MISCALIBRATED" in compare_runs.aa_text(bad)[0]
    none = tables(tmp_path / "old" / "tables", ["left_faster"], [0.01])
    assert compare_runs.aa_rows([none])["n"] == 0
    assert "none in these runs" in compare_runs.aa_text({"n": 0})[0]


def test_pairs_are_judged_across_runs_as_duets_are_and_a_planted_offset_fails(tmp_path):
    """Two runs' pairs tables (kind `pair`): matched by env and pair key, judged by the same
    check as duets at the real size of a pairs run (20 rows of 4 replicates), passing runs that
    differ by chance and failing runs whose every row moved by twice its se (planted); a folder
    without duets gives no match."""
    import numpy as _np

    rng = _np.random.default_rng(13)
    truth = rng.normal(0.0, 0.5, 20)

    def run(folder, offset_sd):
        return _duet_run(folder, truth, rng, offset_sd, 4, 0.04, pairs=True)

    good = compare_runs.duets_calibration(run(tmp_path / "a", 0), run(tmp_path / "b", 0),
                                          table="pairs")
    assert good["matched"] == 20 and good["ok"], good["check"]
    va, vb = (pd.read_csv(tmp_path / x / "pairs.csv")["verdict"] for x in "ab")
    assert good["same_verdict"] == {"k": int((va == vb).sum()), "n": 20, "flips": int(
        sum(a != b and "faster" in a and "faster" in b for a, b in zip(va, vb)))}
    assert good["decided"]["graph"]["a"]["rows"] == 20
    planted = 0.04 / 2 * 2  # each row moved by 2 of its se (0.04 / sqrt(4)), per run
    bad = compare_runs.duets_calibration(run(tmp_path / "c", planted), run(tmp_path / "d", planted),
                                         table="pairs")
    assert not bad["ok"]
    assert compare_runs.duets_calibration(tmp_path / "a", tmp_path / "b")["matched"] == 0


def test_aa_pairs_judge_their_lean_and_a_planted_lean_fails(tmp_path):
    """pairs_aa.csv of every run given: the lean (left over right) over the A/A pairs with its
    t interval; rows scattered about 1 pass, rows that all lean 3 % one way (planted) leave 1
    out of the interval and are said BIASED; the false-positive count is the duets' figure."""
    import numpy as _np

    rng = _np.random.default_rng(5)

    def aa(folder, lean):
        folder.mkdir(parents=True)
        pd.DataFrame([{"env": e, "cell_id": f"c~c.{m}", "mode": m, "n": 4,
                       "verdict": "equivalent", "log_ratio": lean + rng.normal(0, 0.01)}
                      for e in ("tf1.14", "tf2.21") for m in ("graph", "eager")]
                     ).to_csv(folder / "pairs_aa.csv", index=False)
        return folder

    quiet = [aa(tmp_path / f"q{i}" / "tables", 0.0) for i in range(3)]
    out = compare_runs.aa_rows(quiet, table="pairs_aa")
    assert out["n"] == 12 and out["bias"]["ok"] and out["different"]["ok"]
    assert "A/A pairs over 3 run(s)" in compare_runs.aa_text(out)[0]
    assert "BIASED" not in compare_runs.aa_text(out)[0]
    leaning = [aa(tmp_path / f"l{i}" / "tables", 0.03) for i in range(3)]
    bad = compare_runs.aa_rows(leaning, table="pairs_aa")
    assert not bad["bias"]["ok"] and bad["bias"]["low"] > 0
    assert "BIASED" in compare_runs.aa_text(bad)[0]
    # the duets' A/A rows are not the pairs': a folder with only pairs_aa has no A/A duets
    assert compare_runs.aa_rows(leaning, table="duets_aa")["n"] == 0


def test_three_runs_pool_the_pairs_offsets_as_the_duets(tmp_path):
    """compare_runs.py A B C: the pairs' run offsets are tested together as the duets' are; a
    run offset planted in every run (sd 4 times a row's se) is found, none is not."""
    import numpy as _np

    rng = _np.random.default_rng(17)
    truth = rng.normal(0.0, 0.5, 20)

    def runs(tag, offset):
        out = []
        for i in range(3):
            shift = rng.normal(0, offset)
            out.append(_duet_run(tmp_path / f"{tag}{i}", truth + shift, rng, 0, 4, 0.04,
                                 pairs=True))
        return out

    calm = compare_runs.duets_pooled(runs("c", 0.0), "pairs")
    assert calm["runs"] == 3 and calm["table"] == "pairs" and calm["p"] > 0.001
    moved = compare_runs.duets_pooled(runs("m", 0.08), "pairs")
    assert moved["p"] < 0.001 and moved["tau"] > calm["tau"]
    assert compare_runs.duets_pooled(runs("d", 0.0)[:2], "pairs") == {"runs": 2}
    # three runs without such rows (pairs-only runs have no duets): nothing pooled, nothing said
    empty = [tmp_path / f"e{i}" for i in range(3)]
    for folder in empty:
        folder.mkdir()
    judge = __import__("driver.stats.crossrun_judge", fromlist=["x"])
    assert judge.pooled_text(compare_runs.duets_pooled(empty, "duets")) == []
    line = " ".join(__import__("driver.stats.crossrun_judge", fromlist=["x"]).pooled_text(
        moved, "pairs in one process"))
    assert line.startswith("pairs in one process pooled over 3 runs")
