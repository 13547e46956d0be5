"""Benchmark the harness itself (not a test): prints figures and a final JSON line.

  overhead_rel            per-sample cost of the sampling loop (two clock reads and an append),
                          measured against a bare loop, over the small cell's median step.  <= 1e-4
  orchestrator_cpu_share  CPU of Snakemake, the shells and the supervisors during the cells' timed
                          windows, in cores (each supervisor meters it at the window's edges). <= 0.01
  aa_false_positive_rate  the quick preset run with `--aa-processes` (6) processes per cell; each
                          cell's processes split two ways into two independent 3-process halves
                          (rounds 0-2 vs 3-5, even vs odd): the same cell twice. The share of these
                          A/A pairs that the study's verdicts (Welch on log medians, BH over all
                          pairs) call faster or slower.                                    <= 0.05
  mde_80                  smallest ratio the default design (`repeats` processes per cell) detects
                          with 80 % power, from the measured between-process spread (the median
                          cell's sd of log medians).                                       <= 1.10
  spread_ours / spread_seed  the small tf.keras eager train_on_batch cell measured 5 times:
                          (max - min) / median of our estimate (geometric mean of `--pool` fresh
                          processes' medians) vs the seed's (the mean of 200 calls in one
                          process).                                                   ours <= seed/3
  ci_rel_median, timed_share  the quick study's median within-process CI half-width over the
                          median, and the share of its wall time inside timed loops.

Usage: python scripts/selfbench.py [--processes 5] [--pool 3] [--aa-processes 6] [--skip-study].
Writes results/selfbench.json. Run it on an otherwise idle machine: it times things.
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

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))

from driver import verdicts  # noqa: E402
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


def run_study(config, name, fresh=True):
    """Run the workflow on `config` under build/selfbench/<name>; return (wall s, ok records)."""
    workdir = WORK / name
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    if fresh:
        subprocess.run(["rm", "-rf", str(workdir / "results")], check=True)
    cmd = [SNAKEMAKE, "--cores", "2", "--directory", str(workdir), "--configfile", str(path)]
    t = time.monotonic()
    subprocess.run(cmd, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t
    records = [json.loads(Path(p).read_text())
               for p in glob.glob(str(workdir / "results" / "cells" / "*" / "*" / "*.json"))]
    return wall, [r for r in records if r["status"] == "ok"]


def aa_pairs(records, k):
    """Two A/A pairs per cell with 2k processes: rounds [0, k) vs [k, 2k), even vs odd."""
    by_cell = {}
    for r in records:
        by_cell.setdefault((r["env"], r["cell_id"]), {})[r["repeat"]] = float(
            np.median(r["samples_s"]))
    rows = []
    for procs in by_cell.values():
        if len(procs) < 2 * k:
            continue
        reps = sorted(procs)[:2 * k]
        for left, right in ((reps[:k], reps[k:]), (reps[0::2], reps[1::2])):
            rows.append(verdicts.welch(verdicts.log_medians([procs[i] for i in left]),
                                       verdicts.log_medians([procs[i] for i in right])))
    return pd.DataFrame(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=5, help="estimates to compare")
    parser.add_argument("--pool", type=int, default=3, help="processes per estimate")
    parser.add_argument("--aa-processes", type=int, default=6, help="processes per cell, A/A")
    parser.add_argument("--skip-study", action="store_true", help="reuse build/selfbench")
    args = parser.parse_args()
    default = yaml.safe_load((REPO / "config.yaml").read_text())
    quick = yaml.safe_load((REPO / "tests" / "quick.yaml").read_text())
    k = args.aa_processes // 2

    # 1. the quick preset, default rule, 2k processes per cell: A/A pairs, precision, CPU
    study_cfg = dict(quick, stop=default["stop"], repeats=args.aa_processes)
    wall, cells = run_study(study_cfg, "study", fresh=not args.skip_study)
    rel = sorted(c["summary"]["ci_rel_halfwidth"] for c in cells)
    timed = sum(c["timed_wall_s"] for c in cells)
    meters = [c["provenance"].get("orchestrator_cpu") for c in cells]
    meters = [m for m in meters if m]
    orchestrator = (sum(m["orchestrator_cpu_s"] for m in meters)
                    / max(sum(m["window_s"] for m in meters), 1e-9)) if meters else None
    foreign = [c["cpu_window"]["foreign_cpu_share"] for c in cells
               if (c.get("cpu_window") or {}).get("foreign_cpu_share") is not None]
    pairs = verdicts.decide(aa_pairs(cells, k))
    called = pairs["verdict"].isin([verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER])
    between = []
    for key in {(c["env"], c["cell_id"]) for c in cells}:
        meds = [float(np.median(c["samples_s"])) for c in cells if (c["env"], c["cell_id"]) == key]
        if len(meds) >= 2:
            between.append(float(np.std(np.log(meds), ddof=1)))
    between_sd = statistics.median(between) if between else float("nan")
    print("quick study, %d processes per cell: %d ok processes, within-process CI half-width / "
          "median: median %.4f; A/A pairs %d, called different %d; between-process sd: median "
          "%.3f" % (args.aa_processes, len(cells), statistics.median(rel), len(pairs),
                    int(called.sum()), between_sd))

    # 2. 5 estimates of the small cell from `pool` fresh processes each vs the seed's 200-call mean
    spread_cfg = dict(quick, stop=dict(default["stop"], min_samples=200),
                      repeats=args.processes * args.pool,
                      grids=[{"name": "spread", "envs": [quick["reference_env"]],
                              "pairs": [["small", "small"]], "keras": ["tf.keras"],
                              "modes": ["eager"], "apis": ["train_on_batch"],
                              "inputs": ["numpy"], "devices": ["cpu"]}])
    _, procs = run_study(spread_cfg, "spread")
    procs.sort(key=lambda c: c["repeat"])
    groups = [procs[i:i + args.pool] for i in range(0, len(procs), args.pool)]
    groups = [g for g in groups if len(g) == args.pool]
    ours = [verdicts.cell_estimate([float(np.median(c["samples_s"])) for c in g])["estimate_s"]
            for g in groups]
    seed = [statistics.mean(g[0]["samples_s"][:200]) for g in groups]

    def spread(values):
        return (max(values) - min(values)) / statistics.median(values)

    small_median = statistics.median(ours)
    overhead = loop_overhead(default["stop"])
    figures = {
        "overhead_s": overhead,
        "overhead_rel": overhead / small_median,
        "orchestrator_cpu_share": orchestrator,
        "foreign_cpu_share_median": statistics.median(foreign) if foreign else None,
        "aa_pairs": int(len(pairs)),
        "aa_false_positive_rate": float(called.mean()) if len(pairs) else None,
        "between_sd_median": between_sd,
        "mde_80": verdicts.mde(between_sd, default["repeats"]),
        "mde_80_repeats": default["repeats"],
        "spread_ours": spread(ours),
        "spread_seed": spread(seed),
        "pool": args.pool,
        "ci_rel_median": statistics.median(rel),
        "timed_share": timed / wall,
        "small_cell_estimate_s": small_median,
        "study_wall_s": wall,
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average": list(os.getloadavg()),
    }
    print("harness overhead per sample %.1f ns = %.2e of the small cell's %.2f ms"
          % (overhead * 1e9, figures["overhead_rel"], small_median * 1e3))
    if orchestrator is not None:
        print("orchestrator CPU during timed windows: %.4f of a core (goal <= 0.01)" % orchestrator)
    print("A/A false-positive rate %.3f over %d pairs (goal <= 0.05); mde_80 %.3f with %d "
          "processes per cell (goal <= 1.10)" % (figures["aa_false_positive_rate"] or 0,
                                                 len(pairs), figures["mde_80"],
                                                 default["repeats"]))
    print("spread of %d estimates: ours (%d processes each) %.3f, seed's 200-call mean %.3f"
          % (len(groups), args.pool, figures["spread_ours"], figures["spread_seed"]))
    write_json(str(REPO / "results" / "selfbench.json"), figures)
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
