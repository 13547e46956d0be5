"""Which cells pair in one process, and which do not (driver/study/duetplan.py: PAIR_TABLES,
plan_pairs, keras_why_not), for every comparison table a pair can time; and the worker's side
of a pair whose cells' calls differ in length (run_cell.py: cell_rule, _mix)."""
import itertools
import sys
from pathlib import Path

import pytest

from driver.study import duetplan
from driver.tables.registry import BY_NAME
from tfspeed import cells as tfcells

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "scripts"))
import run_cell  # noqa: E402


def spec(version, flavours):
    return {"framework": "tensorflow", "framework_version": version, "flavours": flavours,
            "build": "cpu"}


SPECS = {"tf1.14": spec("1.14.0", ["keras", "tf.keras", "tf.python.keras"]),
         "tf2.0": spec("2.0.4", ["keras", "tf.keras", "tf.python.keras"]),
         "tf2.15": spec("2.15.1", ["tf.keras", "tf.python.keras"]),
         "tf2.21": spec("2.21.0", ["keras3", "tf_keras"])}


def cells(env, keras, modes, apis, inputs=("numpy",)):
    return [(env, {"model": "small", "data": "small", "keras": k, "mode": m, "api": a,
                   "input": i, "device": "cpu"})
            for k, m, a, i in itertools.product(keras, modes, apis, inputs)]


def plan(study_cells, tables, specs=SPECS, **settings):
    return [d for d in duetplan.plan_pairs(study_cells, dict(tables=tables, **settings), specs)
            if d.table]


def sides(pairs):
    return sorted((d.env, d.cell["mode"], d.cell["keras"], d.cell["api"], d.cell["input"],
                   d.reference_cell[duetplan.PAIR_TABLES[d.table][0]]) for d in pairs)


def test_every_pair_table_is_a_comparison_table_with_its_axis():
    for name, (axis, values) in duetplan.PAIR_TABLES.items():
        table = BY_NAME[name]
        assert table.factor == axis, name
        if table.left is not None:  # one pair of values: the table's own
            assert values == ((table.left, table.right),)


def test_fit_epoch_pairs_with_train_on_batch_of_the_same_configuration():
    study = (cells("tf2.21", ["keras3"], ["eager"], ["fit_epoch", "train_on_batch", "fit"],
                   ["numpy", "tfdata"])
             + cells("tf1.14", ["tf.keras"], ["graph"], ["fit_epoch"]))  # no partner there
    got = plan(study, ["fit_epoch_vs_train_on_batch"])
    assert sides(got) == [("tf2.21", "eager", "keras3", "fit_epoch", i, "train_on_batch")
                          for i in ("numpy", "tfdata")]
    assert all(d.table == "fit_epoch_vs_train_on_batch" for d in got)
    # a one-step fit is another table's left side, never fit_epoch's partner
    assert not any("fit" in (d.cell["api"], d.reference_cell["api"]) for d in got)


def test_call_vs_predict_pairs_every_inference_pair_the_table_names():
    study = cells("tf2.15", ["tf.keras"], ["eager", "graph"],
                  ["call", "predict", "predict_on_batch", "train_on_batch"])
    got = plan(study, ["call_vs_predict"])
    assert sides(got) == sorted(
        ("tf2.15", m, "tf.keras", left, "numpy", right) for m in ("eager", "graph")
        for left, right in (("call", "predict"), ("call", "predict_on_batch"),
                            ("predict_on_batch", "predict")))
    # both sides inference steps: a training step never meets an inference step
    assert all(tfcells.task(d.cell["api"]) == tfcells.task(d.reference_cell["api"]) == "infer"
               for d in got)
    # a call cell without its predict partner in that mode (Keras 3: no graph mode) pairs nothing
    lone = cells("tf2.21", ["keras3"], ["eager"], ["call", "predict"]) + cells(
        "tf2.21", ["keras3"], ["function"], ["call"])
    assert sides(plan(lone, ["call_vs_predict"])) == [
        ("tf2.21", "eager", "keras3", "call", "numpy", "predict")]


def test_two_keras_pair_only_where_both_share_a_process():
    study = (cells("tf1.14", ["keras", "tf.keras", "tf.python.keras"], ["graph"],
                   ["train_on_batch"])
             + cells("tf1.14", ["tf.keras", "tf.python.keras"], ["eager"], ["train_on_batch"])
             + cells("tf2.0", ["keras", "tf.keras", "tf.python.keras"], ["graph", "eager"],
                     ["train_on_batch"])
             + cells("tf2.15", ["tf.keras", "tf.python.keras"], ["graph", "eager"],
                     ["train_on_batch"])
             + cells("tf2.21", ["keras3", "tf_keras"], ["eager"], ["train_on_batch"])
             + cells("tf2.21", ["tf_keras"], ["graph"], ["train_on_batch"]))
    got = plan(study, ["keras_vs_tfkeras"])
    assert sides(got) == sorted([
        ("tf1.14", "graph", "keras", "train_on_batch", "numpy", "tf.keras"),
        ("tf1.14", "graph", "tf.python.keras", "train_on_batch", "numpy", "tf.keras"),
        ("tf1.14", "eager", "tf.python.keras", "train_on_batch", "numpy", "tf.keras"),
        ("tf2.0", "graph", "tf.python.keras", "train_on_batch", "numpy", "tf.keras"),
        ("tf2.21", "eager", "keras3", "train_on_batch", "numpy", "tf_keras")])
    # and why the others are not planned
    why = duetplan.keras_why_not
    assert "not tried in one process" in why(SPECS["tf2.0"], "keras", "tf.keras", "graph")
    assert "eager mode on TF 2.0" in why(SPECS["tf2.0"], "tf.python.keras", "tf.keras", "eager")
    assert "2.15" in why(SPECS["tf2.15"], "tf.python.keras", "tf.keras", "graph")
    assert "TF >= 2.16" in why(SPECS["tf2.15"], "keras3", "tf_keras", "eager")
    assert why(SPECS["tf2.21"], "tf_keras", "keras3", "eager") is not None  # not the table's order
    # without env facts no Keras pair at all (which can share a process is unknown)
    assert plan(study, ["keras_vs_tfkeras"], specs=None) == []
    assert "unknown" in why(None, "keras", "tf.keras", "graph")


def test_compiled_modes_pair_with_their_uncompiled_way_never_with_graph():
    """compiled_vs_eager: tf.function, XLA and run_eagerly beside eager in one TF 2 process (a
    TF 1-style graph cell never pairs: it turns graph mode on for the whole process); the
    pairs are the comparison table's own (comparisons.MODE_PAIRS)."""
    from driver.tables.comparisons import MODE_PAIRS

    assert duetplan.PAIR_TABLES["compiled_vs_eager"] == ("mode", MODE_PAIRS)
    study = (cells("tf2.21", ["keras3"], ["eager", "function", "xla"], ["custom_loop"])
             + cells("tf2.21", ["keras3"], ["eager", "run_eagerly", "xla"], ["fit"])
             + cells("tf2.21", ["tf_keras"], ["graph", "eager"], ["train_on_batch"]))
    got = plan(study, ["compiled_vs_eager"])
    assert sorted((d.cell["api"], d.cell["mode"], d.reference_cell["mode"]) for d in got) == [
        ("custom_loop", "function", "eager"), ("custom_loop", "xla", "eager"),
        ("custom_loop", "xla", "function"), ("fit", "eager", "run_eagerly"),
        ("fit", "xla", "eager")]
    assert all(d.table == "compiled_vs_eager" and d.env == d.reference_env for d in got)
    assert all("graph" not in (d.cell["mode"], d.reference_cell["mode"]) for d in got)


def test_a_cell_pairs_only_with_the_cell_that_differs_in_the_tables_axis_alone():
    study = (cells("tf1.14", ["tf.keras"], ["graph"], ["fit"], ["numpy"])
             + cells("tf1.14", ["tf.keras"], ["eager"], ["train_on_batch"], ["numpy"])
             + cells("tf2.21", ["keras3"], ["eager"], ["train_on_batch"], ["numpy"]))
    # fit in graph mode, train_on_batch in eager mode and in another env: no pair (two axes)
    assert plan(study, list(duetplan.PAIR_TABLES)) == []


def test_every_table_at_once_keys_are_unique_and_the_aa_rows_one_per_env_and_mode():
    study = (cells("tf1.14", ["keras", "tf.keras"], ["graph"],
                   ["train_on_batch", "fit", "fit_epoch"], ["numpy", "tfdata"])
             + cells("tf1.14", ["tf.keras"], ["graph"], ["call", "predict"])
             + cells("tf2.21", ["keras3"], ["eager", "function"], ["custom_loop"]))
    study = [(e, c) for e, c in study if not (c["keras"] == "keras" and c["input"] == "tfdata")]
    pairs = duetplan.plan_pairs(study, {"tables": list(duetplan.PAIR_TABLES), "aa": True}, SPECS)
    named = [d for d in pairs if d.table]
    assert {d.table for d in named} == set(duetplan.PAIR_TABLES)
    assert len({d.cell_id for d in pairs}) == len(pairs)
    assert [(d.env, d.cell["mode"]) for d in pairs if d.cell == d.reference_cell] == [
        ("tf1.14", "graph"), ("tf2.21", "function")]
    assert all(d.together and d.env == d.reference_env for d in pairs)


def test_the_paired_preset_pairs_every_table_in_the_core_envs():
    """presets/paired.yaml as the study plans it: every table has rows, in the core envs only."""
    import reference_docs

    from driver.study.plan import StudyPlan
    from tfspeed import models

    saved = models.snapshot()
    try:
        repo = Path(__file__).resolve().parents[3]
        study = StudyPlan(reference_docs.study_config("presets/paired.yaml"), repo)
    finally:
        models.restore(saved)
    named = [d for d in study.pairs if d.table]
    assert {d.table for d in named} == set(duetplan.PAIR_TABLES)
    assert {d.env for d in study.pairs} <= {"tf1.14", "tf2.0", "tf2.15", "tf2.21"}
    assert study.duets  # the headline's duets stay
    keras = {(d.env, d.cell["keras"]) for d in named if d.table == "keras_vs_tfkeras"}
    assert ("tf2.0", "keras") not in keras and ("tf2.15", "tf.python.keras") not in keras
    assert {("tf1.14", "keras"), ("tf2.21", "keras3")} <= keras


def test_the_worker_gives_each_cell_its_own_steps_per_call():
    rule = {"kind": "fixed", "iterations": 200, "target_rel": 0.01, "min_samples": 10,
            "max_samples": 100, "budget_s": 1, "level": 0.95, "warmup_rel": 0.02,
            "warmup_block_s": 0.05, "warmup_max_s": 1, "min_samples_max_s": 5,
            "steps_per_call": 50}
    base = {"model": "small", "data": "small", "keras": "keras3", "mode": "eager",
            "input": "numpy", "device": "cpu"}
    epoch = run_cell.cell_rule(rule, dict(base, api="fit_epoch"))
    one = run_cell.cell_rule(rule, dict(base, api="train_on_batch"))
    assert (epoch.steps_per_call, epoch.iterations) == (50, 4)
    assert (one.steps_per_call, one.iterations) == (1, 200)


@pytest.mark.parametrize("pers", [(1, 1), (50, 1), (1, 8)])
def test_mix_blocks_cover_equal_steps_and_samples_are_per_step(pers, monkeypatch):
    """A call of k steps takes k units of a fake clock and comes back as 1 per step, whatever its
    length; each pass of the ABBA interleaving gives every cell a block of the same steps
    (max(mix_block, the longest call)), so a 50-step fit meets 50 one-step calls."""
    from tfspeed import timing

    now = {"t": 0.0}
    monkeypatch.setattr(timing, "clock", lambda: now["t"])

    def call_of(k):
        def step():
            now["t"] += k
        return step

    samples = run_cell._mix([call_of(k) for k in pers], 0.0, 4, list(pers))
    span = max(4, *pers)
    for k, got in zip(pers, samples):
        assert got and all(s == pytest.approx(1.0) for s in got)
        assert len(got) * k == 2 * span  # two passes (ABBA's least), equal steps per block
