"""Comparisons between cells, shared by the tables and the report (driver side: Python 3.11+).

Two readings of every pair of cells, side by side:
- the source study's `%` (`seed_pct`), so its tables can be read next to ours;
- a ratio of medians with a bootstrap CI and a significance verdict (`compare`), because a 5 %
  difference between two noisy cells may be luck, which the seed's single means could not tell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sstats

# scripts/ is on sys.path wherever this module is importable at all (Snakemake's script preamble
# adds the script's folder; tests/conftest.py adds it for pytest), so the package imports plainly.
from tfspeed import stats as tstats

# Below this many samples on a side, neither the bootstrap nor Mann-Whitney means anything.
MIN_SAMPLES = 3
# See `compare`: both tests at this level, a mild guard against the many comparisons of a report.
SIGNIFICANCE_P = 0.01
# Bootstrap index matrices are drawn in chunks of about this many entries (32 MB of int64).
_BOOT_CHUNK = 4_000_000


def seed_pct(left_s: float, right_s: float) -> float:
    """The source study's `%` for two times, left (first-named) side vs right.

    The seed: "% computed as (1 - longer_time / shorter_time)*100; rationale: we're interested by
    what factor one is faster than the other", with the sign "TF2 vs TF1: + if TF2 is faster;
    GvE (Graph vs. Eager): + if Graph is faster". Taken literally, 1 - longer/shorter is never
    positive; the seed uses its magnitude, (longer/shorter - 1) * 100, and puts the sign on it:
    + when the left side is faster (shorter time), - when it is slower, 0 when equal.
    So left 1 s vs right 2 s gives +100.0 and left 3 s vs right 2 s gives -50.0.
    """
    left_s, right_s = float(left_s), float(right_s)
    if not (left_s > 0.0 and right_s > 0.0 and math.isfinite(left_s) and math.isfinite(right_s)):
        raise ValueError(f"times must be positive and finite, got {left_s!r} and {right_s!r}")
    if left_s == right_s:
        return 0.0
    magnitude = (max(left_s, right_s) / min(left_s, right_s) - 1.0) * 100.0
    return magnitude if left_s < right_s else -magnitude


def _positive_samples(samples: Sequence[float], side: str) -> np.ndarray:
    x = np.asarray(samples, dtype=float).ravel()
    if x.size == 0:
        raise ValueError(f"no {side} samples")
    if not (np.all(np.isfinite(x)) and np.all(x > 0.0)):
        raise ValueError(f"{side} samples must be positive, finite times")
    return x


def _bootstrap_medians(x: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    out = np.empty(n_boot)
    chunk = max(1, _BOOT_CHUNK // x.size)
    for start in range(0, n_boot, chunk):
        m = min(chunk, n_boot - start)
        out[start:start + m] = np.median(x[rng.integers(0, x.size, size=(m, x.size))], axis=1)
    return out


def compare(left_samples: Sequence[float], right_samples: Sequence[float], level: float = 0.95,
            n_boot: int = 2000, seed: int = 0) -> dict:
    """Compare two cells' per-call times (seconds); "left" is the first-named side of `seed_pct`.

    Keys: left_median_s, right_median_s, n_left, n_right, pct (seed_pct of the medians), ratio
    (left median / right median: < 1 means left is faster), ratio_ci_low, ratio_ci_high, mw_p,
    significant, verdict ("left faster", "right faster" or "not significant").

    The ratio CI is a percentile bootstrap of the ratio of medians, each side resampled on its own
    (the two cells ran in separate processes, so there is no pairing), with a fixed seed so that
    reports are reproducible. `significant` needs both the CI to exclude 1 AND a two-sided
    Mann-Whitney U p < 0.01: the bootstrap speaks to the quantity we report (the medians) but its
    percentile interval is too narrow for small or heavily tied samples; Mann-Whitney is exact
    about ranks but also reacts to a change of shape (a longer tail) with equal medians. Requiring
    both keeps a verdict for differences that are real in the reported sense; 0.01 rather than
    0.05 because a report makes dozens of comparisons (asv uses 0.002 plus a 1.1x factor).

    With fewer than 3 samples on a side, the CI and p are None and nothing is significant.
    """
    x = _positive_samples(left_samples, "left")
    y = _positive_samples(right_samples, "right")
    level = float(level)
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be in (0, 1), not {level!r}")
    left_median, right_median = float(np.median(x)), float(np.median(y))
    ratio = left_median / right_median
    result = {
        "left_median_s": left_median,
        "right_median_s": right_median,
        "n_left": int(x.size),
        "n_right": int(y.size),
        "pct": seed_pct(left_median, right_median),
        "ratio": ratio,
        "ratio_ci_low": None,
        "ratio_ci_high": None,
        "mw_p": None,
        "significant": False,
        "verdict": "not significant",
    }
    if x.size < MIN_SAMPLES or y.size < MIN_SAMPLES:
        return result

    rng = np.random.default_rng(seed)
    ratios = _bootstrap_medians(x, n_boot, rng) / _bootstrap_medians(y, n_boot, rng)
    alpha = 1.0 - level
    lo, hi = np.percentile(ratios, [100.0 * alpha / 2.0, 100.0 * (1.0 - alpha / 2.0)])
    mw_p = float(sstats.mannwhitneyu(x, y, alternative="two-sided").pvalue)
    if math.isnan(mw_p):  # all values tied: no evidence of a difference
        mw_p = 1.0
    significant = (lo > 1.0 or hi < 1.0) and mw_p < SIGNIFICANCE_P
    result.update(
        ratio_ci_low=float(lo),
        ratio_ci_high=float(hi),
        mw_p=mw_p,
        significant=bool(significant),
        verdict=("left faster" if ratio < 1.0 else "right faster") if significant
        else "not significant",
    )
    return result


def _median_ci(x: np.ndarray, level: float) -> tuple[float, float, str]:
    """scipy's sign-test interval where scipy has it and n suffices, else tfspeed.stats' own
    (the same order-statistic method, so the two agree; see tests)."""
    quantile_test = getattr(sstats, "quantile_test", None)
    if quantile_test is not None:
        ci = quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(level)
        if math.isfinite(ci.low) and math.isfinite(ci.high):
            return float(ci.low), float(ci.high), "scipy.stats.quantile_test"
    lo, hi = tstats.median_ci(x, level)
    return lo, hi, "order statistics (tfspeed.stats)"


def pooled_summary(list_of_sample_lists: Sequence[Sequence[float]], level: float = 0.95,
                   noisy_threshold: float = 0.10) -> dict:
    """Pool the repeats of one cell (each a separate process) into one summary.

    Returns tfspeed.stats.summarize over all samples, concatenated in run order (so drift spans
    the whole cell, e.g. a GPU heating over all repeats), with the median CI from
    scipy.stats.quantile_test where available (`ci_method` says which), plus:
    n_repeats, per_process_medians, repeat_drift (each repeat's own drift flag) and
    between_rel_spread = (max - min) / median of the per-process medians.

    The pooled CI treats all samples as one i.i.d. sample, which understates the uncertainty when
    processes differ (allocator state, clocks, placement); `between_rel_spread` shows by how much
    they do, and a spread well beyond `ci_rel_halfwidth` means the CI is too optimistic.
    """
    repeats = [np.asarray(r, dtype=float).ravel() for r in list_of_sample_lists]
    if not repeats:
        raise ValueError("no repeats")
    if any(r.size == 0 for r in repeats):
        raise ValueError("a repeat has no samples")
    pooled = np.concatenate(repeats)
    summary = tstats.summarize(pooled, level=level, noisy_threshold=noisy_threshold)
    lo, hi, method = _median_ci(pooled, level)
    median = summary["median_s"]
    per_process = [float(np.median(r)) for r in repeats]
    centre = float(np.median(per_process))
    summary.update(
        ci_low_s=lo,
        ci_high_s=hi,
        ci_rel_halfwidth=(hi - lo) / 2.0 / median if median > 0.0 else None,
        ci_method=method,
        n_repeats=len(repeats),
        per_process_medians=per_process,
        repeat_drift=[bool(tstats.summarize(r, level, noisy_threshold)["drift"])
                      for r in repeats],
        between_rel_spread=(max(per_process) - min(per_process)) / centre
        if centre > 0.0 else None,
    )
    return summary
