"""The workflow's own env (rules/envs/driver.yaml, for --sdm conda) pins what requirements.txt pins
for the driver, and sits apart from the study's env files under envs/."""
import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[3]
TOOLS = {"pytest", "pytest-xdist", "ruff", "snakefmt", "snakemake", "snakemake-executor-plugin-slurm", "uv"}


def pins(lines):
    out = {}
    for line in lines:
        match = re.match(r"^\s*([A-Za-z0-9_.\-]+)(\[[^\]]*\])?\s*==\s*([^\s;#]+)", line)
        if match:
            out[match.group(1).lower()] = match.group(3)
    return out


def test_the_driver_env_pins_the_drivers_requirements():
    wanted = {k: v for k, v in pins((REPO / "requirements.txt").read_text().splitlines()).items()
              if k not in TOOLS}
    doc = yaml.safe_load((REPO / "rules" / "envs" / "driver.yaml").read_text())
    pip = next(d["pip"] for d in doc["dependencies"] if isinstance(d, dict))
    assert pins(pip) == wanted


def test_the_study_envs_folder_holds_study_subjects_only():
    assert not (REPO / "envs" / "workflow").exists()
    for smk in (REPO / "rules").glob("*.smk"):
        assert "envs/workflow" not in smk.read_text(), smk.name
