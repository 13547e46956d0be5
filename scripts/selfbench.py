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

Usage: python scripts/selfbench.py [--processes 5] [--pool <repeats>] [--aa-processes 6] [--skip-study]
       python scripts/selfbench.py --from-runs A B   (A, B: results folders of two default studies)
Writes results/selfbench.json. Run it on an otherwise idle machine: it times things.

--from-runs takes the A/A pairs, the orchestrator's share and the between-process spread from two
finished runs of the default study instead of a quick study: each cell of run A against the same
cell of run B, every cell in its default design (`repeats` processes per run), with the study's own
verdicts (Welch on log medians, BH over all pairs). That is the rerun itself: it includes whatever
changed on the machine between the runs, which split halves of one run do not.
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

from driver.stats import verdicts  # noqa: E402
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


def run_records(folder) -> list[dict]:
    """The ok cell records of a results folder (<folder>/cells/<machine>/<env>/*.json)."""
    out = []
    for path in glob.glob(str(Path(folder) / "cells" / "*" / "*" / "*.json")):
        rec = json.loads(Path(path).read_text())
        if rec.get("status") == "ok" and rec.get("samples_s"):
            out.append(rec)
    return out


def process_medians(records) -> dict:
    """(machine, env, cell_id) -> the medians of its processes."""
    out = {}
    for r in records:
        out.setdefault((r["machine"], r["env"], r["cell_id"]), []).append(
            float(np.median(r["samples_s"])))
    return out


def runs_figures(a, b, repeats) -> tuple[dict, pd.DataFrame]:
    """A/A pairs, orchestrator share and spreads from two finished runs (see --from-runs)."""
    recs_a, recs_b = run_records(a), run_records(b)
    meds_a, meds_b = process_medians(recs_a), process_medians(recs_b)
    rows = []
    for key in sorted(set(meds_a) & set(meds_b)):
        if len(meds_a[key]) >= 2 and len(meds_b[key]) >= 2:
            rows.append(verdicts.welch(verdicts.log_medians(meds_a[key]),
                                       verdicts.log_medians(meds_b[key])))
    pairs = verdicts.decide(pd.DataFrame(rows))
    meters = [r["provenance"].get("orchestrator_cpu") for r in recs_a + recs_b]
    meters = [m for m in meters if m]
    between = [float(np.std(np.log(m), ddof=1)) for m in list(meds_a.values())
               + list(meds_b.values()) if len(m) >= 2]
    foreign = [r["cpu_window"]["foreign_cpu_share"] for r in recs_a + recs_b
               if (r.get("cpu_window") or {}).get("foreign_cpu_share") is not None]
    flagged = sum(bool(r.get("foreign_cpu_flag")) for r in recs_a + recs_b)
    between_sd = statistics.median(between) if between else float("nan")
    figures = {
        "orchestrator_cpu_share": (sum(m["orchestrator_cpu_s"] for m in meters)
                                   / max(sum(m["window_s"] for m in meters), 1e-9))
        if meters else None,
        "orchestrator_cpu_share_max": max((m["orchestrator_cpu_s"] / m["window_s"]
                                           for m in meters if m["window_s"] > 0), default=None),
        "foreign_cpu_share_median": statistics.median(foreign) if foreign else None,
        "foreign_cpu_flagged": f"{flagged} of {len(recs_a) + len(recs_b)} processes",
        "between_sd_median": between_sd,
        "mde_80": verdicts.mde(between_sd, repeats),
        "mde_80_repeats": repeats,
        "aa_source": f"two runs: {a} vs {b}",
    }
    return figures, pairs


def quick_study(args, default, quick) -> tuple[dict, pd.DataFrame]:
    """The quick preset, default rule, 2k processes per cell: A/A pairs, precision, CPU."""
    k = args.aa_processes // 2
    study_cfg = dict(quick, stop=default["stop"], repeats=args.aa_processes)
    wall, cells = run_study(study_cfg, "study", fresh=not args.skip_study)
    rel = sorted(c["summary"]["ci_rel_halfwidth"] for c in cells)
    timed = sum(c["timed_wall_s"] for c in cells)
    meters = [c["provenance"].get("orchestrator_cpu") for c in cells]
    meters = [m for m in meters if m]
    foreign = [c["cpu_window"]["foreign_cpu_share"] for c in cells
               if (c.get("cpu_window") or {}).get("foreign_cpu_share") is not None]
    between = [float(np.std(np.log(m), ddof=1)) for m in process_medians(cells).values()
               if len(m) >= 2]
    between_sd = statistics.median(between) if between else float("nan")
    figures = {
        "orchestrator_cpu_share": (sum(m["orchestrator_cpu_s"] for m in meters)
                                   / max(sum(m["window_s"] for m in meters), 1e-9))
        if meters else None,
        "foreign_cpu_share_median": statistics.median(foreign) if foreign else None,
        "between_sd_median": between_sd,
        "mde_80": verdicts.mde(between_sd, default["repeats"]),
        "mde_80_repeats": default["repeats"],
        "ci_rel_median": statistics.median(rel),
        "timed_share": timed / wall,
        "study_wall_s": wall,
        "aa_source": f"quick study, {args.aa_processes} processes per cell, split in halves",
    }
    return figures, verdicts.decide(aa_pairs(cells, k))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=5, help="estimates to compare")
    parser.add_argument("--pool", type=int, default=None,
                        help="processes per estimate (default: config.yaml's repeats)")
    parser.add_argument("--aa-processes", type=int, default=6, help="processes per cell, A/A")
    parser.add_argument("--skip-study", action="store_true", help="reuse build/selfbench")
    parser.add_argument("--from-runs", nargs=2, metavar=("A", "B"),
                        help="A/A pairs and CPU shares from two finished default-study runs")
    args = parser.parse_args()
    default = yaml.safe_load((REPO / "config.yaml").read_text())
    if args.pool is None:
        args.pool = default["repeats"]
    quick = yaml.safe_load((REPO / "tests" / "quick.yaml").read_text())

    if args.from_runs:
        study, pairs = runs_figures(*args.from_runs, default["repeats"])
        recs = run_records(args.from_runs[0]) + run_records(args.from_runs[1])
        study["ci_rel_median"] = statistics.median(
            r["summary"]["ci_rel_halfwidth"] for r in recs)
        study["timed_share"] = study["study_wall_s"] = None
    else:
        study, pairs = quick_study(args, default, quick)
    called = pairs["verdict"].isin([verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER])
    print("%s: A/A pairs %d, called different %d; between-process sd: median %.3f; "
          "within-process CI half-width / median: median %.4f"
          % (study.get("aa_source", "quick study"), len(pairs), int(called.sum()),
             study["between_sd_median"], study["ci_rel_median"]))

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
        **study,
        "overhead_s": overhead,
        "overhead_rel": overhead / small_median,
        "aa_pairs": int(len(pairs)),
        "aa_false_positive_rate": float(called.mean()) if len(pairs) else None,
        "spread_ours": spread(ours),
        "spread_seed": spread(seed),
        "pool": args.pool,
        "small_cell_estimate_s": small_median,
        "measured_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_average": list(os.getloadavg()),
    }
    orchestrator = figures["orchestrator_cpu_share"]
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
