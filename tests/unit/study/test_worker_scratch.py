"""A study leaves nothing in /tmp: each cell or duet worker gets TMPDIR, TEMP and TMP of its own
under the study's results (results/scratch/<machine>/<stage>/<env>/<job>/), removed when the
process ends, success or failure (TF's autograph writes its generated files through `tempfile`).
Real supervisors run real workers here: the numpy matmul cell in this Python, started through a
wrapper that records the worker's temp folder and leaves a file in it, as autograph does."""
import json
import os
import stat
import sys

import pytest

SCRIPTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts")
sys.path.insert(0, SCRIPTS)

import supervise_cell  # noqa: E402
import supervise_duet  # noqa: E402

MATMUL = {"model": "matmul", "data": "small", "keras": "none", "mode": "numpy", "api": "matmul",
          "input": "numpy", "device": "cpu"}
RULE = {"kind": "adaptive", "iterations": 10, "target_rel": 0.01, "min_samples": 5,
        "max_samples": 100, "budget_s": 0.05, "level": 0.95, "warmup_rel": 0.02,
        "warmup_block_s": 0.01, "warmup_max_s": 1, "min_samples_max_s": 5}


def wrapper(tmp_path, fail=False):
    """A 'python' that writes its TMPDIR, TEMP, TMP to seen.txt, leaves a file in that folder,
    then runs this Python (or exits 1 at once when `fail`)."""
    seen = tmp_path / "seen.txt"
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\necho \"$TMPDIR $TEMP $TMP\" >> %s\n"
                      "mktemp \"$TMPDIR/__autograph_generated_fileXXXX.py\" >/dev/null\n%s\n"
                      % (seen, "exit 1" if fail else 'exec %s "$@"' % sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"python_executable": str(script), "status": "ok",
                                    "framework": "tensorflow", "name": "numpy-only"}))
    return str(manifest), seen


def check_scratch(study, seen, stage, job):
    folder = os.path.join(str(study), "results", "scratch", "m", stage, "numpy-only", job)
    lines = seen.read_text().split("\n")
    assert lines[0].split() == [folder] * 3, lines
    assert not (study / "results" / "scratch").exists(), "the scratch folder is left behind"


def test_the_scratch_folder_follows_the_result_file():
    out = "/s/results/duets/m/tf2.21/abc.r3.json"
    assert supervise_cell.scratch_path(out, "m") == "/s/results/scratch/m/duets/tf2.21/abc.r3"
    assert supervise_cell.scratch_path("/x/y.json", "m") == "/x/.scratch-y"


def test_the_scratch_folder_is_removed_when_the_block_fails(tmp_path):
    env, out = {}, tmp_path / "results" / "cells" / "m" / "e" / "c.r0.json"
    with pytest.raises(RuntimeError):
        with supervise_cell.worker_scratch(str(out), "m", env) as folder:
            assert env["TMPDIR"] == env["TEMP"] == env["TMP"] == folder
            open(os.path.join(folder, "left.py"), "w").close()
            raise RuntimeError("worker crashed")
    assert not os.path.exists(folder) and not (tmp_path / "results" / "scratch").exists()


@pytest.mark.parametrize("fail", [False, True])
def test_a_cell_workers_temp_files_go_to_its_scratch_and_are_removed(tmp_path, monkeypatch, fail):
    monkeypatch.chdir(tmp_path)
    manifest, seen = wrapper(tmp_path, fail)
    out = tmp_path / "results" / "cells" / "m" / "numpy-only" / "c.r0.json"
    supervise_cell.main(["--cell", json.dumps(MATMUL), "--rule", json.dumps(RULE),
                         "--manifest", manifest, "--env", "numpy-only", "--machine", "m",
                         "--foreign-cpu-max-share", "1", "--lock", str(tmp_path / "lock"),
                         "--out", str(out)])
    rec = json.loads(out.read_text())
    assert (rec["status"] == "failed") == fail, (rec.get("reason"), rec.get("log_tail"))
    check_scratch(tmp_path, seen, "cells", "c.r0")


@pytest.mark.parametrize("fail", [False, True])
def test_a_duets_workers_temp_files_go_to_its_scratch_and_are_removed(tmp_path, monkeypatch, fail):
    monkeypatch.chdir(tmp_path)
    manifest, seen = wrapper(tmp_path, fail)
    out = tmp_path / "results" / "duets" / "m" / "numpy-only" / "c.r0.json"
    supervise_duet.main([
        "--cell", json.dumps(MATMUL), "--reference-cell", json.dumps(MATMUL),
        "--rule", json.dumps(RULE), "--manifest", manifest, "--reference-manifest", manifest,
        "--env", "numpy-only", "--reference-env", "numpy-only", "--machine", "m",
        "--windows", "2", "--window-s", "0.02", "--timeout-s", "60",
        "--lock", str(tmp_path / "lock"), "--out", str(out)])
    rec = json.loads(out.read_text())
    assert (rec["status"] == "failed") == fail, (rec.get("reason"), rec.get("log_tail"))
    check_scratch(tmp_path, seen, "duets", "c.r0")
