"""The sampling loop: warm-up until stable, then timed calls under a stopping rule.

Standard library + numpy (through stats) only. Every call is timed on its own with
time.perf_counter (monotonic, highest resolution) and every sample is kept. The first call is
timed apart by the runner (it builds or traces the graph); then `warm_up` runs calls until the step
time stops falling; then `sample_calls` takes the samples.

A step is one call of the API a user writes, whatever the input: one `train_on_batch(...)`, one
whole one-step `fit(...)` (numpy arrays or a tf.data dataset alike), one custom-loop step, one
matmul. The step must block until the work is done (it returns a host value).

One cell's call covers several training steps: `fit_epoch`, one `fit()` over an epoch of
`steps_per_call` steps, as the seed timed tf.data. Its samples are call times over
`steps_per_call` (the runner divides), and its rule counts steps, not calls: `Rule._per_call`.
"""
import math
import time

from . import stats

clock = time.perf_counter

# A rule's keys and nothing else: the workflow passes every value (defaults live in the config
# schema only), so a missing key is a bug in the caller, reported by name.
RULE_KEYS = ("kind", "iterations", "target_rel", "min_samples", "max_samples", "budget_s",
             "level", "warmup_rel", "warmup_block_s", "warmup_max_s", "min_samples_max_s")
# Given only for cells whose one call covers several steps (api fit_epoch); 1 when absent.
OPTIONAL_KEYS = ("steps_per_call",)


class Rule(object):
    """A stopping rule from config: `fixed` (the seed's counts) or `adaptive` (precision or
    budget), with the warm-up rule and the cap that lets `min_samples` give way."""

    def __init__(self, **values):
        missing = [k for k in RULE_KEYS if k not in values]
        unknown = [k for k in values if k not in RULE_KEYS + OPTIONAL_KEYS]
        if missing or unknown:
            raise ValueError("stop rule: missing %s, unknown %s" % (missing, unknown))
        if values["kind"] not in ("fixed", "adaptive"):
            raise ValueError("stop rule must be 'fixed' or 'adaptive', not %r" % values["kind"])
        self.kind = values["kind"]
        self.iterations = int(values["iterations"])
        self.target_rel, self.level = float(values["target_rel"]), float(values["level"])
        self.min_samples, self.max_samples = int(values["min_samples"]), int(values["max_samples"])
        self.budget_s = float(values["budget_s"])
        self.warmup_rel, self.warmup_block_s = float(values["warmup_rel"]), float(
            values["warmup_block_s"])
        self.warmup_max_s = float(values["warmup_max_s"])
        self.min_samples_max_s = float(values["min_samples_max_s"])
        self.steps_per_call = int(values.get("steps_per_call", 1))
        if self.steps_per_call < 1:
            raise ValueError("stop rule: steps_per_call must be >= 1, not %r" % self.steps_per_call)
        # the fewest calls in a warm-up block (the first block, and the block-size floor)
        self.min_block_calls = 3
        self._per_call()

    def _per_call(self):
        """Count calls, not steps, where one call covers `steps_per_call` steps: the fixed rule's
        `iterations` steps become ceil(iterations / steps) calls (the seed's one fit call over
        `iterations` steps for tf.data), `min_samples` steps become max(3, ceil(min_samples /
        steps)) calls, and a warm-up block may be a single call (a call is steps of warm-up by
        itself). With one step per call nothing changes. The configured counts are kept as
        `iterations_steps` and `min_samples_steps` in the record."""
        steps = self.steps_per_call
        self.iterations_steps, self.min_samples_steps = self.iterations, self.min_samples
        if steps == 1:
            return
        self.iterations = int(math.ceil(self.iterations / float(steps)))
        self.min_samples = max(3, int(math.ceil(self.min_samples / float(steps))))
        self.max_samples = max(self.min_samples, self.max_samples)
        self.min_block_calls = max(1, int(math.ceil(3.0 / steps)))

    def as_dict(self):
        return dict(self.__dict__)

    def next_check(self, n):
        """When to look at the CI next: every ~10 % more samples, so checking costs O(n log n)."""
        return max(self.min_samples, n + max(5, n // 10))


def _median(values):
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])


def warm_up(step, rule, first_call_s):
    """Run blocks of calls until the step time stops falling; return a dict of what happened.

    The rule (stated in docs/METHOD.md): blocks of b calls, b chosen so a block lasts about
    `warmup_block_s` (at least 3 calls; 1 where a call covers 3 steps or more) from the first
    block's median call; warm-up ends at the first block whose median is not lower than the
    previous block's by more than `warmup_rel` ("stable"), or when `warmup_max_s` is spent
    ("cap"). Block medians are kept, so a reader can see the descent.
    """
    start = clock()
    guess = max(first_call_s, 1e-6)
    medians, calls = [], 0
    block = None
    while True:
        times = []
        for _ in range(block or rule.min_block_calls):
            t = clock()
            step()
            times.append(clock() - t)
        calls += len(times)
        if block is None:  # size blocks from steady calls, not from the first call's trace
            guess = _median(times)
            block = max(rule.min_block_calls,
                        min(1000, int(math.ceil(rule.warmup_block_s / max(guess, 1e-6)))))
        medians.append(_median(times))
        elapsed = clock() - start
        if len(medians) >= 2 and medians[-1] >= medians[-2] * (1.0 - rule.warmup_rel):
            stopped_by = "stable"
            break
        if elapsed >= rule.warmup_max_s:
            stopped_by = "cap"
            break
    return {"warmup_calls": calls, "warmup_s": clock() - start, "warmup_stopped_by": stopped_by,
            "warmup_block_medians_s": medians}


def sample_calls(step, rule):
    """Time `step()` repeatedly under `rule`; return (samples, stopped_by, wall_s, too_few).

    The loop body is two clock reads and a list append: its overhead is measured by
    `make selfbench`. `min_samples` holds over the time budget: sampling goes on past `budget_s`
    until it is met, and gives way only at `min_samples_max_s`, which the record then says
    (`too_few` is a reason string, else None).
    """
    samples = []
    append = samples.append
    start = clock()
    if rule.kind == "fixed":
        for _ in range(rule.iterations):
            t = clock()
            step()
            append(clock() - t)
        return samples, "count", clock() - start, None
    deadline = start + rule.budget_s
    hard_stop = start + max(rule.budget_s, rule.min_samples_max_s)
    check = rule.next_check(0)
    while True:
        t = clock()
        step()
        end = clock()
        append(end - t)
        n = len(samples)
        if n >= rule.max_samples:
            return samples, "max_samples", end - start, None
        if n >= check or end >= deadline:
            if stats.adaptive_done(samples, rule.target_rel, rule.level, rule.min_samples):
                return samples, "precision", clock() - start, None
            if end >= deadline and n >= rule.min_samples:
                return samples, "budget", end - start, None
            if end >= hard_stop:
                return samples, "min_samples_max_s", end - start, (
                    "%d samples, fewer than min_samples %d: one step takes %.3g s and "
                    "min_samples_max_s is %g s" % (n, rule.min_samples, (end - start) / n,
                                                   rule.min_samples_max_s))
            check = rule.next_check(n) if end < deadline else n + 1
