"""Other frameworks against TensorFlow in duets (config `duets.frameworks`,
driver/study/duetplan.py plan_frameworks): the planned rows, their table of their own, and the
config checks that name their key before any job."""
import copy
import json
from pathlib import Path

import pytest
import reference_docs

from driver.study import duetplan
from driver.study.plan import ConfigError, StudyPlan
from driver.tables import duets as duets_table
from tfspeed import models

REPO = Path(__file__).resolve().parents[3]
AGAINST = "small-small.tf_keras.graph.train_on_batch.numpy.cpu"


@pytest.fixture(autouse=True)
def _registrations():
    saved = models.snapshot()
    yield
    models.restore(saved)


def quick(**frameworks):
    cfg = copy.deepcopy(reference_docs.study_config("tests/quick.yaml"))
    if frameworks:
        cfg["duets"]["frameworks"] = frameworks
    return cfg


def test_the_quick_preset_plans_each_way_against_tfs():
    plan = StudyPlan(quick(), REPO)
    fw = [d for d in plan.timed_duets if d.frameworks]
    assert sorted(d.env for d in fw) == ["keras3-jax", "torch2.13"]
    assert {d.reference_env for d in fw} == {"tf2.21"}
    for d in fw:
        assert d.cell_id.endswith(duetplan.PAIR_SEP + AGAINST)
        assert d.cell["model"] == "small" and d.cell["input"] == "numpy"
        design = json.loads(plan.duet_params(d.env, d.cell_id)["design"])
        assert design["frameworks"] is True and "own" not in design
        assert plan.duet_params(d.env, d.cell_id)["reference_env"] == "tf2.21"
    by_env = {d.env: d.cell for d in fw}
    assert (by_env["torch2.13"]["keras"], by_env["torch2.13"]["api"]) == ("none", "custom_loop")
    assert by_env["keras3-jax"]["keras"] == "keras3"
    # the headline is unchanged: no other framework among its rows
    assert not {d.env for d in plan.timed_duets if not d.frameworks} & {"keras3-jax",
                                                                        "torch2.13"}
    # and none without the key
    cfg = quick()
    cfg["duets"]["frameworks"] = {}
    assert not [d for d in StudyPlan(cfg, REPO).timed_duets if d.frameworks]


@pytest.mark.parametrize("frameworks, key, says", [
    ({"against": {"env": "tf2.21", "mode": "graph", "api": "train_on_batch"},
      "ways": [{"env": "torch9.9", "mode": "eager", "api": "custom_loop"}]},
     "duets.frameworks.ways[0].env", "'torch9.9' has no env file"),
    ({"against": {"env": "tf2.21", "mode": "graph", "api": "train_on_batch"},
      "ways": [{"env": "keras3-jax", "mode": "graph", "api": "train_on_batch"}]},
     "duets.frameworks.ways[0]", "cannot run in keras3-jax"),
    ({"against": {"env": "tf2.21", "mode": "graph", "api": "train_on_batch"},
      "ways": [{"env": "tf1.14", "mode": "graph", "api": "train_on_batch"}]},
     "duets.frameworks.ways[0]", "a way of another framework"),
    ({"ways": [{"env": "torch2.13", "mode": "eager", "api": "custom_loop"}]},
     "duets.frameworks.against", "needs an env"),
])
def test_a_way_that_cannot_be_timed_is_refused_by_its_key(frameworks, key, says):
    with pytest.raises(ConfigError) as info:
        StudyPlan(quick(**frameworks), REPO)
    assert info.value.key == key and says in info.value.message, str(info.value)


def test_ways_whose_env_the_study_leaves_out_are_left_out():
    """As grids and pairs do: a preset of fewer envs keeps the frameworks duets it can run."""
    def only(envs):
        cfg = quick()
        cfg["envs"] = envs
        grids = [dict(g, envs=[e for e in g["envs"] if e in envs]) if g["envs"] != "all" else g
                 for g in cfg["grids"]]
        cfg["grids"] = [g for g in grids if g["envs"]]
        return [d for d in StudyPlan(cfg, REPO).timed_duets if d.frameworks]

    assert [d.env for d in only(["tf1.14", "tf2.21", "keras3-jax"])] == ["keras3-jax"]
    assert not only(["tf1.14", "torch2.13"])  # TensorFlow's side left out: none


def record(design, env="torch2.13", cell_keras="none"):
    cell = {"model": "small", "data": "small", "keras": cell_keras, "mode": "eager",
            "api": "custom_loop", "input": "numpy", "device": "cpu"}
    ref = dict(cell, keras="tf_keras", mode="graph", api="train_on_batch")
    return {"machine": "m", "env": env, "cell": cell, "reference_env": "tf2.21",
            "reference_cell": ref, "status": "ok", "replicate": 0, "design": design,
            "kind": "duet"}


def test_a_frameworks_duet_file_goes_to_its_own_table_keyed_by_both_sides():
    rec = record({"replicates": 2, "max_replicates": 2, "frameworks": True})
    assert duets_table.family(rec) == "duets_frameworks"
    assert duets_table.row_id(rec) == ("small-small.none.eager.custom_loop.numpy.cpu"
                                       + duetplan.PAIR_SEP + AGAINST)
    # without the flag the same sides would be read as a headline row: the flag decides
    assert duets_table.family(record({"replicates": 2})) == "duets"
