"""Rows that share a round's state (config duets.renew_helpers: the reference env's fork helper is
a new process every replicate round and mode, so its state enters every row's interval but is
shared by the rows of a round).

- duet_rounds' sd_round, the sd of the rounds' common effect, recovers a planted one (mean of
  its square near the planted variance) and finds none where none is planted;
- the cross-run check that ignores such a state fails correct intervals well above its stated
  size (the planted fault it must see), and read against the design replayed with the state
  (crossrun_power.Design's group and round_sd) its size holds and it still fails intervals 1.5x
  too narrow;
- base_rows gives each mode its own group and the runs' sd_round.
"""
from pathlib import Path

import compare_runs
import numpy as np
import pandas as pd
from scipy import stats as sps

from driver.stats import crossrun, crossrun_looks, crossrun_power
from driver.tables.duet_rounds import anova_rounds, duet_rounds
from tfspeed.cells import cell_id

ROOT = Path(__file__).resolve().parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "two_looks"
STATED = 2 * crossrun.ALPHA


def ci(k, n):
    got = sps.binomtest(int(k), int(n)).proportion_ci(method="exact")
    return got.low, got.high


def planted(rng, rows=28, rounds=10, sd=0.06, sd_round=0.03):
    shared = sd_round * rng.standard_normal(rounds)
    mu = rng.normal(0.3, 0.2, rows)
    return pd.DataFrame([{"row": f"r{i}", "round": k,
                          "y": mu[i] + shared[k] + sd * rng.standard_normal()}
                         for i in range(rows) for k in range(4 if i % 2 else rounds)])


def test_sd_round_recovers_a_planted_round_state_and_finds_none_where_none_is():
    rng = np.random.default_rng(5)
    with_state = [anova_rounds(planted(rng))[4] ** 2 for _ in range(150)]
    without = [anova_rounds(planted(rng, sd_round=0.0)) for _ in range(150)]
    assert abs(np.mean(with_state) - 0.03 ** 2) < 0.25 * 0.03 ** 2, np.mean(with_state)
    assert np.mean([w[4] ** 2 for w in without]) < 0.25 * 0.03 ** 2
    rejects = sum(w[3] < 0.05 for w in without)
    assert ci(rejects, len(without))[0] < 0.05 < ci(rejects, len(without))[1] + 0.02


def test_duet_rounds_writes_sd_round_per_mode():
    rng = np.random.default_rng(1)
    duets = pd.DataFrame({"machine": "m", "env": ["e1", "e2", "e3"]})
    shared = 0.05 * rng.standard_normal(8)
    records = [{"status": "ok", "kind": "duet", "machine": "m", "env": e, "replicate": k,
                "cell": {"model": "small", "data": "small", "keras": "tf.keras",
                         "mode": "eager", "api": "train_on_batch", "input": "numpy",
                         "device": "cpu"},
                "log_ratio": 0.1 * i + shared[k] + 0.01 * rng.standard_normal()}
               for i, e in enumerate(duets["env"]) for k in range(8)]
    duets["cell_id"] = cell_id(records[0]["cell"])
    out = duet_rounds(duets, records)
    assert len(out) == 8 and out["sd_round"].nunique() == 1
    assert out["sd_round"].iloc[0] == anova_rounds(pd.DataFrame(
        [{"row": r["env"], "round": r["replicate"], "y": r["log_ratio"]} for r in records]))[4]
    assert out["sd_round"].iloc[0] > 0.02


def fixture_designs(share=0.45):
    duets = compare_runs.keyed(pd.read_csv(FIXTURE / "duets.csv"), None)
    base = crossrun_looks.base_rows([duets, duets])
    plain = crossrun_looks.row_design(duets, "duets", base)
    rounds = pd.DataFrame({"machine_key": base["machine_key"].iloc[0],
                           "mode": ["graph", "eager"],
                           "sd_round": [share * float(base["sigma"].median())] * 2})
    shared = crossrun_looks.row_design(duets, "duets",
                                       crossrun_looks.base_rows([duets, duets], [rounds, rounds]))
    return plain, shared


def test_a_shared_round_state_fails_the_check_that_ignores_it_and_not_the_one_that_replays_it():
    plain, shared = fixture_designs()
    assert shared.round_sd.max() > 0 and len(set(shared.group.tolist())) == 2
    assert plain.round_sd.max() == 0
    # two runs whose rows share each round's state, their intervals correct (the state is in
    # each row's replicates)
    runs = crossrun_power.design_statistics(shared, 1.0, "row", sims=2000, seed=31)
    for design, too_often in ((plain, True), (shared, False)):
        ref = crossrun_power.reference(design, sims=4000, seed=1)
        p_check = crossrun_power.design_p(ref, runs["z"], runs["S"])[2]
        k = int((p_check < STATED).sum())
        lo, hi = ci(k, p_check.size)
        if too_often:
            assert lo > STATED, (k, p_check.size)  # the fault the replay must see
        else:
            assert lo <= STATED and k / p_check.size <= STATED + 0.015, (k, p_check.size)
    ref = crossrun_power.reference(shared, sims=4000, seed=1)
    power = crossrun_power.design_fail_rate(shared, ref, 1.5, sims=1000, seed=22)
    assert power["ci"][0] >= 0.8, power


def test_base_rows_give_each_mode_its_group_and_the_runs_sd_round():
    duets = compare_runs.keyed(pd.read_csv(FIXTURE / "duets.csv"), None)
    key = duets["machine_key"].iloc[0]
    ra = pd.DataFrame({"machine_key": key, "mode": ["graph", "eager"], "sd_round": [0.0, 0.03]})
    rb = pd.DataFrame({"machine_key": key, "mode": ["graph", "eager"], "sd_round": [0.0, 0.04]})
    base = crossrun_looks.base_rows([duets, duets], [ra, rb])
    eager = base["mode_a"] == "eager"
    assert base.loc[eager, "group"].nunique() == 1 and base.loc[~eager, "group"].nunique() == 1
    assert set(base.loc[eager, "group"]) != set(base.loc[~eager, "group"])
    assert np.allclose(base.loc[eager, "round_sd"], np.sqrt((0.03 ** 2 + 0.04 ** 2) / 2))
    assert np.allclose(base.loc[~eager, "round_sd"], 0.0)
    assert np.allclose(crossrun_looks.base_rows([duets, duets])["round_sd"], 0.0)


def test_compare_runs_replays_the_runs_duet_rounds_and_says_so(tmp_path):
    """Two run folders of the fixture's duets, each with a duet_rounds table whose eager rows
    share a round state: compare-runs' duets check replays it (its round_sd, printed) and passes
    the rows against themselves; the pairs' check is not given the duets' rounds."""
    duets = pd.read_csv(FIXTURE / "duets.csv")
    machine = duets["machine"].iloc[0]
    for side, sd in (("a", 0.02), ("b", 0.03)):
        folder = tmp_path / side
        folder.mkdir()
        for path in FIXTURE.glob("*.csv"):
            pd.read_csv(path).to_csv(folder / path.name, index=False)
        pd.DataFrame([{"machine": machine, "mode": mode, "round": k, "sd_round": s,
                       "p_round": 0.5, "moved": False}
                      for mode, s in (("graph", 0.0), ("eager", sd)) for k in range(4)]
                     ).to_csv(folder / "duet_rounds.csv", index=False)
    out = compare_runs.duets_calibration(tmp_path / "a", tmp_path / "b", sims=300)
    want = round(float(np.sqrt((0.02 ** 2 + 0.03 ** 2) / 2)), 4)
    assert out["design"] == "two looks" and out["check"]["round_sd"] == want
    assert out["ok"], out["check"]["why"]
    text = " ".join(compare_runs.checks_text({
        "duets_calibration": out, "cells_calibration": {"check": {"n": 0}},
        "comparisons_calibration": {"check": {"n": 0}}}))
    assert f"round's state (duet_rounds' sd_round, log, up to {want:.4f})" in text
