"""scripts/redecide.py: a finished run's paired rows re-decided under a cheaper design, with the
study's own table code, after checking that this code reproduces the run's own verdicts."""
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts"))

import redecide  # noqa: E402
import supervise_duet  # noqa: E402

CELL = {"model": "small", "data": "small", "input": "numpy", "device": "cpu",
        "api": "train_on_batch", "keras": "tf.keras"}


def duet(env, mode, rep, ratio, rng, windows=8, first=4, most=10, kind="duet"):
    """One duet file as supervise_duet writes it: `windows` windows a side of 20 samples each,
    the left side `ratio` times the right, every sample with its own noise."""
    right = [list(0.01 * rng.lognormal(0, 0.05, 20)) for _ in range(windows)]
    left = [list(ratio * 0.01 * rng.lognormal(0, 0.05, 20)) for _ in range(windows)]
    if kind == "pair":  # one interleaved stream a side
        right, left = [[s for w in right for s in w]], [[s for w in left for s in w]]
    rec = {"machine": "m", "env": env, "replicate": rep, "status": "ok", "kind": kind,
           "cell": dict(CELL, mode=mode), "reference_env": "tf1.14",
           "reference_cell": dict(CELL, mode=mode), "left_framework_version": "2.3.0",
           "right_framework_version": "1.14.0", "windows": windows, "window_s": 0.25,
           "design": {"replicates": first, "max_replicates": most},
           "left_windows_s": left, "right_windows_s": right}
    if kind == "pair":
        rec.update(cell=dict(CELL, mode=mode, api="fit"), reference_env=env,
                   design=dict(rec["design"], together=True))
        lm, rm = np.median(left[0]), np.median(right[0])
        rec.update(left_median_s=lm, right_median_s=rm, log_ratio=math.log(lm / rm),
                   window_log_ratios=[math.log(lm / rm)])
    else:
        rec.update(supervise_duet.summarize({"a": right, "b": left}))
    return rec


def test_a_shortened_duet_is_what_the_supervisor_makes_of_its_first_windows():
    rng = np.random.default_rng(1)
    rec = duet("tf2.3", "graph", 0, 1.3, rng)
    short = redecide.shorten(rec, 6)
    want = supervise_duet.summarize({"a": rec["right_windows_s"][:6],
                                     "b": rec["left_windows_s"][:6]})
    for key, value in want.items():
        assert short[key] == pytest.approx(value), key
    assert short["windows"] == 6 and rec["windows"] == 8  # a copy: the run's record untouched
    assert redecide.shorten(rec, 8)["log_ratio"] == rec["log_ratio"]


def test_a_shortened_pair_keeps_the_first_share_of_its_stream():
    rng = np.random.default_rng(2)
    rec = duet("tf2.3", "graph", 0, 1.3, rng, kind="pair")
    short = redecide.shorten(rec, 6)
    n = len(rec["left_windows_s"][0])
    assert short["left_windows_s"][0] == rec["left_windows_s"][0][:round(n * 6 / 8)]
    assert short["log_ratio"] == pytest.approx(math.log(
        np.median(short["left_windows_s"][0]) / np.median(short["right_windows_s"][0])))


def write_run(tmp_path, records, tables):
    results = tmp_path / "results"
    for rec in records:
        path = results / "duets" / "m" / rec["env"] / ("%s-%s-%s.r%d.json" % (
            rec["cell"]["mode"], rec["cell"]["api"], rec.get("kind"), rec["replicate"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rec))
    (results / "tables").mkdir(parents=True)
    for name, table in tables.items():
        table.to_csv(results / "tables" / ("%s.csv" % name), index=False)
    return results


def run_records():
    """Two rows: graph, clearly slower (decided at the first look); eager, a small effect whose
    first look is too short to decide and whose second look decides it."""
    rng = np.random.default_rng(3)
    recs = [duet("tf2.3", "graph", r, 1.5, rng) for r in range(4)]
    eager = [1.0, 1.3, 0.92, 1.25, 1.12, 1.1, 1.14, 1.08, 1.12, 1.1]  # a wide first look
    recs += [duet("tf2.3", "eager", r, x, rng) for r, x in enumerate(eager)]
    return recs


def test_it_refuses_a_run_whose_verdicts_it_does_not_reproduce(tmp_path, capsys):
    recs = run_records()
    tabs = redecide.tables(recs, **redecide.read_levels())
    planted = tabs["duets"].copy()
    planted.loc[planted.index[0], "verdict"] = "equivalent"
    results = write_run(tmp_path, recs, dict(tabs, duets=planted))
    assert redecide.main([str(results), "--windows", "6"]) == 1
    assert "does not reproduce" in capsys.readouterr().out


def test_first_look_and_fewer_windows_are_compared_with_the_run(tmp_path, capsys):
    recs = run_records()
    levels = redecide.read_levels()
    tabs = redecide.tables(recs, **levels)
    results = write_run(tmp_path, recs, tabs)
    assert redecide.main([str(results), "--first-look", "--windows", "6"]) == 0
    out = capsys.readouterr().out
    assert "the run's own verdicts reproduced" in out
    # the first look alone, as the script compares it, left the eager row open
    first = redecide.tables(redecide.edit(recs, first_look=True), **levels)
    modes = dict(zip(first["duets"]["mode"], first["duets"]["verdict"]))
    assert modes["eager"] == "undecided" and modes["graph"] != "undecided", modes
    assert "| duets [eager] | 0 of 1 |" in out and "| duets [graph] | 1 of 1 |" in out
    # cutting the eager rows' first look to 2 replicates keeps only those
    cut = redecide.edit(recs, first_look=True, replicates=2, of="eager")
    assert sorted(r["replicate"] for r in cut if r["cell"]["mode"] == "eager") == [0, 1]
    assert all(r["design"]["replicates"] == 2 for r in cut if r["cell"]["mode"] == "eager")
    assert sorted(r["replicate"] for r in cut if r["cell"]["mode"] == "graph") == [0, 1, 2, 3]


def test_bad_arguments_are_named(tmp_path):
    with pytest.raises(SystemExit):
        redecide.main([str(tmp_path), "--windows", "6"])  # no duets/ folder
    with pytest.raises(SystemExit):
        redecide.main([str(tmp_path), "--replicates", "3"])  # without --first-look
