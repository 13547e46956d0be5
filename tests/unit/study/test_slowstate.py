"""The slow-state probe's parts (driver/study/slowstate.py): arms, what it reads from /proc of a
live process, and its summary against scipy."""
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats as sps

from driver.study import slowstate


def test_unknown_arm_is_refused_by_name():
    with pytest.raises(ValueError, match="'nope'"):
        slowstate.arm_prefix("nope")


def test_noaslr_gives_the_same_layout_twice():
    """The `noaslr` arm really fixes the layout (and base really varies it): the heap of two
    processes started through the prefix lies at the same address."""
    code = "import sys; print(open('/proc/self/maps').read().split('[heap]')[0].splitlines()[-1])"
    def heap(prefix):
        out = subprocess.run(prefix + [sys.executable, "-c", code], capture_output=True,
                             text=True, check=True).stdout
        return out.split("-")[0]
    fixed = slowstate.arm_prefix("noaslr")
    assert heap(fixed) == heap(fixed)
    assert len({heap([]) for _ in range(3)}) > 1


def test_layout_and_task_stats_of_a_live_process():
    facts = slowstate.layout_facts(os.getpid())
    assert "[stack]" in facts["bases"] and facts["threads"] >= 1 and facts["rss_kb"] > 0
    tasks = slowstate.read_task_stats(os.getpid())
    assert str(os.getpid()) in tasks and tasks[str(os.getpid())]["cpu"] >= 0
    cpus = slowstate.system_cpu()
    assert cpus and all(v["busy"] >= 0 for v in cpus.values())


def _rec(arm, median, steal):
    task = {"1": {"ticks": 0, "cpu": 0, "migrations": 0, "invol": 0}}
    after = {"1": {"ticks": 5, "cpu": 1, "migrations": 2, "invol": 3}}
    cpu0 = {"cpu0": {"busy": 0, "idle": 0, "steal": 0}}
    cpu1 = {"cpu0": {"busy": 10, "idle": 0, "steal": steal}}
    return {"arm": arm, "median_s": median, "kernel_median_s": 1e-4, "ready": {"first_call_s": 0.3},
            "gap_s": 1.0, "layout": {"bases": {"[heap]": 0x5000}, "anon_huge_kb": 0, "threads": 12},
            "windows": [{"median_s": median, "tasks": [task, after], "cpu": [cpu0, cpu1]}]}


def test_summary_matches_scipy_and_finds_a_planted_predictor():
    rng = np.random.default_rng(0)
    steal = rng.uniform(0, 5, 12)
    base = [_rec("base", 0.01 * math.exp(0.05 * s), s) for s in steal]
    other = [_rec("noaslr", 0.01 * math.exp(x), 0) for x in rng.normal(0, 0.2, 12)]
    text = slowstate.summarize_arms(base + other, sps)
    logs = [math.log(r["median_s"]) for r in base]
    assert "%.3f" % np.std(logs, ddof=1) in text
    line = [x for x in text.splitlines() if "steal_ticks" in x][0]
    assert "rho +1.00" in line
