"""Dimensioning (driver/stats/dimension.py) on synthetic nested data whose components are known,
against statsmodels' MixedLM and a brute-force optimum."""
import math

import numpy as np
import pandas as pd
import pytest
import statsmodels.formula.api as smf

from driver.stats import dimension


def nested(rng, runs, procs, samples, run_sd, proc_sd, within_sd):
    rows = []
    for r in range(runs):
        ru = rng.normal(0, run_sd) if run_sd else 0.0
        for p in range(procs):
            pe = rng.normal(0, proc_sd)
            for y in rng.normal(ru + pe, within_sd, samples):
                rows.append({"run": r, "process": f"{r}.{p}", "y": y})
    return pd.DataFrame(rows)


def test_two_levels_match_mixedlm_and_the_truth():
    df = nested(np.random.default_rng(0), 1, 60, 15, 0.0, 0.06, 0.03)
    got = dimension.nested_components(df)
    fit = smf.mixedlm("y ~ 1", df, groups=df["process"]).fit(reml=True)
    assert got["within"] == pytest.approx(fit.scale, rel=0.02)
    assert got["process"] == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=0.05)
    assert got["process"] == pytest.approx(0.06 ** 2, rel=0.35)
    assert got["within"] == pytest.approx(0.03 ** 2, rel=0.1)


def test_three_levels_match_mixedlm():
    df = nested(np.random.default_rng(1), 25, 5, 10, 0.08, 0.05, 0.03)
    got = dimension.nested_components(df, run="run")
    fit = smf.mixedlm("y ~ 1", df, groups=df["run"], re_formula="1",
                      vc_formula={"process": "0 + C(process)"}).fit(reml=True)
    assert got["within"] == pytest.approx(fit.scale, rel=0.02)
    assert got["process"] == pytest.approx(float(fit.vcomp[0]), rel=0.1)
    assert got["run"] == pytest.approx(float(fit.cov_re.iloc[0, 0]), rel=0.1)
    assert got["run"] == pytest.approx(0.08 ** 2, rel=0.5)


def records(rng, cells, k, n, proc_sd, within_sd, sample_s, overhead_s, run_shift=0.0):
    """Cell files (the keys dimension reads) with known levels: per-sample sd within_sd (iid),
    between-process sd proc_sd, samples of sample_s seconds, overhead_s outside the window."""
    out = []
    for c in range(cells):
        level = math.log(0.01 * (1 + c)) + run_shift * rng.normal()
        for rep in range(k):
            mu = level + rng.normal(0, proc_sd)
            samples = np.exp(rng.normal(mu, within_sd, n))
            window = n * sample_s
            out.append({"machine": "m", "env": "e", "cell_id": f"c{c}", "repeat": rep,
                        "status": "ok", "samples_s": list(samples), "timed_wall_s": window,
                        "provenance": {"cell_wall_s": window + overhead_s}})
    return out


def test_cell_levels_recover_the_known_components():
    rng = np.random.default_rng(2)
    recs = records(rng, cells=80, k=4, n=200, proc_sd=0.05, within_sd=0.1, sample_s=0.005,
                   overhead_s=6.0)
    levels = dimension.pooled(dimension.cell_levels(recs))
    # a: variance of the mean log per second = within^2 * sample_s (iid samples)
    assert levels["a"] == pytest.approx(0.1 ** 2 * 0.005, rel=0.25)
    assert levels["T2"] == pytest.approx(0.05 ** 2, rel=0.25)
    assert levels["overhead_s"] == pytest.approx(6.0)
    assert levels["window_s"] == pytest.approx(1.0)


def test_best_window_is_the_brute_force_optimum():
    a, t2, o = 5e-5, 0.0025, 6.0
    ws = np.linspace(0.01, 10, 20000)
    brute = ws[np.argmin((t2 + a / ws) * (o + ws))]
    assert dimension.best_window(a, t2, o) == pytest.approx(brute, rel=1e-3)
    assert dimension.best_window(a, 0.0, o) == math.inf


def test_recommend_stays_in_budget_and_beats_the_current_design():
    levels = {"a": 5e-5, "T2": 0.0025, "overhead_s": 6.0}
    current = 4 * (6.0 + 0.5)
    best = dimension.recommend(levels, current)
    assert best["seconds_per_cell"] <= current
    now = dimension.halfwidth(4, 0.5, 5e-5, 0.0025)
    assert best["halfwidth"] <= now


def test_run_component_from_two_runs():
    rng = np.random.default_rng(3)
    base = records(rng, 120, 4, 100, 0.05, 0.1, 0.005, 6.0)
    shift = np.random.default_rng(4)
    other = records(np.random.default_rng(5), 120, 4, 100, 0.05, 0.1, 0.005, 6.0)
    # run B: every cell moved by its own N(0, 0.04) on top of the same cell levels
    moves = {f"c{c}": shift.normal(0, 0.04) for c in range(120)}
    for rec in other:
        rec["samples_s"] = list(np.asarray(rec["samples_s"]) * math.exp(moves[rec["cell_id"]]))
    a = dimension.cell_levels(base)
    b = dimension.cell_levels(other)
    got = dimension.run_component(a, b)
    assert got["cells"] == 120
    assert got["T3"] == pytest.approx(0.04 ** 2 / 2, abs=0.0006)


def test_make_dimension_reads_a_results_dir(tmp_path, capsys):
    from cellfiles import write_cell
    from dimension import main

    rng = np.random.default_rng(6)
    root = tmp_path / "results" / "cells"
    for env in ("tf1.14", "tf2.0", "tf2.3", "tf2.15", "tf2.21"):
        for mode in ("eager", "graph"):
            for rep in range(3):
                mu = rng.normal(math.log(0.02), 0.05)
                write_cell(root, env, repeat=rep, mode=mode,
                           samples=list(np.exp(rng.normal(mu, 0.1, 64))))
    main([str(tmp_path / "results"), "--json", str(tmp_path / "d.json")])
    text = capsys.readouterr().out
    assert "best window w*" in text and "narrowest CI in that time" in text
    out = __import__("json").loads((tmp_path / "d.json").read_text())
    assert out["levels"]["cells"] == 10
    assert out["recommended"]["seconds_per_cell"] <= out["current"]["seconds_per_cell"] + 1e-9
    # the equivalence sizes are the module's, at the run's pooled spread and window
    lv, eq = out["levels"], out["equivalence"]
    twin = eq["rows"][0]
    assert twin["processes"] == dimension.equivalence_processes(
        lv["window_s"], lv["a"], lv["T2"], math.log(1.10), 0.0, 0.8)
    assert f"needs k >= {twin['processes']}" in text and "a row 5 % from equal" in text
    main([str(tmp_path / "results"), "--cells", "159", "--power", "0.6"])
    assert "min for 159 cells" in capsys.readouterr().out
    for bad in (["--power", "1.2"], ["--margin", "0"]):
        with pytest.raises(SystemExit):
            main([str(tmp_path / "results"), *bad])
        assert "--" in capsys.readouterr().err
    with pytest.raises(SystemExit, match="no cell files"):
        main([str(tmp_path / "nothing")])


def test_halfwidth_uses_the_analysis_critical_value_and_sizes_comparisons():
    """The audit's case: k = 4, spread 0.13 a process: a cell's 95 % half-width is 1.96 x
    0.13 / 2 (not t(3) = 3.18 x), and a ratio's 90 % TOST half-width is 1.645 x 0.13 x sqrt(2/4)."""
    sd = 0.13
    cell = dimension.halfwidth(4, 1e9, 0.0, sd ** 2)
    assert cell == pytest.approx(1.959964 * sd / 2, rel=1e-5)
    tost = dimension.halfwidth(4, 1e9, 0.0, sd ** 2, level=0.90, comparison=True)
    assert tost == pytest.approx(1.644854 * sd * math.sqrt(0.5), rel=1e-5)
    small_df = dimension.halfwidth(4, 1e9, 0.0, sd ** 2, df=3)
    assert small_df / cell == pytest.approx(3.182446 / 1.959964, rel=1e-5)


def simulated_equivalence(rng, k, sd, margin, log_ratio, known, trials=4000):
    """How often two cells of k processes (process sd `sd`) end equivalent: with the spread known
    (the z TOST the formula describes) or estimated (statsmodels' two-sample TOST, ttost_ind)."""
    from statsmodels.stats.weightstats import ttost_ind
    hits = 0
    for _ in range(trials if known else trials // 8):
        a, b = rng.normal(log_ratio, sd, k), rng.normal(0.0, sd, k)
        if known:
            d, se = a.mean() - b.mean(), sd * math.sqrt(2 / k)
            z = 1.6448536269514722
            hits += -margin + z * se < d < margin - z * se
        else:
            hits += ttost_ind(a, b, -margin, margin)[0] < 0.05
    return hits / (trials if known else trials // 8)


@pytest.mark.parametrize("k,log_ratio", [(20, 0.0), (40, math.log(1.05)), (12, 0.02)])
def test_equivalence_power_is_the_known_spread_tost_and_bounds_an_estimated_one(k, log_ratio):
    rng = np.random.default_rng(11)
    sd, margin = 0.13, math.log(1.10)
    got = dimension.equivalence_power(k, 1.0, 0.0, sd ** 2, margin, log_ratio)
    known = simulated_equivalence(rng, k, sd, margin, log_ratio, known=True)
    assert abs(got - known) < 4 * math.sqrt(got * (1 - got) / 4000) + 1e-9
    # statsmodels' TOST with the spread estimated from the 2k processes says equivalent less often
    assert simulated_equivalence(rng, k, sd, margin, log_ratio, known=False) <= got + 0.05


def test_equivalence_power_keeps_its_size_at_the_margin_and_is_zero_out_of_reach():
    margin = math.log(1.10)
    at_margin = dimension.equivalence_power(400, 0.5, 0.001, 0.017, margin, margin)
    assert at_margin == pytest.approx(0.05, abs=0.002)  # a row at the margin: the test's alpha
    assert dimension.equivalence_power(3, 0.5, 0.001, 0.017, margin) == 0.0  # interval too wide


def test_equivalence_processes_is_the_fewest_that_reach_the_power():
    margin, t2 = math.log(1.10), 0.131 ** 2
    k = dimension.equivalence_processes(0.5, 0.0016, t2, margin, 0.0, power=0.8)
    assert dimension.equivalence_power(k, 0.5, 0.0016, t2, margin) >= 0.8
    assert dimension.equivalence_power(k - 1, 0.5, 0.0016, t2, margin) < 0.8
    # the textbook sample size of a TOST at a true ratio of 1, power 1 - beta:
    # 2 sd^2 (z(1 - alpha) + z(1 - beta / 2))^2 / margin^2
    sd2 = t2 + 0.0016 / 0.5
    z_a, z_half_beta = 1.6448536269514722, 1.2815515655446004
    assert k == math.ceil(2 * sd2 * (z_a + z_half_beta) ** 2 / margin ** 2)
    assert dimension.equivalence_processes(0.5, 0.0016, t2, margin, margin) is None
