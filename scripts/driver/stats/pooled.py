"""The source study's `%` and the descriptive pooling of one cell's processes (driver side).

Verdicts are not made here: a comparison's CI and p-value come from the processes
(driver/stats/verdicts.py), never from the samples of one process.
"""

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats as sstats

# scripts/ is on sys.path wherever this module is importable at all (Snakemake's script preamble
# adds the script's folder; tests/conftest.py adds it for pytest), so the package imports plainly.
from tfspeed import stats as tstats


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
