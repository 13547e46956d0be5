"""The guidance lists and the source study's layout (driver/tables/source_layout.py, and the report's
source_table.py that shows it).
"""


import numpy as np
import pandas as pd
import pytest
from cellfiles import run, write_cell, write_processes

from driver.report import source_table as seedtable
from driver.tables import source_layout as seedview
from driver.tables.labels import MODE
from driver.tables.ordering import env_order
from tfspeed import models as tfmodels

# --- guidance and the seed view -----------------------------------------------------------------

def test_guidance_lists(tmp_path):
    root = tmp_path / "cells"
    files = [
        *write_processes(root, "tf2.0", 0.0100, mode="graph"),  # fastest
        *write_processes(root, "tf2.0", 0.0100, mode="eager", api="fit"),  # tie: DO
        *write_processes(root, "tf2.0", 0.0150, mode="eager"),  # 1.5x: neither
        *write_processes(root, "tf2.0", 0.0210, mode="run_eagerly"),  # 2.1x: DONT
        *write_processes(root, "tf2.0", 0.0500, keras="tf.python.keras"),  # 5x: DONT
    ]
    guide = run(tmp_path, files)[0]["guidance"]
    assert list(guide["list"]) == ["DO", "DO", "DONT", "DONT", "neither"]  # every cell a row
    assert list(guide["task"]) == ["train"] * 5
    assert list(guide["ratio_to_fastest"]) == pytest.approx([1.0, 1.0, 5.0, 2.1, 1.5], rel=1e-3)
    assert guide.loc[2, "configuration"] == \
        "train_on_batch() + numpy + tf.python.keras + TF 2.0.0 + Eager + CPU"
    assert "fit() 1 step/call + numpy + tf.keras + TF 2.0.0 + Eager + CPU" in set(
        guide["configuration"])


def test_seed_view(seed_case):
    view = seed_case[0]["seed_view"]
    assert len(view) == 1
    row = view.iloc[0]
    graph = MODE["graph"]  # the mode's name in the workbook's words (labels.py)
    assert row[f"tf1.14 {graph} s/iter"] == pytest.approx(0.010, rel=1e-3)
    assert row["tf2.0 Eager s/iter"] == pytest.approx(0.015, rel=1e-3)
    assert row[f"TF2 vs TF1 % tf2.0 {graph}"] == pytest.approx(-100.0, rel=1e-3)
    assert row["TF2 vs TF1 % tf2.0 Eager"] == pytest.approx(100.0, rel=1e-3)
    assert row["GvE % tf1.14"] == pytest.approx(200.0, rel=1e-3)
    assert row["GvE % tf2.0"] == pytest.approx(-100.0 / 3.0, rel=1e-3)
    assert row[seedview.VERDICT_PREFIX + "GvE % tf2.0"] == "right_faster"  # eager faster
    assert row[seedview.VERDICT_PREFIX + "TF2 vs TF1 % tf2.0 Eager"] == "left_faster"


def test_seed_view_shows_one_tf2_env_the_seeds(grid_case):
    """One TF 2 env beside the reference: the one with the most same-flavour pairs (tf2.0 has
    keras, tf.keras and tf.python.keras like tf1.14; tf2.15 tf.keras only; tf2.21 none)."""
    result = grid_case[0]
    view = result["seed_view"]
    assert seedview.seed_tf2_env(result["cells"], result, "tf1.14", env_order(result["cells"])) == "tf2.0"
    envs = {c.split(" ")[0] for c in view.columns if c.endswith("s/iter")}
    assert envs == {"tf1.14", "tf2.0"}
    assert not any("tf2.15" in c or "tf2.21" in c for c in view.columns)
    assert len(view.columns) <= len(seedview.SEED_INDEX) + 8 + 4  # 8 values, 4 verdicts


def _blocks_in_seed_order(view):
    """Each block's rows are together, model x data in the seed's order."""
    keys = [tuple(r) for r in view[seedview.BLOCK].itertuples(index=False)]
    seen, previous = set(), None
    for key in keys:
        if key != previous:
            assert key not in seen, f"block {key} split"
            seen.add(key)
            previous = key
    order = {m: i for i, m in enumerate(tfmodels.MODELS)}
    data = {d: i for i, d in enumerate(tfmodels.DATA)}
    for _, part in view.groupby(seedview.BLOCK, sort=False):
        ranks = [(order[m], data[d]) for m, d in zip(part["model"], part["data"])]
        assert ranks == sorted(ranks)
    return len(seen)


def test_seed_view_block_layout(tmp_path):
    """The seed's blocks: rows model x data within each configuration, no column empty for the
    whole sheet, and a TF 1 column never holds a cell of another Keras flavour: keras3 /
    tf_keras rows leave it blank and show their % in a column labelled 'vs TF 1 tf.keras'."""
    root = tmp_path / "cells"
    rng = np.random.default_rng(7)
    files = []
    sizes = [("small", "small"), ("small", "medium"), ("medium", "small"), ("medium", "medium")]
    for model, data in sizes:
        for mode in ("graph", "eager"):
            for api in ("train_on_batch", "fit"):
                axes = dict(model=model, data=data, mode=mode, api=api)
                files += write_processes(root, "tf1.14", float(rng.uniform(0.01, 0.03)),
                                         keras="tf.keras", **axes)
                files += write_processes(root, "tf2.21", float(rng.uniform(0.01, 0.03)),
                                         keras="tf_keras", **axes)
                if mode == "eager":
                    files += write_processes(root, "tf2.21", float(rng.uniform(0.01, 0.03)),
                                             keras="keras3", **axes)
    files.append(write_cell(root, "tf2.21", keras="none", model="matmul", data="matmul",
                            api="matmul", mode="eager", median=0.01))
    result = run(tmp_path, files)[0]
    view = result["seed_view"]
    assert _blocks_in_seed_order(view) == 6  # tf.keras, tf_keras, keras3 x 2 APIs
    assert set(view["model"]) == {"small", "medium"}  # no matmul: not a seed model
    values = [c for c in view.columns if c not in seedview.SEED_INDEX]
    assert all(view[c].notna().any() for c in values), "a column empty for the whole sheet"
    # TF 1 columns: only tf1.14's own cell of the row's flavour
    cells = result["cells"].set_index(["env", "keras", "mode", "api", "model", "data"])
    for row in view.to_dict("records"):
        for mode in ("graph", "eager"):
            got = row[seedview.time_col("tf1.14", mode)]
            key = ("tf1.14", row["keras"], mode, row["api"], row["model"], row["data"])
            if row["keras"] in ("keras3", "tf_keras"):
                assert pd.isna(got), row
            else:
                assert got == pytest.approx(cells.loc[key, "median_s"])
    # the cross-flavour %: explicitly labelled, equal to tf2_vs_tf1's, with a note
    assert "TF2 vs TF1 % tf2.21 Graph" not in view.columns  # no same-flavour pair exists
    cross = seedview.tf2_vs_tf1_col("tf2.21", "eager", "tf.keras")
    assert cross == "TF2 vs TF1 % tf2.21 Eager vs TF 1 tf.keras"
    tf2 = result["tf2_vs_tf1"].set_index(["left_keras", "mode", "api", "model", "data"])
    keras3 = view[view["keras"] == "keras3"]
    assert len(keras3) == 8
    for row in keras3.to_dict("records"):
        want = tf2.loc[("keras3", "eager", row["api"], row["model"], row["data"])]
        assert row[cross] == pytest.approx(want["pct"])
        assert row[seedview.VERDICT_PREFIX + cross] == want["verdict"]
        assert "no keras3 in tf1.14" in row["note"] and "tf.keras" in row["note"]
    assert view.loc[view["keras"] == "tf.keras", "note"].isna().all()
    assert view.loc[view["keras"] == "tf.keras", cross].isna().all()
    # the report's blocks: the same blocks, the note under the caption, no empty column
    blocks = seedtable.seed_blocks(result["cells"], result, "tf1.14", env_order(result["cells"]))
    assert len(blocks) == 6
    # block titles name the API as every table labels it: the one-step fit is told apart
    titles = [b["title"] for b in blocks]
    assert sum(t.startswith("fit() 1 step/call + numpy + ") for t in titles) == 3
    assert sum(t.startswith("train_on_batch() + numpy + ") for t in titles) == 3
    for block in blocks:
        labels = [c["label"] for c in block["table"]["columns"]]
        assert labels[:2] == ["model", "data"] and "note" not in labels
        assert len(block["table"]["rows"]) == 4
        for j in range(2, len(labels)):
            assert any(r[j]["text"] not in ("", "–") for r in block["table"]["rows"]), labels[j]
        if "keras3" in block["title"] or "tf_keras" in block["title"]:
            assert "tf1.14 Graph ms" not in labels and "tf1.14 Eager ms" not in labels
            assert "no " in block["title"]


