"""scripts/duet_cost.py's figures: the Hodges-Lehmann saving and its Wilcoxon interval cover a
planted saving at their level and leave 0 out when the arms differ; the variance ratio's F
interval holds 1 when the arms' spreads are equal."""
import json

import duet_cost
import numpy as np
import pytest


def test_hodges_lehmann_covers_at_its_level():
    rng = np.random.default_rng(3)
    hits = sum(lo <= 1.5 <= hi for _, lo, hi in
               (duet_cost.hodges_lehmann(rng.normal(1.5, 1.0, 12)) for _ in range(600)))
    assert 0.92 <= hits / 600 <= 0.985, hits / 600
    est, lo, hi = duet_cost.hodges_lehmann([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert est == 3.5 and lo < est < hi


def write(path, saving, sd_ratio=1.0, n=12, seed=1):
    rng = np.random.default_rng(seed)
    with open(path, "w") as out:
        for t in range(n):
            base = 12 + rng.normal(0, 0.3)
            for arm, wall, sd in (("apart", base, 0.05), ("together", base - saving,
                                                          0.05 * sd_ratio)):
                out.write(json.dumps({"trial": t, "arm": arm, "wall_s": wall + rng.normal(0, 0.1),
                                      "log_ratio": rng.normal(0, sd), "machine": "m"}) + "\n")


@pytest.mark.parametrize("saving", [0.0, 1.5])
def test_a_planted_saving_is_found_and_none_is_claimed_without_one(tmp_path, saving):
    path = tmp_path / "d.jsonl"
    write(path, saving)
    r = duet_cost.analyse(path)
    assert r["n_trials"] == 12
    lo, hi = r["saving_ci"]
    assert (lo > 0) == (saving > 0) and lo <= saving <= hi
    assert r["var_ratio_ci"][0] < 1 < r["var_ratio_ci"][1]


def test_a_wider_spread_together_is_caught(tmp_path):
    path = tmp_path / "d.jsonl"
    write(path, 1.0, sd_ratio=4.0, n=20)
    assert duet_cost.analyse(path)["var_ratio_ci"][0] > 1


def test_the_fork_arm_is_set_against_together_with_its_cost_ratio(tmp_path):
    """--arms fork together: per arm the median wall, the cost ratio wall / timed seconds and
    the between-duet sd of the log ratio; fork's saving over together with its interval."""
    path = tmp_path / "d.jsonl"
    rng = np.random.default_rng(5)
    with open(path, "w") as out:
        for t in range(12):
            for arm, wall in (("together", 9.0), ("fork", 5.5)):
                out.write(json.dumps({"trial": t, "arm": arm, "timed_s": 4.0,
                                      "wall_s": wall + rng.normal(0, 0.1),
                                      "log_ratio": rng.normal(0, 0.05), "machine": "m"}) + "\n")
    r = duet_cost.analyse(path)
    assert r["arms"] == ["together", "fork"] and r["n_trials"] == 12
    assert abs(r["fork"]["cost_ratio"] - 5.5 / 4) < 0.05
    assert abs(r["together"]["cost_ratio"] - 9.0 / 4) < 0.05
    assert r["fork"]["sd_log_ratio"] > 0
    c = r["comparisons"]["fork_vs_together"]
    assert c["saving_ci"][0] <= 3.5 <= c["saving_ci"][1] and c["saving_ci"][0] > 0
    assert "saving_s" not in r  # the apart-vs-together names only with both of those arms
    duet_cost.show(r)


@pytest.mark.parametrize("slow_first", [0.0, 0.1])
def test_a_planted_slow_first_window_and_far_off_duets_are_counted(tmp_path, slow_first):
    """The -lean arms' figures: a first window planted 0.1 slower (log) than the rest is seen
    (its CI above 0), none is claimed without one; duets planted far from the median count."""
    rng = np.random.default_rng(3)
    path = tmp_path / "d.jsonl"
    with open(path, "w") as out:
        for t in range(20):
            for arm in ("fork", "fork-build-lean"):
                w = {s: list(rng.normal(-5, 0.03, 6)) for s in "ab"}
                if arm == "fork-build-lean":
                    for s in "ab":
                        w[s][0] += slow_first
                lr = 0.3 if (arm == "fork" and t < 2) else rng.normal(0, 0.03)
                out.write(json.dumps({"trial": t, "arm": arm, "wall_s": 5.0, "timed_s": 3.0,
                                      "log_ratio": lr, "machine": "m",
                                      "window_log_medians": w}) + "\n")
    r = duet_cost.analyse(path)
    assert r["fork"]["far"] == 2 and r["fork-build-lean"]["far"] == 0
    low = r["fork-build-lean"]["first_window_excess"][1]
    assert (low > 0) == (slow_first > 0)
    assert "fork-build-lean_vs_fork" in r["comparisons"]


def test_the_settle_arm_is_set_against_fork_build(tmp_path):
    """--arms fork-build fork-build-settle: the settle's saving alone, fork-build-settle against
    fork-build (no fork arm needed), and none claimed where there is none."""
    for saving, found in ((0.2, True), (0.0, False)):
        path = tmp_path / ("d%s.jsonl" % saving)
        rng = np.random.default_rng(7)
        with open(path, "w") as out:
            for t in range(12):
                base = 5.0 + rng.normal(0, 0.1)
                for arm, wall in (("fork-build", base), ("fork-build-settle", base - saving)):
                    out.write(json.dumps({"trial": t, "arm": arm, "timed_s": 3.0,
                                          "wall_s": wall + rng.normal(0, 0.02),
                                          "log_ratio": rng.normal(0, 0.05),
                                          "machine": "m"}) + "\n")
        r = duet_cost.analyse(path)
        assert list(r["comparisons"]) == ["fork-build-settle_vs_fork-build"]
        lo, hi = r["comparisons"]["fork-build-settle_vs_fork-build"]["saving_ci"]
        assert (lo > 0) == found and lo <= saving <= hi
