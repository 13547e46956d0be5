"""Summary statistics of one cell's per-call times, computed inside the benchmark process.

This module runs in every cell environment, from Python 3.7 with numpy 1.16 (TF 1.14) up to current
releases, so it uses the standard library and long-standing numpy calls only: no scipy, no
`math.comb`, no `np.random.default_rng`, no newer `np.percentile` keywords.

Why these statistics (see METHOD.md): the source study printed a mean, which hides warm-up, drift
and noise. We report the median with a distribution-free confidence interval (per-call times are
skewed, with rare long stalls, so no normal-theory CI fits them), the IQR as a robust spread, and a
trend test over the iteration index for the "rising stem plot" of a throttling GPU.
"""
# Postponed annotations let Python 3.7 parse the modern `tuple[...]` / `X | None` hints unevaluated.
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np

# Above this many samples the O(n^2) Mann-Kendall sign sum is run on block medians instead (see
# `trend_test`); 5000 samples are 12.5 M pairs, a few tenths of a second in numpy.
TREND_MAX_POINTS = 5000
# Rows of the pairwise sign matrix built at once: memory ~256 x n doubles (10 MB at n=5000).
_TREND_BLOCK_ROWS = 256
# Drift needs a statistically significant trend AND a practically large one; see `summarize`.
DRIFT_ALPHA = 0.01
DRIFT_MIN_CHANGE = 0.05
# The normal approximation to the Mann-Kendall statistic is usually taken as adequate from n=10.
TREND_MIN_N = 10


def _as_samples(samples: Sequence[float]) -> np.ndarray:
    x = np.asarray(samples, dtype=float).ravel()
    if x.size == 0:
        raise ValueError("no samples")
    if not np.all(np.isfinite(x)):
        raise ValueError("samples must be finite (a NaN or inf time means a broken measurement)")
    return x


def _check_level(level: float) -> float:
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), not {level!r}")
    return level


@functools.lru_cache(maxsize=4096)
def median_ci_ranks(n: int, level: float = 0.95) -> tuple[int, int, float]:
    """1-based ranks (lo, hi) of the order statistics that bound the median CI, and its coverage.

    The interval [x_(k), x_(n-k+1)] covers the population median with probability
    1 - 2 * P(X <= k - 1), X ~ Binomial(n, 1/2), for any continuous distribution. We take the
    largest k whose coverage is still >= `level` (so the interval is conservative: its true
    coverage is the returned one, at least `level`). Example, n=10 at 95 %: P(X <= 1) = 11/1024, so
    k=2 covers 1 - 22/1024 = 0.9785, while k=3 would cover only 1 - 112/1024 = 0.8906.

    If even (min, max) covers less than `level` (coverage 1 - 2^(1-n): n <= 5 at 95 %), the ranks
    are (1, n) and the returned coverage is below `level`: callers must treat that as "too few".

    The binomial CDF is summed exactly from log-gamma terms (Python 3.7 has no math.comb) and only
    over the O(sqrt(n)) terms that matter: by Hoeffding's bound P(X <= n/2 - t) <= exp(-2 t^2 / n),
    so terms below n/2 - t with t = sqrt(n/2 * ln(2e9/alpha)) add less than alpha * 1e-9 in all.
    """
    n = int(n)
    if n < 1:
        raise ValueError("need at least one sample")
    level = _check_level(level)
    alpha = 1.0 - level
    log_norm = math.lgamma(n + 1) - n * math.log(2.0)
    start = max(0, int(n / 2.0 - math.sqrt(n / 2.0 * math.log(2e9 / alpha))))
    # A relative tolerance so that exact dyadic boundaries (e.g. n=3 at 75 %: 2 * 1/8 == 0.25) are
    # accepted despite the rounding of the log-gamma terms.
    limit = alpha * (1.0 + 1e-9)
    cdf, k, covered = 0.0, 0, 0.0
    for j in range(start, n // 2 + 1):
        cdf += math.exp(log_norm - math.lgamma(j + 1) - math.lgamma(n - j + 1))
        if 2.0 * cdf > limit:
            break
        k = j + 1
        covered = 1.0 - 2.0 * cdf
    if k == 0:
        return 1, n, max(0.0, 1.0 - 2.0 ** (1 - n))
    return k, n - k + 1, covered


def median_ci(samples: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Distribution-free confidence interval of the median from order statistics.

    The ranks come from the exact Binomial(n, 1/2) distribution (`median_ci_ranks`); this is the
    classical sign-test interval (W. J. Conover, Practical Nonparametric Statistics, 3rd ed., 1999,
    sec. 3.2, "confidence interval for a quantile"; also scipy.stats.quantile_test's interval).
    It assumes independent samples from one continuous distribution and nothing about its shape.

    For n too small for `level` (n <= 5 at 95 %) it returns (min, max), whose coverage
    1 - 2^(1-n) is then below `level`; `summarize` still reports it, with that caveat.
    """
    x = np.sort(_as_samples(samples))
    lo, hi, _ = median_ci_ranks(x.size, level)
    return float(x[lo - 1]), float(x[hi - 1])


def trend_test(samples: Sequence[float]) -> tuple[float | None, float | None]:
    """Mann-Kendall test of a monotonic trend over the iteration index: (tau, two-sided p).

    S = sum over i < j of sign(x_j - x_i); under "no trend" (i.i.d. samples) S is approximately
    normal with variance [n(n-1)(2n+5) - sum_t t(t-1)(2t+5)] / 18, the sum running over groups of t
    tied values (timer resolution makes ties common), and z uses the usual continuity correction
    (R. O. Gilbert, Statistical Methods for Environmental Pollution Monitoring, 1987, ch. 16).
    tau is Kendall's tau-b of the samples against their index (equal to scipy.stats.kendalltau).

    Above TREND_MAX_POINTS samples the series is cut into that many consecutive blocks and the
    test runs on the block medians: a drift over the run survives blocking, the O(n^2) cost does
    not, and medians keep one stall from dominating a block.

    Returns (None, None) where undefined: fewer than TREND_MIN_N points, or all values equal.
    """
    x = _as_samples(samples)
    if x.size > TREND_MAX_POINTS:
        per_block = -(-x.size // TREND_MAX_POINTS)  # ceiling division
        n_blocks = -(-x.size // per_block)
        padded = np.full(n_blocks * per_block, np.nan)
        padded[:x.size] = x
        x = np.nanmedian(padded.reshape(n_blocks, per_block), axis=1)
    n = x.size
    if n < TREND_MIN_N:
        return None, None
    s = 0.0
    for a in range(0, n - 1, _TREND_BLOCK_ROWS):
        rows = x[a:a + _TREND_BLOCK_ROWS]
        # Column c of this block is sample a+1+c and row r is sample a+r: the pair is ordered
        # (i < j) exactly when c >= r, i.e. on and above the diagonal.
        signs = np.sign(x[None, a + 1:] - rows[:, None])
        s += float(np.triu(signs).sum())
    _, counts = np.unique(x, return_counts=True)
    t = counts[counts > 1].astype(float)
    var = (n * (n - 1.0) * (2.0 * n + 5.0) - float(np.sum(t * (t - 1.0) * (2.0 * t + 5.0)))) / 18.0
    pairs = n * (n - 1.0) / 2.0
    tied_pairs = float(np.sum(t * (t - 1.0) / 2.0))
    if var <= 0.0 or tied_pairs >= pairs:
        return None, None
    tau = s / math.sqrt(pairs * (pairs - tied_pairs))
    z = (s - math.copysign(1.0, s)) / math.sqrt(var) if s != 0.0 else 0.0
    p = math.erfc(abs(z) / math.sqrt(2.0))
    return float(tau), float(min(1.0, p))


def summarize(samples: Sequence[float], level: float = 0.95,
              noisy_threshold: float = 0.10) -> dict[str, object]:
    """Summary of one run's per-call times (seconds), as plain JSON-ready Python values.

    Keys: n, median_s, mean_s, sd_s, iqr_s, min_s, max_s, ci_low_s, ci_high_s, ci_level,
    ci_rel_halfwidth, noisy, drift, drift_p, drift_tau, drift_ratio. Values that are undefined for
    these samples are None (sd for n=1, the trend for n < 10, ratios over a zero median), never NaN.

    noisy: IQR / median > `noisy_threshold` (torch.utils.benchmark warns at 10 %, pyperf at sd >
    10 % of the mean).

    drift: a Mann-Kendall trend with p < 0.01 AND a last-quarter / first-quarter median ratio off
    by more than 5 %. Both, because each alone misleads on timing series: with thousands of samples
    the test finds a 0.3 % creep "significant", which no reader cares about; and the ratio alone
    moves by more than 5 % from a few stalls in a short, noisy run. Successive timings are also
    autocorrelated (clocks, caches, the GPU's boost state), which makes the test's p-values too
    small, hence the strict 0.01 and the effect-size gate. `drift_ratio` > 1 means slowing down
    (the source study's overheating GPU); < 1 usually means warm-up was not over.
    """
    x = _as_samples(samples)
    level = _check_level(level)
    n = int(x.size)
    xs = np.sort(x)
    median = float(np.median(xs))
    q25, q75 = np.percentile(xs, [25.0, 75.0])
    iqr = float(q75 - q25)
    lo_rank, hi_rank, _ = median_ci_ranks(n, level)
    ci_low, ci_high = float(xs[lo_rank - 1]), float(xs[hi_rank - 1])

    quarter = n // 4
    drift_ratio = None
    if quarter >= 1:
        first = float(np.median(x[:quarter]))
        if first > 0.0:
            drift_ratio = float(np.median(x[-quarter:])) / first
    tau, p = trend_test(x)
    drift = (p is not None and p < DRIFT_ALPHA and drift_ratio is not None
             and abs(drift_ratio - 1.0) > DRIFT_MIN_CHANGE)

    return {
        "n": n,
        "median_s": median,
        "mean_s": float(np.mean(x)),
        "sd_s": float(np.std(x, ddof=1)) if n > 1 else None,
        "iqr_s": iqr,
        "min_s": float(xs[0]),
        "max_s": float(xs[-1]),
        "ci_low_s": ci_low,
        "ci_high_s": ci_high,
        "ci_level": level,
        "ci_rel_halfwidth": (ci_high - ci_low) / 2.0 / median if median > 0.0 else None,
        "noisy": bool(iqr / median > noisy_threshold) if median > 0.0 else bool(iqr > 0.0),
        "drift": bool(drift),
        "drift_p": p,
        "drift_tau": tau,
        "drift_ratio": drift_ratio,
    }


def adaptive_done(samples: Sequence[float], target_rel: float = 0.01, level: float = 0.95,
                  min_samples: int = 10) -> bool:
    """The adaptive stopping rule: at least `min_samples` samples, enough of them for a real CI at
    `level`, and a median CI half-width within `target_rel` of the median.

    O(n): np.partition places just the four order statistics needed; the ranks are cached per n.
    The caller decides how often to ask (timing.Rule.next_check asks every ~10 % more samples,
    which keeps the total cost O(n log n) over a run).
    """
    n = len(samples)
    if n < max(1, int(min_samples)):
        return False
    lo, hi, coverage = median_ci_ranks(n, level)
    if coverage < level:
        return False
    mid_lo, mid_hi = (n - 1) // 2, n // 2
    x = np.partition(np.asarray(samples, dtype=float), sorted({lo - 1, hi - 1, mid_lo, mid_hi}))
    median = 0.5 * (x[mid_lo] + x[mid_hi])
    if not median > 0.0:  # also False for NaN
        return False
    return bool((x[hi - 1] - x[lo - 1]) / 2.0 / median <= target_rel)
