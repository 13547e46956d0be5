"""Pairs in one process for a user's own model (config `models` with a `builder`, and the user's
data): plan_pairs pairs its cells as the seed's, and each side carries the model's and data's
description (`spec`: the builder's text and hash) to the worker, as a cell's parameters do;
the pair's key and table come from the axes alone."""
import itertools
import sys

import pytest

from driver.study import duetplan
from tfspeed import cells as tfcells
from tfspeed import models

BUILDER = '''
def build(keras, data):
    inputs = keras.layers.Input(shape=tuple(data.shape))
    return keras.models.Model(inputs, keras.layers.Dense(1, activation="sigmoid")(inputs))
'''

SPECS = {"tf1.14": {"framework": "tensorflow", "framework_version": "1.14.0",
                    "flavours": ["keras", "tf.keras"], "build": "cpu"},
         "tf2.21": {"framework": "tensorflow", "framework_version": "2.21.0",
                    "flavours": ["keras3", "tf_keras"], "build": "cpu"}}


@pytest.fixture
def mine(tmp_path, monkeypatch):
    """A builder model 'mine' on the user's data 'seqs', registered as the driver does."""
    from tfspeed import usermodels

    saved = models.snapshot()
    (tmp_path / "my_model.py").write_text(BUILDER)
    monkeypatch.setattr(sys, "argv", ["snakemake", "--configfile", str(tmp_path / "mine.yaml")])
    usermodels.register({"mine": {"builder": "my_model.py:build", "loss": "binary_crossentropy"}},
                        {"seqs": {"batch": 4, "shape": [6], "target": "binary"}})
    yield
    models.restore(saved)


def cells(env, model, data, keras, modes, apis):
    return [(env, {"model": model, "data": data, "keras": k, "mode": m, "api": a,
                   "input": "numpy", "device": "cpu"})
            for k, m, a in itertools.product(keras, modes, apis)]


def test_a_builder_models_cells_pair_and_carry_its_code(mine):
    study = (cells("tf2.21", "mine", "seqs", ["keras3", "tf_keras"], ["eager"],
                   ["train_on_batch", "fit", "predict", "call"])
             + cells("tf1.14", "mine", "seqs", ["tf.keras"], ["graph"], ["train_on_batch", "fit"])
             + cells("tf2.21", "small", "small", ["keras3"], ["eager"], ["train_on_batch", "fit"]))
    pairs = duetplan.plan_pairs(study, {"tables": ["fit_vs_train_on_batch", "call_vs_predict",
                                                   "keras_vs_tfkeras"], "aa": True}, SPECS)
    tables = sorted((d.env, d.table, d.cell["model"]) for d in pairs if d.table)
    assert tables == sorted(
        [("tf2.21", "fit_vs_train_on_batch", "mine")] * 2
        + [("tf1.14", "fit_vs_train_on_batch", "mine"), ("tf2.21", "fit_vs_train_on_batch", "small")]
        + [("tf2.21", "call_vs_predict", "mine")] * 2
        + [("tf2.21", "keras_vs_tfkeras", "mine")] * 4)
    for d in pairs:
        for side in (d.cell, d.reference_cell):
            if side["model"] == "small":  # the seed's cells as they were
                assert "spec" not in side
                continue
            builder = side["spec"]["models"]["mine"]["builder"]
            assert builder["function"] == "build" and len(builder["sha256"]) == 64
            assert "def build(keras, data)" in builder["source"]
            assert side["spec"]["data"]["seqs"]["shape"] == [6]
        # the key joins both cells' ids from their axes alone
        if d.table:
            assert d.cell_id == (tfcells.cell_id(d.cell) + duetplan.PAIR_SEP
                                 + tfcells.cell_id(d.reference_cell))
    # one A/A row per env and mode with pairs, the user's model's among them
    assert sorted((d.env, d.cell["mode"]) for d in pairs if d.table is None) == [
        ("tf1.14", "graph"), ("tf2.21", "eager")]


def test_a_builder_model_across_envs_and_modes_in_duets_of_its_own(mine):
    """duets.models: the model's duets (each TF 2.x env against the reference per mode, and the
    reference's graph against its eager cell), marked `own` (the duets_own table), each side
    carrying the builder's code; the headline's duets only with `headline` on."""
    settings = {"modes": ["graph", "eager"], "api": "train_on_batch", "models": [["mine", "seqs"]],
                "aa": True, "graph_vs_eager": 2}
    own = duetplan.plan_own(SPECS, ["tf1.14", "tf2.21"], "tf1.14", settings)
    got = sorted((d.env, d.cell["keras"], d.cell["mode"], d.reference_cell["mode"], d.weight)
                 for d in own)
    assert got == [("tf1.14", "tf.keras", "graph", "eager", 1),
                   ("tf2.21", "keras3", "eager", "eager", 1),
                   ("tf2.21", "tf_keras", "eager", "eager", 1),
                   ("tf2.21", "tf_keras", "graph", "graph", 1)]
    assert all(d.own and not d.together and d.cell["model"] == "mine" for d in own)
    assert all("spec" in side for d in own for side in (d.cell, d.reference_cell))
    headline = duetplan.plan(SPECS, ["tf1.14", "tf2.21"], "tf1.14", settings)
    assert headline and all(d.cell["model"] == "small" and not d.own for d in headline)
    assert duetplan.plan(SPECS, ["tf1.14", "tf2.21"], "tf1.14",
                         dict(settings, headline=False)) == []
    assert duetplan.plan_own(SPECS, ["tf1.14", "tf2.21"], "tf1.14",
                             dict(settings, models=[])) == []
