"""Change points along one configuration's version series: the releases where its step time
stepped up or down, with the size of each step and its confidence interval.

The data of one version is its cell's processes (their log medians, driver/stats/verdicts.py):
the process is the unit of replication, so a version measured by k processes weighs k, and the
noise is the between-process spread, never the samples of one process.

Model. Per version i, the k_i process log medians are normal around a level mu_i with a spread
sigma common to the series (the relative spread of fresh processes on one machine does not
depend on the TF version; one pooled sigma from every version's processes, with sum(k_i - 1)
degrees of freedom, is far steadier than one sd from 3-4 processes per version). The levels are
piecewise constant; a change point is a version where the level moves.

Segmentation. Binary segmentation (the `ruptures` package's Binseg) with a weighted least-squares
cost: a segment's cost is sum_i k_i (m_i - mean)^2 / sigma^2 over its versions (m_i the version's
mean log median), so the gain of splitting a segment in two is z^2, z the Welch-like statistic of
the two sides' difference. The penalty is the (1 - alpha) quantile of max z^2 over every split of
the whole series under no change, simulated for the series' own process counts and degrees of
freedom (sigma estimated, so the simulated statistic is studentized too). A flat series therefore
gets one or more change points with probability alpha, and a later stage of the segmentation
(a shorter segment) faces the same, stricter-than-needed penalty.

Size. Each change point's step is the ratio of the levels of the segments after and before it
(process-weighted means of log medians). Its interval is not the selection's own: a step is kept
because its z^2 passed the penalty, so a plain t interval on the same data would exclude 1 by
construction and confirm nothing. The interval is simultaneous instead, over every step the
segmentation could have reported (every pair of adjacent segments [a, b) and [b, c) of the series):
its critical value is the `level` quantile of max |z| over all of them under no change (Monte
Carlo for the series' process counts, sigma studentized on its df), so it covers the true step
of whichever change point was selected, and a step barely over the penalty can show an interval
that includes 1 (the data found a change, but cannot size it apart from no change).
"""
import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import ruptures as rpt
from ruptures.base import BaseCost

N_SIM = 20000  # null simulations per penalty: the alpha of the penalty is within about +-0.003
SIM_SEED = 20190902  # fixed: the same study always gets the same penalty


class WeightedL2(BaseCost):
    """Segment cost sum k_i (m_i - mean)^2 / sigma^2 of a signal with columns (m, k)."""

    model = "weighted_l2"
    min_size = 1

    def __init__(self, sigma: float = 1.0):
        self.sigma = sigma

    def fit(self, signal):
        self.signal = signal = np.asarray(signal, dtype=float)
        m, k = signal[:, 0], signal[:, 1]
        zero = np.zeros(1)
        self._k = np.concatenate([zero, np.cumsum(k)])
        self._km = np.concatenate([zero, np.cumsum(k * m)])
        self._kmm = np.concatenate([zero, np.cumsum(k * m * m)])
        return self

    def error(self, start, end):
        k = self._k[end] - self._k[start]
        km = self._km[end] - self._km[start]
        kmm = self._kmm[end] - self._kmm[start]
        return max(kmm - km * km / k, 0.0) / self.sigma ** 2


def pooled_sigma(logs: Sequence[np.ndarray]) -> tuple[float, int]:
    """The series' between-process sd of log medians (pooled over versions) and its df."""
    ss = sum(float(((x - x.mean()) ** 2).sum()) for x in logs if x.size >= 2)
    df = sum(int(x.size) - 1 for x in logs if x.size >= 2)
    return (math.sqrt(ss / df) if df else math.nan), df


def max_split_z2(means: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """max over splits of (mean_left - mean_right)^2 / (1/K_left + 1/K_right), sigma = 1; means
    has one row per series (or is one series)."""
    means = np.atleast_2d(means)
    k = np.asarray(counts, dtype=float)
    ck = np.cumsum(k)[:-1]
    total = k.sum()
    ckm = np.cumsum(means * k, axis=1)[:, :-1]
    left = ckm / ck
    right = ((means * k).sum(axis=1, keepdims=True) - ckm) / (total - ck)
    return ((left - right) ** 2 / (1.0 / ck + 1.0 / (total - ck))).max(axis=1)


@lru_cache(maxsize=256)
def penalty(counts: tuple, df: int, alpha: float) -> float:
    """The (1 - alpha) quantile of max z^2 of a flat series with these process counts per version,
    sigma estimated on `df` degrees of freedom (Monte Carlo, fixed seed)."""
    k = np.asarray(counts, dtype=float)
    rng = np.random.default_rng(SIM_SEED)
    means = rng.standard_normal((N_SIM, k.size)) / np.sqrt(k)
    scale = rng.chisquare(df, N_SIM) / df  # sigma_hat^2 / sigma^2
    return float(np.quantile(max_split_z2(means, k) / scale, 1.0 - alpha))


@lru_cache(maxsize=256)
def step_critical(counts: tuple, df: int, level: float) -> float:
    """The `level` quantile of max |z| over every pair of adjacent segments [a, b), [b, c) of a
    flat series with these process counts per version (z: the difference of the two segments'
    process-weighted means over its standard error, sigma estimated on `df` degrees of freedom;
    Monte Carlo, fixed seed): the critical value of intervals simultaneous over every step a
    segmentation could report."""
    k = np.asarray(counts, dtype=float)
    n = k.size
    rng = np.random.default_rng(SIM_SEED + 1)
    means = rng.standard_normal((N_SIM, n)) / np.sqrt(k)
    scale = np.sqrt(rng.chisquare(df, N_SIM) / df)
    best = np.zeros(N_SIM)
    ck = np.concatenate([[0.0], np.cumsum(k)])
    ckm = np.concatenate([np.zeros((N_SIM, 1)), np.cumsum(means * k, axis=1)], axis=1)
    for a in range(n - 1):
        for b in range(a + 1, n):
            ka = ck[b] - ck[a]
            left = (ckm[:, b] - ckm[:, a]) / ka
            kc = ck[b + 1:] - ck[b]  # every c > b at once
            right = (ckm[:, b + 1:] - ckm[:, [b]]) / kc
            z = np.abs(right - left[:, None]) / np.sqrt(1.0 / ka + 1.0 / kc)
            np.maximum(best, z.max(axis=1), out=best)
    return float(np.quantile(best / scale, level))


def segment(logs: Sequence[Sequence[float]], alpha: float = 0.05, level: float = 0.95) -> dict:
    """Change points of one series: logs[i] = the process log medians of version i (in version
    order). Returns {"change_points": [{"index", "ratio", "ratio_ci_low", "ratio_ci_high",
    "z2", "before_level_s", "after_level_s"}...], "sigma", "df", "penalty", "reason"}; index i means
    the level changed between version i-1 and version i. `reason` says why a series is not
    segmented (fewer than 3 versions, no spread to estimate sigma from), else None."""
    arrays = [np.asarray(x, dtype=float) for x in logs]
    if any(x.size == 0 for x in arrays):
        raise ValueError("every version of a series needs at least one process")
    out = {"change_points": [], "sigma": math.nan, "df": 0, "penalty": math.nan, "reason": None}
    if len(arrays) < 3:
        out["reason"] = "fewer than 3 versions"
        return out
    sigma, df = pooled_sigma(arrays)
    out.update(sigma=sigma, df=df)
    if df < 2 or not sigma > 0:
        out["reason"] = "too few processes to estimate the spread"
        return out
    counts = tuple(int(x.size) for x in arrays)
    pen = penalty(counts, df, float(alpha))
    out["penalty"] = pen
    m = np.array([x.mean() for x in arrays])
    k = np.array(counts, dtype=float)
    algo = rpt.Binseg(custom_cost=WeightedL2(sigma), min_size=1, jump=1)
    bkps = algo.fit(np.column_stack([m, k])).predict(pen=pen)[:-1]
    edges = [0, *bkps, len(arrays)]
    crit = step_critical(counts, df, float(level))
    for j, b in enumerate(bkps):
        a, c = slice(edges[j], b), slice(b, edges[j + 2])
        ka, kc = k[a].sum(), k[c].sum()
        la, lc = (k[a] * m[a]).sum() / ka, (k[c] * m[c]).sum() / kc
        se = sigma * math.sqrt(1 / ka + 1 / kc)
        d = lc - la
        out["change_points"].append({
            "index": int(b), "ratio": math.exp(d), "ratio_ci_low": math.exp(d - crit * se),
            "ratio_ci_high": math.exp(d + crit * se), "z2": (d / se) ** 2,
            "before_level_s": math.exp(la), "after_level_s": math.exp(lc)})
    return out
