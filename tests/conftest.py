"""Make scripts/ importable (`import tfspeed.stats`, `from driver import ...`); the quick study
fixture."""
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))


@pytest.fixture(scope="session")
def quick_run(tmp_path_factory):
    """The quick preset, once per test session: what `make quick` does, in a fresh directory."""
    from helpers import REPO, snakemake

    work = tmp_path_factory.mktemp("quick")
    proc = snakemake(work, REPO / "tests" / "quick.yaml", "--cores", "2", check=True)
    return work, proc
