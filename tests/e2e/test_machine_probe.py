"""The machine probe guards a key (docs/machines.md): a tiny study records the key's reference
probe; after a planted change of that reference, a study that adds cells under the key stops before
any cell runs, saying what changed and how to go on; with force_machine=true it goes on and the
override is recorded. The study's cells are its target (the round markers), not the report.
Run targeted: pytest -m e2e -k machine_probe."""
import json
import math
import re

import pytest
from helpers import quick_config, snakemake, write_config

from driver.study import layout, provenance
from tfspeed.cells import parse_cell_id

pytestmark = pytest.mark.e2e

TINY_GRID = {"name": "tiny", "envs": "all", "pairs": [["matmul", "matmul"]], "keras": ["none"],
             "modes": ["numpy"], "apis": ["matmul"], "inputs": ["numpy"], "devices": ["cpu"]}


def tiny(repeats, **changes):
    config = quick_config(envs=["tf1.14"], reference_env="tf1.14", repeats=repeats, twins=0,
                          grids=[TINY_GRID], probe={"processes": 2, "min_change": 0.10})
    config["allocation"] = {"budget_s": 0}
    config.update(changes)
    return config


def test_a_planted_probe_change_stops_the_study_before_any_cell(tmp_path):
    key = provenance.machine_key()
    work = tmp_path / "work"
    cell = "matmul-matmul.none.numpy.matmul.numpy.cpu"
    first = snakemake(work, write_config(tmp_path / "one.yaml", tiny(1)),
                      layout.round_marker(key, 0), "--cores", "2", check=True)
    reference = work / layout.probe_reference(key)
    assert reference.exists(), first.stderr[-3000:]
    ref = json.loads(reference.read_text())
    assert ref["fingerprint"]["hash"].startswith(key.rsplit("-", 1)[1])
    assert set(ref["cells"]) >= {cell} and ref["cells"][cell]["n"] == 2
    r0 = json.loads((work / layout.cell_path(key, "tf1.14", parse_cell_id(cell), 0)).read_text())
    assert r0["provenance"]["machine"]["probe"]["verdict"] == "ok"
    assert r0["provenance"]["machine"]["fingerprint"] == ref["fingerprint"]

    # plant: the reference says every probe cell took a million times as long: beyond the CI of two
    # processes a side even on a machine so loaded that its processes differ 3x (the test's power
    # at ordinary spreads is unit-tested)
    for summary in ref["cells"].values():
        summary["log_medians"] = [v + math.log(1e6) for v in summary["log_medians"]]
        summary["mean"] += math.log(1e6)
        summary["median_s"] *= 1e6
    reference.write_text(json.dumps(ref))
    second = snakemake(work, write_config(tmp_path / "two.yaml", tiny(2)),
                       layout.round_marker(key, 1), "--cores", "2")
    out = second.stdout + second.stderr
    assert second.returncode != 0
    assert "not the one that wrote the cells" in out and "force_machine=true" in out, out[-4000:]
    assert re.search(r"runs [0-9.]+e-0[5-8]x its reference time", out), out[-4000:]
    assert not (work / layout.cell_path(key, "tf1.14", parse_cell_id(cell), 1)).exists()
    assert (work / layout.probe_dir(key) / "probe.stopped.json").exists()

    third = snakemake(work, write_config(tmp_path / "three.yaml", tiny(2, force_machine=True)),
                      layout.round_marker(key, 1), "--cores", "2", check=True)
    r1 = json.loads((work / layout.cell_path(key, "tf1.14", parse_cell_id(cell), 1)).read_text())
    assert r1["status"] == "ok", r1.get("reason")
    assert r1["provenance"]["machine"]["probe"]["verdict"] == "forced"
    overrides = json.loads((work / layout.probe_dir(key) / "overrides.json").read_text())
    assert len(overrides) == 1, third.stderr[-2000:]
    assert re.search(r"runs [0-9.]+e-0[5-8]x", overrides[0]["changes"][0])
    # a finished study reruns nothing, the probe included
    again = snakemake(work, write_config(tmp_path / "three.yaml", tiny(2, force_machine=True)),
                      layout.round_marker(key, 1), "-n", check=True)
    assert "Nothing to be done" in again.stdout + again.stderr
