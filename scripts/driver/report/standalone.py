"""Render the report from a folder of tables alone (a published docs/tables, a results/tables or
the golden fixtures), without a study run: `python -m driver.report.standalone TABLES OUT.html
[--previous TABLES]` from scripts/. The processes' samples and facts are used when the folder holds
processes.json / facts.json, and left empty otherwise (no stem plots, no environments)."""
import argparse
import json
from pathlib import Path

from driver.report.render import render_results
from driver.tables.results import Results

REPO = Path(__file__).resolve().parents[3]


def render_folder(tables, out_html, previous=None, machine="", config=None) -> dict:
    results = Results(tables)
    return render_results(results, template=str(REPO / "report" / "template.html.j2"),
                          out_html=str(out_html), machine=machine or Path(tables).name,
                          config=config or {},
                          previous=Results(previous) if previous else None)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tables")
    parser.add_argument("out_html")
    parser.add_argument("--previous", help="a previous run's tables folder")
    parser.add_argument("--machine", default="")
    args = parser.parse_args(argv)
    info = render_folder(args.tables, args.out_html, args.previous, args.machine)
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
