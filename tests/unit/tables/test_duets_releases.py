"""The duets_releases table (driver/tables/duets_releases.py): what each release changed, from the
headline's duets.

- each row is Welch's t on the two envs' duets (the same t, df, p and interval as
  scipy.stats.ttest_ind(equal_var=False) on their log ratios against the reference), envs in
  version order (2.9 before 2.10), per machine and mode;
- verdicts as the study's: a planted 20 % change is called, two equal releases are equivalent;
- calibration under the duets' second look (rows extended on their own result against the
  reference, as scripts/plan_duets.py does): the rows' 95 % intervals, judged under the rows'
  two-look design, cover the true change at least at their rate (binomial CI); plain t intervals
  (the second look ignored) and an interval that forgets the earlier row's variance (planted
  miscalibrations) fail the same bound.
"""
import math

import numpy as np
import pytest
from duetfiles import duet_records
from scipy import stats as sps

from driver.stats import verdicts
from driver.tables import duets_releases as dr
from driver.tables.duets import critical, design_of, duets_table, open_rows

GRAPH = [("tf2.0", "2.0.4", "graph", "tf.keras", 0.10), ("tf2.1", "2.1.4", "graph", "tf.keras", 0.10),
         ("tf2.10", "2.10.1", "graph", "tf.keras", -0.10), ("tf2.9", "2.9.3", "graph", "tf.keras", 0.10)]
EAGER = [("tf2.0", "2.0.4", "eager", "tf.keras", 1.40), ("tf2.1", "2.1.4", "eager", "tf.keras", 1.20)]


def test_each_release_against_the_one_before_is_welchs_t_on_their_duets():
    recs = duet_records(GRAPH + EAGER, sd=0.02, n=6, seed=3)
    table = dr.duets_releases_table(duets_table(recs))
    assert list(table.columns) == dr.COLUMNS
    pairs = [(r["mode"], r["left_env"], r["right_env"]) for _, r in table.iterrows()]
    assert pairs == [("eager", "tf2.1", "tf2.0"), ("graph", "tf2.1", "tf2.0"),
                     ("graph", "tf2.9", "tf2.1"), ("graph", "tf2.10", "tf2.9")]
    def logs(env, mode):
        return [d["log_ratio"] for d in recs if d["env"] == env and d["cell"]["mode"] == mode]

    for _, r in table.iterrows():
        ref = sps.ttest_ind(logs(r["left_env"], r["mode"]), logs(r["right_env"], r["mode"]),
                            equal_var=False)
        assert r["p"] == pytest.approx(ref.pvalue, rel=1e-9)
        assert r["df"] == pytest.approx(ref.df, rel=1e-9)
        assert r["log_ratio"] == pytest.approx(np.mean(logs(r["left_env"], r["mode"]))
                                               - np.mean(logs(r["right_env"], r["mode"])))
        ci = ref.confidence_interval(r["ci_level"])
        assert r["ratio_ci_low"] == pytest.approx(math.exp(ci.low))
        assert r["ratio_ci_high"] == pytest.approx(math.exp(ci.high))
        assert (r["left_n"], r["right_n"]) == (6, 6)


def test_each_keras_line_is_a_series_and_keras3_starts_from_the_version_before_it():
    """From TF 2.16 the eager headline has two rows per env (Keras 3 and tf_keras): the tf.keras
    line goes on in tf_keras, Keras 3 is a line of its own whose first version meets the last
    tf.keras one; two rows of one env are never paired."""
    rows = [("tf2.15", "2.15.1", "eager", "tf.keras", 0.7),
            ("tf2.16", "2.16.2", "eager", "keras3", 1.2), ("tf2.16", "2.16.2", "eager", "tf_keras", 0.7),
            ("tf2.17", "2.17.1", "eager", "keras3", 1.2), ("tf2.17", "2.17.1", "eager", "tf_keras", 0.7)]
    table = dr.duets_releases_table(duets_table(duet_records(rows, sd=0.02, n=4)))
    pairs = {(r["left_env"], r["left_keras"], r["right_env"], r["right_keras"])
             for _, r in table.iterrows()}
    assert pairs == {("tf2.16", "tf_keras", "tf2.15", "tf.keras"),
                     ("tf2.17", "tf_keras", "tf2.16", "tf_keras"),
                     ("tf2.16", "keras3", "tf2.15", "tf.keras"),
                     ("tf2.17", "keras3", "tf2.16", "keras3")}
    assert (table["left_env"] != table["right_env"]).all()


def test_verdicts_call_a_planted_change_and_equal_releases_equivalent():
    table = dr.duets_releases_table(duets_table(duet_records(GRAPH + EAGER, sd=0.02, n=6,
                                                             seed=4)))
    by = {(r["mode"], r["left_env"]): r["verdict"] for _, r in table.iterrows()}
    assert by[("eager", "tf2.1")] == verdicts.LEFT_FASTER  # 2.1 is 20 % faster than 2.0
    assert by[("graph", "tf2.10")] == verdicts.LEFT_FASTER
    assert by[("graph", "tf2.1")] == verdicts.EQUIVALENT
    # one duet in a row: no interval, the row kept with its reason
    one = dr.duets_releases_table(duets_table(duet_records(EAGER, sd=0.02, n=1)))
    assert one["verdict"].tolist() == [verdicts.UNDECIDED]
    assert "fewer than two duets" in one["reason"].iloc[0]
    assert dr.duets_releases_table(duets_table([])).empty


def _two_looks(rng, truths, sd, n1=4, n_max=10):
    """A series' duets as the study runs them: n1 each, then the rows still open (open_rows)
    extended to n_max."""
    rows = [(f"tf2.{i}", f"2.{i}.0", "graph", "tf.keras", t) for i, t in enumerate(truths)]
    design = {"replicates": n1, "max_replicates": n_max}
    recs = duet_records(rows, sd=sd, n=n1, seed=int(rng.integers(1 << 30)))
    for r in recs:
        r["design"] = design
    extend = {env for env, _ in open_rows(recs)}
    more = duet_records([r for r in rows if r[0] in extend], sd=sd, n=n_max - n1,
                        seed=int(rng.integers(1 << 30)))
    for r in more:
        r["replicate"] += n1
        r["design"] = design
    return duets_table(recs + more)


def _covered(table, duets, truths, half):
    by = {e: r for e, r in zip(duets["env"], duets.to_dict("records"))}
    out = []
    for _, r in table.iterrows():
        i, j = int(r["left_env"][4:]), int(r["right_env"][4:])
        h = half(r, by[r["left_env"]], by[r["right_env"]])
        out.append(abs(r["log_ratio"] - (truths[i] - truths[j])) <= h)
    return out


def test_intervals_cover_at_their_rate_under_the_second_look_and_planted_errors_fail():
    """Truths near the margin and beyond (some rows stop at 4 duets, others go to 10), duet sd
    0.045 (the AMD EPYC VM's). The table's 95 % interval (its se, df and the rows' design) covers
    the true change at least at its rate, without being grossly wide; two planted errors fail:
    plain t intervals that ignore the second look, and an se that forgets the earlier release's
    variance."""
    rng = np.random.default_rng(5)
    truths = [0.0, 0.03, 0.09, 0.12, 0.05, -0.02, 0.30, 0.0]
    kept, one_look, forgot = [], [], []
    for _ in range(240):
        duets = _two_looks(rng, truths, 0.045)
        table = dr.duets_releases_table(duets)
        kept += _covered(table, duets, truths, lambda r, a, b: critical(
            design_of(a, b), r["df"], 0.05) * r["se_log"])
        one_look += _covered(table, duets, truths,
                             lambda r, a, b: sps.t.ppf(0.975, r["df"]) * r["se_log"])
        forgot += _covered(table, duets, truths, lambda r, a, b: critical(
            design_of(a, b), a["df"], 0.05) * a["se_log"])

    def ci(hits):
        return sps.binomtest(sum(hits), len(hits)).proportion_ci(0.99)

    assert ci(kept).high >= 0.95 and ci(kept).low <= 0.985, (sum(kept), len(kept))
    assert ci(one_look).high < 0.95, (sum(one_look), len(one_look))
    assert ci(forgot).high < 0.95, (sum(forgot), len(forgot))
