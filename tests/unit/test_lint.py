"""The project's own checks, as part of the suite: snakemake --lint, snakefmt --check, ruff."""
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import REPO

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("cmd", [
    [str(BIN / "snakemake"), "--lint"],
    [str(BIN / "snakefmt"), "--check", "."],
    [str(BIN / "ruff"), "check", "."],
], ids=["snakemake-lint", "snakefmt", "ruff"])
def test_check_is_clean(cmd):
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "Lints for" not in out, out[-3000:]
