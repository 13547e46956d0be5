"""`make readme-answer` (run by `make republish` after scripts/republish.py, and by `make publish`
through scripts/publish.py: write_readme): write the published answer into README.md between its
markers, from docs/tables and the equivalence margin of the newest shown run, the one whose
config the derived files use (driver/report/readme_block.py). --check: exit 1 when the block is
stale."""
import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver.report import readme_block  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def published_margin(docs) -> float:
    """min_effect of the run the published tables come from (republish's choice of run and its
    config with the schema's defaults)."""
    import republish

    used = republish.shown_per_machine(republish.find_runs(Path(docs) / "data"))
    if not used:
        raise SystemExit(f"{docs}/data holds no published run: no answer to write")
    primary = max(used, key=lambda r: (str(r.get("ended_utc")), r["run_id"]))
    return float(republish._config(primary)["min_effect"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(REPO / "docs"))
    parser.add_argument("--readme", default=str(REPO / "README.md"))
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args(argv)
    tables = Path(args.docs) / "tables"
    margin = published_margin(args.docs)
    if args.check:
        text = Path(args.readme).read_text(encoding="utf-8")
        if readme_block.current(text, args.readme) != readme_block.block(tables, margin):
            print(f"{args.readme}: the answer block is not what {tables} gives; run "
                  "make republish", file=sys.stderr)
            return 1
        return 0
    changed = readme_block.write(args.readme, tables, margin)
    print(f"{args.readme}: answer block {'written' if changed else 'already current'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
