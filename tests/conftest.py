"""Make scripts/ importable (`import tfspeed.stats`, `from driver import ...`) and the shared test
support (tests/support/: helpers, synthetic cell files and studies, the browser and cluster
drivers, the golden outputs' writer); the quick study fixture.

Layout: unit/<layer>/ (pure tests, one folder per layer of scripts/driver/ and one for
scripts/tfspeed/), e2e/ (tests that run Snakemake: the workflow, envs, config, fidelity,
replication), browser/ (the report in headless Chromium), cluster/ (a local SLURM cluster).
"""
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
for folder in (TESTS.parent / "scripts", TESTS / "support"):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """The quick preset, once per test session: what `make quick` does, in a fresh directory."""
    from helpers import REPO, snakemake

    work = tmp_path_factory.mktemp("quick")
    proc = snakemake(work, REPO / "tests" / "quick.yaml", "--cores", "2", check=True)
    return work, proc


@pytest.fixture(scope="session")
def rendered(tmp_path_factory):
    """The report of the synthetic study (tests/support/report_study.py), rendered once."""
    from report_study import render_synthetic

    return render_synthetic(tmp_path_factory.mktemp("study"))
