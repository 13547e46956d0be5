"""Benchmark the harness itself (not a test): prints figures and a final JSON line.

  overhead_rel   per-sample cost of the sampling loop (two clock reads and an append) measured
                 against a bare loop, over the small cell's median step time.   goal <= 1e-4
  ci_rel_median  median over the quick preset's cells of CI half-width / median under the
                 default adaptive rule.                                           goal <= 0.02
  spread_ours    the small/small tf.keras eager train_on_batch cell measured 5 times: relative
  spread_seed    spread (max - min) / median of our estimate (the median pooled over --pool fresh
                 processes, as `repeats:` pools them) vs the seed's estimate (the time()-style mean
                 of 200 calls in one process). spread_single is ours from one process, for
                 comparison.                                                      goal ours <= seed/3
  timed_share    the share of the quick study's wall time spent inside timed loops.

Usage: python scripts/selfbench.py [--processes 5] [--pool 3] [--skip-study]. Writes results/selfbench.json.
Run it on an otherwise idle machine: it times things.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from tfspeed import timing  # noqa: E402
from tfspeed.atomic import write_json  # noqa: E402

SNAKEMAKE = str(Path(sys.executable).parent / "snakemake")
WORK = REPO / "build" / "selfbench"


def loop_overhead(stop, n=2_000_000):
    """Seconds per sample that the harness adds over a bare loop calling the same no-op."""
    def noop():
        return None

    values = {k: v for k, v in stop.items() if k != "rule"}
    rule = timing.Rule(**dict(values, kind="fixed", iterations=n))
    best_bare = best_ours = float("inf")
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            noop()
        best_bare = min(best_bare, time.perf_counter() - t)
        t = time.perf_counter()
        timing.sample_calls(noop, rule)
        best_ours = min(best_ours, time.perf_counter() - t)
    return max(best_ours - best_bare, 0.0) / n


def run_study(config_path, workdir):
    cmd = [SNAKEMAKE, "--cores", "2", "--directory", str(workdir), "--configfile", str(config_path)]
    t = time.monotonic()
    subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - t


def cell_files(workdir):
    return [json.loads(Path(p).read_text())
            for p in glob.glob(str(workdir / "results" / "cells" / "*" / "*" / "*.json"))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=5, help="estimates to compare")
    parser.add_argument("--pool", type=int, default=3, help="processes pooled per estimate")
    parser.add_argument("--skip-study", action="store_true", help="reuse build/selfbench")
    args = parser.parse_args()
    default = yaml.safe_load((REPO / "config.yaml").read_text())
    quick = yaml.safe_load((REPO / "tests" / "quick.yaml").read_text())

    # 1. the quick preset under the default adaptive rule: precision and timed share
    study_cfg = dict(quick, stop=default["stop"])
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "study.yaml").write_text(yaml.safe_dump(study_cfg))
    if not args.skip_study:
        subprocess.run(["rm", "-rf", str(WORK / "study" / "results")], check=True)
    wall = run_study(WORK / "study.yaml", WORK / "study")
    cells = [c for c in cell_files(WORK / "study") if c["status"] == "ok"]
    rel = sorted(c["summary"]["ci_rel_halfwidth"] for c in cells)
    walls = [c["provenance"].get("cell_wall_s", 0) for c in cell_files(WORK / "study")]
    timed = sum(c["timed_wall_s"] for c in cells)
    # The orchestrator's CPU (Snakemake, the shell, the supervisor) over the cells' timed windows,
    # as each supervisor metered it at the window's edges.
    meters = [c["provenance"].get("orchestrator_cpu") for c in cells]
    meters = [m for m in meters if m]
    orchestrator = (sum(m["orchestrator_cpu_s"] for m in meters)
                    / max(sum(m["window_s"] for m in meters), 1e-9)) if meters else None
    foreign = [c["cpu_window"]["foreign_cpu_share"] for c in cells
               if (c.get("cpu_window") or {}).get("foreign_cpu_share") is not None]
    print("quick study, adaptive rule: %d ok cells, CI half-width / median: median %.4f, "
          "max %.4f" % (len(cells), statistics.median(rel), rel[-1]))
    previous = REPO / "results" / "selfbench.json"
    if args.skip_study and previous.exists():
        # nothing ran now: the wall time of the run that made these cells
        wall = json.loads(previous.read_text()).get("study_wall_s", sum(walls))
    elif args.skip_study:
        wall = sum(walls)  # the cells' own wall times stand in for the study's
    print("timed loops %.1f s of %.1f s study wall time" % (timed, wall))

    # 2. 5 fresh processes of the small cell: our median vs the seed's mean of 200 calls
    spread_cfg = dict(quick, stop=dict(default["stop"], min_samples=200),
                      repeats=args.processes * args.pool,
                      grids=[{"name": "spread", "envs": [quick["reference_env"]],
                              "pairs": [["small", "small"]], "keras": ["tf.keras"],
                              "modes": ["eager"], "apis": ["train_on_batch"],
                              "inputs": ["numpy"], "devices": ["cpu"]}])
    (WORK / "spread.yaml").write_text(yaml.safe_dump(spread_cfg))
    subprocess.run(["rm", "-rf", str(WORK / "spread" / "results")], check=True)
    run_study(WORK / "spread.yaml", WORK / "spread")
    procs = sorted((c for c in cell_files(WORK / "spread") if c["status"] == "ok"),
                   key=lambda c: c["repeat"])
    groups = [procs[i:i + args.pool] for i in range(0, len(procs), args.pool)]
    groups = [g for g in groups if len(g) == args.pool]
    # repeats r, r+1, ... of one group ran one after the other (rounds), like `repeats:` does
    ours = [statistics.median([s for c in g for s in c["samples_s"]]) for g in groups]
    seed = [statistics.mean(g[0]["samples_s"][:200]) for g in groups]
    single = [g[0]["summary"]["median_s"] for g in groups]

    def spread(values):
        return (max(values) - min(values)) / statistics.median(values)

    small_median = statistics.median(ours)
    overhead = loop_overhead(default["stop"])
    figures = {
        "overhead_s": overhead,
        "overhead_rel": overhead / small_median,
        "ci_rel_median": statistics.median(rel),
        "spread_ours": spread(ours),
        "spread_seed": spread(seed),
        "spread_single": spread(single),
        "pool": args.pool,
        "timed_share": timed / wall,
        "orchestrator_cpu_share": orchestrator,
        "foreign_cpu_share_median": statistics.median(foreign) if foreign else None,
        "small_cell_median_s": small_median,
        "processes": len(procs),
        "estimates": len(groups),
        "quick_cells": len(cells),
        "study_wall_s": wall,
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average": list(os.getloadavg()),
    }
    print("harness overhead per sample %.1f ns = %.2e of the small cell's median %.2f ms"
          % (overhead * 1e9, figures["overhead_rel"], small_median * 1e3))
    print("spread of %d estimates: ours (median pooled over %d processes) %.3f, ours from one "
          "process %.3f, seed's 200-call mean %.3f" % (len(groups), args.pool,
                                                       figures["spread_ours"],
                                                       figures["spread_single"],
                                                       figures["spread_seed"]))
    if orchestrator is not None:
        print("orchestrator CPU during timed windows: %.4f of a core (goal <= 0.01); all other "
              "processes: median %.4f" % (orchestrator, figures["foreign_cpu_share_median"]))
    write_json(str(REPO / "results" / "selfbench.json"), figures)
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
