"""The sampling loop and its stopping rules. Standard library + numpy (through stats) only.

Every call is timed on its own with time.perf_counter (monotonic, highest resolution) and every
sample is kept. The first call is timed apart by the runner: it builds or traces the graph.
"""
import time

from . import stats

clock = time.perf_counter


class Rule(object):
    """A stopping rule from config: `fixed` (the seed's counts) or `adaptive` (precision or budget)."""

    def __init__(self, kind, iterations=200, target_rel=0.01, min_samples=10, max_samples=100000,
                 budget_s=30.0, level=0.95):
        if kind not in ("fixed", "adaptive"):
            raise ValueError("stop rule must be 'fixed' or 'adaptive', not %r" % kind)
        self.kind, self.iterations = kind, int(iterations)
        self.target_rel, self.min_samples = float(target_rel), int(min_samples)
        self.max_samples, self.budget_s, self.level = int(max_samples), float(budget_s), level

    def as_dict(self):
        return dict(self.__dict__)

    def next_check(self, n):
        """When to look at the CI next: every ~10 % more samples, so checking costs O(n log n) overall."""
        return max(self.min_samples, n + max(5, n // 10))


def sample_calls(step, rule):
    """Time `step()` repeatedly under `rule`; return (samples, stopped_by, wall_s).

    `step` must block until the work is done (it returns a host value). The loop body is kept to
    two clock reads and a list append: its overhead is measured by `make selfbench`.
    """
    samples = []
    append = samples.append
    start = clock()
    if rule.kind == "fixed":
        for _ in range(rule.iterations):
            t = clock()
            step()
            append(clock() - t)
        return samples, "count", clock() - start
    deadline = start + rule.budget_s
    check = rule.next_check(0)
    while True:
        t = clock()
        step()
        end = clock()
        append(end - t)
        n = len(samples)
        if n >= rule.max_samples:
            return samples, "max_samples", end - start
        if n >= check or end >= deadline:
            if stats.adaptive_done(samples, rule.target_rel, rule.level, rule.min_samples):
                return samples, "precision", clock() - start
            if end >= deadline and n >= 2:
                return samples, "budget", end - start
            check = rule.next_check(n)


def sample_stream(run_chunk, rule, chunk=50):
    """For APIs that run many steps per call (fit over tf.data): `run_chunk(k)` runs k steps and
    returns k per-step durations measured inside the framework (a batch-end callback). The set-up
    cost of each call is outside the samples; the caller records it."""
    samples = []
    start = clock()
    if rule.kind == "fixed":
        samples.extend(run_chunk(rule.iterations))
        return samples, "count", clock() - start
    deadline = start + rule.budget_s
    while True:
        samples.extend(run_chunk(chunk))
        now = clock()
        if len(samples) >= rule.max_samples:
            return samples, "max_samples", now - start
        if stats.adaptive_done(samples, rule.target_rel, rule.level, rule.min_samples):
            return samples, "precision", now - start
        if now >= deadline:
            return samples, "budget", now - start
