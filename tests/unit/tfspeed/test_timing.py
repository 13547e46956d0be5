"""The sampling loop, warm-up and stopping rules on synthetic steps (no framework), and the FLOP
formula worked out by hand."""
import random
import time
from pathlib import Path

import pytest
import yaml

from tfspeed import models, timing
from tfspeed.timing import RULE_KEYS

SCHEMA = yaml.safe_load((Path(__file__).resolve().parents[3] / "schemas" / "config.schema.yaml").read_text())
STOP_DEFAULTS = {k: v["default"] for k, v in SCHEMA["properties"]["stop"]["properties"].items()}


def rule(**over):
    """A rule with the schema's defaults (the one place defaults live) and `over` on top."""
    values = {k: v for k, v in STOP_DEFAULTS.items() if k != "rule"}
    values.update(kind="adaptive", iterations=200)
    values.update(over)
    return timing.Rule(**values)


def test_schema_defaults_cover_every_rule_key():
    assert set(STOP_DEFAULTS) - {"rule"} | {"kind"} == set(RULE_KEYS)


def test_fixed_rule_takes_exactly_its_count():
    calls = []
    samples, stopped_by, wall, too_few = timing.sample_calls(
        lambda: calls.append(1), rule(kind="fixed", iterations=37))
    assert len(samples) == len(calls) == 37 and stopped_by == "count" and too_few is None
    assert all(s >= 0 for s in samples) and wall >= sum(samples)


def test_adaptive_stops_on_precision_when_steps_are_steady():
    samples, stopped_by, _, _ = timing.sample_calls(
        lambda: sum(range(2000)), rule(target_rel=0.05, min_samples=20, budget_s=30))
    assert stopped_by == "precision" and len(samples) >= 20


def test_adaptive_stops_on_budget_when_steps_are_wild():
    rng = random.Random(0)

    def wild():
        for _ in range(int(rng.expovariate(1.0) * 20000)):
            pass

    samples, stopped_by, wall, too_few = timing.sample_calls(
        wild, rule(target_rel=1e-6, min_samples=5, budget_s=0.3))
    assert stopped_by == "budget" and 0.3 <= wall < 3 and too_few is None


def test_min_samples_holds_past_the_budget():
    """A 20 ms step with a 0.1 s budget would stop at ~5 samples; min_samples 30 wins."""
    samples, stopped_by, wall, too_few = timing.sample_calls(
        lambda: time.sleep(0.02), rule(target_rel=1e-9, min_samples=30, budget_s=0.1))
    assert len(samples) == 30 and stopped_by == "budget" and too_few is None and wall > 0.5


def test_min_samples_gives_way_at_its_cap_and_says_so():
    samples, stopped_by, _, too_few = timing.sample_calls(
        lambda: time.sleep(0.05), rule(target_rel=1e-9, min_samples=1000, budget_s=0.1,
                                       min_samples_max_s=0.5))
    assert stopped_by == "min_samples_max_s" and 5 <= len(samples) < 1000
    assert "fewer than min_samples 1000" in too_few


def test_max_samples_caps_the_run():
    samples, stopped_by, _, _ = timing.sample_calls(
        lambda: None, rule(target_rel=1e-9, min_samples=5, max_samples=100))
    assert len(samples) == 100 and stopped_by == "max_samples"


class Decaying:
    """A step that starts slow and speeds up by 30 % per 20 calls until it levels off at 2 ms,
    like a JIT or a cache warming up."""

    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1
        time.sleep(max(0.002, 0.012 * 0.7 ** (self.calls / 20.0)))


def test_warm_up_runs_until_the_step_time_stops_falling():
    step = Decaying()
    out = timing.warm_up(step, rule(warmup_block_s=0.05, warmup_rel=0.02, warmup_max_s=20),
                         first_call_s=0.012)
    assert out["warmup_stopped_by"] == "stable"
    # the decay reaches its floor after ~100 calls; warm-up must not stop long before that
    assert out["warmup_calls"] >= 80 and out["warmup_calls"] == step.calls
    medians = out["warmup_block_medians_s"]
    assert medians[0] > 2 * medians[-1]


def test_warm_up_of_a_steady_step_is_two_blocks():
    out = timing.warm_up(lambda: time.sleep(0.002), rule(warmup_block_s=0.02, warmup_rel=0.2),
                         first_call_s=0.002)
    assert out["warmup_stopped_by"] == "stable" and len(out["warmup_block_medians_s"]) == 2


def test_warm_up_stops_at_its_cap():
    out = timing.warm_up(Decaying(), rule(warmup_block_s=0.05, warmup_rel=0.0, warmup_max_s=0.2),
                         first_call_s=0.012)
    assert out["warmup_stopped_by"] == "cap" and out["warmup_s"] < 1.0


def test_unknown_or_missing_rule_keys_are_refused():
    with pytest.raises(ValueError, match="fixed.*adaptive"):
        rule(kind="sometimes")
    with pytest.raises(ValueError, match="missing.*budget_s"):
        timing.Rule(kind="fixed", iterations=3)


def test_train_flops_of_the_small_model_by_hand():
    # small on small data: batch 32, 140 steps, 30 channels.
    # Conv1D(128, 40, strides=4, padding="same"): ceil(140 / 4) = 35 output steps;
    #   forward 2 * 32 * 35 * 40 * 30 * 128 = 344,064,000
    # Dense 128 -> 64 after global average pooling: 2 * 32 * 128 * 64 = 524,288
    # Dense 64 -> 1: 2 * 32 * 64 * 1 = 4,096
    conv, dense1, dense2 = 344_064_000, 524_288, 4_096
    assert models.forward_flops("small", "small") == conv + dense1 + dense2
    # training: forward + weight gradients (1x forward) + input gradients (1x forward) for every
    # layer but the first, whose input is the data
    assert models.train_flops("small", "small") == 3 * (conv + dense1 + dense2) - conv
    # about 1.5x less than 3x forward: what the old formula over-counted
    assert 3 * models.forward_flops("small", "small") / models.train_flops("small", "small") > 1.49


def test_train_flops_of_the_mlp_by_hand():
    # seed 002: 1000 samples, 10 -> 50 -> 1
    d1, d2 = 2 * 1000 * 10 * 50, 2 * 1000 * 50 * 1
    assert models.train_flops("mlp", "mlp") == 3 * (d1 + d2) - d1


def test_a_call_of_several_steps_counts_steps_not_calls():
    """fit_epoch: one call is an epoch of steps_per_call steps. The fixed rule's iterations and
    min_samples are steps, so they become calls; one step per call changes nothing."""
    one = rule(kind="fixed", iterations=200, min_samples=30)
    assert (one.iterations, one.min_samples, one.min_block_calls) == (200, 30, 3)
    epoch = rule(kind="fixed", iterations=200, min_samples=30, steps_per_call=200)
    assert (epoch.iterations, epoch.min_samples, epoch.min_block_calls) == (1, 3, 1)
    assert (epoch.iterations_steps, epoch.min_samples_steps) == (200, 30)
    assert epoch.as_dict()["steps_per_call"] == 200
    six = rule(kind="fixed", iterations=12, min_samples=30, steps_per_call=6)
    assert (six.iterations, six.min_samples, six.min_block_calls) == (2, 5, 1)
    two = rule(steps_per_call=2)
    assert (two.min_samples, two.min_block_calls) == (15, 2)
    samples, stopped_by, _, _ = timing.sample_calls(lambda: None, six)
    assert len(samples) == 2 and stopped_by == "count"
    with pytest.raises(ValueError, match="steps_per_call"):
        rule(steps_per_call=0)
    with pytest.raises(ValueError, match="unknown.*steps"):
        rule(steps=3)


def test_warm_up_blocks_of_long_calls_are_single_calls():
    """A call that is an epoch warms up by itself: blocks of one call, so a steady epoch call
    warms up in two calls, where one-step calls take at least three a block."""
    calls = []

    def epoch():
        calls.append(1)
        time.sleep(0.03)

    out = timing.warm_up(epoch, rule(warmup_block_s=0.01, warmup_rel=0.5, steps_per_call=50),
                         first_call_s=0.03)
    assert out["warmup_stopped_by"] == "stable" and out["warmup_calls"] == len(calls) == 2
    calls.clear()
    out = timing.warm_up(epoch, rule(warmup_block_s=0.01, warmup_rel=0.5), first_call_s=0.03)
    assert out["warmup_calls"] == len(calls) == 6
