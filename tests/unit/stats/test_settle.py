"""The settle check (driver/stats/settle.py, make settle-check): a duet's log ratio as the study
computes it, and a check that says `not settled` when one side's first calls of every window are
planted slower, and never `settled` when the planted shift is the margin itself."""
import json
import math

import numpy as np
import pytest
import settle_check
import supervise_duet

from driver.stats import settle


def duet(rng, ratio=1.0, slow_first=0, slow=1.4, windows=6, calls=13, sd=0.05, mode="graph",
         design=None, kind="duet"):
    """A duet record of `windows` windows a side of `calls` lognormal samples; the left side's
    first `slow_first` calls of every window `slow` times slower (a settle too short for it)."""
    def side(base, first):
        out = []
        for _ in range(windows):
            w = list(base * np.exp(rng.normal(0, sd, calls)))
            for i in range(first):
                w[i] *= slow
            out.append(w)
        return out

    return {"status": "ok", "kind": kind, "cell": {"mode": mode},
            "design": {"settle": 1} if design is None else design,
            "left_windows_s": side(0.01 * ratio, slow_first), "right_windows_s": side(0.01, 0)}


def test_log_ratio_is_the_studys_own():
    rng = np.random.default_rng(1)
    rec = duet(rng, ratio=1.3)
    mine = settle.log_ratio(rec["left_windows_s"], rec["right_windows_s"])
    theirs = supervise_duet.summarize({"b": rec["left_windows_s"], "a": rec["right_windows_s"]})
    assert math.isclose(mine, theirs["log_ratio"], rel_tol=1e-12)


def test_unbiased_windows_are_settled():
    rng = np.random.default_rng(2)
    res = settle.check([duet(rng, ratio=1.2) for _ in range(200)])
    assert res["all"]["verdict"] == settle.SETTLED and res["settle"] == [1]
    assert res["graph"]["n"] == 200


def test_first_calls_planted_slower_on_one_side_are_not_settled():
    rng = np.random.default_rng(3)
    recs = [duet(rng, slow_first=3) for _ in range(200)]
    res = settle.check(recs, extra=2)
    assert res["all"]["verdict"] == settle.NOT_SETTLED
    assert res["all"]["mean"] < -0.01  # the left side's median falls without them
    # slower on both sides alike: the ratio does not move
    both = [dict(r, right_windows_s=[[s * (1.4 if i < 3 else 1.0) for i, s in enumerate(w)]
                                     for w in r["right_windows_s"]]) for r in recs]
    assert settle.check(both, extra=2)["all"]["verdict"] == settle.SETTLED


def test_a_shift_of_the_margin_itself_is_never_settled():
    rng = np.random.default_rng(4)
    settled = 0
    for _ in range(40):
        shifts = list(rng.normal(0.01, 0.01, 100))  # a true mean shift of the margin
        settled += settle.verdict(shifts, 0.01, 0.05)["verdict"] == settle.SETTLED
    assert settled <= 4  # the TOST's size: 5 %, here at most 4 of 40


def test_pairs_and_short_windows_are_left_out_and_old_designs_settled_three():
    rng = np.random.default_rng(5)
    recs = [duet(rng, kind="pair"), duet(rng, calls=2), duet(rng, design={}, mode="eager"),
            dict(duet(rng), status="failed")]
    rows = settle.shifts(recs, extra=2)
    assert [(r["mode"], r["settle"]) for r in rows] == [("eager", 3)]
    assert settle.check(recs)["all"]["verdict"] == settle.UNDECIDED  # one duet


def test_the_script_reads_a_results_folder(tmp_path, capsys):
    rng = np.random.default_rng(6)
    folder = tmp_path / "results" / "duets" / "m" / "tf2.21"
    folder.mkdir(parents=True)
    for i in range(30):
        rec = dict(duet(rng, mode="eager" if i % 2 else "graph"), wall_s=5.0, windows=6)
        (folder / ("c.r%d.json" % i)).write_text(json.dumps(rec))
    assert settle_check.main([str(tmp_path / "results")]) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    res = out[str(tmp_path / "results")]
    assert res["all"]["n"] == 30 and res["graph"]["n"] == res["eager"]["n"] == 15
    assert settle_check.main([str(tmp_path)]) == 2  # not a results folder
    for bad, word in ((["--extra", "0"], "--extra"), (["--margin", "-1"], "--margin"),
                      (["--alpha", "0.7"], "--alpha")):
        with pytest.raises(SystemExit):
            settle_check.main([str(tmp_path / "results")] + bad)
        assert word in capsys.readouterr().err
