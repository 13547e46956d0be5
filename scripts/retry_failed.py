"""Delete failed cell files, so that the next run of the study runs those cells again.

Failed cells keep their file on purpose: the study completes and the report shows them. When the
cause is fixed (an env file, a limit in config), run this, then the study. Skipped cells are kept:
they are impossible, not broken. Usage: python scripts/retry_failed.py results/cells
"""
import json
import sys
from pathlib import Path


def main(root):
    removed = 0
    for path in sorted(Path(root).glob("*/*/*.json")):
        try:
            status = json.loads(path.read_text()).get("status")
        except ValueError:
            status = "unreadable"
        if status in ("failed", "unreadable"):
            print("removing %s (%s)" % (path, status))
            path.unlink()
            removed += 1
    manifests = Path(root).parent / "envs"
    for path in sorted(manifests.glob("*/*.json")):
        if json.loads(path.read_text()).get("status") != "ok":
            print("removing %s (failed env build)" % path)
            path.unlink()
    if removed:
        # Snakemake does not remake a missing input of an up-to-date output: drop the table that
        # needs the cell files, so the next run remakes them, then the tables and the report.
        table = Path(root).parent / "tables" / "cells.csv"
        if table.exists():
            table.unlink()
    print("%d failed cells removed; run the study again to redo them" % removed)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "results/cells")
