"""`make sides-check R="<results dir> [...]"`: do a duet's sides give a cell the absolute time
its own fresh processes give (config `duets.sides_as_cells`)?

For each results folder that holds both (a run with `sides_as_cells: false`, or made before it),
and for all of them pooled, the mean log ratio side / own over the cells that have both, its
(1 - 2 alpha) and (1 - alpha) intervals and the verdict at the study's margin
(driver/tables/sides_agreement.py), for the duets' sides (what the study takes) and the pairs'
sides (what it does not). No timing.
Prints a JSON line last.
"""
import argparse
import json
import math
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from driver.study import layout, record  # noqa: E402
from driver.tables.duets import load as load_duets  # noqa: E402
from driver.tables.sides_agreement import agreement  # noqa: E402


def read(folder: Path):
    """(cell records, duet records) of one results folder, twins left out."""
    cells = [p for p in sorted(folder.glob("cells/*/*/*.r[0-9]*.json"))
             if not layout.is_twin(p.parts[-3])]
    return record.load_cells(cells), load_duets(sorted(folder.glob("duets/*/*/*.json")))


def line(name: str, res: dict, alpha: float) -> str:
    if not res["cells"] or math.isnan(res["mean_log"]):
        return f"{name}: {res['sides']}: {res['cells']} cells with both: {res['verdict']}"
    lo, hi = (math.exp(x) for x in res["ci_tost"])
    return (f"{name}: {res['sides']}: {res['cells']} cells, side / own {res['ratio']:.3f} "
            f"({100 * (1 - 2 * alpha):.0f} % CI {lo:.3f}-{hi:.3f}), "
            f"sd of log ratios {res['sd_log']:.3f}: "
            f"{res['verdict']} at +-{100 * res['margin']:.0f} %"
            + ("; the two-sided interval leaves 1 out" if res["off_one"] else ""))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="results folders (each with cells/, duets/)")
    study = yaml.safe_load((REPO / "config.yaml").read_text())
    parser.add_argument("--margin", type=float, default=study["min_effect"],
                        help="the equivalence margin (default: config.yaml's min_effect)")
    parser.add_argument("--alpha", type=float, default=study["equivalence_alpha"],
                        help="the TOST's alpha (default: config.yaml's equivalence_alpha)")
    args = parser.parse_args(argv)
    out: dict = {}
    pooled: dict = {False: ([], []), True: ([], [])}
    for folder in map(Path, args.results):
        if not (folder / "cells").is_dir():
            print(f"{folder}: not a results folder (no cells/)", file=sys.stderr)
            return 2
        cells, duets = read(folder)
        # pooled: each run's cells as rows of their own (the run's folder in the machine key)
        tagged = [dict(r, machine=f"{folder}|{r['machine']}") for r in cells]
        tagged_duets = [dict(d, machine=f"{folder}|{d['machine']}") for d in duets]
        for pairs in (False, True):
            res = agreement(cells, duets, pairs=pairs, margin=args.margin,
                            alpha=args.alpha)
            print(line(str(folder), res, args.alpha))
            out.setdefault(str(folder), {})[res["sides"]] = {
                k: v for k, v in res.items() if k != "per_cell"}
            pooled[pairs][0].extend(tagged)
            pooled[pairs][1].extend(tagged_duets)
    if len(args.results) > 1:
        for pairs in (False, True):
            res = agreement(*pooled[pairs], pairs=pairs, margin=args.margin,
                            alpha=args.alpha)
            print(line("pooled", res, args.alpha))
            out.setdefault("pooled", {})[res["sides"]] = {
                k: v for k, v in res.items() if k != "per_cell"}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
