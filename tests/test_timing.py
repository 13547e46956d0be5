"""The sampling loop's stopping rules, on synthetic steps (no framework)."""
import itertools
import random

import pytest

from tfspeed import timing


def test_fixed_rule_takes_exactly_its_count():
    calls = []
    samples, stopped_by, wall = timing.sample_calls(lambda: calls.append(1), timing.Rule(
        "fixed", iterations=37))
    assert len(samples) == len(calls) == 37 and stopped_by == "count"
    assert all(s >= 0 for s in samples) and wall >= sum(samples)


def test_adaptive_stops_on_precision_when_steps_are_steady():
    rule = timing.Rule("adaptive", target_rel=0.05, min_samples=20, budget_s=30)
    samples, stopped_by, _ = timing.sample_calls(lambda: sum(range(2000)), rule)
    assert stopped_by == "precision" and len(samples) >= 20


def test_adaptive_stops_on_budget_when_steps_are_wild():
    rng = random.Random(0)

    def wild():
        for _ in range(int(rng.expovariate(1.0) * 20000)):
            pass

    rule = timing.Rule("adaptive", target_rel=1e-6, min_samples=5, budget_s=0.3)
    samples, stopped_by, wall = timing.sample_calls(wild, rule)
    assert stopped_by == "budget" and 0.3 <= wall < 3


def test_adaptive_never_stops_below_min_samples():
    rule = timing.Rule("adaptive", target_rel=0.5, min_samples=50, budget_s=30)
    samples, stopped_by, _ = timing.sample_calls(lambda: None, rule)
    assert len(samples) >= 50 and stopped_by == "precision"


def test_max_samples_caps_the_run():
    rule = timing.Rule("adaptive", target_rel=1e-9, min_samples=5, max_samples=100, budget_s=30)
    samples, stopped_by, _ = timing.sample_calls(lambda: None, rule)
    assert len(samples) == 100 and stopped_by == "max_samples"


def test_stream_rule_collects_chunks():
    counter = itertools.count()

    def run_chunk(k):
        return [0.01 + 0.0001 * (next(counter) % 3) for _ in range(k)]

    samples, stopped_by, _ = timing.sample_stream(run_chunk, timing.Rule("fixed", iterations=40))
    assert len(samples) == 40 and stopped_by == "count"
    samples, stopped_by, _ = timing.sample_stream(
        run_chunk, timing.Rule("adaptive", target_rel=0.05, min_samples=10), chunk=25)
    assert stopped_by == "precision" and len(samples) % 25 == 0


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="fixed.*adaptive"):
        timing.Rule("sometimes")
