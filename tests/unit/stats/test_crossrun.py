"""The cross-run checks (driver/stats/crossrun.py) at the study's real sizes: the published duets'
50 rows and their standard errors, 4 duets a row (df 3), a run offset shared by all rows; the
published cells; the published comparisons' shared-cell structure. Each planted miscalibration is
failed at least as often as the goal says (>= 80 % at 1.5x too narrow), the lower bound of the
simulated rate's Clopper-Pearson 95 % CI above a stated threshold; correct intervals pass >= 90 %.
Seeded, vectorised."""
import math
from pathlib import Path

import compare_runs
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from driver.stats import crossrun, crossrun_power, crossrun_structure, moderated

PUBLISHED = Path(__file__).resolve().parents[3] / "docs" / "tables"
DUETS = 4  # duets a row, as the study runs them
MACHINES = sorted(pd.read_csv(PUBLISHED / "duets.csv")["machine"].unique())


@pytest.fixture(scope="module", params=MACHINES)
def tables(request, tmp_path_factory):
    """The published tables of one machine key (its twins' cells included): a study's real
    sizes. docs/tables holds every published machine side by side."""
    folder = tmp_path_factory.mktemp("tables")
    for path in PUBLISHED.glob("*.csv"):
        tab = pd.read_csv(path)
        if "machine" in tab.columns and len(tab):
            base = tab["machine"].astype(str).str.removesuffix(".twin")
            tab = tab[base == request.param]
        tab.to_csv(folder / path.name, index=False)
    return folder


def rate(k, n):
    ci = sps.binomtest(int(k), int(n)).proportion_ci(method="exact")
    return k / n, ci.low, ci.high


@pytest.fixture(scope="module")
def duet_se(tables):
    """The rows' standard errors at the first look (4 duets): a row that took a second look has
    its look-1 sd over sqrt(4). The two-look design itself is replayed in
    tests/unit/stats/test_calibration_two_looks.py."""
    tab = pd.read_csv(tables / "duets.csv")
    assert len(tab) == 50 and set(tab["n_look1"]) == {DUETS} and (tab["n"] >= DUETS).all()
    looked_twice = tab["n"] > tab["n_look1"]
    se = tab["se_log"].where(~looked_twice, tab["look1_sd_log"] / math.sqrt(DUETS))
    assert se.notna().all()
    return se.to_numpy(float)


def duet_runs(rng, se, sims, factor=1.0, shared=False, shift=0.0):
    """Two runs of the duets, generated duet by duet: row i's 4 duets are N(truth + offsets,
    (2 se_i)^2) (the between-duet sd that gives se_i at n = 4), each run's row mean, se (ddof 1)
    and df 3, as the duets table computes them. factor > 1 adds what the intervals leave out: per
    row and run (shared=False) or one offset per run for all rows (shared=True, tau^2 =
    (factor^2 - 1) median se^2); shift: a fixed offset of run A's rows."""
    sd = 2 * se
    truth = rng.normal(0, 0.2, se.size)
    out = []
    for run in range(2):
        if shared:
            tau = math.sqrt(factor ** 2 - 1) * float(np.median(se))
            off = rng.normal(0, tau, (sims, 1)) + np.zeros((1, se.size))
        else:
            off = rng.normal(0, 1, (sims, se.size)) * se * math.sqrt(factor ** 2 - 1)
        x = (truth + off + (shift if run == 0 else 0.0))[..., None] + \
            rng.standard_normal((sims, se.size, DUETS)) * sd[:, None]
        out.append((x.mean(axis=2), x.std(axis=2, ddof=1) / math.sqrt(DUETS)))
    return out


def fails(runs, centre=False):
    (ea, sa), (eb, sb) = runs
    d = ea - eb
    if centre:
        d = d - np.median(d, axis=1, keepdims=True)
    u = crossrun.normal_scores(d, sa, DUETS - 1, sb, DUETS - 1)
    return crossrun._tests(u, centre, crossrun.ALPHA)["fail"]


SIMS = 600


def test_duets_fail_intervals_15x_too_narrow_per_row(duet_se):
    got = rate(fails(duet_runs(np.random.default_rng(1), duet_se, SIMS, 1.5)).sum(), SIMS)
    assert got[1] >= 0.80, got  # about 89-90 % (docs/calibration.md)


def test_duets_against_a_shared_offset_one_pair_is_at_its_limit_and_three_runs_reach_it(duet_se):
    """One offset per run shared by all rows (the published runs' pattern): one pair of runs sees
    only the difference of two offsets, so even a test that knew every se exactly would fail such
    intervals only about 81 % of the time (docs/calibration.md); the check's 76-80 % is close to
    that and is printed as below the goal. Three runs pooled (crossrun.pooled_shift) reach it."""
    got = rate(fails(duet_runs(np.random.default_rng(2), duet_se, SIMS, 1.5, True)).sum(), SIMS)
    assert got[1] >= 0.70, got
    pooled = crossrun_power.pooled_fail_rate(duet_se, 1.5, runs=3, sims=SIMS, seed=2)
    assert pooled["ci"][0] >= 0.85, pooled


def test_duets_fail_intervals_2x_too_narrow(duet_se):
    for seed, shared in ((3, False), (4, True)):
        got = rate(fails(duet_runs(np.random.default_rng(seed), duet_se, SIMS, 2.0, shared)).sum(),
                   SIMS)
        assert got[0] >= 0.85, (shared, got)


def test_duets_pass_correct_intervals(duet_se):
    k = fails(duet_runs(np.random.default_rng(5), duet_se, SIMS)).sum()
    passed = rate(SIMS - k, SIMS)
    assert passed[0] >= 0.90 and passed[2] >= 0.92, passed  # size 2 x 0.04 at most


def test_duets_fail_a_planted_shared_shift(duet_se):
    """Every row of run A moved alike by 3 standard errors of the rows' mean difference (the
    audit found t about -2.5 between the two quiet Intel runs, about 6 against the disturbed one):
    the check fails it most of the time, and says it is the shift."""
    shift = 3 * math.sqrt(2 * float((duet_se ** 2).sum())) / duet_se.size
    runs = duet_runs(np.random.default_rng(6), duet_se, SIMS, shift=shift)
    assert fails(runs).mean() >= 0.7
    (ea, sa), (eb, sb) = runs
    one = crossrun.check(ea[0], sa[0], np.full(50, 3.0), eb[0], sb[0], np.full(50, 3.0))
    assert not one["ok"] and "moved alike" in one["why"]
    lo, hi = one["shift_ci"]
    assert lo < math.exp(shift) < hi


def test_the_power_table_agrees_with_the_duet_by_duet_simulation(duet_se):
    """crossrun_power (what compare-runs prints) draws the se from chi-square directly; the
    duet-by-duet simulation above gives the same rates within their sampling error."""
    table = crossrun_power.power_table(duet_se, np.full(50, 3.0), duet_se, np.full(50, 3.0),
                                       sims=SIMS, seed=7)
    direct = fails(duet_runs(np.random.default_rng(8), duet_se, SIMS, 1.5, True)).mean()
    assert table["shared 1.5x"]["rate"] == pytest.approx(direct, abs=0.06)
    assert table["pass"] >= 0.9


def test_the_old_count_misses_what_the_new_check_fails(duet_se):
    """The count it replaces (rows beyond their intervals against the binomial CI of 5 %) at the
    same sizes: below 60 % at 1.5x, the audit's finding; the new check about 80 %, at the limit
    one pair of runs allows against a shared offset (the test above), and 20 points or more above
    the count."""
    dfs = np.full(50, 3.0)
    old = crossrun_power.count_fail_rate(duet_se, dfs, duet_se, dfs, 1.5, "shared", sims=SIMS)
    new = crossrun_power.fail_rate(duet_se, dfs, duet_se, dfs, 1.5, "shared", sims=SIMS)
    assert old["rate"] < 0.6 and new["ci"][0] >= 0.7, (old, new)
    assert new["rate"] - old["rate"] >= 0.2, (old, new)


INTERVALS = 50  # cells with an interval (2+ processes) a run needs for the cells' check to judge


def test_cells_fail_intervals_15x_too_narrow_at_the_published_sizes(tables):
    """Where the run's cells carry intervals (several processes a cell: the cells design), the
    check fails 1.5x too narrow ones >= 90 % of the time. Where they do not (the paired design:
    one process a cell, its verdicts from pairs and duets), the check has few rows, and the line
    compare-runs prints says a pass cannot tell such intervals from correct ones."""
    cells = compare_runs.load_cells(tables)
    se, df = cells["se_log"].to_numpy(float), cells["df"].to_numpy(float)
    table = crossrun_power.power_table(se, df, se, df, centre=True, sims=SIMS, seed=9)
    lo = table["row 1.5x"]["ci"][0]
    if int((np.isfinite(se) & (df >= 1)).sum()) >= INTERVALS:
        assert lo >= 0.9 and table["pass"] >= 0.9, table
    else:
        assert table["row 1.5x"]["rate"] < 0.8, table
        assert "a pass cannot tell" in crossrun_power.power_text(table)


def test_normal_scores_follow_the_t_distribution_of_each_row():
    d, sa, sb = np.array([0.01, -0.03, 0.2]), np.array([0.01, 0.02, 0.05]), np.array(
        [0.02, 0.01, 0.05])
    u = crossrun.normal_scores(d, sa, 3.0, sb, 5.0)
    for x, a, b, got in zip(d, sa, sb, u):
        dof = moderated.welch_df(a * a, 3.0, b * b, 5.0)
        p = moderated.t_sf(x / math.hypot(a, b), dof)
        assert got == pytest.approx(sps.norm.isf(p), rel=1e-9)


def test_cells_check_takes_the_run_shift_out():
    rng = np.random.default_rng(10)
    se = np.full(120, 0.02)
    a = rng.normal(0, 0.02, 120) + math.log(1.15)
    b = rng.normal(0, 0.02, 120)
    out = crossrun.check(a, se, np.full(120, 20.0), b, se, np.full(120, 20.0), centre=True)
    assert out["ok"] and out["shift"] == pytest.approx(1.15, rel=0.02)


def test_pooled_shift_finds_a_run_offset_and_its_tau():
    rng = np.random.default_rng(11)
    se = np.full((50, 4), 0.008)
    calm = rng.normal(0, 0.008, (50, 4))
    out = crossrun.pooled_shift(calm, se)
    assert out["p"] > 0.01 and out["tau_ci"][0] == 0.0
    offsets = np.array([0.0, 0.02, -0.015, 0.01])
    moved = crossrun.pooled_shift(calm + offsets, se)
    assert moved["p"] < 1e-6
    assert moved["tau_ci"][0] < np.std(offsets, ddof=1) < moved["tau_ci"][1]
    with pytest.raises(ValueError, match="2 or more runs"):
        crossrun.pooled_shift(calm[:, :1], se[:, :1])


def test_pooled_shift_is_calibrated_under_no_offset():
    rng = np.random.default_rng(12)
    se = np.exp(rng.normal(-4.8, 0.5, (50, 3)))
    p = [crossrun.pooled_shift(rng.normal(0, 1, se.shape) * se, se)["p"] for _ in range(300)]
    assert 0.02 <= np.mean(np.array(p) < 0.05) <= 0.09


@pytest.fixture(scope="module")
def structure(tables):
    comps = compare_runs.load_comparisons(tables)
    comps = comps[(comps["se_log"] > 0) & comps["left_cell"].notna()]
    cells = compare_runs.load_cells(tables)
    keys = (cells[compare_runs.MACHINE] + "|" + cells["env"] + "|" + cells["cell_id"] + "|"
            + cells["twin"])  # a cell is one machine's (compare_runs: left_cell)
    cell_se, cell_df = dict(zip(keys, cells["se_log"])), dict(zip(keys, cells["df"]))
    return crossrun_structure.Structure(comps["left_cell"], comps["right_cell"], cell_se, cell_se,
                                        comps["se_log"], comps["se_log"], comps["df"],
                                        comps["df"], cell_df, cell_df)


def test_comparisons_fail_every_cell_15x_too_narrow_on_the_published_structure(structure,
                                                                               tables):
    """As for the cells: >= 90 % where the cells carry intervals; otherwise the printed power
    says a pass cannot tell (and correct intervals still pass)."""
    bad = crossrun_structure.fail_rate(structure, 1.5, "cell", sims=400, seed=13)
    good = crossrun_structure.fail_rate(structure, 1.0, "cell", sims=400, seed=14)
    assert good["rate"] <= 0.10, good
    cells = compare_runs.load_cells(tables)
    if int((np.isfinite(cells["se_log"]) & (cells["df"] >= 1)).sum()) >= INTERVALS:
        assert bad["ci"][0] >= 0.9, bad
        assert structure.reference.size >= 1  # the TF 1.14 reference cells are shared
    else:
        assert bad["rate"] < 0.8, bad


def test_selfbench_prints_the_aa_pairs_check_with_its_power():
    import selfbench

    rng = np.random.default_rng(15)
    se = np.exp(rng.normal(-3.5, 0.3, 126))

    def pairs(factor):
        return pd.DataFrame({"ratio": np.exp(factor * se * rng.standard_t(20, se.size)),
                             "se_log": se, "df": 20.0})

    figures = {}
    good = selfbench.calibration_checks(pairs(1.0), None, figures)
    assert figures["aa_check"]["ok"] and "power at these sizes" in good[-1]
    assert figures["aa_check"]["power"]["row 1.5x"]["rate"] >= 0.9
    bad = selfbench.calibration_checks(pairs(1.5), None, figures)
    assert not figures["aa_check"]["ok"] and "FAILS" in bad[0]


def test_compare_runs_prints_each_check_with_its_power_and_pools_a_third_run(tmp_path):
    """Three runs' duets tables (50 rows, 4 duets, df 3): compare-runs prints every check's power
    beside its verdict, and the pooled line for the three."""
    import subprocess
    import sys

    from driver.tables import bundle, duets

    rng = np.random.default_rng(16)
    truth = rng.normal(0, 0.2, 50)
    cell = {"model": "small", "data": "small", "input": "numpy", "device": "cpu",
            "api": "train_on_batch", "keras": "tf.keras", "mode": "graph"}
    folders = []
    for run, offset in enumerate((0.0, 0.0, 0.03)):
        recs = [{"machine": "m", "env": f"tf2.{i}", "replicate": r, "status": "ok", "cell": cell,
                 "reference_env": "tf1.14", "reference_cell": cell, "log_ratio": x,
                 "left_median_s": 0.01, "right_median_s": 0.01}
                for i, t in enumerate(truth) for r, x in enumerate(rng.normal(t + offset, 0.02, 4))]
        folder = tmp_path / f"r{run}"
        folder.mkdir()
        bundle.write_table(duets.duets_table(recs), folder / "duets.csv")
        pd.DataFrame([{"env": "tf2.0", "cell_id": f"c{i}", "status": "ok", "median_s": 0.01,
                       "ci_low_s": 0.0097, "ci_high_s": 0.0103} for i in range(5)]).to_csv(
            folder / "cells.csv", index=False)
        folders.append(str(folder))
    run = subprocess.run([sys.executable, compare_runs.__file__, *folders], capture_output=True,
                         text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    duet = lines.index(next(x for x in lines if x.startswith("cross-run check, duets")))
    assert "power at these sizes (50 rows" in lines[duet + 2]
    pooled = next(x for x in lines if x.startswith("duets pooled over 3 runs"))
    assert "p " in pooled and "tau" in pooled
