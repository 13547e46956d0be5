"""Shared by the workflow tests: run Snakemake the way a user does, on a config of our making."""
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
QUICK = REPO / "tests" / "quick.yaml"


def quick_config(**changes):
    config = yaml.safe_load(QUICK.read_text())
    config.update(changes)
    return config


def write_config(path, config):
    path = Path(path)
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snakemake(workdir, configfile, *args, timeout=1800, check=False):
    """Run snakemake from the repository on `configfile`, writing under `workdir`."""
    cmd = [SNAKEMAKE, *args, "--directory", str(workdir), "--configfile", str(configfile)]
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError("snakemake failed (%d):\n%s\n%s" % (
            proc.returncode, proc.stdout[-4000:], proc.stderr[-8000:]))
    return proc
