"""Bad input stops the study before any job runs, with a message that names the bad key or value."""
import copy
import re

import pytest
import yaml
from helpers import REPO, quick_config, snakemake, write_config


def _set(config, dotted, value):
    node = config
    keys = dotted.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if isinstance(node, list) else node[key]
    last = keys[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value


# (change to the quick preset, words the error must contain)
BAD = {
    "unknown model": ("grids.0.pairs", [["huge", "small"]], ["huge"]),
    "negative iterations": ("stop.iterations", -5, ["iterations", "-5"]),
    "unknown env": ("envs", ["tf1.14", "tf9.99"], ["envs", "tf9.99"]),
    "unknown key": ("iteratons", 5, ["iteratons"]),
    "reference not in study": ("reference_env", "tf1.15", ["reference_env", "tf1.15"]),
    "pair twice": ("grids.0.pairs", [["small", "small"], ["small", "small"]],
                   ["pairs", "twice"]),
    "pair that cannot exist": ("grids.0.pairs", [["large", "small"]], ["pairs", "large"]),
    "fault model not allowed": ("grids.0.pairs", [["fault_segfault", "small"]],
                                ["allow_fault_models", "fault_segfault"]),
    "min above max": ("stop.min_samples", 10000, ["min_samples"]),
    "zero repeats": ("repeats", 0, ["repeats"]),
    "grid env outside study": ("grids.0.envs", ["tf2.0"], ["grids[0]", "tf2.0"]),
    "unknown stop rule": ("stop.rule", "sometimes", ["rule", "sometimes"]),
    "zero budget": ("stop.budget_s", 0, ["budget_s"]),
    "one-step epoch": ("fit_epoch_steps", 1, ["fit_epoch_steps", "1"]),
    "epoch steps word": ("fit_epoch_steps", "many", ["fit_epoch_steps", "many"]),
    "no grids": ("grids", [], ["grids"]),
    "unknown mode": ("grids.0.modes", ["eager", "turbo"], ["turbo"]),
    "bad level": ("stop.level", 1.5, ["level"]),
    "interpreter key": ("interpreters", {"three": "/usr/bin/python3"}, ["three"]),
    "env folder that is not one": ("env_dirs", ["envs", "envz"], ["env_dirs", "envz"]),
    "bad thread count": ("threads", 0, ["threads"]),
    "zero duet warm-up block": ("duets.warmup_block_s", 0, ["warmup_block_s"]),
    "negative foreign share": ("foreign_cpu_max_share", -1, ["foreign_cpu_max_share"]),
    "package sources not a mapping": ("package_sources", "/opt/wheels", ["package_sources"]),
    "find_links not a list": ("package_sources", {"find_links": "/opt/wheels"},
                              ["package_sources", "find_links"]),
    "index that is not a URL": ("package_sources", {"extra_index_urls": ["download.pytorch.org"]},
                                ["extra_index_urls", "download.pytorch.org"]),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_config_stops_before_any_job(tmp_path, case):
    key, value, words = BAD[case]
    config = copy.deepcopy(quick_config())
    _set(config, key, value)
    cfg = write_config(tmp_path / "bad.yaml", config)
    proc = snakemake(tmp_path / "work", cfg, "--cores", "1")
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    for word in words:
        assert word in out, "expected %r in the error:\n%s" % (word, out[-3000:])
    assert not (tmp_path / "work" / "results").exists(), "a job ran before the config was checked"


def test_duplicate_grid_name(tmp_path):
    config = quick_config()
    config["grids"].append(dict(config["grids"][0]))
    proc = snakemake(tmp_path / "work", write_config(tmp_path / "c.yaml", config), "-n")
    assert proc.returncode != 0
    assert "used twice" in proc.stdout + proc.stderr


def test_good_config_plans(tmp_path):
    proc = snakemake(tmp_path / "work", write_config(tmp_path / "c.yaml", quick_config()), "-n")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "run_cell" in proc.stdout


def test_partial_config_is_laid_over_the_default_in_any_directory(tmp_path):
    """A --configfile that names a few keys changes those and keeps config.yaml's others, also with
    --directory elsewhere (Snakemake would look for a relative config.yaml there and skip it)."""
    grid = {"name": "one", "envs": "all", "pairs": [["small", "small"]], "keras": ["tf.keras"],
            "modes": ["eager"], "apis": ["train_on_batch"], "inputs": ["numpy"], "devices": "all"}
    # no time budget: every one of the first `repeats` rounds is then planned up front (with one,
    # rounds 1.. are the checkpoint plan_round's choice, unseen by a dry run)
    partial = {"envs": ["tf1.14"], "grids": [grid], "time_budget_min": None}
    work = tmp_path / "elsewhere"
    proc = snakemake(work, write_config(tmp_path / "partial.yaml", partial), "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    default = yaml.safe_load((REPO / "config.yaml").read_text())
    cell = "tf1.14/small-small.tfkeras.eager.train_on_batch.numpy.cpu"
    # config.yaml's repeats and its twin cells, not the schema's 1 and 0
    assert default["repeats"] > 1 and default["twins"] > 0
    for rep in range(default["repeats"]):
        assert "%s.r%d.json" % (cell, rep) in out, out[-3000:]
    assert ".twin/" + cell in out, out[-3000:]
    # and the keys it names win: no other env is planned
    assert "tf2.21/" not in out


@pytest.mark.parametrize("preset", sorted(p.name for p in (REPO / "presets").glob("*.yaml")))
def test_every_preset_plans(tmp_path, preset):
    """Each preset, laid over config.yaml as its header says to run it, passes the checks and plans
    its cells (a dry run: no env is built)."""
    proc = snakemake(tmp_path / "work", REPO / "presets" / preset, "-n")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "run_cell" in out


def _edges(dot):
    """The rule graph's edges (snakemake --rulegraph) as (from rule, to rule) names."""
    labels = dict(re.findall(r'^\s*(\d+)\[label = "([^"]+)"', dot, re.M))
    return {(labels[a], labels[b]) for a, b in re.findall(r"^\s*(\d+) -> (\d+)", dot, re.M)}


@pytest.mark.parametrize("budget", [5, None])
def test_a_time_budget_runs_the_first_look_before_round_0s_cells(tmp_path, budget):
    """With a time budget, round 0's cells wait for the paired rows' first look (rule first_look),
    whatever env finished building first, so the budget's gate weighs what the first look spent
    (docs/design.md "One budget"); without one, priorities order them and nothing waits."""
    config = write_config(tmp_path / "c.yaml", quick_config(time_budget_min=budget))
    proc = snakemake(tmp_path / "work", config, "--rulegraph")
    assert proc.returncode == 0, proc.stderr[-3000:]
    edges = _edges(proc.stdout)
    assert ("run_duet", "run_cell") not in edges
    if budget:
        assert {("run_duet", "first_look"), ("first_look", "run_cell")} <= edges
    else:
        assert not {e for e in edges if "first_look" in e}
