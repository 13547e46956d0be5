"""The GPU env files can run on a GPU the way they say: a TF from 2.14 on through pip's
`tensorflow[and-cuda]` (CUDA as nvidia-* wheels), an older TF only with conda's cudatoolkit/cudnn
(no pip wheel provides its CUDA), and each file's comment says which of the two it is."""
from pathlib import Path

import pytest
import yaml

from driver.study import envspec
from tfspeed.versions import version_tuple

REPO = Path(__file__).resolve().parents[3]
GPU_ENVS = [p for p in sorted((REPO / "envs").glob("*.yaml"))
            if envspec.parse_spec(p.stem, yaml.safe_load(p.read_text()), str(p))["build"] == "gpu"]


def test_there_are_gpu_envs():
    assert {p.stem for p in GPU_ENVS} >= {"tf1.15-gpu", "tf2.21-gpu"}


@pytest.mark.parametrize("path", GPU_ENVS, ids=lambda p: p.stem)
def test_gpu_env_gets_its_cuda_where_it_can(path):
    text = path.read_text()
    facts = envspec.parse_spec(path.stem, yaml.safe_load(text), str(path))
    if facts["framework"] != "tensorflow":
        return
    conda = {c.split("=")[0] for c in facts["conda_packages"]}
    comment = "\n".join(line for line in text.splitlines() if line.startswith("#"))
    if version_tuple(facts["framework_version"]) >= (2, 14):
        assert any(p.startswith("nvidia-") for p in facts["pins"]), "CUDA wheels pinned"
        assert "tensorflow[and-cuda]" in text and "2.14" in comment
    else:
        assert {"cudatoolkit", "cudnn"} <= conda, "conda's CUDA is the only source"
        assert "--sdm conda" in comment and "runs on the CPU" in comment
