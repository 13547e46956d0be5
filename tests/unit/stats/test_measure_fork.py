"""measure_fork's figures: the F-test of the variance ratio (fork vs fresh log medians), the
siblings' intraclass correlation (one-way random-effects ANOVA of a helper's children), its check
that fails when children share their helper's state, and the precision per second."""
import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
import statsmodels.formula.api as smf
from measure_fork import (
    anova_sums,
    centred_ss,
    f_test,
    pooled_ratio,
    pooled_text,
    precision_per_second,
    schedule,
    siblings,
    summarise,
)
from scipy import stats


def test_ci_covers_a_planted_ratio_at_its_level():
    rng = np.random.default_rng(0)
    covered = 0
    for _ in range(400):
        r = f_test(rng.normal(0, 0.1, 20), rng.normal(0, 0.05, 20))
        covered += r["ci_low"] <= 4.0 <= r["ci_high"]
    assert 0.92 <= covered / 400 <= 0.98


def test_p_matches_the_two_sided_f_test_and_finds_a_fourfold_variance():
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 0.1, 20), rng.normal(0, 0.05, 20)
    r = f_test(a, b)
    ratio = a.var(ddof=1) / b.var(ddof=1)
    ref = 2 * min(stats.f.cdf(ratio, 19, 19), stats.f.sf(ratio, 19, 19))
    assert abs(r["p"] - ref) < 1e-12 and r["var_ratio"] == pytest.approx(ratio, rel=1e-12)
    found = sum(f_test(rng.normal(0, 0.1, 20), rng.normal(0, 0.05, 20))["p"] < 0.05
                for _ in range(200))
    assert found / 200 > 0.8  # power of the F-test at 20 v 20 for a fourfold variance: ~0.87


def test_the_pooled_ratio_of_one_cell_is_its_f_test_and_cells_add_their_sums():
    rng = np.random.default_rng(7)
    a, b = rng.normal(0, 0.1, 24), rng.normal(3, 0.07, 24)
    one = pooled_ratio([centred_ss(a)], [centred_ss(b)])
    ref = f_test(a, b)
    for key in ("var_ratio", "ci_low", "ci_high", "p"):
        assert one[key] == pytest.approx(ref[key], rel=1e-10)
    # a second cell at another level: its mean does not enter the pooled spread
    c, d = rng.normal(-2, 0.1, 24), rng.normal(5, 0.07, 24)
    two = pooled_ratio([centred_ss(a), centred_ss(c)], [centred_ss(b), centred_ss(d)])
    assert two["df_fork"] == two["df_fresh"] == 46
    assert two["var_ratio"] == pytest.approx(
        (np.var(a, ddof=1) + np.var(c, ddof=1)) / (np.var(b, ddof=1) + np.var(d, ddof=1)))


def draw(rng, helpers, children, icc, sd=0.1):
    """Log medians of `helpers` helpers' children whose state is shared with share `icc`."""
    between = rng.normal(0, sd * np.sqrt(icc), (helpers, 1))
    return between + rng.normal(0, sd * np.sqrt(1 - icc), (helpers, children))


def test_the_f_test_of_no_helper_effect_is_statsmodels_one_way_anova():
    y = draw(np.random.default_rng(2), 6, 4, 0.3)
    got = siblings([anova_sums(y)])
    frame = pd.DataFrame({"y": y.ravel(), "helper": np.repeat(np.arange(6), 4)})
    table = sm.stats.anova_lm(smf.ols("y ~ C(helper)", frame).fit())
    assert got["F"] == pytest.approx(table.loc["C(helper)", "F"], rel=1e-10)
    assert got["p"] == pytest.approx(table.loc["C(helper)", "PR(>F)"], rel=1e-8)
    assert got["ms_within"] == pytest.approx(table.loc["Residual", "mean_sq"], rel=1e-10)
    assert (got["df_between"], got["df_within"]) == (5, 18)


def test_pooled_cells_add_their_sums():
    rng = np.random.default_rng(3)
    a, b = draw(rng, 6, 4, 0.0), draw(rng, 5, 4, 0.5, sd=0.2)
    pooled = siblings([anova_sums(a), anova_sums(b)])
    sa, sb = anova_sums(a), anova_sums(b)
    assert pooled["ms_between"] == pytest.approx((sa[0] + sb[0]) / 9)
    assert pooled["ms_within"] == pytest.approx((sa[2] + sb[2]) / (18 + 15))
    with pytest.raises(ValueError, match="share k"):
        siblings([anova_sums(a), anova_sums(draw(rng, 6, 3, 0.0))])
    with pytest.raises(ValueError, match="at least 2 helpers"):
        anova_sums(np.zeros((1, 4)))


@pytest.mark.parametrize("icc", [0.0, 0.3])
def test_the_icc_interval_covers_the_planted_icc_at_its_level(icc):
    rng = np.random.default_rng(4)
    covered = sum(
        (lambda s: s["icc_low"] <= icc <= s["icc_high"])(siblings([anova_sums(draw(rng, 6, 4, icc))]))
        for _ in range(600))
    assert 0.93 <= covered / 600 <= 0.97


def test_the_check_fails_when_children_share_their_helpers_state():
    """At the probe's size (4 cells of 6 helpers x 4 children) the check says SHARED for a planted
    ICC of 0.3 about as often as its stated power, and for independent children about 5 %."""
    rng = np.random.default_rng(5)
    trials = 400

    def rate(icc):
        hits = [siblings([anova_sums(draw(rng, 6, 4, icc)) for _ in range(4)]) for _ in range(trials)]
        return sum(h["shared"] for h in hits) / trials, hits[0]["power"]

    false_rate, _ = rate(0.0)
    assert stats.binomtest(round(false_rate * trials), trials, 0.05).pvalue > 0.01
    caught, power = rate(0.3)
    assert caught > 0.75 and abs(caught - power) < 0.06  # power 0.875 at this size
    text = pooled_text(siblings([anova_sums(draw(rng, 6, 4, 0.9)) for _ in range(4)]), 4)
    assert "SHARED" in text and "over 4 cells" in text


def test_precision_per_second_counts_the_import_and_the_siblings_correlation():
    # independent children, same spread: the gain is the cost ratio
    assert precision_per_second(0.01, 3.0, 0.01, 0.0, 4, 1.5, 2.0) == pytest.approx(
        (0.01 * 3.0) / (0.01 / 4 * (2.0 + 4 * 1.5)))
    # children that all share one state are one replicate per helper
    assert precision_per_second(0.01, 3.0, 0.01, 1.0, 4, 1.5, 2.0) == pytest.approx(
        (0.01 * 3.0) / (0.01 * (2.0 + 4 * 1.5)))
    # a negative estimate of the ICC counts as none
    assert precision_per_second(0.01, 3.0, 0.01, -0.2, 4, 1.5, 2.0) == precision_per_second(
        0.01, 3.0, 0.01, 0.0, 4, 1.5, 2.0)


def test_schedule_gives_every_helper_one_child_a_round_beside_as_many_fresh_processes():
    order = schedule(6, 4, np.random.default_rng(6))
    assert len(order) == 48
    for r in range(4):
        this = order[r * 12:(r + 1) * 12]
        assert {o[2] for o in this} == {r}
        assert sorted(o[1] for o in this if o[0] == "fork") == list(range(6))
        assert sum(o[0] == "fresh" for o in this) == 6
    # shuffled: the rounds do not repeat one order
    assert len({tuple(o[:2] for o in order[r * 12:(r + 1) * 12]) for r in range(4)}) == 4


def records_of(grid, fresh, imports=(2.0, 2.0)):
    base = {"env": "tf1.14", "cell": "c"}
    out = [{**base, "kind": "helper", "helper": h, "wall_s": s} for h, s in enumerate(imports)]
    for h, row in enumerate(grid):
        out += [{**base, "kind": "fork", "helper": h, "round": r, "wall_s": 1.5, "log_median": v}
                for r, v in enumerate(row)]
    return out + [{**base, "kind": "fresh", "helper": None, "round": 0, "wall_s": 3.0,
                   "log_median": v} for v in fresh]


def test_summarise_rebuilds_a_cells_figures_from_its_records():
    rng = np.random.default_rng(8)
    grid, fresh = draw(rng, 2, 3, 0.2), rng.normal(0, 0.1, 6)
    row = summarise(records_of(grid, fresh))
    sib = siblings([anova_sums(grid)])
    assert (row["helpers"], row["children"]) == (2, 3) and row["icc"] == sib["icc"]
    assert row["var_ratio"] == f_test(grid.ravel(), fresh)["var_ratio"]
    assert row["precision_per_s"] == pytest.approx(precision_per_second(
        np.var(fresh, ddof=1), 3.0, sib["var_between"] + sib["var_within"], sib["icc"], 3, 1.5,
        2.0))
    # records kept without the helpers' imports: no precision per second, the rest as before
    assert summarise(records_of(grid, fresh, imports=()))["precision_per_s"] is None
    with pytest.raises(ValueError, match="every helper needs a child in every round"):
        summarise(records_of(grid, fresh)[:-7])
