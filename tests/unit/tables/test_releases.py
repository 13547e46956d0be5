"""driver/tables/releases.py through the real aggregation: each release against the one before
it (adjacent_releases, in the study's one BH family, with its CSV and workbook sheet) and the
change points along each configuration's versions (changepoints)."""
import json

import numpy as np
import openpyxl
import pandas as pd
import pytest
from cellfiles import run, write_processes

from driver.stats import verdicts
from driver.tables import bundle, registry

TF = {"tf1.14": "1.14.0", "tf1.15": "1.15.5", "tf2.0": "2.0.4", "tf2.1": "2.1.4", "tf2.2": "2.2.3",
      "tf2.3": "2.3.4", "tf2.15": "2.15.1", "tf2.16": "2.16.2"}


def cell(root, env, median, k=4, started=None, **axes):
    """write_processes with the env's real TF version (and a start time, if given)."""
    files = write_processes(root, env, median, k=k, spread=0.01, **axes)
    for path in files:
        doc = json.loads(path.read_text())
        doc["framework_version"] = doc["provenance"]["env"]["framework_version"] = TF[env]
        if started:
            doc["started_utc"] = started
        path.write_text(json.dumps(doc))
    return files


# eager train_on_batch: 2.0 is 2x slower than 1.15 and stays so; 2.3 is 1.5x faster than 2.2
STEPS = {"tf1.14": 0.010, "tf1.15": 0.010, "tf2.0": 0.020, "tf2.1": 0.020, "tf2.2": 0.020,
         "tf2.3": 0.020 / 1.5}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("releases")
    root = tmp / "cells"
    files = []
    for env, median in STEPS.items():
        files += cell(root, env, median)
        files += cell(root, env, 0.005, mode="graph")  # graph: flat
    files += cell(root, "tf1.14", 0.030, keras="keras")  # standalone keras: 1.14 and 2.3 only
    files += cell(root, "tf2.3", 0.030, keras="keras")
    return run(tmp, files)


def test_adjacent_rows_pair_consecutive_versions_later_on_the_left(study):
    tabs, _, _ = study
    adj = tabs["adjacent_releases"]
    eager = adj[(adj["mode"] == "eager") & (adj["keras"] == "tf.keras")]
    envs = list(STEPS)
    assert list(zip(eager["right_env"], eager["left_env"])) == list(zip(envs, envs[1:]))
    by_left = eager.set_index("left_env")
    assert by_left.at["tf2.0", "ratio"] == pytest.approx(2.0, rel=1e-6)
    assert by_left.at["tf2.0", "verdict"] == verdicts.RIGHT_FASTER  # the later release is slower
    assert by_left.at["tf2.3", "verdict"] == verdicts.LEFT_FASTER
    assert by_left.at["tf2.1", "verdict"] == verdicts.EQUIVALENT
    assert (eager["releases_skipped"] == 0).all()


def test_a_configuration_missing_in_between_spans_the_gap(study):
    tabs, _, _ = study
    adj = tabs["adjacent_releases"]
    gap = adj[adj["keras"] == "keras"]
    assert len(gap) == 1
    assert (gap["right_env"].iloc[0], gap["left_env"].iloc[0]) == ("tf1.14", "tf2.3")
    assert gap["releases_skipped"].iloc[0] == 4


def test_adjacent_rows_are_in_the_study_bh_family(study):
    tabs, _, _ = study
    stacked = pd.concat([tabs[n] for n in registry.COMPARISONS if len(tabs[n])])
    expected = verdicts.bh_adjust(stacked["p"].to_numpy(dtype=float))
    assert np.allclose(stacked["p_adjusted"], expected, equal_nan=True)
    assert "adjacent_releases" in registry.COMPARISONS


def test_change_points_at_the_planted_releases(study):
    tabs, _, _ = study
    cps = tabs["changepoints"]
    eager = cps[(cps["mode"] == "eager") & (cps["keras"] == "tf.keras")]
    assert list(eager["after_env"]) == ["tf2.0", "tf2.3"]
    assert list(eager["direction"]) == ["slower", "faster"]
    for (_, row), planted in zip(eager.iterrows(), (2.0, 1 / 1.5)):
        assert row["ratio_ci_low"] < planted < row["ratio_ci_high"]
    graph = cps[cps["mode"] == "graph"]
    assert list(graph["direction"]) == ["none"]
    assert list(cps[cps["keras"] == "keras"]["direction"]) == ["not segmented"]


def test_csv_and_workbook_sheet(study):
    _, out, tables = study
    adj = bundle.read_table(tables["adjacent_releases"])
    assert set(adj["left_framework_version"]) >= {"2.0.4", "2.3.4"}  # versions stay text
    cps = bundle.read_table(tables["changepoints"])
    assert set(cps["after_version"].dropna()) == {"2.0.4", "2.3.4"}
    sheets = openpyxl.load_workbook(out / "study.xlsx").sheetnames
    assert {"adjacent_releases", "changepoints"} <= set(sheets)


def test_tf_keras_continues_the_tf_keras_series_from_tf_2_16(tmp_path):
    root = tmp_path / "cells"
    files = cell(root, "tf2.15", 0.010) + cell(root, "tf2.16", 0.012, keras="tf_keras") \
        + cell(root, "tf2.16", 0.011, keras="keras3")
    tabs, _, _ = run(tmp_path, files)
    adj = tabs["adjacent_releases"]
    assert len(adj) == 1
    row = adj.iloc[0]
    assert (row["keras"], row["left_keras"], row["right_keras"]) == ("tf.keras", "tf_keras",
                                                                     "tf.keras")
    assert row["ratio"] == pytest.approx(1.2, rel=1e-6)
