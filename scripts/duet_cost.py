#!/usr/bin/env python
"""What a duet costs: workers forked from fork helpers, importing side by side, or one after the other.

`make duet-cost` (docs/design.md, "Duets on noisy machines"): on a quiet machine, trials of the
headline's kind of duet (TF 1.14 against a TF 2.x env, train_on_batch, the small model), each
trial one duet of each arm in random order:

  together   both workers start at once and import their framework side by side, then each is
             built and warmed up after the other (duet.start_pair(concurrent_import=True), what
             the study does)
  apart      each worker starts, imports, builds and warms up before the other starts
             (concurrent_import=False, the design before)
  fork       each worker a child forked from its env's fork helper (driver/study/forkserver.py,
             config duets.workers: fork), which imported the framework once for all trials (its
             first trial pays the import); built one after the other, as `together`
  fork-build as `fork`, both sides built and warmed up at the same time (start_pair's
             concurrent_build): whether that distorts shows in its spread
  fork-lean, fork-build-lean
             as `fork` and `fork-build`, the warm-up's blocks `--lean-block-s` long instead of
             the stop rule's `warmup_block_s` (a warm-up takes at least two blocks): whether a
             shorter warm-up leaves the first windows slower shows in the first-window excess
  fork-build-settle
             as `fork-build`, each window after `--few-settle-calls` untimed calls instead of
             the worker's default three (config duets.settle_calls; compared with `fork-build`)

`--arms` picks the arms (default: together apart). Each duet takes the study's windows
(`--windows` per side of `--window-s`). It writes every duet to a JSON-lines file and prints per
arm the median wall time of a duet, its cost ratio (wall over the timed seconds, 2 x windows x
window_s), the between-duet sd of the log ratio, the duets far from the rest (a log ratio more
than 0.15 from the arm's median) and the first-window excess (per side, the log of its first
window's median over that of its later windows, averaged over duets and sides, with a t
interval: a warm-up too short leaves it above 0); for each arm against `together` (or `apart`
against `together`; without a `together` arm, each against `fork`) the paired saving with its
95 % CI (Hodges-Lehmann with the Wilcoxon signed-rank interval) and the F test's 95 % CI of the
ratio of their log ratios' variances (a saving must not buy a wider spread). Needs the envs
built (results/envs/<machine>/<env>.json).
Usage:

    python scripts/duet_cost.py --trials 12 --arms fork together
    python scripts/duet_cost.py --analyse build/duet_cost/duet_cost.jsonl
"""
import json
import math
import os
import random
import sys
import time

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from components import log_median, run_or_analyse, side, trial_parser  # noqa: E402

from driver.study import duet, forkserver  # noqa: E402
from driver.study.provenance import machine_key  # noqa: E402

ARMS = ("together", "apart", "fork", "fork-build", "fork-lean", "fork-build-lean",
        "fork-build-settle")
FAR = 0.15  # a duet this far (log ratio) from its arm's median is counted as far off


def one_duet(sides, windows, window_s, together, spawn=None, concurrent_build=False,
             settle=None):
    t0 = time.monotonic()
    rec, workers = duet.start_pair(sides, window_s, windows, concurrent_import=together,
                                   spawn=spawn, concurrent_build=concurrent_build,
                                   settle=settle)
    for w in workers.values():
        w.close()
    return {"wall_s": time.monotonic() - t0, "alternation_s": rec["alternation_s"],
            "timed_s": 2 * windows * window_s,
            "workers": {s: workers[s].origin for s in "ab"},
            "import_s": {s: rec["ready"][s].get("import_s") for s in "ab"},
            "build_s": {s: rec["ready"][s].get("build_s") for s in "ab"},
            "ready": {s: {k: rec["ready"][s].get(k) for k in
                          ("first_call_s", "warmup_s", "warmup_calls", "warmup_stopped_by",
                           "build_span_s")} for s in "ab"},
            "window_log_medians": {s: [log_median(w) for w in rec["windows"][s]] for s in "ab"},
            "log_ratio": log_median(sum(rec["windows"]["b"], []))
            - log_median(sum(rec["windows"]["a"], []))}


def first_window_excess(rec):
    """Per side, the log median of its first window minus the mean of its later windows' (None
    for a record without windows): what a warm-up too short leaves."""
    out = []
    for s in "ab":
        w = (rec.get("window_log_medians") or {}).get(s) or []
        if len(w) >= 3:
            out.append(w[0] - float(np.mean(w[1:])))
    return out


def hodges_lehmann(d, level=0.95):
    """The median of the Walsh averages of the paired differences `d`, and the distribution-free
    CI from the signed-rank distribution's quantile (normal approximation for its critical
    count, as the textbooks give it for n >= 6)."""
    d = np.asarray(d, dtype=float)
    n = len(d)
    walsh = np.sort([(d[i] + d[j]) / 2 for i in range(n) for j in range(i, n)])
    est = float(np.median(walsh))
    m = len(walsh)
    z = stats.norm.ppf(0.5 + level / 2)
    k = int(math.floor(m / 2 - z * math.sqrt(n * (n + 1) * (2 * n + 1) / 24)))
    k = max(k, 0)
    return est, float(walsh[k]), float(walsh[m - 1 - k])


def compare(by, trials, out, slow, fast):
    """The paired saving of arm `fast` over arm `slow` (Hodges-Lehmann, Wilcoxon CI) and the
    variance ratio of their log ratios fast / slow with its F interval."""
    d = [by[(t, slow)]["wall_s"] - by[(t, fast)]["wall_s"] for t in trials]
    est, lo, hi = hodges_lehmann(d)
    n = len(trials) - 1
    ratio = (out[fast]["sd_log_ratio"] / out[slow]["sd_log_ratio"]) ** 2
    return {"saving_s": est, "saving_ci": [lo, hi],
            "saving_share": est / out[slow]["median_wall_s"], "var_ratio": ratio,
            "var_ratio_ci": [ratio / stats.f.ppf(0.975, n, n), ratio / stats.f.ppf(0.025, n, n)]}


def _mean_ci(values, level=0.95):
    """[mean, low, high] (scipy's one-sample t interval); [] for fewer than two values."""
    if len(values) < 2:
        return []
    ci = stats.ttest_1samp(values, 0.0).confidence_interval(level)
    return [float(np.mean(values)), float(ci.low), float(ci.high)]


def analyse(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    by = {(r["trial"], r["arm"]): r for r in rows}
    arms = [a for a in ARMS if any(r["arm"] == a for r in rows)]
    trials = sorted({t for t, a in by if all((t, x) in by for x in arms)})
    out = {"n_trials": len(trials), "machine": rows[0]["machine"] if rows else "", "arms": arms}
    for arm in arms:
        walls = [by[(t, arm)]["wall_s"] for t in trials]
        lr = [by[(t, arm)]["log_ratio"] for t in trials]
        timed = [by[(t, arm)].get("timed_s") for t in trials]
        ratios = [w / s for w, s in zip(walls, timed) if s]
        excess = sum((first_window_excess(by[(t, arm)]) for t in trials), [])
        mid = float(np.median(lr)) if lr else math.nan
        out[arm] = {"median_wall_s": float(np.median(walls)) if walls else math.nan,
                    "cost_ratio": float(np.median(ratios)) if ratios else math.nan,
                    "sd_log_ratio": float(np.std(lr, ddof=1)) if len(lr) > 1 else math.nan,
                    "far": sum(abs(x - mid) > FAR for x in lr),
                    "first_window_excess": _mean_ci(excess)}
    out["comparisons"] = {}
    if len(trials) >= 6:
        # each arm against `together` (the fresh workers' design) or, without it, `fork`
        base = "together" if "together" in arms else "fork"
        for arm in arms:
            if arm == "fork-build-settle" and "fork-build" in arms:
                slow, fast = "fork-build", arm  # the settle's saving alone
            elif arm == base or (arm != "apart" and base not in arms):
                continue
            else:
                slow, fast = ("apart", "together") if arm == "apart" else (base, arm)
            if slow in arms and fast in arms:
                out["comparisons"]["%s_vs_%s" % (fast, slow)] = compare(by, trials, out, slow,
                                                                        fast)
        legacy = out["comparisons"].get("together_vs_apart")
        if legacy:  # the names of the first version of this script
            out.update(saving_s=legacy["saving_s"], saving_ci=legacy["saving_ci"],
                       saving_share=legacy["saving_share"],
                       var_ratio_together_over_apart=legacy["var_ratio"],
                       var_ratio_ci=legacy["var_ratio_ci"])
    return out


def show(result):
    print("%d paired trials on %s" % (result["n_trials"], result["machine"]))
    for arm in result.get("arms", ARMS[:2]):
        r = result[arm]
        fw = r.get("first_window_excess") or [math.nan] * 3
        print("  %-15s median duet %.1f s, cost ratio (wall / timed) %.2f, between-duet sd of "
              "the log ratio %.3f, %s far off (> %.2f), first-window excess %.3f (95 %% CI "
              "%.3f to %.3f)" % (arm, r["median_wall_s"], r.get("cost_ratio", math.nan),
                                 r["sd_log_ratio"], r.get("far", "?"), FAR, fw[0], fw[1], fw[2]))
    for name, c in sorted(result.get("comparisons", {}).items()):
        fast, slow = name.split("_vs_")
        print("  %s against %s: saving per duet %.2f s (95 %% CI %.2f to %.2f), %.0f %%; variance "
              "of the log ratio %s / %s %.2f (95 %% CI %.2f-%.2f)"
              % (fast, slow, c["saving_s"], c["saving_ci"][0], c["saving_ci"][1],
                 100 * c["saving_share"], fast, slow, c["var_ratio"], c["var_ratio_ci"][0],
                 c["var_ratio_ci"][1]))
    print(json.dumps(result, sort_keys=True))


def run(args):
    machine = args.machine or machine_key()
    ea, ka = args.pair.split("/")[0].split(":")
    eb, kb = args.pair.split("/")[1].split(":")
    sides = {"a": side(machine, ea, ka, args.mode, args.threads),
             "b": side(machine, eb, kb, args.mode, args.threads)}
    lean = {k: dict(v, rule=dict(v["rule"], warmup_block_s=args.lean_block_s))
            for k, v in sides.items()}
    rng = random.Random(args.seed)
    folder = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(folder, exist_ok=True)
    # the fork arms' helpers: started by the first trial, kept for all, stopped at the end
    helpers = os.path.join(folder, "helpers")
    spawn = forkserver.ForkSpawner(helpers, owner=forkserver.process_token(os.getpid()),
                                   idle_s=600)
    try:
        with open(args.out, "a") as out:
            trials(args, sides, lean, rng, spawn, machine, out)
    finally:
        forkserver.stop_helpers(helpers)


def trials(args, sides, lean, rng, spawn, machine, out):
    """Each trial one duet of every arm, the arms in a random order."""
    for trial in range(args.trials):
        for arm in rng.sample(args.arms, len(args.arms)):
            rec = one_duet(lean if arm.endswith("-lean") else sides, args.windows,
                           args.window_s, arm != "apart",
                           spawn=spawn if arm.startswith("fork") else None,
                           concurrent_build=arm.startswith("fork-build"),
                           settle=args.few_settle_calls if arm == "fork-build-settle" else None)
            rec.update(arm=arm, trial=trial, pair=args.pair, machine=machine, mode=args.mode)
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print("trial %d %s: %.1f s" % (trial, arm, rec["wall_s"]), flush=True)


def main(argv=None):
    parser = trial_parser(__doc__, "build/duet_cost/duet_cost.jsonl", 12, 8, 20261127)
    parser.add_argument("--pair", default="tf1.14:tf.keras/tf2.16:tf_keras",
                        help="ENV:KERAS/ENV:KERAS, side A (the reference) first")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=["together", "apart"],
                        help="the arms, each run once per trial in random order")
    parser.add_argument("--lean-block-s", type=float, default=0.1,
                        help="the -lean arms' warm-up block (s)")
    parser.add_argument("--few-settle-calls", type=int, default=1,
                        help="the fork-build-settle arm's untimed calls a window")
    run_or_analyse(parser, argv, run, analyse, show)


if __name__ == "__main__":
    main()
