"""Trust figures that can fail: is the study's uncertainty the uncertainty of a rerun?

Each figure is a rate with a Clopper-Pearson interval beside its nominal value, so that a method
wrong by a stated amount fails it (tests/unit/stats/test_calibration.py plants the errors):

- A/A (selfbench): the share of same-cell pairs with p <= the study's own per-test threshold
  (never Benjamini-Hochberg over a family of null pairs alone: that is about 0 by construction),
  the share of their CIs that cover a ratio of 1, and a Kolmogorov-Smirnov test that their p-values
  are uniform.
- Cross-run (compare-runs): for every matched cell or comparison
  t = (log m_A - log m_B) / sqrt(se_A^2 + se_B^2), with Satterthwaite (Welch) degrees of freedom
  from each side's own; the share beyond the critical value (nominal 1 - level), equivalently the
  share of run B's estimates outside run A's prediction interval; and tau^2, the run-level variance
  the CIs leave out (method of moments: mean(d^2 - se_A^2 - se_B^2) / 2, floored at 0). For
  cells the whole run's shift (the median difference) is taken out first and reported apart.
- Agreement of verdicts split by effect size, beside what the model expects (a parametric bootstrap
  of two runs from the estimates and their standard errors, verdicts as the study makes them).

The cross-run share beyond and shared_cells_range are figures now, not verdicts: at the study's
sizes a count of rows beyond their intervals passes intervals 1.5 times too narrow about half the
time and never tests the shift common to all rows. compare-runs decides by driver/stats/crossrun.py
(shift and dispersion of normal scores; comparisons by crossrun_structure.py), each check printed
with its power (crossrun_power.py; docs/calibration.md).
"""
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

from driver.stats import moderated, verdicts

# |log ratio| bands of the agreement figure: < 5 %, 5-20 %, > 20 %
BANDS = ((0.0, math.log(1.05), "<5%"), (math.log(1.05), math.log(1.20), "5-20%"),
         (math.log(1.20), math.inf, ">20%"))


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Exact binomial CI of k successes in n trials (scipy's binomtest)."""
    if n == 0:
        return math.nan, math.nan
    ci = sps.binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def rate(k: int, n: int, nominal: float, level: float = 0.95) -> dict:
    """{"k", "n", "rate", "ci_low", "ci_high", "nominal", "ok"}: ok when the CI holds the nominal
    value (the figure fails when the data show the rate differs from it)."""
    lo, hi = clopper_pearson(k, n, level)
    return {"k": int(k), "n": int(n), "rate": k / n if n else math.nan, "ci_low": lo,
            "ci_high": hi, "nominal": nominal, "ok": bool(n and lo <= nominal <= hi)}


def aa_figures(p: Sequence[float], ci_low: Sequence[float], ci_high: Sequence[float],
               threshold: float, level: float = 0.95) -> dict:
    """The A/A figures of same-cell pairs: rate at the per-test threshold (nominal: the threshold),
    coverage of 1 by their CIs at `level` (nominal: level), KS test of p-value uniformity."""
    p = np.asarray(p, dtype=float)
    lo, hi = np.asarray(ci_low, dtype=float), np.asarray(ci_high, dtype=float)
    have = ~np.isnan(p)
    cover = (lo[have] <= 1.0) & (1.0 <= hi[have])
    ks = sps.kstest(p[have], "uniform") if have.sum() >= 2 else None
    return {"threshold": threshold,
            "aa_rate": rate(int((p[have] <= threshold).sum()), int(have.sum()), threshold),
            "coverage": rate(int(cover.sum()), int(have.sum()), level),
            "ks_p": float(ks.pvalue) if ks else math.nan,
            "ks_ok": bool(ks and ks.pvalue > 0.05)}


def lean(log_ratio, se_log=None, n=None, level: float = 0.95) -> dict:
    """The A/A rows' bias: where both sides of a row run the same code, their log ratios should
    centre on 0. With each row's se and replicate count, every replicate weighs the same (each
    row by its count: the mean over all A/A replicates), its variance sum(n_i^2 se_i^2) /
    sum(n_i)^2 from the rows' own spreads (unbiased, whatever each row's spread) and a t
    interval on Satterthwaite's degrees of freedom; weighting by the inverse of estimated
    variances would make the interval too narrow (tests/unit/stats/test_calibration.py shows
    it). Without them, a t interval over the rows' log ratios. Returns {"mean", "n" (rows),
    "low", "high", "se", "df", "ok"} in log; ok when the interval holds 0 (a method that leans
    by more than the interval fails it). Fewer than 2 usable rows: no interval, ok."""
    x = np.asarray(log_ratio, float)
    keep = np.isfinite(x)
    pooled = False
    if se_log is not None and n is not None:
        se, k = np.asarray(se_log, float), np.asarray(n, float)
        usable = keep & np.isfinite(se) & (se > 0) & np.isfinite(k) & (k >= 2)
        if usable.sum() >= 2:  # else the rows' own t interval over every finite row
            pooled, keep = True, usable
            k, se = k[keep], se[keep]
    x = x[keep]
    out = {"mean": float(np.mean(x)) if x.size else math.nan, "n": int(x.size), "ok": True}
    if x.size < 2:
        return out
    if pooled:
        part = (k * se) ** 2 / k.sum() ** 2  # each row's share of the mean's variance
        mean, se_mean = float(np.sum(k * x) / k.sum()), float(math.sqrt(part.sum()))
        dof = float(part.sum() ** 2 / np.sum(part ** 2 / (k - 1)))
    else:
        mean, se_mean, dof = float(np.mean(x)), float(np.std(x, ddof=1) / math.sqrt(x.size)), \
            float(x.size - 1)
    half = moderated.t_quantile(0.5 + level / 2, dof) * se_mean
    return dict(out, mean=mean, se=se_mean, df=dof, low=mean - half, high=mean + half,
                ok=bool(mean - half <= 0.0 <= mean + half))


def centred_pairs(pairs: pd.DataFrame, level: float = 0.95) -> tuple[pd.DataFrame, float]:
    """A/A pairs (rows with ratio, se_log, df, n_left, n_right) with the shift common to all of
    them taken out first (the median log ratio), their CI and p-value recomputed on what is left:
    the A/A figures then test what each pair's CI claims to cover, as `cross_run(centre=True)`
    does for cells. A shift common to every pair (two runs a day apart, or a study's even rounds
    against its odd ones) is not in any pair's standard error and no comparison within a run sees
    it; left in, it makes every pair look different at once and the figures fail for it alone.
    Returns (pairs, shift as a ratio)."""
    if pairs.empty or "se_log" not in pairs.columns:
        return pairs, 1.0
    ratio = pd.to_numeric(pairs["ratio"], errors="coerce").to_numpy(float)
    se = pd.to_numeric(pairs["se_log"], errors="coerce").to_numpy(float)
    ok = np.isfinite(ratio) & (ratio > 0) & np.isfinite(se) & (se > 0)
    if not ok.any():
        return pairs, 1.0
    shift = float(np.median(np.log(ratio[ok])))
    rows = []
    for rec, good in zip(pairs.to_dict("records"), ok):
        if good:
            rec.update(moderated.from_se(math.log(rec["ratio"]) - shift, rec["se_log"],
                                         rec["df"], rec["n_left"], rec["n_right"], level))
        rows.append(rec)
    return pd.DataFrame(rows, columns=pairs.columns), math.exp(shift)


def cross_run(est_a, se_a, df_a, est_b, se_b, df_b, level: float = 0.95,
              centre: bool = False) -> dict:
    """Cross-run calibration of matched estimates (logs; standard errors and df of each run).
    {"t", "df", "beyond" (rate), "pi_coverage" (rate), "tau2", "tau", "shift"}.

    centre: take out the whole run's shift first (the median difference; `shift` is exp of it),
    for cells: a machine a little faster on one day moves every cell alike, which no cell's CI
    claims to cover and no comparison within a run sees (it cancels in every ratio). The shift is
    reported; the figures then measure what each cell's CI should cover."""
    est_a, est_b = np.asarray(est_a, float), np.asarray(est_b, float)
    se_a, se_b = np.asarray(se_a, float), np.asarray(se_b, float)
    df_a, df_b = np.asarray(df_a, float), np.asarray(df_b, float)
    ok = np.isfinite(est_a) & np.isfinite(est_b) & (se_a > 0) & (se_b > 0)
    d = est_a[ok] - est_b[ok]
    shift = float(np.median(d)) if (centre and d.size) else 0.0
    d = d - shift
    va, vb = se_a[ok] ** 2, se_b[ok] ** 2
    se = np.sqrt(va + vb)
    t = d / se
    df = np.array([moderated.welch_df(x, dx, y, dy) for x, dx, y, dy in
                   zip(va, df_a[ok], vb, df_b[ok])])
    crit = np.array([moderated.t_quantile(0.5 + level / 2, x) for x in df])
    beyond = int((np.abs(t) > crit).sum())
    n = int(ok.sum())
    tau2 = max(0.0, float(np.mean(d ** 2 - va - vb)) / 2) if n else math.nan
    return {"t": t, "df": df, "beyond": rate(beyond, n, 1 - level),
            "pi_coverage": rate(n - beyond, n, level), "tau2": tau2,
            "tau": math.sqrt(tau2) if n else math.nan, "shift": math.exp(shift)}


def band(log_ratio: float) -> str:
    x = abs(log_ratio)
    return next(name for lo, hi, name in BANDS if lo <= x < hi)


def _verdicts(log_ratio, se, df, level, q, margin, alpha_eq) -> np.ndarray:
    crit = np.array([moderated.t_quantile(0.5 + level / 2, x) for x in df])
    p = 2 * np.array([moderated.t_sf(abs(a) / s, x) for a, s, x in zip(log_ratio, se, df)])
    m = math.log1p(margin)
    p_eq = np.maximum([moderated.t_sf((a + m) / s, x) for a, s, x in zip(log_ratio, se, df)],
                      [moderated.t_sf((m - a) / s, x) for a, s, x in zip(log_ratio, se, df)])
    frame = pd.DataFrame({"ratio": np.exp(log_ratio), "se_log": se, "df": df,
                          "ratio_ci_low": np.exp(log_ratio - crit * se),
                          "ratio_ci_high": np.exp(log_ratio + crit * se), "p": p,
                          "p_equivalent": p_eq})
    # as the tables decide: each interval at the level BH tests it at (verdicts.tested)
    return verdicts.tested(frame, q=q, min_effect=margin,
                           alpha_equivalence=alpha_eq)["verdict"].to_numpy()


def expected_agreement(log_ratio, se_a, df_a, se_b, df_b, level: float = 0.95, q: float = 0.05,
                       margin: float = 0.10, alpha_eq: float = 0.05, draws: int = 200,
                       seed: int = 0) -> pd.DataFrame:
    """Parametric bootstrap of verdict agreement for a perfectly calibrated method: truth = the
    given log ratios; each run draws its estimate with its own se (t-distributed with its df) and
    decides as the study does. Per band: mean and sd of the agreement over the draws."""
    rng = np.random.default_rng(seed)
    lr = np.asarray(log_ratio, float)
    bands = np.array([band(x) for x in lr])
    out = {name: [] for _, _, name in BANDS}
    for _ in range(draws):
        va = lr + np.asarray(se_a) * rng.standard_t(np.minimum(df_a, 1e6))
        vb = lr + np.asarray(se_b) * rng.standard_t(np.minimum(df_b, 1e6))
        agree = (_verdicts(va, np.asarray(se_a), np.asarray(df_a), level, q, margin, alpha_eq)
                 == _verdicts(vb, np.asarray(se_b), np.asarray(df_b), level, q, margin,
                              alpha_eq))
        for name in out:
            if (bands == name).any():
                out[name].append(float(agree[bands == name].mean()))
    return pd.DataFrame([{"band": name, "expected": np.mean(v) if v else math.nan,
                          "expected_sd": np.std(v) if v else math.nan}
                         for name, v in out.items()])


def shared_cells_range(left, right, cell_se_a, cell_se_b, se_a, se_b, df_a, df_b,
                       level: float = 0.95, draws: int = 4000, seed: int = 0) -> dict:
    """Where the cross-run share of comparisons beyond their CIs lies for a calibrated method, on
    this study's structure: {"low", "high", "median", "draws"} (the central `level` range of the
    share over the draws).

    Why. Comparisons share cells (every TF 2.x row of "TF2 vs TF1" has the TF 1.14 cell on its
    right), so their exceedances come in clusters: if the shared cell happens to move between
    the runs, many rows move together. The binomial CI of `rate` assumes independent rows and
    fails a calibrated method far more often than 5 % (a simulation of the default study's
    structure: about 1 run in 4); this range does not.

    How. Each draw gives every cell of each run an error N(0, its se^2) (cell_se_*: {cell: se});
    a row's error is its cells' difference, rescaled to the row's own se (a paired row's se is
    smaller than its cells' sum); a row whose cells are unknown draws on its own. The draw's
    share is that of `cross_run`: |row_a - row_b| / sqrt(se_a^2 + se_b^2) beyond the Welch
    critical value."""
    rng = np.random.default_rng(seed)
    se_a, se_b = np.asarray(se_a, float), np.asarray(se_b, float)
    df_a, df_b = np.asarray(df_a, float), np.asarray(df_b, float)
    n = se_a.size
    if n == 0:
        return {"low": math.nan, "high": math.nan, "median": math.nan, "draws": 0}
    names = sorted({c for c in list(left) + list(right) if c is not None})
    index = {c: i for i, c in enumerate(names)}
    crit = np.array([moderated.t_quantile(0.5 + level / 2, moderated.welch_df(
        x * x, dx, y * y, dy)) for x, dx, y, dy in zip(se_a, df_a, se_b, df_b)])
    shares = np.empty(draws)
    li = np.array([index.get(c, -1) for c in left])
    ri = np.array([index.get(c, -1) for c in right])

    def plan(cell_se, row_se):
        """Each run: its cells' se, and per row whether its cells are known and the rescaling."""
        s = np.array([cell_se.get(c, math.nan) for c in names])
        s_l = np.where(li >= 0, s[np.maximum(li, 0)], math.nan)
        s_r = np.where(ri >= 0, s[np.maximum(ri, 0)], math.nan)
        both = np.isfinite(s_l) & np.isfinite(s_r) & (np.nan_to_num(s_l ** 2 + s_r ** 2) > 0)
        scale = np.where(both, row_se / np.sqrt(np.where(both, s_l ** 2 + s_r ** 2, 1.0)), 0.0)
        return both, scale, np.nan_to_num(s), row_se

    plans = (plan(cell_se_a, se_a), plan(cell_se_b, se_b))
    dfa, dfb = np.minimum(np.nan_to_num(df_a, nan=1e6), 1e6), np.minimum(
        np.nan_to_num(df_b, nan=1e6), 1e6)
    for i in range(draws):
        errs = []
        for both, scale, s, row_se in plans:
            cell = rng.standard_normal(len(names)) * s
            row = (cell[np.maximum(li, 0)] - cell[np.maximum(ri, 0)]) * scale
            errs.append(np.where(both, row, rng.standard_normal(n) * row_se))
        # each run's se is itself estimated (its df): the t of the test, not a z
        est = np.sqrt(se_a ** 2 * rng.chisquare(dfa) / dfa + se_b ** 2 * rng.chisquare(dfb) / dfb)
        shares[i] = float((np.abs(errs[0] - errs[1]) / est > crit).mean())
    tail = (1 - level) / 2
    return {"low": float(np.quantile(shares, tail)), "high": float(np.quantile(shares, 1 - tail)),
            "median": float(np.median(shares)), "draws": int(draws)}


def _aa_design_rate(sd, n1, n2, threshold, stop_level, narrow, margin, alpha_eq, draws, rng):
    """P(an A/A row's final sequential p <= threshold) under the two-look design: look 1 of n1
    duets of sd `sd` (true ratio 1), the row stopping there when equivalent (TOST on the
    one-sided map at alpha_eq) or different (at its own family's level stop_level), else
    extended to n2; every se divided by `narrow` (1: a correct procedure)."""
    from driver.stats.sequential import looks

    n1, n2 = max(int(n1), 2), max(int(n2), int(n1), 2)
    design = looks(n1, n2)
    x = sd * rng.standard_normal((draws, n2))
    m_eq = math.log1p(margin)
    final = np.ones(draws)
    open_ = np.ones(draws, bool)
    for n in ((n1, n2) if n2 > n1 else (n1,)):
        mean = x[:, :n].mean(axis=1)
        se = x[:, :n].std(axis=1, ddof=1) / math.sqrt(n) / narrow
        p = design.two_sided(2 * sps.t.sf(np.abs(mean / se), n - 1))
        tost = design.one_sided(np.maximum(sps.t.sf((mean + m_eq) / se, n - 1),
                                           sps.t.cdf((mean - m_eq) / se, n - 1)))
        final = np.where(open_, p, final)
        open_ &= ~((p <= stop_level) | (tost <= alpha_eq))
    return float((final <= threshold).mean())


def threshold_rate(p, threshold, n1, n2, sd, stop_level=None, narrow: float = 1.5,
                   margin: float = 0.10, alpha_eq: float = 0.05, draws: int = 20000,
                   seed: int = 5, level: float = 0.95) -> dict:
    """A/A rows judged at the headline's own per-test level: the share of A/A rows whose
    sequential p is at or below the level the headline rows of the same run were tested at
    (1 - ci_level = R q / m: BH calls a headline row different exactly there).

    What a correct procedure gives there is not the level itself: a row decided equivalent at
    look 1 stops with a large p, and the map is conservative for rows that stopped early, so a
    null row reaches the level less often. So each row's
    chance under a correct procedure (`expected`) and with intervals `narrow` x too narrow
    (`rate_narrow`) are simulated through the design at the row's own sd (_aa_design_rate).
    The figure fails when the exact one-sided binomial test of k rows against the mean
    expected chance rejects at 1 - level; the rate carries its Clopper-Pearson CI; `power` is
    P(that test fails) at the narrow chance: with a run's two A/A rows it is small.
    p, threshold, n1, n2, sd: one value per A/A row (n1, n2: its design, duets at look 1 and at
    most; sd: its between-duet sd); stop_level: the A/A family's own level at look 1 (default the
    threshold)."""
    p, thr, sd = (np.asarray(x, float) for x in (p, threshold, sd))
    stop = thr if stop_level is None else np.asarray(stop_level, float)
    n1, n2 = np.asarray(n1, int), np.asarray(n2, int)
    ok = np.isfinite(p) & np.isfinite(thr) & np.isfinite(sd) & (sd > 0)
    p, thr, sd, stop, n1, n2 = (np.broadcast_to(a, ok.shape)[ok]
                                for a in (p, thr, sd, stop, n1, n2))
    n = int(p.size)
    if not n:
        return {"n": 0}
    k = int((p <= thr).sum())
    rng = np.random.default_rng(seed)
    args = [(s_, a, b, t, st) for s_, a, b, t, st in zip(sd, n1, n2, thr, stop)]
    cache = {}

    def chance(narrow_):
        out = []
        for key in args:
            if (key, narrow_) not in cache:
                cache[(key, narrow_)] = _aa_design_rate(*key, narrow_, margin, alpha_eq, draws,
                                                        rng)
            out.append(cache[(key, narrow_)])
        return float(np.mean(out))

    expected, r_narrow = chance(1.0), chance(narrow)
    test = sps.binomtest(k, n, max(expected, 1e-9), alternative="greater")
    lo, hi = clopper_pearson(k, n, level)
    k_crit = next((j for j in range(n + 1) if sps.binomtest(
        j, n, max(expected, 1e-9), alternative="greater").pvalue < 1 - level), n + 1)
    power = float(sps.binom.sf(k_crit - 1, n, r_narrow)) if k_crit <= n else 0.0
    return {"k": k, "n": n, "rate": k / n, "ci_low": lo, "ci_high": hi,
            "threshold": float(thr.mean()), "expected": expected, "p": float(test.pvalue),
            "ok": bool(test.pvalue >= 1 - level), "narrow": narrow, "rate_narrow": r_narrow,
            "power": power}
