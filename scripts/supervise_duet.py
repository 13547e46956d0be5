"""Rule run_duet: one duet of the headline (or one pair in one process), and always a file behind.

Runs on the workflow's own Python. Under the machine's timing lock it starts a worker of each
side (scripts/run_cell.py --serve in each env's Python: the reference env's cell, then the TF 2.x
env's), and alternates their timed windows (driver/study/duet.py). A pair in one process (the
design says `together`; config `pairs`) starts one worker that builds both cells, the right side
first in even replicates and the left side first in odd ones, and interleaves them call by call
for the duet's timed seconds (duet.start_together with mix_block). With the design's
`workers: fork` (config duets.workers) each worker is a child forked from its env's fork helper
(driver/study/forkserver.py), which this duet finds or starts; a worker that cannot be forked is
a fresh process, and the file says per side which it got (`workers`). A crash, a hang past
`--timeout-s` or a protocol error becomes a `failed` duet file with the reason and the log tail,
so a failing duet never stops the study; the file is written atomically.
"""
import argparse
import datetime
import json
import math
import os
import sys
import time
from statistics import median

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from supervise_cell import worker_scratch  # noqa: E402

from driver.stats.settle import log_ratio  # noqa: E402
from driver.study import duet, forkserver, layout, probe, provenance  # noqa: E402
from driver.study.locks import machine_lock  # noqa: E402
from tfspeed import machine  # noqa: E402
from tfspeed.atomic import write_json  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD_VERSION = 1


def side_spec(manifest_path, cell, rule, threads):
    with open(manifest_path) as handle:
        manifest = json.load(handle)
    env, removed = duet.cell_env(manifest, cell, threads)
    return manifest, {"python": manifest.get("python_executable"),
                      "run_cell": os.path.join(HERE, "run_cell.py"), "cell": cell, "rule": rule,
                      "framework": manifest.get("framework") or "tensorflow", "env": env}


def summarize(windows):
    """A duet's figures from its windows: each side's median over all its samples, the log ratio
    left / right, and the log ratio of every window pair (for the window component)."""
    left = [s for w in windows["b"] for s in w]
    right = [s for w in windows["a"] for s in w]
    lm, rm = median(left), median(right)
    return {"left_median_s": lm, "right_median_s": rm,
            "log_ratio": log_ratio(windows["b"], windows["a"]),
            "window_log_ratios": [math.log(median(b) / median(a))
                                  for a, b in zip(windows["a"], windows["b"])],
            "left_samples": len(left), "right_samples": len(right)}


def generation(design, env_name, cell, replicate):
    """The fork helper generation of a side ("ROUND:MODE"), or None: where the design renews
    this env's helpers (design "renew": "all", or a list of env names, config
    duets.renew_helpers), a new helper every replicate round (a row of weight k has k replicates
    a round) and mode, so that every round's duets draw that helper's state anew."""
    renew = design.get("renew") or []
    if renew != "all" and env_name not in renew:
        return None
    return "%d:%s" % (replicate // max(1, int(design.get("weight", 1))), cell.get("mode", ""))


def spawner(args, design):
    """The duet's way of making workers: children of the envs' fork helpers with the design's
    `workers: fork` (config duets.workers; a design without the key: fresh), else None (fresh
    processes)."""
    if design.get("workers", "fresh") != "fork":
        return None
    owner = (forkserver.process_token(args.owner_pid) if args.owner_pid
             else forkserver.snakemake_owner())
    return forkserver.ForkSpawner(forkserver.helpers_dir(args.out, args.machine), owner=owner,
                                  idle_s=args.helper_idle_s)


def run_sides(left, right, args, design, log, spawn=None):
    """(record, workers) of a duet, or of a pair in one process when the design says
    `together` (side a = right, side b = left, as in a duet)."""
    sides = {"a": right, "b": left}
    if design.get("together"):
        first = "a" if args.replicate % 2 == 0 else "b"  # the build order alternates
        return duet.start_together(sides, args.window_s, args.windows, first=first,
                                   timeout_s=args.timeout_s, log=log, memory_mb=args.memory_mb,
                                   mix_block=int(design.get("mix_block", 4)), spawn=spawn)
    settle = design.get("settle")  # config duets.settle_calls (absent: the worker's default)
    return duet.start_pair(sides, args.window_s, args.windows, timeout_s=args.timeout_s,
                           log=log, memory_mb=args.memory_mb, spawn=spawn,
                           concurrent_build=design.get("build", "apart") == "together",
                           settle=None if settle is None else int(settle))


def supervise(args):
    cell, ref_cell = json.loads(args.cell), json.loads(args.reference_cell)
    rule = json.loads(args.rule)
    design = json.loads(args.design)
    together = bool(design.get("together"))
    rec = {"record_version": RECORD_VERSION, "kind": "pair" if together else "duet",
           "machine": args.machine,
           "env": args.env, "cell": cell, "reference_env": args.reference_env,
           "reference_cell": ref_cell, "replicate": args.replicate, "windows": args.windows,
           "window_s": args.window_s, "design": design,
           "status": "failed", "reason": "",
           "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat()}
    try:
        left_manifest, left = side_spec(args.manifest, cell, rule, args.threads)
        right_manifest, right = side_spec(args.reference_manifest, ref_cell, rule, args.threads)
    except (OSError, ValueError) as exc:
        rec["reason"] = "cannot read an env manifest: %s" % exc
        write_json(args.out, rec)
        return
    rec["provenance"] = {
        "machine": provenance.machine_facts(),
        "code": provenance.code_facts(),
        "probe": probe.brief(layout.probe_latest(layout.base_machine(args.machine))),
        "left_env": {k: left_manifest.get(k) for k in ("name", "env_hash", "framework",
                                                       "framework_version", "python")},
        "right_env": {k: right_manifest.get(k) for k in ("name", "env_hash", "framework",
                                                         "framework_version", "python")},
        "threads": args.threads,
    }
    for side, env_name, side_cell in ((left, args.env, cell), (right, args.reference_env,
                                                                ref_cell)):
        tag = generation(design, env_name, side_cell, args.replicate)
        if tag:  # a fork helper of this round's (duets.renew_helpers)
            side["env"][forkserver.GENERATION] = tag
    rec["left_framework_version"] = left_manifest.get("framework_version")
    rec["right_framework_version"] = right_manifest.get("framework_version")
    for name, manifest in (("left", left_manifest), ("right", right_manifest)):
        if manifest.get("status", "ok") != "ok":
            rec["reason"] = "%s env build failed: %s" % (name, manifest.get("reason"))
            write_json(args.out, rec)
            return
    tail = []

    class Log(object):
        def write(self, line):
            tail.append(line.rstrip("\n"))
            del tail[:-60]
            sys.stdout.write(line)

    with machine_lock(args.lock):
        t0 = time.monotonic()
        rec["load_before"] = provenance.load_average()
        procs_before = machine.process_cpu()
        workers = {}
        spawn = spawner(args, design)
        # the workers' temp files (autograph's among them) go to a folder of this duet's, removed after
        with worker_scratch(args.out, args.machine, left["env"], right["env"]):
            try:
                # side a = the reference (right), side b = the TF 2.x env (left); a starts first
                out, workers = run_sides(left, right, args, design, Log(), spawn)
                rec.update(status="ok", ready={"left": out["ready"]["b"], "right": out["ready"]["a"]},
                           left_windows_s=out["windows"]["b"], right_windows_s=out["windows"]["a"],
                           alternation_s=out["alternation_s"])
                # per side: forked (by which helper, after how many children) or fresh
                rec["workers"] = {name: dict(getattr(getattr(workers[s], "worker", workers[s]),
                                                     "origin", {"forked": False}))
                                  for name, s in (("left", "b"), ("right", "a"))}
                if together:
                    rec["built_first"] = {"a": "right", "b": "left"}[out["built_first"]]
                rec.update(summarize(out["windows"]))
                # other processes' CPU over the timed windows, as a cell meters it (each window
                # taken by one worker while the other waits on its next command)
                cpu = machine.combine_windows(workers["a"].cpu + workers["b"].cpu)
                rec["cpu_window"] = cpu
                rec["foreign_cpu_max_share"] = args.foreign_cpu_max_share
                rec["foreign_cpu_flag"] = (machine.foreign_flag(cpu, args.foreign_cpu_max_share)
                                           if cpu else None)
                # who else used the CPU over the whole duet (its start and builds included, the
                # workers left out): names what the meter flags
                rec["foreign_processes"] = machine.top_consumers(
                    procs_before, machine.process_cpu(),
                    exclude_groups={getattr(w, "worker", w).proc.pid for w in workers.values()}
                    | (spawn.helper_pids() if spawn is not None else set()))
            except Exception as exc:  # any failure is this duet's, written down, never the study's
                rec.update(status="failed", reason="%s: %s" % (type(exc).__name__, exc),
                           log_tail="\n".join(tail))
            finally:
                for w in {id(getattr(w, "worker", w)): getattr(w, "worker", w)
                          for w in workers.values()}.values():
                    w.close()
        rec["wall_s"] = time.monotonic() - t0
        rec["peak_rss_mb"] = {"left": getattr(workers.get("b"), "peak_rss_mb", None),
                              "right": getattr(workers.get("a"), "peak_rss_mb", None)}
        rec["load_after"] = provenance.load_average()
    write_json(args.out, rec)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cell", required=True, help="the TF 2.x side's cell as JSON")
    parser.add_argument("--reference-cell", required=True, help="the reference side's cell")
    parser.add_argument("--rule", required=True, help="the stopping rule as JSON (warm-up)")
    parser.add_argument("--manifest", required=True, help="the TF 2.x env's build manifest")
    parser.add_argument("--reference-manifest", required=True)
    parser.add_argument("--env", required=True)
    parser.add_argument("--reference-env", required=True)
    parser.add_argument("--machine", required=True)
    parser.add_argument("--replicate", type=int, default=0)
    parser.add_argument("--design", default="{}",
                        help='the duets\' design as JSON: {"replicates": n, "max_replicates": m}'
                             '; a pair in one process adds "together": true and "mix_block": k; '
                             '"workers": "fork" forks the workers from the envs\' fork helpers '
                             '(config duets.workers; without it: fresh processes)')
    parser.add_argument("--windows", type=int, required=True)
    parser.add_argument("--window-s", type=float, required=True)
    parser.add_argument("--timeout-s", type=int, default=900)
    parser.add_argument("--threads", default="auto")
    parser.add_argument("--memory-mb", type=int, default=0,
                        help="kill a worker above this resident memory (config cell_memory_mb)")
    parser.add_argument("--foreign-cpu-max-share", type=float, default=0.05,
                        help="flag the duet when other processes used more CPU (cores) while it "
                             "timed (config foreign_cpu_max_share)")
    parser.add_argument("--lock", default=None)
    parser.add_argument("--owner-pid", type=int, default=None,
                        help="with workers: fork, the process the fork helpers outlive no longer "
                             "than (default: the Snakemake process above this one)")
    parser.add_argument("--helper-idle-s", type=float, default=forkserver.IDLE_S,
                        help="a fork helper this duet starts exits after this long idle")
    parser.add_argument("--out", required=True)
    supervise(parser.parse_args(argv))


if __name__ == "__main__":
    main()
