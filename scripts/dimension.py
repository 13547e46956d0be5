"""`make dimension R=<results dir> [B=<second results dir>]`: where the variance of a study is and
what each level costs (Kalibera and Jones 2013), and the repeats and sampling window that give the
narrowest CI per minute (driver/stats/dimension.py). Reads the cell files only; times nothing.

Prints the pooled levels (a: variance per second of sampling inside a process, T2: between
processes, T3: between runs when a second run is given), the costs (overhead outside the timed
window, the window), the best window w*, the table of (repeats, window) with seconds per cell and
CI half-width, and the narrowest CI within the current design's seconds per cell; --json writes
the same as one JSON object.
"""
import argparse
import glob
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver.stats import dimension  # noqa: E402
from driver.study import record  # noqa: E402


def load(results):
    files = sorted(glob.glob(os.path.join(results, "cells", "*", "*", "*.r[0-9]*.json")))
    if not files:
        sys.exit(f"dimension: no cell files under {results}/cells/ (give a study's results dir)")
    return record.load_cells(files)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a study's results directory")
    parser.add_argument("second", nargs="?", help="a second run's results directory (runs level)")
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    levels = dimension.cell_levels(load(args.results))
    try:
        pooled = dimension.pooled(levels)
    except ValueError as exc:
        sys.exit(f"dimension: {args.results}: {exc}")
    out = {"levels": pooled}
    if args.second:
        out["runs"] = dimension.run_component(levels, dimension.cell_levels(load(args.second)))
    k_now = int(levels["k"].median())
    now_cost = k_now * (pooled["overhead_s"] + pooled["window_s"])
    wstar = dimension.best_window(pooled["a"], pooled["T2"], pooled["overhead_s"])
    table = dimension.plan_table(pooled, level=args.level)
    best = dimension.recommend(pooled, now_cost, level=args.level)
    out.update(best_window_s=wstar, current={
        "repeats": k_now, "window_s": pooled["window_s"], "seconds_per_cell": now_cost,
        "halfwidth": dimension.halfwidth(k_now, pooled["window_s"], pooled["a"], pooled["T2"],
                                         args.level)}, recommended=best)
    print(f"cells pooled: {pooled['cells']}")
    print(f"inside a process: a = {pooled['a']:.3g} (log variance x seconds of window)")
    print(f"between processes: T2 = {pooled['T2']:.3g} (sd {math.sqrt(pooled['T2']):.3f})")
    if "runs" in out:
        t3 = out["runs"]["T3"]
        print(f"between runs: T3 = {t3:.3g} over {out['runs']['cells']} cells"
              + (f" (sd {math.sqrt(t3):.3f})" if t3 > 0 else " (none beyond the processes)"))
    print(f"cost: {pooled['overhead_s']:.2f} s per process outside a window of "
          f"{pooled['window_s']:.2f} s (wall {pooled['wall_s']:.2f} s)")
    print(f"best window w* = {wstar:.2f} s")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    cur = out["current"]
    print(f"now: {cur['repeats']} x {cur['window_s']:.2f} s, {cur['seconds_per_cell']:.1f} s per "
          f"cell, CI +-{cur['halfwidth']:.4f}")
    if best:
        print(f"narrowest CI in that time: {int(best['repeats'])} x {best['window_s']:.2f} s, "
              f"{best['seconds_per_cell']:.1f} s per cell, CI +-{best['halfwidth']:.4f}")
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(out, handle, indent=1, default=float)


if __name__ == "__main__":
    main()
