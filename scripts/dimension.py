"""`make dimension R=<results dir> [B=<second results dir>]`: where the variance of a study is and
what each level costs (Kalibera and Jones 2013), and the repeats and sampling window that give the
narrowest CI per minute (driver/stats/dimension.py). Reads the cell files only; times nothing.

Prints the pooled levels (a: variance per second of sampling inside a process, T2: between
processes, T3: between runs when a second run is given), the costs (overhead outside the timed
window, the window), the best window w*, the table of (repeats, window) with seconds per cell and
CI half-width, the narrowest CI within the current design's seconds per cell, and how many
processes per cell the equivalence test needs to call a twin (true ratio 1) and a row `--near`
from equal equivalent with probability `--power` (with `--cells N`, the minutes for N cells);
--json writes the same as one JSON object.
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
    parser.add_argument("--margin", type=float, default=0.10,
                        help="equivalence margin, as config min_effect (1 +- margin, in log)")
    parser.add_argument("--power", type=float, default=0.8,
                        help="probability of ending equivalent that the processes are sized for")
    parser.add_argument("--near", type=float, default=0.05,
                        help="a near-equal row's true distance from equal (0.05 = 5 %%)")
    parser.add_argument("--cells", type=int,
                        help="cells of a study: also print the minutes each size takes for them")
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args(argv)
    if not 0 < args.power < 1:
        parser.error(f"--power {args.power}: a probability between 0 and 1")
    if not args.margin > 0 or args.near < 0:
        parser.error(f"--margin {args.margin} must be above 0 and --near {args.near} not below 0")
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
    out["equivalence"] = equivalence_lines(pooled, k_now, args)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(out, handle, indent=1, default=float)


def equivalence_lines(pooled, k_now, args):
    """How many processes per cell the equivalence test needs (driver/stats/dimension.py,
    `equivalence_processes`: the spread known, so these are the fewest), for a twin (true ratio
    1) and a row `--near` from equal, at the run's window; printed, and returned for --json."""
    margin = math.log(1 + args.margin)
    w, per_process = pooled["window_s"], pooled["overhead_s"] + pooled["window_s"]
    out = {"margin": args.margin, "power": args.power, "window_s": w, "rows": []}
    print(f"equivalence (the test's interval inside 1 +- {args.margin * 100:g} %, in log) with "
          f"probability {args.power:.2f}, both cells of k processes of {w:.2f} s:")
    for what, distance in (("a twin (true ratio 1)", 0.0),
                           (f"a row {args.near * 100:g} % from equal", args.near)):
        log_ratio = math.log(1 + distance)
        k = dimension.equivalence_processes(w, pooled["a"], pooled["T2"], margin, log_ratio,
                                            args.power)
        now = dimension.equivalence_power(k_now, w, pooled["a"], pooled["T2"], margin, log_ratio)
        row = {"what": what, "log_ratio": log_ratio, "processes": k, "power_now": now,
               "seconds_per_cell": None if k is None else k * per_process}
        out["rows"].append(row)
        need = ("out of reach" if k is None else
                f"needs k >= {k} ({row['seconds_per_cell']:.0f} s a cell"
                + (f", {args.cells * row['seconds_per_cell'] / 60:.0f} min for {args.cells} cells"
                   if args.cells else "") + ")")
        print(f"  {what}: {need}; at k = {k_now} the probability is {now:.2f}")
    return out


if __name__ == "__main__":
    main()
