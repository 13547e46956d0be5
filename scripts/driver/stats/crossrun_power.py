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
    return (f"power at these sizes ({table['rows']} rows, {table['sims']} simulated pairs): "
            + "; ".join(parts) + f"; correct intervals pass {table['pass']:.0%}" + tail)


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
