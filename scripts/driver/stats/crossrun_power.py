"""What each cross-run check can detect, simulated at the sizes of the runs it judges.

A check's verdict means little without the chance that it fails wrong intervals. Each function
here plants the real structure (the rows and their standard errors as the two runs measured them,
their df, 4 duets a row = df 3 for the duets) and returns P(check fails) for intervals `factor`
times too narrow (factor 1: P(fails) is the size; 1 - size is how often correct intervals pass).

How the extra spread enters (`pattern`):
- "row": each row's error in each run is factor x its standard error (an offset per row and run
  that the intervals leave out);
- "shared": one offset per run, shared by every row, of sd tau with tau^2 = (factor^2 - 1) x the
  median se^2 (the median row's interval is factor x too narrow against a rerun): the pattern the
  published runs show (every duet row moved alike between two runs). With one pair of runs this
  offset is a single draw: when the two runs' offsets happen to be close, nothing can see it, so
  no check reaches 100 % against it.

The estimated standard errors are drawn with their df (se_hat = se * sqrt(chi2_df / df)): the
check sees estimated intervals, as it does on real runs. Seeded and vectorised (sims x rows).
"""
import math

import numpy as np
from scipy import stats as sps

from driver.stats import crossrun

FACTORS = (1.0, 1.5, 2.0)
PATTERNS = ("row", "shared")


def _draw(rng, se, df, sims):
    se, df = np.asarray(se, float), np.asarray(df, float)
    dfc = np.minimum(np.nan_to_num(df, nan=1e6, posinf=1e6), 1e6)
    return se * np.sqrt(rng.chisquare(np.broadcast_to(dfc, (sims, se.size))) / dfc)


def simulate(se_a, df_a, se_b, df_b, factor: float, pattern: str, sims: int, rng):
    """(d, se_a_hat, se_b_hat), each sims x rows: the differences of two runs whose true errors
    are as `pattern` and `factor` say, and the standard errors each run would estimate."""
    se_a, se_b = np.asarray(se_a, float), np.asarray(se_b, float)
    n = se_a.size
    if pattern == "row":
        d = factor * (se_a * rng.standard_normal((sims, n)) - se_b * rng.standard_normal((sims, n)))
    elif pattern == "shared":
        tau = math.sqrt(max(factor ** 2 - 1, 0.0) * float(np.median(np.r_[se_a, se_b] ** 2)))
        d = se_a * rng.standard_normal((sims, n)) - se_b * rng.standard_normal((sims, n)) \
            + tau * (rng.standard_normal((sims, 1)) - rng.standard_normal((sims, 1)))
    else:
        raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")
    return d, _draw(rng, se_a, df_a, sims), _draw(rng, se_b, df_b, sims)


def fail_rate(se_a, df_a, se_b, df_b, factor: float, pattern: str, centre: bool = False,
              alpha: float = crossrun.ALPHA, sims: int = 2000, seed: int = 0) -> dict:
    """P(crossrun.check fails) at these rows' sizes: {"k", "sims", "rate", "ci"} (Clopper-Pearson
    95 % CI of the simulated rate)."""
    rng = np.random.default_rng(seed)
    d, sa, sb = simulate(se_a, df_a, se_b, df_b, factor, pattern, sims, rng)
    if centre:
        d = d - np.median(d, axis=1, keepdims=True)
    u = crossrun.normal_scores(d, sa, df_a, sb, df_b)
    k = int(crossrun._tests(u, centre, alpha)["fail"].sum())
    return rate_of(k, sims)


def count_fail_rate(se_a, df_a, se_b, df_b, factor: float, pattern: str, level: float = 0.95,
                    sims: int = 2000, seed: int = 0) -> dict:
    """The same for the count it replaces (calibration.cross_run: rows beyond their combined
    intervals, failing when the share's binomial 95 % CI leaves out 1 - level)."""
    rng = np.random.default_rng(seed)
    d, sa, sb = simulate(se_a, df_a, se_b, df_b, factor, pattern, sims, rng)
    va, vb = sa ** 2, sb ** 2
    crit = sps.t.ppf(0.5 + level / 2, np.minimum(crossrun.welch_df(va, df_a, vb, df_b), 1e7))
    beyond = (np.abs(d) / np.sqrt(va + vb) > crit).sum(axis=1)
    n = d.shape[1]
    lo = sps.beta.ppf(0.025, beyond, n - beyond + 1)
    hi = sps.beta.ppf(0.975, beyond + 1, n - beyond)
    lo, hi = np.nan_to_num(lo, nan=0.0), np.nan_to_num(hi, nan=1.0)
    nominal = 1 - level
    return rate_of(int(((lo > nominal) | (hi < nominal)).sum()), sims)


def rate_of(k: int, sims: int) -> dict:
    ci = sps.binomtest(k, sims).proportion_ci(method="exact")
    return {"k": k, "sims": sims, "rate": k / sims, "ci": (float(ci.low), float(ci.high))}


def power_table(se_a, df_a, se_b, df_b, centre: bool = False, alpha: float = crossrun.ALPHA,
                sims: int = 2000, seed: int = 0, patterns=PATTERNS) -> dict:
    """{"size": P(fails | calibrated), "pass": 1 - size, "<pattern> <factor>x": P(fails), ...}:
    the figures printed beside a check's verdict. For cells (centre=True) the shared pattern is
    taken out on purpose and reported apart, so only "row" is simulated."""
    sa, sb = np.asarray(se_a, float), np.asarray(se_b, float)
    ok = crossrun.usable(sa, sb) & (sa >= 0) & (sb >= 0) & (sa ** 2 + sb ** 2 > 0)
    args = [np.asarray(x, float)[ok] for x in (se_a, df_a, se_b, df_b)]
    size = fail_rate(*args, 1.0, "row", centre, alpha, sims, seed)
    out = {"size": size, "pass": 1 - size["rate"], "rows": int(ok.sum()), "sims": sims,
           "alpha": alpha}
    for pattern in (("row",) if centre else patterns):
        for factor in FACTORS[1:]:
            out[f"{pattern} {factor:g}x"] = fail_rate(*args, factor, pattern, centre, alpha, sims,
                                                     seed + int(factor * 10))
    return out


def power_text(table: dict) -> str:
    """One line: the power at 1.5 and 2 times too narrow (each pattern) and the size, with what it means."""
    names = {"row": "offset per row", "shared": "one offset for all rows",
             "cell": "every cell", "reference": f"the {table.get('reference_cells')} cells in "
             "5+ rows"}
    parts = [f"{names.get(key.split()[0], key.split()[0])} {key.split()[1]}: fails "
             f"{val['rate']:.0%}" for key, val in table.items()
             if key.endswith("x") and isinstance(val, dict)]
    weak = [key for key, val in table.items() if key.endswith("1.5x") and isinstance(val, dict)
            and val["rate"] < 0.8]
    tail = (f"; below 80 % at 1.5x ({', '.join(weak)}): a pass cannot tell such intervals from "
            "correct ones") if weak else ""
    design = (", the two-look design replayed: p-values from its simulated pairs"
              if table.get("design") else "")
    return (f"power at these sizes ({table['rows']} rows, {table['sims']} simulated pairs"
            f"{design}): "
            + "; ".join(parts) + f"; correct intervals pass {table['pass']:.0%} (fail "
            f"{table['size']['rate']:.1%}, 95 % CI {table['size']['ci'][0]:.1%}-"
            f"{table['size']['ci'][1]:.1%}; stated at most {2 * table['alpha']:.0%})" + tail)


def pooled_fail_rate(se, factor: float, runs: int = 3, alpha: float = crossrun.ALPHA,
                     sims: int = 2000, seed: int = 0) -> dict:
    """P(crossrun.pooled_shift's p < alpha) for `runs` runs of rows with standard errors `se`
    (one run's; every run alike) and a shared offset per run making the median row's interval
    `factor` x too narrow: what pooling a third run buys against the pattern one pair of runs
    sees only partly. Vectorised over the simulated sets of runs."""
    rng = np.random.default_rng(seed)
    se = np.asarray(se, float)
    se = se[np.isfinite(se) & (se > 0)]
    tau = math.sqrt(max(factor ** 2 - 1, 0.0) * float(np.median(se ** 2)))
    est = se[None, :, None] * rng.standard_normal((sims, se.size, runs)) \
        + tau * rng.standard_normal((sims, 1, runs))
    centre = np.eye(runs) - 1.0 / runs
    b = (est @ centre.T).mean(axis=1)  # sims x runs
    cov = centre @ np.diag(np.full(runs, float((se ** 2).sum()) / se.size ** 2)) @ centre.T
    q = np.einsum("sa,ab,sb->s", b, np.linalg.pinv(cov, rcond=1e-10), b)
    return rate_of(int((sps.chi2.sf(q, runs - 1) < alpha).sum()), sims)


# -- the two-look design (driver/stats/sequential.py, driver/tables/duets.py: open_rows) --------
#
# Under the duets' second look a row stops at look 1 when it is decided there (equivalent, or
# called different by BH over its family), partly because its spread came out small; the rows
# that stop early then carry se's that are too small for a rerun more often than t allows, and
# the check's chi-square reference is wrong (its size well above the stated 2 * ALPHA:
# docs/calibration.md). So where the runs had two looks, the check's reference
# distributions are those of the design itself: each run of each simulated pair replays look 1
# (n1 replicates per row, the family's BH at q on the sequential p-values, TOST at alpha_eq on
# the one-sided map), extends the open rows to n2 and analyses them as the tables do; the
# check's statistics of the simulated pairs are the null distribution its p-values are read from.


class Design:
    """The rows of a table as the two-look design made them, for simulation.

    mu, sigma: each base row's true mean and sd of one replicate (logs); n1, n2: replicates at
    look 1 and in all; family: the BH family each base row belongs to (an int per row); left,
    right: for a derived table, the base rows whose difference each derived row is
    (duets_releases: later and earlier release; machines_compared: left and right machine); None
    for the base table itself. parts, for a derived table whose rows sum more than two base rows
    (duets_graph_vs_eager: the version's graph row, minus its eager row, plus the reference's
    graph-vs-eager row): per derived row a list of (base row, sign), its df the smallest of its
    parts' (that table's rule) where left and right take Welch's. group, round_sd: rows of one
    group share, in replicate round k, one draw of sd round_sd (the group's; part of sigma, not
    added to it): a state every row of a round shares (the machine over that stretch of the run,
    or a fork helper renewed every round, config duets.renew_helpers), which each row's interval
    carries but which makes the rows of a group move together; None: rows independent."""

    def __init__(self, mu, sigma, n1, n2, family=None, left=None, right=None, q: float = 0.05,
                 margin: float = 0.10, alpha_eq: float = 0.05, group=None, round_sd=None,
                 parts=None):
        self.mu, self.sigma = np.asarray(mu, float), np.asarray(sigma, float)
        self.group = np.zeros(self.mu.size, int) if group is None else np.asarray(group, int)
        self.round_sd = (np.zeros(self.mu.size) if round_sd is None else
                         np.minimum(np.nan_to_num(np.asarray(round_sd, float)), self.sigma))
        self.n1, self.n2 = np.asarray(n1, int), np.asarray(n2, int)
        self.family = np.zeros(self.mu.size, int) if family is None else np.asarray(family)
        self.left = None if left is None else np.asarray(left, int)
        self.right = None if right is None else np.asarray(right, int)
        self.parts = None if parts is None else [[(int(i), float(sign)) for i, sign in row]
                                                 for row in parts]
        self.q, self.margin, self.alpha_eq = q, math.log1p(margin), alpha_eq

    @property
    def two_looks(self) -> bool:
        return bool((self.n2 > self.n1).any())

    @property
    def derived(self) -> bool:
        return self.left is not None or self.parts is not None

    @property
    def rows(self) -> int:
        if self.parts is not None:
            return len(self.parts)
        return self.mu.size if self.left is None else self.left.size


def _bh_reject(p, family, q):
    """BH at q within each family (columns: rows; rows of p: simulations)."""
    out = np.zeros(p.shape, bool)
    for fam in np.unique(family):
        cols = family == fam
        part = p[:, cols]
        m = part.shape[1]
        srt = np.sort(part, axis=1)
        ok = srt <= q * np.arange(1, m + 1) / m
        k = np.where(ok.any(axis=1), m - np.argmax(ok[:, ::-1], axis=1), 0)
        thr = np.where(k > 0, srt[np.arange(len(srt)), np.maximum(k - 1, 0)], -1.0)
        out[:, cols] = part <= thr[:, None]
    return out


def _stats(x, n):
    mean = x[..., :n].mean(axis=-1)
    se = x[..., :n].std(axis=-1, ddof=1) / math.sqrt(n)
    return mean, se


def replay(design: Design, sims: int, rng) -> tuple[np.ndarray, ...]:
    """One run of the design per simulation: (estimate, se, df, true variance of the estimate)
    of every base row, sims x rows, each row stopped at look 1 when the design decided it
    there, else extended to n2."""
    from driver.stats.sequential import looks

    m = design.mu.size
    est, se, dof = np.empty((sims, m)), np.empty((sims, m)), np.empty((sims, m))
    n_used = np.broadcast_to(design.n1.astype(float), (sims, m)).copy()
    p_seq, p_eq = np.empty((sims, m)), np.empty((sims, m))
    late = {}
    width = int(max(design.n1.max(), design.n2.max()))
    rounds = bool((design.round_sd > 0).any())  # one draw per group and round, shared
    shared = rng.standard_normal((sims, int(design.group.max()) + 1, width)) if rounds else None
    own = np.sqrt(design.sigma ** 2 - design.round_sd ** 2)
    for (n1, n2) in sorted(set(zip(design.n1.tolist(), design.n2.tolist()))):
        cols = (design.n1 == n1) & (design.n2 == n2)
        k, w = int(cols.sum()), max(n1, n2)
        x = design.mu[cols, None] + own[cols, None] * rng.standard_normal((sims, k, w))
        if rounds:
            x = x + design.round_sd[cols, None] * shared[:, design.group[cols], :w]
        mean1, se1 = _stats(x, n1)
        lk = looks(max(n1, 2), max(n2, n1, 2))
        t1 = mean1 / se1
        p_seq[:, cols] = lk.two_sided(2 * sps.t.sf(np.abs(t1), n1 - 1))
        tost = np.maximum(sps.t.sf((mean1 + design.margin) / se1, n1 - 1),
                          sps.t.cdf((mean1 - design.margin) / se1, n1 - 1))
        p_eq[:, cols] = lk.one_sided(tost)
        est[:, cols], se[:, cols], dof[:, cols] = mean1, se1, n1 - 1
        if n2 > n1:
            mean2, se2 = _stats(x, n2)
            late[(n1, n2)] = (cols, mean2, se2, n2 - 1)
    decided = (p_eq <= design.alpha_eq) | _bh_reject(p_seq, design.family, design.q)
    for cols, mean2, se2, d2 in late.values():
        go = ~decided[:, cols]
        est[:, cols] = np.where(go, mean2, est[:, cols])
        se[:, cols] = np.where(go, se2, se[:, cols])
        dof[:, cols] = np.where(go, d2, dof[:, cols])
        n_used[:, cols] = np.where(go, d2 + 1, n_used[:, cols])
    return est, se, dof, design.sigma ** 2 / n_used


def _derive(design: Design, est, se, dof, var):
    """The derived table's rows from the base rows (Welch: the two rows' duets independent;
    `parts`: signed sums of independent rows, df the smallest of theirs)."""
    if design.parts is not None:
        cols = [np.array([i for i, _ in row]) for row in design.parts]
        signs = [np.array([sign for _, sign in row]) for row in design.parts]
        return (np.stack([est[:, c] @ s for c, s in zip(cols, signs)], axis=1),
                np.stack([np.sqrt((se[:, c] ** 2).sum(axis=1)) for c in cols], axis=1),
                np.stack([dof[:, c].min(axis=1) for c in cols], axis=1),
                np.stack([var[:, c].sum(axis=1) for c in cols], axis=1))
    if design.left is None:
        return est, se, dof, var
    i, j = design.left, design.right
    va, vb = se[:, i] ** 2, se[:, j] ** 2
    return (est[:, i] - est[:, j], np.sqrt(va + vb),
            crossrun.welch_df(va, dof[:, i], vb, dof[:, j]), var[:, i] + var[:, j])


def design_statistics(design: Design, factor: float = 1.0, pattern: str = "row",
                      sims: int = 2000, seed: int = 0) -> dict:
    """The check's statistics (z: shift, S: dispersion) over `sims` simulated pairs of runs of
    the design, with the table's true errors widened by `factor` as `pattern` says (crossrun_power
    module docstring: the intervals `factor` x too narrow against a rerun)."""
    rng = np.random.default_rng(seed)
    runs = []
    for _ in range(2):
        est, se, dof, var = _derive(design, *replay(design, sims, rng))
        if factor > 1 and pattern == "row":  # each row's true error factor x what se says
            est = est + np.sqrt((factor ** 2 - 1) * var) * rng.standard_normal(est.shape)
        elif factor > 1 and pattern == "shared":
            tau = math.sqrt((factor ** 2 - 1) * float(np.median(var)))
            est = est + tau * rng.standard_normal((sims, 1))
        elif factor > 1:
            raise ValueError(f"pattern must be one of {PATTERNS}, got {pattern!r}")
        runs.append((est, se, dof))
    (ea, sa, fa), (eb, sb, fb) = runs
    u = crossrun.normal_scores(ea - eb, sa, fa, sb, fb)
    t = crossrun._tests(u, False, crossrun.ALPHA)
    return {"z": t["z"], "S": t["S"]}


def reference(design: Design, sims: int = 4000, seed: int = 1) -> dict:
    """The null distributions of the check's two statistics under the design (correct
    intervals): sorted |z| and S of `sims` simulated pairs, from which design_p reads p-values."""
    st = design_statistics(design, 1.0, "row", sims, seed)
    ref = {"abs_z": np.sort(np.abs(st["z"])), "S": np.sort(st["S"]), "sims": sims}
    ref["min_p"] = np.sort(np.minimum(*design_p(ref, st["z"], st["S"])[:2]))
    return ref


def design_p(ref: dict, z, s) -> tuple[np.ndarray, ...]:
    """(p_shift, p_dispersion[, p_check]) of observed statistics against the design's null: the
    share of simulated pairs at least as extreme, (k + 1) / (sims + 1) (Monte Carlo p-values,
    valid at any number of draws). p_check, where ref has it: the same for the smaller of the
    two p-values, so that the pair of tests together is held at its stated size (2 * ALPHA:
    the check fails when p_check < 2 * alpha), not only each test at its own."""
    n = ref["sims"]
    above_z = n - np.searchsorted(ref["abs_z"], np.abs(np.asarray(z, float)), side="left")
    above_s = n - np.searchsorted(ref["S"], np.asarray(s, float), side="left")
    p_shift, p_disp = (above_z + 1) / (n + 1), (above_s + 1) / (n + 1)
    if "min_p" not in ref:
        return p_shift, p_disp
    low = np.searchsorted(ref["min_p"], np.minimum(p_shift, p_disp), side="right")
    return p_shift, p_disp, (low + 1) / (n + 1)


def design_fail_rate(design: Design, ref: dict, factor: float, pattern: str = "row",
                     alpha: float = crossrun.ALPHA, sims: int = 2000, seed: int = 2) -> dict:
    """P(the design-calibrated check fails: p_check < 2 * alpha) for intervals `factor` x too
    narrow, on pairs drawn apart from those of `ref`."""
    st = design_statistics(design, factor, pattern, sims, seed)
    p_check = design_p(ref, st["z"], st["S"])[2]
    return rate_of(int((p_check < 2 * alpha).sum()), sims)


def design_power_table(design: Design, ref: dict, alpha: float = crossrun.ALPHA,
                       sims: int = 2000, seed: int = 0, patterns=PATTERNS) -> dict:
    """power_table's figures simulated under the two-look design: the size of the calibrated
    check and its power at 1.5 and 2 times too narrow, each pattern."""
    size = design_fail_rate(design, ref, 1.0, "row", alpha, sims, seed + 2)
    out = {"size": size, "pass": 1 - size["rate"], "rows": design.rows, "sims": sims,
           "alpha": alpha, "design": "two looks"}
    for pattern in patterns:
        for factor in FACTORS[1:]:
            out[f"{pattern} {factor:g}x"] = design_fail_rate(
                design, ref, factor, pattern, alpha, sims, seed + int(factor * 10)
                + 100 * patterns.index(pattern))
    return out
