"""A GPU env's build, for real (a tiny venv): on a machine with no GPU the build passes and its
manifest says the GPU check was not made; on a machine whose nvidia-smi lists a GPU (a stand-in
nvidia-smi on PATH) while the env's framework sees none, the build fails and the manifest gives
that reason, which the env's cells then carry."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from helpers import REPO

pytestmark = pytest.mark.e2e

# cudatoolkit (a conda package, ignored by the venv builder) makes it a GPU build; numpy alone
# installs in seconds and has no GPU query.
GPU_SPEC = """name: tiny-gpu
dependencies:
  - python=3.11
  - cudatoolkit=10.0
  - pip
  - pip:
      - numpy==1.26.4
"""


def build(spec, tmp_path, path_prefix=None):
    out = tmp_path / "manifest.json"
    env = dict(os.environ)
    if path_prefix:
        env["PATH"] = "%s:%s" % (path_prefix, env["PATH"])
    subprocess.run([sys.executable, str(REPO / "scripts" / "build_env.py"), "--spec", str(spec),
                    "--env-root", str(tmp_path / "venvs"), "--out", str(out),
                    "--lock", str(tmp_path / "timing.lock")],
                   check=True, capture_output=True, text=True, timeout=600, env=env)
    return json.loads(out.read_text())


def test_gpu_build_check_for_real(tmp_path):
    spec = tmp_path / "tiny-gpu.yaml"
    spec.write_text(GPU_SPEC)
    if shutil.which("nvidia-smi") is None:  # the no-GPU path, on a machine without one
        quiet = build(spec, tmp_path)
        assert quiet["status"] == "ok", quiet
        assert quiet["gpu_check"] == "not checked: nvidia-smi lists no GPU on this machine"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: Stand-in GPU (UUID: GPU-0)'\n")
    (fake / "nvidia-smi").chmod(0o755)
    failed = build(spec, tmp_path, path_prefix=fake)
    assert failed["status"] == "failed"
    assert "tiny-gpu is a GPU build and this machine has a GPU (GPU 0: Stand-in GPU" in \
        failed["reason"]
    assert "sees none (its GPU query failed: no GPU query for framework None)" in failed["reason"]
