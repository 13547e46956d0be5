"""`make slow-state`: what makes a cell process slow for its whole life, and what removes it.

On the AMD EPYC VMs about a quarter of processes run 25-50 % slow for their whole life (docs/design.md,
"A process's own state"). This script starts `--n` worker processes of one cell (scripts/run_cell.py
--serve, in the env's own Python, as a duet does) under each of the `--arms`, interleaved in a seeded
random order, and records per process what could explain its state:

- its median step time over `--windows` timed windows, and the time of a fixed NumPy kernel in the
  same process (`kernel` command: a covariate that sees the machine's and the process's state);
- the layout: the base address of the heap, of the framework's shared objects and of the stack
  (ASLR draws them anew in every process), and their offsets modulo 4 KiB .. 2 MiB;
- transparent huge pages in its mappings (AnonHugePages), the allocator it maps, its thread count;
- per timed window: the CPUs its threads ran on, their migrations and involuntary switches, steal
  and the machine's other CPU use (/proc/stat), the time since the previous process ended.

Arms: `base` (what the study does), `noaslr` (`setarch -R`: the same layout in every process),
`nothp` (prctl PR_SET_THP_DISABLE before exec), `fork` (children of one parent that imported the
framework: the parent's layout, a new process state). Prints the sd of log medians per arm with its
chi-square CI, the F ratio against `base`, the share of slow processes (more than 15 % above the
arm's fastest quartile) with a binomial CI, and the correlation of each covariate with the log
median. Writes every process as a JSON line to `--out`.

Times the machine: run it on a quiet machine only (nothing else may use the CPU).
"""
import argparse
import glob
import json
import os
import platform
import random
import sys
import time

import numpy as np
from scipy import stats as sps

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from driver.study import duet  # noqa: E402
from driver.study.slowstate import arm_prefix, layout_facts, read_task_stats, summarize_arms, system_cpu  # noqa: E402

RULE = {"kind": "adaptive", "iterations": 200, "target_rel": 0.01, "level": 0.95,
        "min_samples": 30, "max_samples": 5000, "budget_s": 0.5, "warmup_rel": 0.02,
        "warmup_block_s": 0.2, "warmup_max_s": 10, "min_samples_max_s": 60}
CELL = {"api": "train_on_batch", "data": "small", "device": "cpu", "input": "numpy",
        "keras": "tf.keras", "mode": "graph", "model": "small"}


def manifest_of(results, env):
    paths = sorted(glob.glob(os.path.join(results, "envs", "*", env + ".json")))
    if not paths:
        sys.exit("slow_state: no built env %r under %s/envs/ (build it first: snakemake "
                 "--until build_env)" % (env, results))
    with open(paths[-1]) as handle:
        return json.load(handle)


def one_process(manifest, cell, arm, windows, window_s, kernel_s, last_end):
    env, _ = duet.cell_env(manifest, cell, "auto")
    t_start = time.monotonic()
    worker = duet.Worker(manifest["python_executable"], os.path.join(HERE, "run_cell.py"), cell,
                         RULE, manifest.get("framework") or "tensorflow", env,
                         prefix=arm_prefix(arm))
    try:
        ready = worker.expect("ready")
        pid = worker.proc.pid
        rec = {"arm": arm, "ready": ready, "gap_s": (t_start - last_end) if last_end else None,
               "layout": layout_facts(pid), "windows": [], "kernel": []}
        for _ in range(windows):
            before_tasks, before_cpu = read_task_stats(pid), system_cpu()
            samples = worker.window(window_s)
            after_tasks, after_cpu = read_task_stats(pid), system_cpu()
            worker.send("kernel %g" % kernel_s)
            kern = worker.expect("kernel")["samples_s"]
            rec["windows"].append({"median_s": float(np.median(samples)), "n": len(samples),
                                   "tasks": [before_tasks, after_tasks],
                                   "cpu": [before_cpu, after_cpu]})
            rec["kernel"].append(float(np.median(kern)))
        rec["layout_after"] = layout_facts(pid)
        rec["median_s"] = float(np.median([w["median_s"] for w in rec["windows"]]))
        rec["kernel_median_s"] = float(np.median(rec["kernel"]))
        rec["status"] = "ok"
    except duet.WorkerError as exc:
        rec = {"arm": arm, "status": "failed", "reason": str(exc)}
    finally:
        worker.close()
    return rec


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="results", help="the study's results folder (its envs)")
    parser.add_argument("--env", default="tf1.14")
    parser.add_argument("--cell", default=json.dumps(CELL), help="the cell's axes as JSON")
    parser.add_argument("--arms", default="base,noaslr",
                        help="comma-separated: base, noaslr, nothp (see the docstring)")
    parser.add_argument("--n", type=int, default=12, help="processes per arm")
    parser.add_argument("--windows", type=int, default=6)
    parser.add_argument("--window-s", type=float, default=0.5)
    parser.add_argument("--kernel-s", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", default="results/slow_state.jsonl")
    parser.add_argument("--analyse", action="store_true", help="only analyse an existing --out")
    args = parser.parse_args(argv)
    arms = [a.strip() for a in args.arms.split(",") if a.strip()]
    for arm in arms:
        arm_prefix(arm)  # an unknown arm stops here, before any process starts
    if not args.analyse:
        manifest = manifest_of(args.results, args.env)
        cell = json.loads(args.cell)
        order = [a for a in arms for _ in range(args.n)]
        random.Random(args.seed).shuffle(order)
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        last_end = None
        with open(args.out, "a") as out:
            for i, arm in enumerate(order):
                rec = one_process(manifest, cell, arm, args.windows, args.window_s,
                                  args.kernel_s, last_end)
                last_end = time.monotonic()
                rec.update(index=i, env=args.env, cell=cell, machine=platform.node(),
                           time_unix=time.time())
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print("%3d %-7s %s" % (i, arm, "%.3f ms" % (rec["median_s"] * 1e3)
                                       if rec["status"] == "ok" else rec["reason"][:80]),
                      flush=True)
    with open(args.out) as handle:
        recs = [json.loads(line) for line in handle if line.strip()]
    print(summarize_arms([r for r in recs if r.get("status") == "ok"], sps))


if __name__ == "__main__":
    main()
