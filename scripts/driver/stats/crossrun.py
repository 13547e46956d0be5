"""Cross-run calibration checks with power: do a rerun's estimates move only as much as the
first run's intervals say?

The count this replaces (calibration.cross_run: the share of rows beyond their combined
intervals, against the binomial CI of 5 %) passes intervals 1.5 times too narrow about half the time
at the study's sizes (50 duet rows, 4 duets a row, df 3), and it never looks at the shift common to
all rows. Two statistics of the same rows do better, and each says why a pair fails:

- Standardised differences. Row i: d_i = est_A - est_B, t_i = d_i / sqrt(se_A^2 + se_B^2), with
  the Welch-Satterthwaite df of the two sides' own df (df 3 each for a duet row). t_i is mapped
  through its own t distribution to a normal score, u_i = Phi^-1(F_t(t_i; df_i)), so that a
  calibrated method gives u_i ~ N(0, 1) whatever each row's df (the t's heavy tails at df 3 would
  otherwise dominate a sum of squares).
- Shift: z = sum(u_i) / sqrt(n), two-sided normal p. Every row moved the same way: a run-level
  offset (the machine's hour) that no interval of one run contains.
- Dispersion: S = sum((u_i - mean u)^2) against chi-square with n - 1 df, upper tail: the rows
  spread more about the common shift than their intervals allow (a variance-ratio test; the
  spread sqrt(S / (n - 1)) is 1 for a calibrated method).
- A pair fails when either p is below `alpha` (each; the size of the pair of tests is at most
  2 * alpha, the default 0.04 each gives about 8 %) -- for runs of one look. Under the duets'
  two looks the normal and chi-square references are wrong (rows that stopped at look 1 did
  so partly because their spread came out small: correct intervals fail well above 2 * alpha,
  docs/calibration.md); there crossrun_judge.rows_check reads both statistics against the
  design replayed (crossrun_power.reference) and holds the pair together at 2 * alpha.

For cells, whose whole-run shift is taken out on purpose (a machine faster on one day moves every
cell alike and cancels in every comparison), only the dispersion is tested, about the shift
(the median difference, as cross_run(centre=True) takes it out), with n - 1 df.

With more than two runs, `pooled_shift` estimates each run's offset and tests them together
(chi-square with R - 1 df), with tau, the run-level sd, and its interval from inverting that test
(the Q-profile method): the spread of the runs' offsets, measured rather than assumed away.

What each check can detect at the study's sizes is simulated by driver/stats/crossrun_power.py.
"""
import math

import numpy as np
from scipy import optimize
from scipy import stats as sps

ALPHA = 0.04  # each of the two tests of a pair; the pair's size is at most 2 * ALPHA


def welch_df(va, dfa, vb, dfb) -> np.ndarray:
    """Welch-Satterthwaite df of a sum of two variance estimates (arrays)."""
    va, vb = np.asarray(va, float), np.asarray(vb, float)
    dfa, dfb = np.asarray(dfa, float), np.asarray(dfb, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        den = np.where(np.isfinite(dfa), va ** 2 / dfa, 0.0) + \
            np.where(np.isfinite(dfb), vb ** 2 / dfb, 0.0)
        return np.where(den > 0, (va + vb) ** 2 / np.where(den > 0, den, 1.0), np.inf)


def normal_scores(d, se_a, df_a, se_b, df_b) -> np.ndarray:
    """u_i = Phi^-1(F_t(d_i / sqrt(se_a^2 + se_b^2); Welch df)): N(0, 1) for a calibrated method.
    Works on arrays of any shape (the simulations pass many runs at once)."""
    d, se_a, se_b = (np.asarray(x, float) for x in (d, se_a, se_b))
    va, vb = se_a ** 2, se_b ** 2
    t = d / np.sqrt(va + vb)
    dof = np.minimum(welch_df(va, df_a, vb, df_b), 1e7)
    # tails from the side they are in: no 1 - tiny rounding to 1
    return np.where(t > 0, sps.norm.isf(sps.t.sf(t, dof)), sps.norm.ppf(sps.t.cdf(t, dof)))


def usable(*arrays) -> np.ndarray:
    """Rows with finite estimates and positive standard errors in every array given."""
    ok = np.ones(np.asarray(arrays[0]).shape, bool)
    for a in arrays:
        a = np.asarray(a, float)
        ok &= np.isfinite(a)
    return ok


def _tests(u: np.ndarray, centred: bool, alpha: float) -> dict:
    """The shift and dispersion tests of normal scores u (last axis: rows). Vectorised."""
    n = u.shape[-1]
    mean = u.mean(axis=-1)
    z = mean * math.sqrt(n)
    p_shift = 2 * sps.norm.sf(np.abs(z))
    if centred:  # the run's shift was taken out before the scores were made: n - 1 df left
        s = (u ** 2).sum(axis=-1)
    else:
        s = ((u - mean[..., None]) ** 2).sum(axis=-1)
    p_disp = sps.chi2.sf(s, n - 1)
    fail = (p_disp < alpha) if centred else ((p_disp < alpha) | (p_shift < alpha))
    return {"z": z, "p_shift": p_shift, "S": s, "p_dispersion": p_disp, "fail": fail}


def check(est_a, se_a, df_a, est_b, se_b, df_b, centre: bool = False,
          alpha: float = ALPHA) -> dict:
    """The cross-run check of matched estimates (logs), one number per row in each array.

    centre=False (duets, comparisons' rows taken alone): shift and dispersion tests, fails when
    either p < alpha. centre=True (cells): the median difference is taken out first and reported
    as `shift` (exp of it); only the dispersion is tested. Returns {"n", "ok", "z", "p_shift",
    "S", "df", "p_dispersion", "spread", "spread_ci", "shift", "shift_ci", "alpha", "why"}: spread
    is sqrt(S / df) (1 when calibrated) with its chi-square 95 % CI; shift_ci is the 95 % CI of the
    common shift (exp, inverse-variance weighted mean of the differences), None when centred."""
    cols = [np.asarray(x, float) for x in (est_a, se_a, df_a, est_b, se_b, df_b)]
    # a side may be exact (se 0: an A/A pair's log ratio against 0), not both
    ok = usable(*cols[:2], cols[3], cols[4]) & (cols[1] >= 0) & (cols[4] >= 0) & \
        (cols[1] ** 2 + cols[4] ** 2 > 0)
    ea, sa, fa, eb, sb, fb = (c[ok] for c in cols)
    n = int(ok.sum())
    if n < 3:
        return {"n": n, "ok": False, "why": f"only {n} matched rows with standard errors",
                "alpha": alpha}
    d = ea - eb
    shift = float(np.median(d)) if centre else 0.0
    u = normal_scores(d - shift, sa, fa, sb, fb)
    out = {k: float(v) for k, v in _tests(u, centre, alpha).items()}
    dof = n - 1
    lo, hi = sps.chi2.ppf([0.975, 0.025], dof)
    w = 1 / (sa ** 2 + sb ** 2)
    mean_d = float((w * d).sum() / w.sum())
    half = 1.96 / math.sqrt(float(w.sum()))
    why = []
    if not centre and out["p_shift"] < alpha:
        why.append(f"every row moved alike (shift p {out['p_shift']:.2g})")
    if out["p_dispersion"] < alpha:
        why.append(f"rows spread {math.sqrt(out['S'] / dof):.2f}x what their intervals allow "
                   f"(p {out['p_dispersion']:.2g})")
    return {"n": n, "ok": not bool(out["fail"]), "z": out["z"], "p_shift": out["p_shift"],
            "S": out["S"], "df": dof, "p_dispersion": out["p_dispersion"],
            "spread": math.sqrt(out["S"] / dof),
            "spread_ci": (math.sqrt(out["S"] / lo), math.sqrt(out["S"] / hi)),
            "shift": math.exp(shift if centre else mean_d),
            "shift_ci": None if centre else (math.exp(mean_d - half), math.exp(mean_d + half)),
            "alpha": alpha, "why": "; ".join(why) or "nothing beyond the intervals"}


def pooled_shift(est, se, level: float = 0.95) -> dict:
    """Runs' common offsets tested together, with tau (the run-level sd) and its interval.

    est, se: arrays (rows x runs) of matched estimates (logs) and standard errors; rows with any
    missing value are left out. Model: est_ir = a_i + b_r + e_ir, var(e_ir) = se_ir^2 (taken as
    known: each run offset is an average over all rows, so its variance is well estimated even at
    df 3 a row). b_r is estimated as the mean over rows of est_ir - mean_r est_ir; Q = b' C^+ b
    against chi-square with R - 1 df tests b = 0. tau: the sd of b_r over runs that the intervals
    leave out, by method of moments, with its `level` CI from Q(tau^2) = chi-square quantiles
    (Q-profile). Returns {"runs", "rows", "offsets" (exp), "Q", "df", "p", "tau", "tau_ci"}."""
    est, se = np.asarray(est, float), np.asarray(se, float)
    keep = np.isfinite(est).all(axis=1) & np.isfinite(se).all(axis=1) & (se > 0).all(axis=1)
    est, se = est[keep], se[keep]
    n, r = est.shape
    if r < 2 or n < 2:
        raise ValueError(f"pooled_shift needs 2 or more runs and rows, got {r} runs, {n} rows")
    centre = np.eye(r) - 1.0 / r
    b = (est @ centre.T).mean(axis=0)
    # Cov(b) = (1/n^2) sum_i C diag(v_i) C'
    cov = np.einsum("ab,ib,cb->ac", centre, se ** 2, centre) / n ** 2

    def q(tau2):
        return float(b @ np.linalg.pinv(cov + tau2 * centre, rcond=1e-10) @ b)

    q0, dof = q(0.0), r - 1
    p = float(sps.chi2.sf(q0, dof))
    excess = float(b @ b) / dof - float(np.trace(cov)) / dof
    tau2 = max(0.0, excess)

    def solve(target):
        if q(0.0) <= target:
            return 0.0
        top = 1e-6
        while q(top) > target:
            top *= 4
        return float(optimize.brentq(lambda t2: q(t2) - target, 0.0, top, xtol=1e-14))

    lo_q, hi_q = sps.chi2.ppf([(1 + level) / 2, (1 - level) / 2], dof)
    return {"runs": r, "rows": n, "offsets": np.exp(b).tolist(), "Q": q0, "df": dof, "p": p,
            "tau": math.sqrt(tau2), "tau_ci": (math.sqrt(solve(lo_q)), math.sqrt(solve(hi_q)))}
