"""The calibration of the paired rows under the duets' two looks (docs/calibration.md): each
figure is shown to fail a method wrong by a stated amount and to pass a correct one.

- compare-runs matches rows by machine: the published docs/tables (two machines) against
  itself passes; swapped machine keys, and a folder of two machines against one of neither,
  fail or are refused with the keys named.
- the cross-run check under two looks: with the chi-square reference, correct intervals fail
  far above the stated 8 % (the defect); read against the replayed design they fail at most
  8 % (binomial CI), and 1.5x-narrow intervals fail >= 80 %.
- the A/A rows at the headline's own per-test level: a correct procedure passes, intervals
  1.5x too narrow fail (planted).
- look 2 against look 1: an undisturbed second look passes at the nominal rate, a disturbed
  one fails; the page says which.

The fixture tests/fixtures/two_looks/ is the duets, releases and A/A tables of the Intel Xeon
model 207 run `intel-xeon-2c-7192096f` at commit 870981c (50 rows, 18 taken to 10 duets)."""
from pathlib import Path

import compare_runs
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from driver.report import duet_checks
from driver.stats import calibration, crossrun, crossrun_looks, crossrun_power, sequential

ROOT = Path(__file__).resolve().parents[3]
PUBLISHED = ROOT / "docs" / "tables"
FIXTURE = ROOT / "tests" / "fixtures" / "two_looks"
STATED = 2 * crossrun.ALPHA  # the stated size of the pair of tests


def ci(k, n):
    got = sps.binomtest(int(k), int(n)).proportion_ci(method="exact")
    return got.low, got.high


def graph_vs_eager_tables():
    """The fixture's duets, a planted duets_modes row (the reference's graph against its eager
    cell: 8 duets at look 1 and 20 in all, as duets.graph_vs_eager 2 makes them) and the
    duets_graph_vs_eager table the study builds from both."""
    from driver.tables.duets_graph_vs_eager import duets_graph_vs_eager_table

    duets = pd.read_csv(FIXTURE / "duets.csv")
    ref = duets[duets["mode"] == "graph"].iloc[0].copy()
    eager_id = ref["cell_id"].replace(".graph.", ".eager.")
    ref.update({"env": "tf1.14", "left_env": "tf1.14", "left_framework_version": "1.14.0",
                "cell_id": f"{ref['cell_id']}~{eager_id}", "right_cell_id": eager_id,
                "n": 8, "n_look1": 8, "n_max": 20, "log_ratio": np.log(0.6), "ratio": 0.6,
                "sd_log": 0.05, "se_log": 0.05 / np.sqrt(8), "df": 7, "verdict": "left_faster"})
    modes = pd.DataFrame([ref])
    return duets, modes, duets_graph_vs_eager_table(duets, modes)


def fixture_design(table="duets"):
    duets = compare_runs.keyed(pd.read_csv(FIXTURE / "duets.csv"), None)
    base = crossrun_looks.base_rows([duets, duets])
    if table == "duets_graph_vs_eager":
        raw, _, gve = graph_vs_eager_tables()
        gve = compare_runs.keyed(gve, None)
        tab = crossrun_looks.with_modes_rows(duets, gve)
        return crossrun_looks.row_design(gve, table, crossrun_looks.base_rows([tab, tab]))
    if table == "duets":
        return crossrun_looks.row_design(duets, "duets", base)
    rel = compare_runs.keyed(pd.read_csv(FIXTURE / "duets_releases.csv"), None)
    return crossrun_looks.row_design(rel, "duets_releases", base)


# -- 1. rows matched by machine ------------------------------------------------------------------

def copy_tables(src, dst, rename=None):
    dst.mkdir(parents=True)
    for path in src.glob("*.csv"):
        tab = pd.read_csv(path)
        for c in ("machine", "left_machine", "right_machine"):
            if rename and c in tab.columns:
                tab[c] = tab[c].astype(str).map(lambda m: rename.get(m.removesuffix(".twin"),
                                                                     m) + ".twin" * m.endswith(
                    ".twin"))
        tab.to_csv(dst / path.name, index=False)
    return dst


def test_the_published_two_machine_tables_pass_against_themselves():
    pairing = compare_runs.machine_pairing(compare_runs.machines_in(PUBLISHED),
                                           compare_runs.machines_in(PUBLISHED))
    assert len(pairing["common"]) == 2
    for table in ("duets", "duets_releases", "machines_compared"):
        out = compare_runs.duets_calibration(PUBLISHED, PUBLISHED, sims=200, table=table,
                                             pairing=pairing)
        n = len(pd.read_csv(PUBLISHED / f"{table}.csv").dropna(subset=[
            "interaction_se_log" if table == "machines_compared" else "se_log"]))
        assert out["matched"] == n and out["ok"], (table, out["check"]["why"])


def test_swapped_machine_keys_fail_and_no_common_machine_is_refused(tmp_path):
    machines = sorted(compare_runs.machines_in(PUBLISHED))
    swapped = copy_tables(PUBLISHED, tmp_path / "swapped", dict(zip(machines, machines[::-1])))
    out = compare_runs.duets_calibration(PUBLISHED, swapped, sims=200)
    assert out["matched"] == 100 and not out["ok"]  # each machine's rows against the other's
    other = copy_tables(PUBLISHED, tmp_path / "other", {m: f"x{i}" for i, m in enumerate(machines)})
    with pytest.raises(ValueError, match=machines[0]) as err:
        compare_runs.machine_pairing(compare_runs.machines_in(PUBLISHED),
                                     compare_runs.machines_in(other))
    assert "x0" in str(err.value) and "no machine key in common" in str(err.value)
    # one machine a side, different machines: compared against each other, and said so
    one = compare_runs.machine_pairing({machines[0]}, {"x0"})
    assert "matched against each other" in one["note"]


# -- 2. the cross-run check under two looks -------------------------------------------------------

def pairs_of_runs(design, sims, seed, factor=1.0):
    st = crossrun_power.design_statistics(design, factor, "row", sims, seed)
    n = design.rows
    plain = (2 * sps.norm.sf(np.abs(st["z"])) < crossrun.ALPHA) | \
        (sps.chi2.sf(st["S"], n - 1) < crossrun.ALPHA)
    return st, plain


@pytest.mark.parametrize("table", ["duets", "duets_releases"])
def test_the_chi_square_reference_fails_correct_intervals_too_often_under_two_looks(table):
    design = fixture_design(table)
    assert design.two_looks
    _, plain = pairs_of_runs(design, 2000, 3)
    lo, _ = ci(plain.sum(), plain.size)
    assert lo > STATED  # the defect: 0.14 (duets), 0.20 (releases) in statistics-4


@pytest.mark.parametrize("table", ["duets", "duets_releases", "duets_graph_vs_eager"])
def test_read_against_the_replayed_design_the_size_holds_and_15x_narrow_fails(table):
    design = fixture_design(table)
    ref = crossrun_power.reference(design, sims=4000, seed=1)
    size = crossrun_power.design_fail_rate(design, ref, 1.0, sims=3000, seed=21)
    assert size["ci"][0] <= STATED and size["rate"] <= STATED + 0.01, size
    power = crossrun_power.design_fail_rate(design, ref, 1.5, sims=1000, seed=22)
    assert power["ci"][0] >= 0.8, power


def test_every_paired_and_derived_table_of_two_look_runs_is_judged_under_the_design(tmp_path):
    """The fixture's run as two machines (the second: the same rows, each moved by 2 %), in
    two folders: duets, releases and machines_compared are each judged under the replayed
    design and print its power; the same folders pass against each other."""
    from driver.tables.machines_compared import machines_compared_table

    duets = pd.read_csv(FIXTURE / "duets.csv")
    other = duets.assign(machine="m2", log_ratio=duets["log_ratio"] + 0.02)
    both = pd.concat([duets, other], ignore_index=True)
    for side in ("a", "b"):
        folder = copy_tables(FIXTURE, tmp_path / side)
        both.to_csv(folder / "duets.csv", index=False)
        machines_compared_table(both).to_csv(folder / "machines_compared.csv", index=False)
        pd.DataFrame([{"machine": m, "env": "tf2.0", "cell_id": "c", "status": "ok",
                       "median_s": 0.01, "ci_low_s": 0.0097, "ci_high_s": 0.0103}
                      for m in both["machine"].unique()]).to_csv(folder / "cells.csv",
                                                                 index=False)
    got = {t: compare_runs.duets_calibration(tmp_path / "a", tmp_path / "b", sims=300, table=t)
           for t in ("duets", "duets_releases", "machines_compared")}
    for table, out in got.items():
        assert out["design"] == "two looks" and out["ok"] and out["matched"] >= 48, table
        assert out["check"]["power"]["row 1.5x"]["rate"] >= 0.8, table
    assert got["duets"]["matched"] == 100 and got["machines_compared"]["matched"] == 50
    text = " ".join(compare_runs.checks_text({
        "duets_calibration": got["duets"], "machines_compared_calibration":
        got["machines_compared"], "cells_calibration": {"check": {"n": 0}},
        "comparisons_calibration": {"check": {"n": 0}}}))
    assert text.count("the two-look design replayed") == 2 and "stated at most 8%" in text


def test_graph_vs_eager_rows_are_replayed_from_their_three_duets_rows(tmp_path):
    """duets_graph_vs_eager's rows: each version's graph row minus its eager row plus the one
    reference row, df the smallest (the table's own rule); compare-runs reads the reference row
    from the table's own `duet` row (its looks twice the headline's) beside the duets and judges
    the table under the replayed design. A run whose reference
    row moved by 0.12 in log (about four times its two runs' combined se) moves every derived
    row alike: the check fails on the shift."""
    duets, modes, gve = graph_vs_eager_tables()
    design = fixture_design("duets_graph_vs_eager")
    assert design is not None and design.two_looks and design.rows == len(gve) > 20
    derived = [p for p in design.parts if len(p) == 3]
    assert len(derived) == len(gve) - 1 and {sign for p in derived for _, sign in p} == {1, -1}
    ref = {p[2][0] for p in derived}
    assert len(ref) == 1 and design.n2[ref.pop()] == 20  # one shared row, 20 duets
    # the replayed rows are the table's: the estimate and se of one simulated run
    est, se, dof, var = crossrun_power._derive(design, *crossrun_power.replay(
        design, 5, np.random.default_rng(0)))
    assert est.shape == (5, len(gve)) and (dof <= 7).all()
    moved = modes.assign(log_ratio=modes["log_ratio"] + 0.12)
    for side, rows in (("a", modes), ("b", moved)):  # the study writes no duets_modes table
        folder = copy_tables(FIXTURE, tmp_path / side)
        pd.DataFrame([{"machine": duets["machine"].iloc[0], "env": "tf2.0", "cell_id": "c",
                       "status": "ok", "median_s": 0.01, "ci_low_s": 0.0097,
                       "ci_high_s": 0.0103}]).to_csv(folder / "cells.csv", index=False)
        from driver.tables.duets_graph_vs_eager import duets_graph_vs_eager_table
        duets_graph_vs_eager_table(duets, rows).to_csv(folder / "duets_graph_vs_eager.csv",
                                                       index=False)
    same = compare_runs.duets_calibration(tmp_path / "a", tmp_path / "a", sims=300,
                                          table="duets_graph_vs_eager")
    assert same["design"] == "two looks" and same["ok"] and same["matched"] == len(gve)
    assert same["check"]["power"]["row 1.5x"]["rate"] >= 0.8
    shifted = compare_runs.duets_calibration(tmp_path / "a", tmp_path / "b", sims=300,
                                             table="duets_graph_vs_eager")
    assert shifted["design"] == "two looks" and not shifted["ok"]
    assert "every row moved alike" in shifted["check"]["why"]


# -- 3. the A/A rows at the headline's own per-test level -----------------------------------------

def aa_rows(rows, narrow, rng, n1=4, n2=10, threshold=0.037):
    """A/A rows run through the two-look design: look 1 of n1, open rows (not equivalent, not
    different at the family's level) to n2; intervals `narrow` x too narrow (se / narrow)."""
    x = 0.05 * rng.standard_normal((rows, n2))
    design = sequential.looks(n1, n2)
    out = []
    for y in x:
        for n in (n1, n2):
            mean, se = y[:n].mean(), y[:n].std(ddof=1) / np.sqrt(n) / narrow
            p = float(design.two_sided(2 * sps.t.sf(abs(mean / se), n - 1)))
            tost = max(sps.t.sf((mean + np.log(1.1)) / se, n - 1),
                       sps.t.cdf((mean - np.log(1.1)) / se, n - 1))
            if p <= threshold or float(design.one_sided(tost)) <= 0.05 or n == n2:
                out.append((p, n))
                break
    p, _ = zip(*out)
    return calibration.threshold_rate(p, [threshold] * rows, [n1] * rows, [n2] * rows,
                                      [0.05] * rows,
                                      draws=4000)


def test_aa_at_the_headlines_level_passes_a_correct_procedure_and_fails_15x_narrow():
    rng = np.random.default_rng(4)
    good = aa_rows(400, 1.0, rng)
    assert good["ok"] and good["ci_low"] <= good["expected"] <= good["ci_high"]
    bad = aa_rows(400, 1.5, rng)
    assert not bad["ok"] and bad["ci_low"] > bad["expected"]
    # the printed power is what the planted case shows
    assert bad["power"] >= 0.8 and bad["ci_low"] <= bad["rate_narrow"] <= bad["ci_high"]


def test_aa_on_a_runs_two_rows_says_its_power_is_small():
    aa = pd.read_csv(FIXTURE / "duets_aa.csv")
    got = calibration.threshold_rate(aa["p"], [0.037] * len(aa), aa["n_look1"], aa["n_max"],
                                     aa["sd_log"], draws=4000)
    assert got["ok"] and got["k"] == 0 and got["power"] < 0.2


def test_the_rate_ci_is_statsmodels_clopper_pearson():
    for k, n in ((0, 4), (3, 50), (50, 50)):
        lo, hi = proportion_confint(k, n, alpha=0.05, method="beta")
        assert np.allclose(calibration.clopper_pearson(k, n), (lo, hi), equal_nan=True)


# -- 4. look 2 against look 1 ---------------------------------------------------------------------

def extended_rows(rng, rows, period_sd=0.0, n1=4, n2=10, threshold=0.037):
    """Rows of the design that look 1 left open, with look 2 moved per row by N(0, period_sd)
    (a row x period effect: the machine in another state for the second look)."""
    design = sequential.looks(n1, n2)
    out = []
    while len(out) < rows:
        mu, sd = rng.normal(0.0, 0.05), rng.uniform(0.03, 0.08)
        y = rng.normal(mu, sd, n2)
        mean, se = y[:n1].mean(), y[:n1].std(ddof=1) / np.sqrt(n1)
        p = float(design.two_sided(2 * sps.t.sf(abs(mean / se), n1 - 1)))
        tost = max(sps.t.sf((mean + np.log(1.1)) / se, n1 - 1),
                   sps.t.cdf((mean - np.log(1.1)) / se, n1 - 1))
        if p <= threshold or float(design.one_sided(tost)) <= 0.05:
            continue
        y[n1:] += rng.normal(0.0, period_sd)
        out.append(sequential.look_summaries(y, n1))
    return out


def test_an_undisturbed_second_look_passes_at_the_nominal_rate():
    rng = np.random.default_rng(8)
    fails = sum(sequential.looks_test(extended_rows(rng, 12), 0.037, draws=400,
                                      seed=i)["p"] < 0.05 for i in range(80))
    lo, _ = ci(fails, 80)
    assert lo <= 0.05 and fails / 80 <= 0.1


def test_a_disturbed_second_look_fails():
    """18 rows (the Intel run's extended rows) moved by a row x look effect of sd 0.06 between
    the looks (statistics-4 estimated 0.029 a period, 0.041 between two: there the test fails
    about 0.68 of the time, docs/calibration.md)."""
    rng = np.random.default_rng(9)
    fails = sum(sequential.looks_test(extended_rows(rng, 18, period_sd=0.06), 0.037,
                                      draws=400, seed=i)["p"] < 0.05 for i in range(40))
    assert ci(fails, 40)[0] >= 0.7


def test_the_health_check_says_when_the_looks_disagree():
    rng = np.random.default_rng(10)
    for sd, word in ((0.0, "agree with"), (0.06, "DISAGREE with")):
        rows = extended_rows(rng, 18, period_sd=sd)
        duets = pd.DataFrame([{"machine": "m", "mode": "graph", "env": f"tf2.{i}",
                               "n_look1": r["n1"], "n": r["n"], "look1_log_ratio": r["m1"],
                               "look1_sd_log": r["s1"], "log_ratio": r["m"], "sd_log": r["s"],
                               "ci_level": 0.963} for i, r in enumerate(rows)])
        check = duet_checks.looks_check(duets, "m")
        assert word in check.text and (check.cls == "warn") == (sd > 0)
    assert duet_checks.looks_check(duets.drop(columns="look1_sd_log"), "m") is None
