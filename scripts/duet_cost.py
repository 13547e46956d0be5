#!/usr/bin/env python
"""What a duet costs when its workers import side by side, against one after the other.

`make duet-cost` (docs/design.md, "Duets on noisy machines"): on a quiet machine, trials of the
headline's kind of duet (TF 1.14 against a TF 2.x env, train_on_batch, the small model), each
trial one duet of each arm in random order:

  together   both workers start at once and import their framework side by side, then each is
             built and warmed up after the other (duet.start_pair(concurrent_import=True), what
             the study does)
  apart      each worker starts, imports, builds and warms up before the other starts
             (concurrent_import=False, the design before)

Each duet takes the study's windows (`--windows` per side of `--window-s`). It writes every duet
to a JSON-lines file and prints per arm the median wall time of a duet, the paired saving
(apart - together) with its 95 % CI (Hodges-Lehmann with the Wilcoxon signed-rank interval), and
the sd of the log ratio per arm with the F test's 95 % CI of their ratio (the saving must not
buy a wider spread). Needs the envs built (results/envs/<machine>/<env>.json). Usage:

    python scripts/duet_cost.py --trials 12 --out build/duet_cost/duet_cost.jsonl
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

from driver.study import duet  # noqa: E402
from driver.study.provenance import machine_key  # noqa: E402

ARMS = ("together", "apart")


def one_duet(sides, windows, window_s, together):
    t0 = time.monotonic()
    rec, workers = duet.start_pair(sides, window_s, windows, concurrent_import=together)
    for w in workers.values():
        w.close()
    return {"wall_s": time.monotonic() - t0, "alternation_s": rec["alternation_s"],
            "import_s": {s: rec["ready"][s].get("import_s") for s in "ab"},
            "build_s": {s: rec["ready"][s].get("build_s") for s in "ab"},
            "log_ratio": log_median(sum(rec["windows"]["b"], []))
            - log_median(sum(rec["windows"]["a"], []))}


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


def analyse(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    by = {(r["trial"], r["arm"]): r for r in rows}
    trials = sorted({t for t, a in by if all((t, x) in by for x in ARMS)})
    out = {"n_trials": len(trials), "machine": rows[0]["machine"] if rows else ""}
    for arm in ARMS:
        walls = [by[(t, arm)]["wall_s"] for t in trials]
        lr = [by[(t, arm)]["log_ratio"] for t in trials]
        out[arm] = {"median_wall_s": float(np.median(walls)) if walls else math.nan,
                    "sd_log_ratio": float(np.std(lr, ddof=1)) if len(lr) > 1 else math.nan}
    if len(trials) >= 6:
        d = [by[(t, "apart")]["wall_s"] - by[(t, "together")]["wall_s"] for t in trials]
        est, lo, hi = hodges_lehmann(d)
        out["saving_s"], out["saving_ci"] = est, [lo, hi]
        out["saving_share"] = est / out["apart"]["median_wall_s"]
        n = len(trials) - 1
        ratio = (out["together"]["sd_log_ratio"] / out["apart"]["sd_log_ratio"]) ** 2
        out["var_ratio_together_over_apart"] = ratio
        out["var_ratio_ci"] = [ratio / stats.f.ppf(0.975, n, n), ratio / stats.f.ppf(0.025, n, n)]
    return out


def show(result):
    print("%d paired trials on %s" % (result["n_trials"], result["machine"]))
    for arm in ARMS:
        print("  %-8s median duet %.1f s, sd of the log ratio %.3f"
              % (arm, result[arm]["median_wall_s"], result[arm]["sd_log_ratio"]))
    if "saving_s" in result:
        print("saving per duet %.2f s (95 %% CI %.2f to %.2f), %.0f %% of a duet apart; variance "
              "of the log ratio together / apart %.2f (95 %% CI %.2f-%.2f)"
              % (result["saving_s"], result["saving_ci"][0], result["saving_ci"][1],
                 100 * result["saving_share"], result["var_ratio_together_over_apart"],
                 result["var_ratio_ci"][0], result["var_ratio_ci"][1]))
    print(json.dumps(result, sort_keys=True))


def run(args):
    machine = args.machine or machine_key()
    ea, ka = args.pair.split("/")[0].split(":")
    eb, kb = args.pair.split("/")[1].split(":")
    sides = {"a": side(machine, ea, ka, args.mode, args.threads),
             "b": side(machine, eb, kb, args.mode, args.threads)}
    rng = random.Random(args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "a") as out:
        for trial in range(args.trials):
            for arm in rng.sample(ARMS, 2):
                rec = one_duet(sides, args.windows, args.window_s, arm == "together")
                rec.update(arm=arm, trial=trial, pair=args.pair, machine=machine,
                           mode=args.mode)
                out.write(json.dumps(rec) + "\n")
                out.flush()
                print("trial %d %s: %.1f s" % (trial, arm, rec["wall_s"]), flush=True)


def main(argv=None):
    parser = trial_parser(__doc__, "build/duet_cost/duet_cost.jsonl", 12, 8, 20261127)
    parser.add_argument("--pair", default="tf1.14:tf.keras/tf2.16:tf_keras",
                        help="ENV:KERAS/ENV:KERAS, side A (the reference) first")
    run_or_analyse(parser, argv, run, analyse, show)


if __name__ == "__main__":
    main()
