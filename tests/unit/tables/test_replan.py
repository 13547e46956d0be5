"""scripts/replan.py: the second look's plan replayed on a run's first look. On planted duet files
(three eager rows against TF 1.14, all decided against it; the release between the first two
near-equal and open) it keeps the first look only, plans without and with the releases, and
counts the releases at larger sizes from the study's own code."""
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "scripts"))

import replan  # noqa: E402

CELL = {"model": "small", "data": "small", "keras": "tf.keras", "mode": "eager",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}


def files(tmp_path, env, version, x):
    folder = tmp_path / "results" / "duets" / "m" / env
    folder.mkdir(parents=True, exist_ok=True)
    for i, v in enumerate(x):
        rec = {"machine": "m", "env": env, "cell": CELL, "reference_env": "tf1.14",
               "reference_cell": CELL, "status": "ok", "replicate": i, "kind": "duet",
               "log_ratio": float(v), "left_median_s": math.exp(float(v)) * 0.01,
               "right_median_s": 0.01, "wall_s": 6.0, "left_framework_version": version,
               "right_framework_version": "1.14.0",
               "design": {"replicates": 4, "max_replicates": 10}}
        (folder / f"r{i}.json").write_text(json.dumps(rec))


def test_replan_on_planted_files(tmp_path, capsys):
    rng = np.random.default_rng(5)
    files(tmp_path, "tf2.1", "2.1.0", 0.50 + 0.08 * rng.standard_normal(4))
    # a fifth replicate beyond the first look: left out
    files(tmp_path, "tf2.2", "2.2.0", np.r_[0.58 + 0.08 * rng.standard_normal(4), 9.0])
    files(tmp_path, "tf2.3", "2.3.0", 1.50 + 0.01 * rng.standard_normal(4))
    replan.main([str(tmp_path / "results"), "--available-s", "1000", "--n", "10", "40"])
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    rows, rel = out["plans"]["rows"], out["plans"]["releases"]
    assert rows["rows_extended"] == 0 and rows["families"] == {}  # every row decided
    # the open release brings both its rows: 6 more duets each at 6 s
    assert rel["rows_extended"] == 2 and rel["seconds"] == pytest.approx(72.0)
    assert rel["families"]["duets_releases (eager)"]["items"] == 1
    sizes = out["releases_at_sizes"]["eager"]
    assert (sizes["releases"], sizes["decided_first_look"], sizes["open"]) == (2, 1, 1)
    assert 1 < sizes["expected_decided_at_10"] < sizes["expected_decided_at_40"] <= 2
    with pytest.raises(SystemExit, match="no budgeted plan"):
        replan.main([str(tmp_path / "results")])
