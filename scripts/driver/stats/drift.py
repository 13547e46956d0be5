"""Drift within one process, with a test that allows for autocorrelation.

Successive step times are autocorrelated (clocks, caches, the allocator),
which makes a Mann-Kendall test on the raw samples call trends that are not there. The samples are
cut into `blocks` consecutive blocks and the test runs on the block medians: blocks hundreds of
samples long are far longer than the correlation, so the block medians are close to independent,
and a median per block also ignores single spikes. Drift = Kendall's tau of block median against
block index with p < 0.01 AND a last-quarter / first-quarter change above 5 % (an effect size, so
that a 0.3 % creep is not news). A falling trend usually means warm-up was not over; a rising one
is the seed's "rising stem plot" (a heating GPU, throttling)."""
import math

import numpy as np
from scipy import stats as sps

ALPHA, MIN_CHANGE, BLOCKS, MIN_BLOCKS = 0.01, 0.05, 16, 8


def block_trend(samples, blocks: int = BLOCKS) -> dict:
    """{"drift": bool, "drift_p": p or None, "drift_ratio": last/first quarter or None}."""
    x = np.asarray(samples, dtype=float)
    blocks = min(blocks, x.size // 2)
    if blocks < MIN_BLOCKS:
        return {"drift": False, "drift_p": None, "drift_ratio": None}
    per = x.size // blocks
    med = np.median(x[-per * blocks:].reshape(blocks, per), axis=1)
    quarter = max(1, blocks // 4)
    first = float(np.median(med[:quarter]))
    ratio = float(np.median(med[-quarter:])) / first if first > 0 else None
    p = float(sps.kendalltau(np.arange(blocks), med).pvalue)
    if math.isnan(p):  # all block medians equal: no trend
        p = 1.0
    drift = p < ALPHA and ratio is not None and abs(ratio - 1.0) > MIN_CHANGE
    return {"drift": bool(drift), "drift_p": p, "drift_ratio": ratio}
