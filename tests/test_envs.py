"""The venv builder: interpreters, hash-keyed reuse, hash locks, and failures that name their cause."""
import json
import subprocess
import sys

import pytest
from helpers import REPO

TINY = """name: tiny
dependencies:
  - python=3.11
  - pip
  - pip:
      - numpy==1.26.4
"""


def build(spec, root, tmp_path, *extra):
    out = tmp_path / ("m-%s.json" % spec.stem)
    subprocess.run([sys.executable, str(REPO / "scripts" / "build_env.py"), "--spec", str(spec),
                    "--env-root", str(root), "--out", str(out),
                    "--lock", str(tmp_path / "timing.lock"), *extra],
                   check=True, capture_output=True, text=True, timeout=600)
    return json.loads(out.read_text())


@pytest.fixture
def tiny(tmp_path):
    spec = tmp_path / "envs" / "tiny.yaml"
    spec.parent.mkdir()
    spec.write_text(TINY)
    return spec


def test_build_reuse_and_rebuild_on_change(tiny, tmp_path):
    root = tmp_path / "venvs"
    first = build(tiny, root, tmp_path)
    assert first["status"] == "ok", first
    assert first["packages"] == {"numpy": "1.26.4"} and first["python"].startswith("3.11.")
    again = build(tiny, root, tmp_path)
    assert again["reused"] and again["venv"] == first["venv"]
    tiny.write_text(TINY.replace("numpy==1.26.4", "numpy==1.26.3"))
    changed = build(tiny, root, tmp_path)
    assert changed["venv"] != first["venv"] and changed["packages"] == {"numpy": "1.26.3"}


def test_missing_interpreter_names_where_it_looked(tmp_path):
    spec = tmp_path / "old.yaml"
    spec.write_text(TINY.replace("python=3.11", "python=3.2"))
    manifest = build(spec, tmp_path / "venvs", tmp_path)
    assert manifest["status"] == "failed"
    assert "no Python 3.2 found" in manifest["reason"]
    assert "pyenv" in manifest["reason"] and "interpreters" in manifest["reason"]


def test_configured_interpreter_is_used(tiny, tmp_path):
    python311 = build(tiny, tmp_path / "v", tmp_path)["base_interpreter"]
    manifest = build(tiny, tmp_path / "v2", tmp_path, "--interpreters",
                     json.dumps({"3.11": python311}))
    assert manifest["base_interpreter"] == python311


@pytest.mark.parametrize("text, words", [
    ("dependencies: [python=3.7\n  - : :", ["not valid YAML", "bad.yaml"]),
    ("name: x\nchannels: []\n", ["bad.yaml", "not a conda environment file"]),
    (TINY.replace("numpy==1.26.4", "numpy>=1"), ["bad.yaml", "not pinned exactly"]),
    (TINY.replace("numpy==1.26.4", "numpy==0.0.1"), ["numpy==0.0.1"]),
])
def test_bad_spec_fails_with_its_cause(tmp_path, text, words):
    spec = tmp_path / "bad.yaml"
    spec.write_text(text)
    manifest = build(spec, tmp_path / "venvs", tmp_path)
    assert manifest["status"] == "failed"
    told = manifest["reason"] + manifest.get("log_tail", "")
    for word in words:
        assert word in told, told


def test_hash_lock_is_used_and_enforced(tiny, tmp_path):
    subprocess.run([sys.executable, str(REPO / "scripts" / "lock_envs.py"), "--env-dir",
                    str(tiny.parent)], check=True, timeout=300)
    lock = tiny.with_suffix(".lock.txt")
    assert "--hash=sha256:" in lock.read_text()
    manifest = build(tiny, tmp_path / "venvs", tmp_path)
    assert manifest["status"] == "ok" and manifest["locked"]
    # a lock whose hashes match no file of the package must stop the build
    lines = [line for line in lock.read_text().splitlines() if "--hash" not in line]
    lock.write_text("\n".join(lines).rstrip(" \\") + " \\\n    --hash=sha256:" + "0" * 64 + "\n")
    tampered = build(tiny, tmp_path / "venvs", tmp_path)
    assert tampered["status"] == "failed", tampered
    assert "hash" in (tampered["reason"] + tampered["log_tail"]).lower()
