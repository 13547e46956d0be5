"""scripts/pair_probe.py's figures, on planted replicates: an arm with a narrower spread is found
narrower (and equal spreads are not told apart), a shift between the ways of pairing and an
effect of the build order are found where planted and not claimed where absent, the windows'
own share of the spread is split off correctly, and the comparison text is checked."""
import json
import math

import numpy as np
import pair_probe
import pytest


def write(path, n=40, sd=None, shift=0.0, order=0.0, window_sd=0.12, windows=8, beyond=0.0,
          seed=1):
    """Replicates of one comparison with a true log ratio 0.1: each arm's replicate is the mean
    of `windows` window ratios (sd `window_sd` each) plus a replicate effect (sd `beyond`, or
    the arm's own `sd` for its total); `shift` moves the in-process arms, `order` the replicates
    built a-first by +order/2 and b-first by -order/2."""
    rng = np.random.default_rng(seed)
    sd = sd or {}
    with open(path, "w") as out:
        for t in range(n):
            first = "a" if t % 2 == 0 else "b"
            for arm in pair_probe.ARMS:
                extra = sd.get(arm, beyond)
                rep = 0.1 + rng.normal(0, extra)
                if arm != "duet":
                    rep += shift + (order / 2 if first == "a" else -order / 2)
                w = list(rep + rng.normal(0, window_sd, windows))
                lr = float(np.mean(w))
                state = rng.normal(0, 0.1)
                out.write(json.dumps({
                    "comparison": "c", "arm": arm, "trial": t, "machine": "m",
                    "built_first": first if arm != "duet" else None, "wall_s": 10.0,
                    "log_ratio": lr, "window_log_ratios": w,
                    "log_median": {"a": state, "b": state + lr}}) + "\n")


def test_equal_spreads_are_not_told_apart_and_a_narrower_arm_is_found(tmp_path):
    path = tmp_path / "p.jsonl"
    covered = []
    for seed in range(60):  # equal spreads: the F interval holds 1 at about its level
        write(path, n=12, window_sd=0.0, beyond=0.05, seed=seed)
        r = pair_probe.analyse(path)["comparisons"]["c"]
        covered += [r[arm]["against_duet"]["var_ratio_ci"][0] < 1
                    < r[arm]["against_duet"]["var_ratio_ci"][1] for arm in ("together", "mix")]
    assert 0.88 <= sum(covered) / len(covered) <= 0.99, sum(covered) / len(covered)
    write(path, window_sd=0.0, sd={"together": 0.05, "mix": 0.015, "group": 0.05, "fine": 0.05,
                                   "duet": 0.05})
    r = pair_probe.analyse(path)["comparisons"]["c"]
    assert r["mix"]["against_duet"]["var_ratio_ci"][0] > 1  # the planted 11x variance
    assert r["mix"]["against_duet"]["precision_per_s_ratio"] > 3
    assert r["n"] == {arm: 40 for arm in pair_probe.ARMS}


@pytest.mark.parametrize("shift,order", [(0.0, 0.0), (0.08, 0.0), (0.0, 0.1)])
def test_a_planted_shift_or_build_order_effect_is_found_and_none_is_claimed(tmp_path, shift,
                                                                            order):
    path = tmp_path / "p.jsonl"
    write(path, shift=shift, order=order, window_sd=0.0, beyond=0.03)
    vs = pair_probe.analyse(path)["comparisons"]["c"]["together"]["against_duet"]
    lo, hi = vs["shift_arm_minus_duet"][1:]
    assert (lo > 0) == (shift > 0) and lo <= shift <= hi
    lo, hi = vs["build_order_a_first_minus_b_first"][1:]
    assert (lo > 0) == (order > 0) and lo <= order <= hi


def test_the_windows_share_is_split_off(tmp_path):
    """Replicates whose spread is only their windows' (0.12 / sqrt(8) = 0.042) leave about 0
    beyond the windows; a planted replicate effect of 0.05 is found beside them."""
    path = tmp_path / "p.jsonl"
    write(path, n=200, window_sd=0.12)
    r = pair_probe.analyse(path)["comparisons"]["c"]["duet"]
    assert r["window_se"] == pytest.approx(0.12 / math.sqrt(8), rel=0.1)
    assert r["beyond_windows_sd"] < 0.02
    write(path, n=200, window_sd=0.12, beyond=0.05)
    r = pair_probe.analyse(path)["comparisons"]["c"]["duet"]
    assert r["beyond_windows_sd"] == pytest.approx(0.05, abs=0.012)


def test_recorded_duets_are_split_per_mode(tmp_path):
    rng = np.random.default_rng(2)
    for env in ("tf2.9", "tf2.10"):
        for rep in range(6):
            w = list(rng.normal(0.0, 0.12, 8) + rng.normal(0, 0.06))
            rec = {"machine": "m", "env": env, "status": "ok", "replicate": rep,
                   "cell": {"mode": "graph"}, "reference_env": "tf1.14", "reference_cell": {},
                   "log_ratio": float(np.mean(w)), "window_log_ratios": w,
                   "left_median_s": 1.0, "right_median_s": 1.0}
            (tmp_path / ("%s.r%d.json" % (env, rep))).write_text(json.dumps(rec))
    out = pair_probe.recorded_duets(tmp_path)
    assert list(out) == ["m graph"] and out["m graph"]["rows"] == 2
    assert out["m graph"]["rms_beyond_windows"] > 0.02


def test_a_comparison_is_parsed_or_named_in_the_error():
    name, env, a, b = pair_probe.parse_comparison("api=tf1.14:graph:tf.keras:train_on_batch:"
                                                  "numpy/api=fit")
    assert (name, env, b["api"], a["api"], b["mode"]) == ("api", "tf1.14", "fit",
                                                          "train_on_batch", "graph")
    assert pair_probe.parse_comparison("aa=tf1.14:graph:tf.keras:train_on_batch:numpy/")[3] == \
        pair_probe.parse_comparison("aa=tf1.14:graph:tf.keras:train_on_batch:numpy/")[2]
    for bad in ("api=tf1.14:graph/api=fit", "api=tf1.14:graph:tf.keras:t:numpy/speed=3",
                "no-equals-sign"):
        with pytest.raises(SystemExit, match="expected NAME=ENV"):
            pair_probe.parse_comparison(bad)


def test_pooled_ratio_finds_a_planted_narrower_arm_over_files(tmp_path):
    """Two files of 12 replicates each: the mix arm planted at a third of the duets' sd is found
    narrower when pooled (its CI above 1), an arm of equal sd is not, and the pooled degrees of
    freedom add up."""
    paths = []
    for seed in (1, 2):
        path = tmp_path / ("p%d.jsonl" % seed)
        write(path, n=12, window_sd=0.0, seed=seed,
              sd={"together": 0.05, "mix": 0.05 / 3, "group": 0.05, "fine": 0.05, "duet": 0.05})
        paths.append(path)
    out = pair_probe.pooled(paths)
    assert out["mix"]["ci"][0] > 1 and out["mix"]["df"] == [22, 22]
    assert out["together"]["ci"][0] < 1 < out["together"]["ci"][1]
    assert out["mix"]["comparisons"] == 2


def test_welch_interval_is_scipys():
    """pair_probe.welch against scipy.stats.ttest_ind(equal_var=False)."""
    from scipy import stats

    rng = np.random.default_rng(11)
    x, y = rng.normal(0.1, 0.05, 7), rng.normal(0.0, 0.12, 11)
    d, lo, hi = pair_probe.welch(x, y)
    ci = stats.ttest_ind(x, y, equal_var=False).confidence_interval(0.95)
    assert d == pytest.approx(x.mean() - y.mean())
    assert (lo, hi) == pytest.approx((ci.low, ci.high))


def test_the_sd_interval_covers_at_its_level_and_a_narrow_one_does_not():
    """pair_probe.sd_ci: over 2000 samples of 8 from a normal with sd 1, the 95 % interval
    covers 1 at its level (binomial CI); the same interval made 1.5x narrower in log around the
    estimate misses far more often: the check can fail."""
    from scipy import stats

    rng = np.random.default_rng(12)
    hits, narrow = 0, 0
    n = 2000
    for _ in range(n):
        sd, lo, hi = pair_probe.sd_ci(rng.normal(0.0, 1.0, 8))
        hits += lo <= 1.0 <= hi
        nlo, nhi = sd * (lo / sd) ** (1 / 1.5), sd * (hi / sd) ** (1 / 1.5)
        narrow += nlo <= 1.0 <= nhi
    ci = stats.binomtest(hits, n).proportion_ci()
    assert ci.low <= 0.95 <= ci.high, hits
    assert stats.binomtest(narrow, n).proportion_ci().high < 0.93, narrow
