"""Trust figures that can fail (driver/stats/calibration.py, scripts/compare_runs.py,
scripts/selfbench.py): planted miscalibration is flagged, a calibrated method passes at about the
nominal rate, and compare-runs lines up two studies that differ in their envs."""
import math
import shutil
from pathlib import Path

import compare_runs
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from driver.stats import blocks, calibration, moderated, verdicts

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"


def simulated_run(rng, mu, tau, sd=0.05, k=4, round_sd=0.02):
    """One run of the study's design: k rounds over every cell, a cell x run offset of sd tau
    (what the CIs leave out), analysed by the study's model. -> {cell: (mean, se, df)}."""
    offsets = rng.normal(0, tau, mu.size)
    sds = sd * np.exp(rng.normal(0, 0.3, mu.size))
    rounds = rng.normal(0, round_sd, k)
    logs = {i: pd.Series(mu[i] + offsets[i] + rounds + rng.normal(0, sds[i], k),
                         index=[f"m#{r}" for r in range(k)]) for i in range(mu.size)}
    fit = blocks.fit_study(logs)
    return {i: (fit[i]["mean"], math.sqrt(fit[i]["s2_post"] / k), fit[i]["df_post"])
            for i in range(mu.size)}


def cross(rng, tau, cells=120):
    mu = rng.normal(-4, 1, cells)
    a, b = simulated_run(rng, mu, tau), simulated_run(rng, mu, tau)
    cols = [np.array([run[i][j] for i in range(cells)]) for run in (a, b) for j in range(3)]
    return calibration.cross_run(*cols, centre=True)


def test_a_run_level_offset_of_003_is_flagged():
    rng = np.random.default_rng(41)
    results = [cross(rng, 0.03) for _ in range(10)]
    assert all(not r["beyond"]["ok"] and r["beyond"]["ci_low"] > 0.05 for r in results)
    assert np.median([r["tau"] for r in results]) == pytest.approx(0.03, abs=0.01)
    assert all(not r["pi_coverage"]["ok"] for r in results)


def test_a_calibrated_pair_passes_at_about_the_nominal_rate():
    rng = np.random.default_rng(42)
    results = [cross(rng, 0.0) for _ in range(20)]
    rates = [r["beyond"]["rate"] for r in results]
    assert 0.03 <= float(np.mean(rates)) <= 0.07
    assert sum(r["beyond"]["ok"] for r in results) >= 16  # the CI holds 5 % about 95 % of runs
    assert np.median([r["tau"] for r in results]) < 0.02  # the planted case: about 0.03


def aa_pairs(rng, tau, cells=126, k=4, sd=0.045):
    """A/A pairs as selfbench --from-runs makes them: each cell in two runs, with a cell x run
    offset of sd tau that the method does not model (tau > 0: an inflated A/A rate)."""
    rows = []
    for _ in range(cells):
        a = rng.normal(rng.normal(0, tau), sd, k)
        b = rng.normal(rng.normal(0, tau), sd, k)
        rows.append(moderated.compare(a.mean(), a.var(ddof=1), k - 1, k, b.mean(),
                                      b.var(ddof=1), k - 1, k))
    return pd.DataFrame(rows)


def test_selfbench_figure_fails_an_inflated_aa_rate():
    """The audit's case: a cross-run A/A rate of about 17 % (tau 0.03). The old figure (BH over the
    A/A family alone) reads about 0 and passes; the rate at the study's threshold fails."""
    rng = np.random.default_rng(43)
    failed = old_passed = 0
    for _ in range(10):
        pairs = aa_pairs(rng, 0.03)
        fig = calibration.aa_figures(pairs["p"], pairs["ratio_ci_low"], pairs["ratio_ci_high"],
                                     threshold=0.034)
        failed += not fig["aa_rate"]["ok"]
        old = verdicts.decide(pairs)["verdict"].isin([verdicts.LEFT_FASTER,
                                                      verdicts.RIGHT_FASTER]).mean()
        old_passed += old <= 0.05
    assert failed >= 9 and old_passed >= 9


def test_selfbench_figures_pass_a_calibrated_method():
    rng = np.random.default_rng(44)
    ok = cover_ok = ks_ok = 0
    for _ in range(10):
        pairs = aa_pairs(rng, 0.0)
        fig = calibration.aa_figures(pairs["p"], pairs["ratio_ci_low"], pairs["ratio_ci_high"],
                                     threshold=0.034)
        ok += fig["aa_rate"]["ok"]
        cover_ok += fig["coverage"]["ok"]
        ks_ok += fig["ks_ok"]
    assert ok >= 8 and cover_ok >= 8 and ks_ok >= 8


def shifted_pairs(rng, shift, tau=0.0, cells=126, k=4, sd=0.045):
    """aa_pairs with run B slower than run A by `shift` (log) in every cell alike."""
    rows = []
    for _ in range(cells):
        a = rng.normal(rng.normal(0, tau), sd, k)
        b = rng.normal(rng.normal(shift, tau), sd, k)
        rows.append(moderated.compare(a.mean(), a.var(ddof=1), k - 1, k, b.mean(),
                                      b.var(ddof=1), k - 1, k))
    return pd.DataFrame(rows)


def test_aa_figures_centred_pass_a_run_shift_and_still_fail_an_inflated_rate():
    """Two runs a day apart: run B 6 % slower in every cell (a shift no pair's CI claims to
    cover). Left in, the A/A figure fails for it alone; centred (calibration.centred_pairs) it
    passes, and the shift comes back. Centring does not hide a cell x run variance the method
    leaves out: with tau 0.03 the centred figure still fails."""
    def figure(pairs):
        return calibration.aa_figures(pairs["p"], pairs["ratio_ci_low"],
                                      pairs["ratio_ci_high"], threshold=0.034)["aa_rate"]["ok"]

    rng = np.random.default_rng(46)
    raw_ok = centred_ok = inflated_ok = 0
    for _ in range(20):
        pairs = shifted_pairs(rng, math.log(1.06))
        raw_ok += figure(pairs)
        centred, shift = calibration.centred_pairs(pairs)
        assert 1 / shift == pytest.approx(1.06, rel=0.02)
        centred_ok += figure(centred)
        inflated_ok += figure(calibration.centred_pairs(
            shifted_pairs(rng, math.log(1.06), tau=0.03))[0])
    assert raw_ok <= 2 and centred_ok >= 16 and inflated_ok <= 2


def test_ks_figure_fails_non_uniform_p_values():
    rng = np.random.default_rng(45)
    pairs = aa_pairs(rng, 0.045)
    fig = calibration.aa_figures(pairs["p"], pairs["ratio_ci_low"], pairs["ratio_ci_high"], 0.05)
    assert not fig["ks_ok"] and not fig["coverage"]["ok"]


def test_clopper_pearson_matches_the_beta_quantiles():
    lo, hi = calibration.clopper_pearson(8, 122)
    assert lo == pytest.approx(sps.beta.ppf(0.025, 8, 115))
    assert hi == pytest.approx(sps.beta.ppf(0.975, 9, 114))
    assert calibration.clopper_pearson(0, 4)[1] == pytest.approx(1 - 0.025 ** 0.25)


def test_expected_agreement_by_band():
    lr = np.array([0.0] * 30 + [0.1] * 30 + [0.7] * 30)
    se = np.full(lr.size, 0.03)
    df = np.full(lr.size, 10.0)
    exp = calibration.expected_agreement(lr, se, df, se, df, draws=50).set_index("band")
    assert exp.at[">20%", "expected"] == pytest.approx(1.0)
    assert exp.at["5-20%", "expected"] < 1.0


def _write_run(folder: Path, rng, envs, shift=0.0):
    folder.mkdir(parents=True)
    cells, rows = [], []
    for env in envs:
        for i in range(6):
            m = 0.01 * (1 + i) * math.exp(shift + rng.normal(0, 0.005))
            cells.append({"env": env, "cell_id": f"c{i}", "status": "ok", "median_s": m,
                          "ci_low_s": m * 0.96, "ci_high_s": m * 1.04, "ci_level": 0.95,
                          "ci_df": 12.0, "n_repeats": 4})
        for i in range(3):
            r = [0.5, 1.0, 1.08][i] * math.exp(rng.normal(0, 0.02))
            rows.append({"env": env, "left_cell_id": f"c{2 * i}", "right_cell_id": f"c{2 * i + 1}",
                         "ratio": r, "ratio_ci_low": r / 1.06, "ratio_ci_high": r * 1.06,
                         "se_log": math.log(1.06) / 2.06, "df": 20.0, "n_left": 4, "n_right": 4,
                         "verdict": "left_faster" if r < 0.9 else "undecided"})
    pd.DataFrame(cells).to_csv(folder / "cells.csv", index=False)
    pd.DataFrame(rows).to_csv(folder / "graph_vs_eager.csv", index=False)
    return folder


def test_compare_runs_lines_up_studies_with_different_envs(tmp_path):
    rng = np.random.default_rng(46)
    a = _write_run(tmp_path / "a", rng, ["tf2.0", "tf2.3"])
    b = _write_run(tmp_path / "b", rng, ["tf2.0", "tf2.3", "tf2.21"])
    out = compare_runs.compare_runs(a, b, draws=20)
    assert out["envs_only_in_b"] == ["tf2.21"] and out["envs_only_in_a"] == []
    assert out["cells_matched"] == 12 and out["cells_only_in_b"] == 6
    assert out["comparisons_matched"] == 6 and out["only_in_b"] == 3
    assert out["cells_calibration"]["beyond"]["n"] == 12
    bands = {r["band"]: r for r in out["agreement_by_effect"]}
    assert bands[">20%"]["rows"] == 2 and bands["5-20%"]["rows"] == 2


def test_compare_runs_separates_the_run_shift(tmp_path):
    """Run B 10 % slower everywhere: the cells' figure reports the shift and measures the rest;
    one cell moved by 30 % on its own is beyond its combined CI."""
    rng = np.random.default_rng(47)
    a = _write_run(tmp_path / "a", rng, ["tf2.0", "tf2.3"])
    b = _write_run(tmp_path / "b", rng, ["tf2.0", "tf2.3"], shift=math.log(1.1))
    out = compare_runs.compare_runs(a, b, draws=20)
    # the whole run's shift is taken out of the cells' figure and reported apart
    assert out["cells_calibration"]["shift"] == pytest.approx(1 / 1.1, rel=0.02)
    assert out["cells_calibration"]["beyond"]["ok"]
    # left in, a 10 % shift puts the cells beyond their CIs, and tau takes it up
    kept = out["cells_calibration_shift_kept"]
    assert not kept["beyond"]["ok"] and kept["beyond"]["rate"] > 0.5
    assert kept["tau"] > 5 * out["cells_calibration"]["tau"]
    cells = pd.read_csv(b / "cells.csv")
    for col in ("median_s", "ci_low_s", "ci_high_s"):
        cells.loc[0, col] *= 1.3
    cells.to_csv(b / "cells.csv", index=False)
    out = compare_runs.compare_runs(a, b, draws=20)
    assert [(r["env"], r["cell_id"]) for r in out["moved_cells"]] == [("tf2.0", "c0")]


def test_compare_runs_on_the_real_table_format(tmp_path):
    """The golden tables (real files of a quick run) against a copy that lacks an env."""
    b = tmp_path / "b"
    shutil.copytree(GOLDEN, b)
    cells = pd.read_csv(b / "cells.csv")
    dropped = sorted(set(cells["env"]))[-1]
    cells[cells["env"] != dropped].to_csv(b / "cells.csv", index=False)
    out = compare_runs.compare_runs(GOLDEN, b, draws=10)
    assert out["envs_only_in_a"] == [dropped]
    assert out["comparisons_matched"] > 0


def clustered_runs(rng, factor, refs=12, per_ref=20, se=0.06):
    """Comparisons that share cells as "TF2 vs TF1" does: `refs` reference cells, each on the right
    of `per_ref` rows. Each run's cell errors are N(0, (factor * se)^2) while the rows claim se:
    factor 1 is a calibrated method, above 1 CIs too narrow, below 1 too wide."""
    left = [f"l{i}" for i in range(refs * per_ref)]
    right = [f"r{i // per_ref}" for i in range(refs * per_ref)]
    cells = sorted(set(left) | set(right))
    cell_se = {c: se for c in cells}
    row_se = np.full(len(left), se * math.sqrt(2))
    rows = []
    for _ in range(2):
        err = {c: rng.normal(0, factor * se) for c in cells}
        rows.append(np.array([err[a] - err[b] for a, b in zip(left, right)]))
    dof = np.full(len(left), 60.0)
    share = calibration.cross_run(rows[0], row_se, dof, rows[1], row_se, dof)["beyond"]
    span = calibration.shared_cells_range(left, right, cell_se, cell_se, row_se, row_se, dof, dof,
                                          draws=1000, seed=int(rng.integers(1 << 30)))
    return share, span


def test_the_shared_cells_range_passes_a_calibrated_method_where_the_binomial_fails_it():
    rng = np.random.default_rng(51)
    runs = [clustered_runs(rng, 1.0) for _ in range(40)]
    shared_ok = [s["low"] <= b["rate"] <= s["high"] for b, s in runs]
    binomial_ok = [b["ok"] for b, _ in runs]
    assert sum(shared_ok) >= 34  # about 95 % of calibrated runs pass
    assert sum(binomial_ok) < sum(shared_ok) - 4  # rows are not independent
    assert all(s["low"] < 0.05 < s["high"] for _, s in runs)


@pytest.mark.parametrize("factor", [1.6, 0.45])
def test_the_shared_cells_range_fails_cis_wrong_either_way(factor):
    """CIs 1.6x too narrow, or 2.2x too wide (the conservative failure of the comparisons'
    figure before pairing), fail in most runs."""
    rng = np.random.default_rng(52)
    runs = [clustered_runs(rng, factor) for _ in range(20)]
    fails = sum(not (s["low"] <= b["rate"] <= s["high"]) for b, s in runs)
    assert fails >= 15


def test_lean_pools_every_replicate_alike_holds_its_level_and_fails_a_planted_lean():
    """calibration.lean: with equal counts its mean is the rows' mean and its se Welch's over the
    rows' se (scipy's Welch t test of two rows against each other has the same df); over
    simulated A/A sets of unequal spreads and counts its interval holds 0 at about the nominal
    rate, where weighting by estimated inverse variances (statsmodels' fixed effect, planted
    here) is too narrow; a lean of 2 % in every row leaves 0 out in most sets; without se and n
    it is a t interval over the rows (scipy's)."""
    from statsmodels.stats.meta_analysis import combine_effects

    rng = np.random.default_rng(3)
    a, b = rng.normal(0, 0.05, 8), rng.normal(0.01, 0.02, 8)
    se = np.array([a.std(ddof=1), b.std(ddof=1)]) / math.sqrt(8)
    got = calibration.lean([a.mean(), b.mean()], se, [8, 8])
    assert got["mean"] == pytest.approx((a.mean() + b.mean()) / 2)
    assert got["se"] == pytest.approx(math.sqrt(se @ se) / 2)
    welch = sps.ttest_ind(a, b, equal_var=False)
    assert got["df"] == pytest.approx(float(welch.df))
    x = rng.normal(0, 0.02, 6)
    plain = calibration.lean(x)
    ci = sps.ttest_1samp(x, 0.0).confidence_interval(0.95)
    assert (plain["low"], plain["high"]) == pytest.approx((ci.low, ci.high))

    def sets(lean, k=400):
        holds = fixed = 0
        for _ in range(k):
            sds, ns = np.array([0.06, 0.02, 0.05, 0.03]), np.array([8, 4, 6, 4])
            reps = [rng.normal(lean, s, m) for s, m in zip(sds, ns)]
            x = np.array([r.mean() for r in reps])
            se = np.array([r.std(ddof=1) / math.sqrt(len(r)) for r in reps])
            holds += calibration.lean(x, se, ns)["ok"]
            fe = combine_effects(x, se ** 2, use_t=False)
            fixed += abs(fe.mean_effect_fe) <= 1.96 * fe.sd_eff_w_fe
        return holds / k, fixed / k

    calm, calm_fixed = sets(0.0)
    assert 0.92 <= calm <= 0.98 and calm_fixed < 0.92
    assert sets(0.03)[0] <= 0.25
    assert calibration.lean([0.01])["ok"] and "low" not in calibration.lean([0.01])
    # rows without a usable se (one replicate) fall back to the rows' own t interval
    fallback = calibration.lean(x[:3], [0.01, float("nan"), 0.0], [4, 1, 4])
    assert fallback["n"] == 3 and fallback["df"] == 2
    # a row without a log ratio, and one without a usable se among pooled rows, are left out
    nan = float("nan")
    some = calibration.lean([x[0], nan, x[1], x[2]], [0.01, 0.01, 0.02, nan], [4, 4, 6, 4])
    assert some == calibration.lean([x[0], x[1]], [0.01, 0.02], [4, 6])
    assert calibration.lean([x[0], nan, x[1]]) == calibration.lean([x[0], x[1]])
