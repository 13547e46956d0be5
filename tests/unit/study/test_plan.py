"""The study plan (driver/study/plan.py): config checks name their key, and a plan holds the jobs
Snakemake's dry run of the same study lists (the counts below are `snakemake -n` in an empty
directory, recorded when the plan left rules/common.smk; docs/reference/presets.md shows them)."""
import copy
import functools
import json
import re
import shutil
from pathlib import Path

import pytest
import reference_docs

from driver.study import layout, order
from driver.study.plan import ConfigError, StudyPlan
from tfspeed import cells as tfcells
from tfspeed import models

REPO = Path(__file__).resolve().parents[3]

# study file -> (run_cell, run_duet, build_env) as `snakemake -n --quiet rules` lists them (under
# a time budget only round 0 of the cells is planned before the run, and it holds no twin: the
# later rounds are chosen as it goes, driver/study/budget.py)
DRY_RUN = {
    None: (135, 372, 27),
    "tests/quick.yaml": (71, 26, 4),
    "presets/cnn_inference.yaml": (21, 68, 5),
    "presets/fidelity_check.yaml": (18, 0, 3),
    "presets/headline.yaml": (56, 216, 26),
    "presets/own_model.yaml": (42, 124, 6),
    "presets/own_model_python.yaml": (77, 364, 5),
    "presets/pairs.yaml": (60, 96, 2),
    "presets/paired.yaml": (135, 568, 27),
    "presets/releases.yaml": (56, 208, 26),
    "presets/seed_full.yaml": (960, 48, 5),
    "presets/seed_large.yaml": (96, 36, 3),
    "presets/seed_systems.yaml": (205, 436, 27),
}


@pytest.fixture(autouse=True)
def _registrations():
    """A plan registers config `models` and `data` with tfspeed.models: put them back after."""
    saved = models.snapshot()
    yield
    models.restore(saved)


@functools.lru_cache(maxsize=None)
def _config(configfile=None):
    return reference_docs.study_config(configfile)


def config(configfile=None, **changes):
    """The study's config as Snakemake has it (defaults filled), a fresh copy, top keys changed."""
    out = copy.deepcopy(_config(configfile))
    out.update(changes)
    return out


def error(cfg, repo=REPO) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        StudyPlan(cfg, repo)
    assert str(info.value) == "config error at '%s': %s" % (info.value.key, info.value.message)
    return info.value


# ---------------------------------------------------------------------------------- sizes

@pytest.mark.parametrize("configfile", sorted(DRY_RUN, key=str))
def test_job_counts_are_the_dry_runs(configfile):
    counts = StudyPlan(config(configfile), REPO).job_counts()
    assert (counts["run_cell"], counts["run_duet"], counts["build_env"]) == DRY_RUN[configfile]


def test_every_study_file_is_counted():
    """A new preset gets its dry-run numbers here (and docs/reference/presets.md its row)."""
    assert {f for _, f in reference_docs.study_files()} == set(DRY_RUN)


def test_default_study_is_cells_and_twins_once_then_by_budget_and_duets_times_replicates():
    cfg = config()
    plan = StudyPlan(cfg, REPO)
    assert len(plan.twins) == cfg["twins"] > 0
    # under the time budget round 0 is fixed, rounds 1 .. repeats - 1 are planned by it
    assert cfg["time_budget_min"] and cfg["repeats"] > 1
    assert [plan.fixed_round(r) for r in range(cfg["repeats"])] == \
        [True] + [False] * (cfg["repeats"] - 1)
    # round 0 holds every cell but the duets' sides and, under the time budget, no twin: the
    # twins come from round 1
    assert len(plan.own_cells) == DRY_RUN[None][0]
    assert len(plan.cells) == len(plan.own_cells) + len(plan.sides_as_cells)
    assert [s.twin for s in plan.first_round_slots(0)] == [False] * len(plan.own_cells)
    unbudgeted = StudyPlan(config(time_budget_min=None), REPO)
    assert all(unbudgeted.fixed_round(r) for r in range(cfg["repeats"]))
    assert unbudgeted.job_counts()["run_cell"] == \
        (len(plan.own_cells) + len(plan.twins)) * cfg["repeats"]
    assert sum(d.weight for d in plan.timed_duets) * cfg["duets"]["replicates"] == DRY_RUN[None][1]
    assert plan.pairs and {d.env for d in plan.pairs} == set(cfg["pairs"]["envs"])
    for rounds in (plan.first_round_slots(1), unbudgeted.first_round_slots(0)):
        assert [s.twin for s in rounds] == \
            [False] * len(plan.own_cells) + [True] * len(plan.twins)
    assert plan.extra_rounds == cfg["allocation"]["max_repeats"] - cfg["repeats"]


def test_the_duets_sides_run_no_process_of_their_own():
    """With duets.sides_as_cells, each TF 2.x release's headline cells come from its duet row's
    sides; the reference env's cells (a side of every row) and the cells a pair times keep their
    processes; a twin or an extra round never names a side. Off (the default) every cell runs."""
    plan = StudyPlan(config(duets=dict(config()["duets"], sides_as_cells=True)), REPO)
    taken = set(plan.sides_as_cells)
    headline = {(d.env, d.cell_id) for d in plan.duets if d.env != plan.reference_env
                and not d.frameworks and not d.own}
    paired = {(d.env, tfcells.cell_id(c)) for d in plan.pairs for c in (d.cell, d.reference_cell)}
    assert taken == headline - paired and len(taken) > 40
    assert not {(e, c) for e, c in taken if e == plan.reference_env}
    slots = {(s.env, s.cell_id) for r in range(plan.repeats) for s in plan.first_round_slots(r)}
    assert not slots & taken and not {(e, tfcells.cell_id(c)) for e, c in plan.twins} & taken
    some = sorted(taken)[0]
    assert plan.chosen_slots([list(some), [*some, "twin"]]) == []
    every = StudyPlan(config(), REPO)  # the default: off, every cell runs its own processes
    assert every.sides_as_cells == [] and len(every.own_cells) == len(plan.cells)
    assert len(plan.own_cells) + len(taken) == len(plan.cells)


def test_quick_study_is_its_grid_once():
    cfg = config("tests/quick.yaml")
    plan = StudyPlan(cfg, REPO)
    assert cfg["repeats"] == 1 and plan.twins == [] and plan.extra_rounds == 0
    assert len(plan.cells) == 71 and len(plan.own_cells) == DRY_RUN["tests/quick.yaml"][0]
    # 3 rows, 2 A/A rows and the reference's graph vs eager (weight 2); 2 frameworks rows
    assert sum(d.weight for d in plan.duets) * cfg["duets"]["replicates"] == 18
    assert sum(d.frameworks for d in plan.duets) == 2
    assert {e for e, _ in plan.cells} == set(cfg["envs"])


def test_conda_plans_no_duets_and_builds_no_venv():
    plan = StudyPlan(config("tests/quick.yaml"), REPO, conda=True)
    assert plan.duets == [] and plan.pairs == [] and plan.duet_files("m") == []
    assert plan.job_counts() == {"run_cell": 71, "run_duet": 0, "build_env": 0}


def test_pairs_run_as_duets_with_their_own_key_and_design():
    """config `pairs` (tests/quick.yaml: TF 1.14's fit vs train_on_batch in graph mode): its
    rows join the duets' files, order and priorities under their pair key, and their design
    says `together`, the table and the interleaving's block; the headline's duets are as
    before."""
    cfg = config("tests/quick.yaml")
    plan = StudyPlan(cfg, REPO)
    assert len(plan.pairs) == 4 and all(d.together for d in plan.pairs)
    files = plan.duet_files("m")
    assert len(files) == sum(d.weight for d in plan.duets + plan.pairs) * cfg["duets"]["replicates"]
    for d in plan.pairs:
        assert layout.duet_path("m", d.env, d.cell_id, 0) in files
        design = json.loads(plan.duet_params(d.env, d.cell_id)["design"])
        assert design["together"] and design["mix_block"] == 2
        assert design["table"] == d.table
    assert "together" not in json.loads(plan.duet_params(*next(
        (d.env, d.cell_id) for d in plan.duets))["design"])


@pytest.mark.parametrize("pairs,key,words", [
    ({"tables": ["graph_vs_eager"]}, "pairs.tables", "'graph_vs_eager' cannot be timed"),
    ({"tables": ["numpy_vs_tfdata"], "envs": ["tf9.9"]}, "pairs.envs", "unknown env 'tf9.9'"),
])
def test_bad_pairs_settings_are_named_before_any_job(pairs, key, words):
    cfg = config("tests/quick.yaml")
    cfg["pairs"] = dict(cfg["pairs"], **pairs)
    with pytest.raises(Exception, match=re.escape(key)) as err:
        StudyPlan(cfg, REPO)
    assert words in str(err.value)


# ---------------------------------------------------------------------------------- checks

def test_unknown_env_names_envs():
    err = error(config(envs=["tf1.14", "tf9.99"]))
    assert err.key == "envs" and "'tf9.99'" in err.message and "tf2.21" in err.message


def test_no_env_matching_names_envs(tmp_path):
    (tmp_path / "none").mkdir()
    err = error(config(env_dirs=["none"]), repo=tmp_path)
    assert err.key == "envs" and "no env files" in err.message


def test_env_folder_that_is_not_one_names_env_dirs():
    err = error(config(env_dirs=["envs", "envz"]))
    assert err.key == "env_dirs" and "'envz'" in err.message


def test_env_defined_twice_names_env_dirs(tmp_path):
    (tmp_path / "more").mkdir()
    shutil.copy(REPO / "envs" / "tf1.14.yaml", tmp_path / "more" / "tf1.14.yaml")
    err = error(config(env_dirs=["envs", str(tmp_path / "more")]))
    assert err.key == "env_dirs" and "'tf1.14' is defined twice" in err.message


def test_reference_outside_the_study_names_reference_env():
    err = error(config(envs=["tf2.0", "tf2.21"], reference_env="tf1.14"))
    assert err.key == "reference_env" and "'tf1.14'" in err.message


def test_unpinned_package_names_package_sources_packages():
    cfg = config()
    cfg["package_sources"] = dict(cfg["package_sources"], packages=["torch", "nopkg"])
    err = error(cfg)
    assert err.key == "package_sources.packages" and "'nopkg'" in err.message


def test_min_above_max_names_stop_min_samples():
    cfg = config()
    cfg["stop"] = dict(cfg["stop"], min_samples=cfg["stop"]["max_samples"] + 1)
    assert error(cfg).key == "stop.min_samples"


def _grid_error(change, **top):
    cfg = config(**top)
    grid = copy.deepcopy(cfg["grids"][0])
    grid.update(change)
    cfg["grids"] = [grid]
    return error(cfg)


def test_grid_name_used_twice_names_the_grid():
    cfg = config()
    cfg["grids"] = [cfg["grids"][0], dict(cfg["grids"][0])]
    err = error(cfg)
    assert err.key == "grids[1] (factors).name" and "used twice" in err.message


def test_grid_env_outside_the_study_names_the_grids_envs():
    err = _grid_error({"envs": ["tf2.0"]}, envs=["tf1.14", "tf2.21"])
    assert err.key == "grids[0] (factors).envs" and "'tf2.0'" in err.message


@pytest.mark.parametrize("pairs, words", [
    ([["huge", "small"]], ["unknown model 'huge'"]),
    ([["small", "huge"]], ["unknown data 'huge'"]),
    ([["small", "small"], ["small", "small"]], ["listed twice"]),
    ([["large", "small"]], ["'large'", "cannot take data"]),
    ([["fault_segfault", "small"]], ["allow_fault_models", "fault_segfault"]),
])
def test_bad_pair_names_the_grids_pairs(pairs, words):
    err = _grid_error({"pairs": pairs})
    assert err.key == "grids[0] (factors).pairs"
    for word in words:
        assert word in err.message


def test_fault_model_allowed_plans():
    cfg = config(allow_fault_models=True)
    cfg["grids"] = [dict(cfg["grids"][0], pairs=[["fault_segfault", "small"]])]
    assert StudyPlan(cfg, REPO).cells


def test_bad_user_model_names_its_key():
    cfg = config("presets/own_model.yaml")
    name = next(iter(cfg["models"]))
    cfg["models"][name] = dict(cfg["models"][name], layers=[["nolayer", 3]])
    err = error(cfg)
    assert err.key.startswith("models.%s" % name), err.key


def test_grids_without_a_cell_names_grids():
    err = _grid_error({"envs": ["tf1.14"], "keras": ["keras3"]})
    assert err.key == "grids" and "no cell" in err.message


# ---------------------------------------------------------------------------------- what it holds

def test_stop_rule_from_config():
    cfg = config("tests/quick.yaml")
    plan = StudyPlan(cfg, REPO)
    rule = plan.stop_rule("small", "fit_epoch")
    assert rule["kind"] == "fixed" and rule["iterations"] == 12
    assert rule["steps_per_call"] == cfg["fit_epoch_steps"]
    assert "steps_per_call" not in plan.stop_rule("small", "fit")
    cfg["stop"] = dict(cfg["stop"], iterations="seed")
    plan = StudyPlan(cfg, REPO)
    assert plan.stop_rule("small")["iterations"] == models.SEED_ITERATIONS["small"]


def test_params_of_a_cell():
    plan = StudyPlan(config("tests/quick.yaml"), REPO)
    env, cell = next((e, c) for e, c in plan.cells if c["model"] == "small")
    cid = tfcells.cell_id(cell)
    assert json.loads(plan.cell_params(cid)) == tfcells.parse_cell_id(cid)
    assert json.loads(plan.rule_params(cid)) == plan.stop_rule(cell["model"], cell["api"])
    assert plan.env_file(env) == str(REPO / "envs" / ("%s.yaml" % env))


def test_user_model_cell_carries_its_spec():
    plan = StudyPlan(config("tests/quick.yaml"), REPO)
    user = [c for _, c in plan.cells if c["model"] == "q_rnn"]
    assert user, "the quick preset times its own models"
    params = json.loads(plan.cell_params(tfcells.cell_id(user[0])))
    assert "q_rnn" in params["spec"]["models"]


def test_probe_cells_are_matmul_then_the_small_model():
    plan = StudyPlan(config("tests/quick.yaml"), REPO)
    items = json.loads(plan.probe_cells())
    assert [i["cell"]["model"] for i in items] == ["matmul", "small"]


def test_round_files_and_extra_rounds():
    cfg = config("tests/quick.yaml", repeats=2)
    cfg["allocation"] = dict(cfg["allocation"], budget_s=100, max_repeats=4)
    plan = StudyPlan(cfg, REPO)
    env, cell = plan.cells[0]
    chosen = plan.chosen_slots([[env, tfcells.cell_id(cell)], [env, tfcells.cell_id(cell), "twin"],
                                [env, "gone-cell.none.eager.fit.numpy.cpu"]])
    assert chosen == [order.Slot(env, tfcells.cell_id(cell)),
                      order.Slot(env, tfcells.cell_id(cell), True)]

    def slots_of(machine, rep):  # round 2 picks two slots, round 3 none
        return plan.first_round_slots() if rep < 2 else chosen if rep == 2 else []

    files = plan.cell_files("m", slots_of)
    assert len(files) == 2 * len(plan.own_cells) + 2
    assert files[-2:] == [layout.cell_path("m", env, cell, 2),
                          layout.cell_path(layout.twin_key("m"), env, cell, 2)]
    assert plan.order_files("m", slots_of) == [layout.order_path("m", r) for r in range(3)]
    ordered, position = plan.round_order(chosen, 2)
    assert sorted(ordered) == sorted(chosen) and sorted(position.values()) == [0, 1]


def test_an_extra_round_after_an_empty_round_is_read():
    """Under a time budget the planned rounds 1 .. repeats - 1 may choose nothing while an extra
    round after them fills the last seconds (a default study on a noisy VM): its processes run
    (order_files asks for them), so aggregation must read them too."""
    cfg = config("tests/quick.yaml", repeats=3, time_budget_min=30)
    cfg["allocation"] = dict(cfg["allocation"], budget_s=120, max_repeats=5)
    plan = StudyPlan(cfg, REPO)
    env, cell = plan.cells[0]
    extra = [order.Slot(env, tfcells.cell_id(cell))]

    def slots_of(machine, rep):  # rounds 1 and 2 did not fit, round 3 took one cell
        return plan.first_round_slots(0) if rep == 0 else extra if rep == 3 else []

    files = plan.cell_files("m", slots_of)
    assert layout.cell_path("m", env, cell, 3) in files
    assert len(files) == len(plan.slot_files("m", 0, plan.first_round_slots(0))) + 1
    assert layout.order_path("m", 3) in plan.order_files("m", slots_of)


def test_duets_in_their_planned_order():
    cfg = config("tests/quick.yaml")
    plan = StudyPlan(cfg, REPO)
    files = plan.duet_files("m")
    # the headline's duets and the pairs in one process (tests/quick.yaml `pairs`) alike
    timed = plan.duets + plan.pairs
    assert plan.timed_duets == timed
    weights = sum(d.weight for d in timed)
    assert len(files) == weights * cfg["duets"]["replicates"]
    # priorities for both looks; the second look's files only for the rows still open
    assert len(plan.duet_priority) == weights * cfg["duets"]["max_replicates"]
    d = [x for x in plan.duets if x.weight == 1 and not x.frameworks][-1]
    extra = plan.extra_duet_files("m", [[d.env, d.cell_id]])
    first, most = cfg["duets"]["replicates"], cfg["duets"]["max_replicates"]
    assert extra == [layout.duet_path("m", d.env, d.cell_id, r) for r in range(first, most)]
    assert min(plan.duet_priority[(d.env, d.cell_id, r)] for r in range(first)) > max(
        plan.duet_priority[(x.env, x.cell_id, r)] for x in timed
        for r in range(x.weight * first, x.weight * most))
    assert json.loads(plan.duet_params(d.env, d.cell_id)["design"]) == {
        "replicates": first, "max_replicates": most, "workers": "fork",
        "build": cfg["duets"]["build"], "settle": cfg["duets"].get("settle_calls", 1),
        "weight": 1, "renew": {
            "reference": [cfg["reference_env"]], "all": "all", "none": []}[
            cfg["duets"]["renew_helpers"]]}
    for renew, said in (("none", []), ("all", "all"), ("reference", [cfg["reference_env"]])):
        other = StudyPlan(dict(cfg, duets=dict(cfg["duets"], renew_helpers=renew)), REPO)
        assert json.loads(other.duet_params(d.env, d.cell_id)["design"])["renew"] == said
    bad = dict(cfg, duets=dict(cfg["duets"], max_replicates=first - 1))
    with pytest.raises(ConfigError, match="duets.max_replicates"):
        StudyPlan(bad, REPO)
    d = plan.duets[0]
    params = plan.duet_params(d.env, d.cell_id)
    assert params["reference_env"] == cfg["reference_env"]
    # a duet's rule is the cells' own with the warm-up blocks of duets.warmup_block_s
    rule, cells_rule = json.loads(params["rule"]), plan.stop_rule(d.cell["model"], d.cell["api"])
    assert rule["warmup_block_s"] == cfg["duets"]["warmup_block_s"] != cells_rule["warmup_block_s"]
    assert dict(rule, warmup_block_s=cells_rule["warmup_block_s"]) == cells_rule
    same = StudyPlan(dict(cfg, duets=dict(cfg["duets"], warmup_block_s=None)), REPO)
    assert json.loads(same.duet_params(d.env, d.cell_id)["rule"]) == cells_rule
    from snakemake.utils import validate  # the Snakefile's own check refuses a bad block

    for bad in (0, -0.1, "short"):
        with pytest.raises(Exception, match="warmup_block_s"):
            validate(dict(cfg, duets=dict(cfg["duets"], warmup_block_s=bad)),
                     str(REPO / "schemas" / "config.schema.yaml"))


# ---------------------------------------------------------------------------------- recipes

def test_a_new_tf_version_is_one_env_file(tmp_path):
    """docs/ARCHITECTURE.md's recipe "a TF version": an env file in an env folder, nothing else.
    A planted TF 2.22 joins the performance history (every mode and Keras its users get) and the
    headline's duets against the reference, in both modes."""
    spec = (REPO / "envs" / "tf2.21.yaml").read_text()
    (tmp_path / "tf2.22.yaml").write_text(
        spec.replace("tfspeed-tf2.21", "tfspeed-tf2.22")
            .replace("tensorflow-cpu==2.21.0", "tensorflow-cpu==2.22.0rc0"))
    plan = StudyPlan(config(env_dirs=["envs", str(tmp_path)]), REPO)
    assert "tf2.22" in plan.envs
    history = [c for e, c in plan.cells if e == "tf2.22"]
    assert {c["mode"] for c in history} == {"graph", "eager"}
    assert {c["keras"] for c in history} >= {"keras3", "tf_keras"}
    duets = [d for d in plan.duets if d.env == "tf2.22"]
    assert {d.cell["mode"] for d in duets} == {"graph", "eager"}
    assert {d.reference_env for d in duets} == {plan.reference_env}


def test_reference_graph_vs_eager_row_has_weighted_replicates():
    """duets.graph_vs_eager k: the reference env's graph cell against its eager cell, one row
    keyed by both cells' ids (never the A/A row's key), k duets per round at each look, its
    design scaled by k; 0: no such row."""
    cfg = config("tests/quick.yaml")
    plan = StudyPlan(cfg, REPO)
    (d,) = [x for x in plan.duets if x.weight > 1]
    assert d.env == d.reference_env and d.cell["mode"] == "graph"
    assert d.reference_cell["mode"] == "eager" and "~" in d.cell_id
    first, most, k = cfg["duets"]["replicates"], cfg["duets"]["max_replicates"], d.weight
    files = plan.duet_files("m")
    assert [f for f in files if d.cell_id in f] == [
        layout.duet_path("m", d.env, d.cell_id, r) for r in range(k * first)]
    assert plan.extra_duet_files("m", [[d.env, d.cell_id]]) == [
        layout.duet_path("m", d.env, d.cell_id, r) for r in range(k * first, k * most)]
    design = json.loads(plan.duet_params(d.env, d.cell_id)["design"])
    assert {k: v for k, v in design.items() if k != "renew"} == {
        "replicates": k * first, "max_replicates": k * most, "workers": "fork",
        "build": cfg["duets"]["build"], "settle": cfg["duets"].get("settle_calls", 1),
        "weight": k}
    off = StudyPlan(dict(cfg, duets=dict(cfg["duets"], graph_vs_eager=0)), REPO)
    assert all(x.weight == 1 for x in off.duets) and len(off.duets) == len(plan.duets) - 1


def test_duets_models_naming_an_unknown_model_or_data_is_refused_by_key():
    duets = dict(config()["duets"])
    exc = error(config(duets=dict(duets, models=[["small", "small"], ["nope", "small"]])))
    assert exc.key == "duets.models[1]" and "unknown model 'nope'" in exc.message
    exc = error(config(duets=dict(duets, models=[["small", "nodata"]])))
    assert exc.key == "duets.models[0]" and "unknown data 'nodata'" in exc.message


def test_duets_models_that_no_env_pair_can_time_is_refused_by_key():
    duets = dict(config()["duets"], models=[["small", "small"]])
    grid = {"name": "g", "envs": ["tf1.14"], "pairs": [["small", "small"]],
            "keras": ["tf.keras"], "modes": ["graph"], "apis": ["train_on_batch"],
            "inputs": ["numpy"], "devices": "all"}
    exc = error(config(duets=duets, envs=["tf1.14"], grids=[grid], pairs={"tables": []}))
    assert exc.key == "duets.models[0]" and "no duet of small on small" in exc.message
