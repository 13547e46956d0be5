"""Per-cell spreads shrunk toward the study's common spread: the empirical-Bayes moderated t of
limma (Smyth 2004, "Linear models and empirical Bayes methods for assessing differential
expression in microarray experiments", SAGMB 3:3).

Why. A cell of 4 processes estimates its between-process variance from 3 degrees of freedom; the
study holds 120-odd such cells. Smyth's model treats each cell's true variance as drawn from a
scaled inverse chi-square prior (d0 degrees of freedom, scale s0^2), estimates d0 and s0^2 from all
cells' residual variances (method of moments on log s^2), and replaces each cell's s^2 by the
posterior

    s~^2 = (d0 * s0^2 + d * s^2) / (d0 + d),   with d0 + d degrees of freedom.

d0 -> 0 gives back each cell's own variance (the ordinary t), d0 -> inf the common variance (a z
test on the pooled spread). Between them the data decide: cells whose spreads differ beyond chi-square
noise give a small d0.

Pure functions of arrays; driver/stats/blocks.py builds the residual variances they take.
"""
import math
from collections.abc import Sequence

import numpy as np
from scipy import optimize, special
from scipy import stats as sps


def trigamma_inverse(x: float) -> float:
    """y with trigamma(y) = x (x > 0): trigamma falls monotonically from inf to 0 on (0, inf)."""
    if not x > 0:
        raise ValueError(f"trigamma_inverse needs x > 0, got {x}")
    if x > 1e7:
        return 1.0 / math.sqrt(x)
    if x < 1e-6:
        return 1.0 / x
    return float(optimize.brentq(lambda y: float(special.polygamma(1, y)) - x, 1e-9, 1e9,
                                 xtol=1e-14, rtol=1e-12))


def fit_f_dist(s2: Sequence[float], df: Sequence[float]) -> tuple[float, float]:
    """(d0, s0^2): the prior of squeeze_var from residual variances s2 with df degrees of freedom
    each (limma's fitFDist without covariate). d0 is inf when the variances vary no more than
    chi-square noise; (nan, nan) with fewer than two usable variances."""
    s2, df = np.asarray(s2, dtype=float), np.asarray(df, dtype=float)
    use = (df > 0) & np.isfinite(s2) & (s2 > 0)
    s2, df = s2[use], df[use]
    if s2.size < 2:
        return math.nan, math.nan
    e = np.log(s2) - special.digamma(df / 2) + np.log(df / 2)
    emean = float(e.mean())
    evar = float(((e - emean) ** 2).sum() / (e.size - 1) - special.polygamma(1, df / 2).mean())
    if evar > 0:
        d0 = 2.0 * trigamma_inverse(evar)
        s02 = math.exp(emean + float(special.digamma(d0 / 2)) - math.log(d0 / 2))
    else:
        d0, s02 = math.inf, float(s2.mean())
    return d0, s02


def squeeze_var(s2: Sequence[float], df: Sequence[float], d0: float | None = None,
                s02: float | None = None) -> dict:
    """Posterior variances: {"s2_post", "df_post", "d0", "s02"}. d0 and s02 are estimated from
    all the variances given unless passed. A variance with df 0 (one process) takes the prior."""
    s2, df = np.asarray(s2, dtype=float), np.asarray(df, dtype=float)
    if d0 is None or s02 is None:
        d0, s02 = fit_f_dist(s2, df)
    if math.isnan(d0):  # too few cells to learn a prior from: each cell on its own
        d0, s02 = 0.0, 0.0
    s2_safe = np.where(df > 0, np.nan_to_num(s2), 0.0)
    if math.isinf(d0):
        post = np.full(s2.shape, s02)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            post = (d0 * s02 + df * s2_safe) / (d0 + df)
    return {"s2_post": post, "df_post": df + d0, "d0": d0, "s02": s02}


def welch_df(v_left: float, df_left: float, v_right: float, df_right: float) -> float:
    """Satterthwaite's degrees of freedom for var(mean_l - mean_r) = v_left + v_right, each
    term's own variance estimated on df_* degrees of freedom (inf: known)."""
    terms = [v * v / d for v, d in ((v_left, df_left), (v_right, df_right))
             if v > 0 and not math.isinf(d)]
    denom = sum(terms)
    if denom == 0.0:
        return math.inf
    return (v_left + v_right) ** 2 / denom


def t_quantile(p: float, df: float) -> float:
    """Student-t quantile that is the normal's at df = inf."""
    return float(sps.norm.ppf(p) if math.isinf(df) else sps.t.ppf(p, df))


def t_sf(x: float, df: float) -> float:
    return float(sps.norm.sf(x) if math.isinf(df) else sps.t.sf(x, df))


def compare(mean_left: float, s2_left: float, df_left: float, n_left: int, mean_right: float,
            s2_right: float, df_right: float, n_right: int, level: float = 0.95,
            margin: float = 0.10, alpha_equivalence: float = 0.05) -> dict:
    """Difference of two cells' mean log medians with moderated variances (posterior s2 and df of
    each side): the ratio, its CI at `level`, the two-sided p-value, and the equivalence test
    (TOST: two one-sided t tests at alpha_equivalence against +-log(1 + margin)), with the bound
    "differ by at most bound_pct %" = the larger end of the (1 - 2 alpha) CI, in % (symmetric in
    log: a ratio r and 1/r are the same distance from 1). That interval is tost_ci_low/high at
    tost_level: the row is equivalent exactly when it lies inside 1 +- margin (symmetric in log)."""
    diff = mean_left - mean_right
    out = {"ratio": math.exp(diff), "ratio_ci_low": math.nan, "ratio_ci_high": math.nan,
           "ci_level": math.nan, "p": math.nan, "df": math.nan, "se_log": math.nan,
           "p_equivalent": math.nan, "tost_ci_low": math.nan, "tost_ci_high": math.nan,
           "tost_level": math.nan, "bound_pct": math.nan, "n_left": int(n_left),
           "n_right": int(n_right)}
    if n_left < 2 or n_right < 2:
        return out
    v_l, v_r = s2_left / n_left, s2_right / n_right
    se = math.sqrt(v_l + v_r)
    if not se > 0:  # no spread left at all (synthetic data): the difference is exact
        m = math.log1p(margin)
        out.update(ratio_ci_low=out["ratio"], ratio_ci_high=out["ratio"], ci_level=level,
                   p=0.0 if diff else 1.0, se_log=0.0, df=math.inf,
                   p_equivalent=0.0 if abs(diff) < m else 1.0, tost_ci_low=out["ratio"],
                   tost_ci_high=out["ratio"], tost_level=1.0 - 2.0 * alpha_equivalence,
                   bound_pct=100.0 * math.expm1(abs(diff)))
        return out
    df = welch_df(v_l, df_left, v_r, df_right)
    out.update(from_se(diff, se, df, n_left, n_right, level, margin, alpha_equivalence))
    return out


def from_se(diff: float, se: float, df: float, n_left: int, n_right: int, level: float = 0.95,
            margin: float = 0.10, alpha_equivalence: float = 0.05) -> dict:
    """compare's figures from a log difference, its standard error (> 0) and degrees of freedom:
    the CI at `level`, the equivalence test's (1 - 2 alpha_equivalence) interval (tost_ci_*)."""
    out = {"ratio": math.exp(diff), "n_left": int(n_left), "n_right": int(n_right)}
    half = t_quantile(0.5 + level / 2, df) * se
    bound_half = t_quantile(1 - alpha_equivalence, df) * se
    m = math.log1p(margin)
    p_eq = max(t_sf((diff + m) / se, df), t_sf((m - diff) / se, df))
    out.update(ratio_ci_low=math.exp(diff - half), ratio_ci_high=math.exp(diff + half),
               ci_level=level, p=min(1.0, 2.0 * t_sf(abs(diff) / se, df)), df=float(df),
               se_log=se, p_equivalent=p_eq, tost_ci_low=math.exp(diff - bound_half),
               tost_ci_high=math.exp(diff + bound_half), tost_level=1.0 - 2.0 * alpha_equivalence,
               bound_pct=100.0 * math.expm1(abs(diff) + bound_half))
    return out


def selected(out: dict, candidates: int, level: float = 0.95, margin: float = 0.10,
             alpha_equivalence: float = 0.05) -> dict:
    """A comparison whose two cells the data picked among `candidates` possible pairs (the
    fastest cell of a group against the fastest of another): its figures made simultaneous over
    every pair that could have been picked (Bonferroni), so they hold for the pair that was. The
    CI is at level 1 - (1 - level) / candidates, the TOST, its interval and its bound at
    alpha / candidates, and both p-values are multiplied by `candidates` (capped at 1). Without
    this the pick is a winner's curse: the fastest of many near-equal cells looks faster than it is, and every
    comparison against it overstates the gap. `candidates` <= 1, or figures without a standard
    error, come back unchanged (with `candidates` recorded)."""
    out = dict(out, candidates=int(max(candidates, 1)))
    se, df = out.get("se_log", math.nan), out.get("df", math.nan)
    if candidates <= 1 or not (isinstance(se, float) and se > 0 and df > 0):
        return out
    k = float(candidates)
    again = from_se(math.log(out["ratio"]), se, df, out["n_left"], out["n_right"],
                    1.0 - (1.0 - level) / k, margin, alpha_equivalence / k)
    again["p"] = min(1.0, k * again["p"])
    again["p_equivalent"] = min(1.0, k * again["p_equivalent"])
    out.update(again)
    return out
