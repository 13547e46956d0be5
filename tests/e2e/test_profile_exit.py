"""Snakemake under the workflow's profiles ends soon after its last job. Its job rate limit
(`max-jobs-per-timespan`) starts a re-evaluation timer per scheduling round, a thread the process
waits for at exit: with "10000/60s" every run (`make study`, `make quick`, each of the test
suite's runs) lingered a minute after "Elapsed time" (seen 2026-11-27). A one-job workflow under
each profile's limit must exit within the limit's timespan and a few seconds of start-up."""
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")


def timespan(limit: str) -> float:
    return float(limit.split("/")[1].rstrip("s"))


@pytest.mark.e2e
@pytest.mark.parametrize("profile", ["default", "slurm"])
def test_snakemake_exits_soon_after_its_last_job(tmp_path, profile):
    limit = yaml.safe_load((REPO / "profiles" / profile / "config.yaml").read_text())[
        "max-jobs-per-timespan"]
    assert timespan(limit) <= 10, limit
    (tmp_path / "Snakefile").write_text('rule all:\n    output: "x"\n    shell: "touch {output}"\n')
    t0 = time.monotonic()
    subprocess.run([SNAKEMAKE, "--cores", "1", "-q", "--max-jobs-per-timespan", limit],
                   cwd=tmp_path, check=True, capture_output=True, timeout=300)
    wall = time.monotonic() - t0
    assert (tmp_path / "x").exists()
    assert wall < timespan(limit) + 15, wall


@pytest.mark.e2e
def test_the_timespan_is_what_it_lingers_for(tmp_path):
    """The check above can fail: a 20 s timespan makes the same one-job run take 20 s or more."""
    (tmp_path / "Snakefile").write_text('rule all:\n    output: "x"\n    shell: "touch {output}"\n')
    t0 = time.monotonic()
    subprocess.run([SNAKEMAKE, "--cores", "1", "-q", "--max-jobs-per-timespan", "10000/20s"],
                   cwd=tmp_path, check=True, capture_output=True, timeout=300)
    assert time.monotonic() - t0 >= 20
