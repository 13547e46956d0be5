"""Spikes: the tail of a cell's samples, from the kept samples of its ok processes.

The source study's author says that "in TF2, CPU prediction times can involve periodic spikes";
a median hides them. Each sample is set against the median of its own process (a process that is
slower throughout is the between-process spread, not a spike), the ratios of all of the cell's
ok processes pooled:

- p95_over_median, p99_over_median, max_over_median: the 95th and 99th percentiles (linear
  interpolation) and the largest of those ratios;
- spikes: how many samples took more than `spike_factor` times their process's median
  (config `spike_factor`), and spike_factor itself, so the count says what it counts.
"""
from collections.abc import Sequence

import numpy as np

COLUMNS = ["p95_over_median", "p99_over_median", "max_over_median", "spikes", "spike_factor"]


def tail_figures(processes: Sequence[Sequence[float]], spike_factor: float) -> dict:
    """The spike columns of one cell from its ok processes' samples (seconds). Processes without
    samples or with a zero median are left out; with none left every figure is None."""
    ratios = []
    for samples in processes:
        values = np.asarray(samples, dtype=float)
        if values.size == 0:
            continue
        median = float(np.median(values))
        if median > 0:
            ratios.append(values / median)
    if not ratios:
        return {c: None for c in COLUMNS} | {"spike_factor": spike_factor}
    pooled = np.concatenate(ratios)
    return {
        "p95_over_median": float(np.percentile(pooled, 95)),
        "p99_over_median": float(np.percentile(pooled, 99)),
        "max_over_median": float(pooled.max()),
        "spikes": int((pooled > spike_factor).sum()),
        "spike_factor": float(spike_factor),
    }
