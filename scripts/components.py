#!/usr/bin/env python
"""Where the spread between replicates comes from, and what each kind of replicate costs.

`make components` (docs/design.md, "Variance components"): on a quiet machine, for comparisons of
the headline kind (TF 2.x against TF 1.14, train_on_batch, graph mode), trials in randomized order
(Abedi and Brecht's randomized multiple interleaved trials), each trial holding one replicate of
every arm:

  fresh pair   side A in a fresh process (build, warm-up, one window of `--fresh-window-s`), then
               side B the same, back to back: what the study's rounds do, at their closest
  duet         both sides in long-lived workers that take turns window by window (ABBA), for
               `--windows` windows of `--window-s` each, then each model rebuilt in its process and
               the same again (driver/study/duet.py)

It writes every replicate to a JSON-lines file and prints, per arm, the sd of the log ratio
between replicates with its 95 % CI (chi-square), the rebuild and window components, the cost of
each kind of replicate, and the sd ratio fresh/duet with its F-test CI. Needs the envs built
(results/envs/<machine>/<env>.json). Usage:

    python scripts/components.py --trials 20 --out build/components.jsonl
    python scripts/components.py --analyse build/components.jsonl
"""
import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
import yaml
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from driver.study import duet, layout  # noqa: E402
from driver.study.provenance import machine_key  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_CELL = os.path.join(HERE, "run_cell.py")
REPO = os.path.dirname(HERE)

# (side A env, its Keras; side B env, its Keras): the headline's reference and two partners
DEFAULT_COMPARISONS = ("tf1.14:tf.keras/tf2.9:tf.keras", "tf1.14:tf.keras/tf2.21:tf_keras")


def stop_rule():
    """The default study's stopping rule (config.yaml `stop`), as the runner takes it."""
    with open(os.path.join(REPO, "config.yaml")) as handle:
        stop = dict(yaml.safe_load(handle)["stop"])
    kind = stop.pop("rule")
    return dict(stop, kind=kind, iterations=200 if stop["iterations"] == "seed"
                else stop["iterations"])


def side(machine, env, keras, mode, threads):
    with open(layout.env_manifest(machine, env)) as handle:
        manifest = json.load(handle)
    cell = {"model": "small", "data": "small", "keras": keras, "mode": mode,
            "api": "train_on_batch", "input": "numpy", "device": "cpu"}
    proc_env, _ = duet.cell_env(manifest, cell, threads)
    return {"python": manifest["python_executable"], "run_cell": RUN_CELL, "cell": cell,
            "rule": stop_rule(), "framework": manifest.get("framework") or "tensorflow",
            "env": proc_env, "name": env}


def log_median(samples):
    return math.log(float(np.median(samples)))


def fresh_pair(sides, window_s, order):
    """Each side in its own fresh process, back to back in `order`."""
    out = {}
    for name in order:
        s = sides[name]
        t0 = time.monotonic()
        w = duet.Worker(s["python"], s["run_cell"], s["cell"], s["rule"], s["framework"],
                        s["env"])
        ready = w.expect("ready")
        samples = w.window(window_s)
        wall = w.close()
        out[name] = {"log_median": log_median(samples), "n": len(samples), "wall_s": wall,
                     "start": t0, "first_call_s": ready["first_call_s"]}
    return out


def duet_replicate(sides, windows, window_s):
    """Both sides alive, alternating; then each rebuilt in its process and alternating again."""
    t0 = time.monotonic()
    rec, workers = duet.start_pair(sides, window_s, windows)
    startup = t0
    builds = [rec["windows"]]
    t1 = time.monotonic()
    for w in workers.values():
        w.rebuild()
    again, _ = duet.alternate(workers, windows, window_s)
    rebuild_s = time.monotonic() - t1
    builds.append(again)
    walls = [w.close() for w in workers.values()]
    out = {"start": startup, "wall_s": time.monotonic() - t0, "rebuild_pair_s": rebuild_s,
           "worker_wall_s": walls, "builds": []}
    for b in builds:
        out["builds"].append({
            "log_ratio": log_median(sum(b["b"], [])) - log_median(sum(b["a"], [])),
            "window_log_ratios": [log_median(wb) - log_median(wa)
                                  for wa, wb in zip(b["a"], b["b"])],
        })
    return out


def run(args):
    machine = args.machine or machine_key()
    comparisons = []
    for text in args.comparisons:
        a, b = text.split("/")
        ea, ka = a.split(":")
        eb, kb = b.split(":")
        comparisons.append({"a": side(machine, ea, ka, args.mode, args.threads),
                            "b": side(machine, eb, kb, args.mode, args.threads),
                            "name": text})
    rng = random.Random(args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "a") as out:
        for trial in range(args.trials):
            for comp in rng.sample(comparisons, len(comparisons)):
                sides = {"a": comp["a"], "b": comp["b"]}
                for arm in rng.sample(["fresh", "duet"], 2):
                    if arm == "fresh":
                        order = ("a", "b") if trial % 4 in (0, 3) else ("b", "a")
                        rec = fresh_pair(sides, args.fresh_window_s, order)
                        rec["log_ratio"] = rec["b"]["log_median"] - rec["a"]["log_median"]
                        rec["wall_s"] = rec["a"]["wall_s"] + rec["b"]["wall_s"]
                    else:
                        rec = duet_replicate(sides, args.windows, args.window_s)
                    rec.update(arm=arm, trial=trial, comparison=comp["name"], machine=machine,
                               mode=args.mode, threads=args.threads)
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                    print("trial %d %s %s: %.1f s" % (trial, comp["name"], arm, rec["wall_s"]),
                          flush=True)


def sd_ci(resid, groups, level=0.95):
    """sd of residuals around their group means, with its chi-square CI; (sd, lo, hi, df)."""
    resid = np.asarray(resid, float)
    df = len(resid) - groups
    ss = float(np.sum(resid ** 2))
    sd = math.sqrt(ss / df)
    a = (1 - level) / 2
    return sd, math.sqrt(ss / stats.chi2.ppf(1 - a, df)), math.sqrt(ss / stats.chi2.ppf(a, df)), df


def centred(rows, key):
    """Values of key(row) minus their comparison's mean; and the number of comparisons."""
    by = {}
    for r in rows:
        by.setdefault(r["comparison"], []).append(key(r))
    return [v - np.mean(vs) for vs in by.values() for v in vs], len(by)


def analyse(path, level=0.95):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    fresh = [r for r in rows if r["arm"] == "fresh"]
    duets = [r for r in rows if r["arm"] == "duet"]
    out = {"path": path, "machine": rows[0]["machine"] if rows else None,
           "trials": len({r["trial"] for r in rows}),
           "comparisons": sorted({r["comparison"] for r in rows})}
    if fresh:
        res, g = centred(fresh, lambda r: r["log_ratio"])
        out["fresh_pair_sd"] = sd_ci(res, g, level)
        res_a, g = centred(fresh, lambda r: r["a"]["log_median"])
        out["fresh_single_sd"] = sd_ci(res_a, g, level)
        ra, _ = centred(fresh, lambda r: r["a"]["log_median"])
        rb, _ = centred(fresh, lambda r: r["b"]["log_median"])
        out["fresh_pair_corr"] = float(np.corrcoef(ra, rb)[0, 1])
        out["fresh_pair_cost_s"] = float(np.mean([r["wall_s"] for r in fresh]))
        # machine state over time: single processes' residuals in the order they ran
        ordered = sorted(fresh, key=lambda r: r["a"]["start"])
        by = {}
        for r in ordered:
            by.setdefault(r["comparison"], []).append(r["a"]["log_median"])
        means = {k: np.mean(v) for k, v in by.items()}
        res_t = [r["a"]["log_median"] - means[r["comparison"]] for r in ordered]
        out["fresh_lag1_corr"] = (float(np.corrcoef(res_t[:-1], res_t[1:])[0, 1])
                                  if len(res_t) > 2 else math.nan)
    if duets:
        res, g = centred(duets, lambda r: r["builds"][0]["log_ratio"])
        out["duet_sd"] = sd_ci(res, g, level)
        mean2 = [(r["builds"][0]["log_ratio"] + r["builds"][1]["log_ratio"]) / 2 for r in duets]
        res_m, g = centred([dict(r, m=m) for r, m in zip(duets, mean2)], lambda r: r["m"])
        out["duet_two_builds_sd"] = sd_ci(res_m, g, level)
        diffs = [r["builds"][1]["log_ratio"] - r["builds"][0]["log_ratio"] for r in duets]
        # rebuild component: var(build2 - build1) / 2, around the mean difference per comparison
        res_d, g = centred([dict(r, d=d) for r, d in zip(duets, diffs)], lambda r: r["d"])
        sd_d = sd_ci(res_d, g, level)
        out["rebuild_sd"] = tuple(v / math.sqrt(2) if i < 3 else v for i, v in enumerate(sd_d))
        out["rebuild_drift"] = float(np.mean(diffs))
        # window component: spread of window-pair log ratios inside one build, over sqrt(windows)
        wv = [np.var(b["window_log_ratios"], ddof=1) for r in duets for b in r["builds"]]
        k = len(duets[0]["builds"][0]["window_log_ratios"])
        out["window_sd"] = float(math.sqrt(np.mean(wv)))
        out["window_se_of_build"] = float(math.sqrt(np.mean(wv) / k))
        out["duet_cost_s"] = float(np.mean([r["wall_s"] for r in duets]))
        out["rebuild_pair_cost_s"] = float(np.mean([r["rebuild_pair_s"] for r in duets]))
        out["duet_one_build_cost_s"] = out["duet_cost_s"] - out["rebuild_pair_cost_s"]
    if fresh and duets:
        f, d = out["fresh_pair_sd"], out["duet_sd"]
        ratio = (f[0] / d[0]) ** 2
        lo = ratio / stats.f.ppf(1 - (1 - level) / 2, f[3], d[3])
        hi = ratio / stats.f.ppf((1 - level) / 2, f[3], d[3])
        out["var_ratio_fresh_over_duet"] = (ratio, lo, hi)
        # information per second: 1 / (var * cost); a one-build duet costs the duet less its
        # rebuild and second alternation, the two-build duet all of it
        one_build_s = out["duet_one_build_cost_s"]
        out["precision_per_s_fresh"] = 1 / (f[0] ** 2 * out["fresh_pair_cost_s"])
        out["precision_per_s_duet"] = 1 / (d[0] ** 2 * one_build_s)
        out["precision_per_s_duet_two_builds"] = 1 / (out["duet_two_builds_sd"][0] ** 2
                                                      * out["duet_cost_s"])
    return out


def show(result):
    def sd(name):
        v = result.get(name)
        return "n/a" if v is None else "%.4f (95 %% CI %.4f-%.4f, df %d)" % tuple(v)

    print("machine %s, %d trials, comparisons %s" % (result["machine"], result["trials"],
                                                      ", ".join(result["comparisons"])))
    print("fresh pair, sd of log ratio:        " + sd("fresh_pair_sd"))
    print("fresh single process, sd of log median: " + sd("fresh_single_sd"))
    if "fresh_pair_corr" in result:
        print("correlation of back-to-back partners: %.2f; of one side's processes a trial "
              "apart: %.2f; cost per pair %.1f s"
              % (result["fresh_pair_corr"], result["fresh_lag1_corr"],
                 result["fresh_pair_cost_s"]))
    print("duet, sd of log ratio (one build):  " + sd("duet_sd"))
    print("duet, mean of two builds:           " + sd("duet_two_builds_sd"))
    print("rebuild component (sd):             " + sd("rebuild_sd"))
    if "window_sd" in result:
        print("window sd %.4f; a build's se from its windows %.4f; rebuild drift %+.4f"
              % (result["window_sd"], result["window_se_of_build"], result["rebuild_drift"]))
        print("cost: duet of one build %.1f s; the rebuild and its alternation %.1f s more"
              % (result["duet_one_build_cost_s"], result["rebuild_pair_cost_s"]))
    if "var_ratio_fresh_over_duet" in result:
        print("variance fresh pair / duet %.2f (95 %% CI %.2f-%.2f); precision per second "
              "(1 / (variance x cost)): fresh pair %.0f, duet %.0f, duet of two builds %.0f"
              % (result["var_ratio_fresh_over_duet"] + (
                  result["precision_per_s_fresh"], result["precision_per_s_duet"],
                  result["precision_per_s_duet_two_builds"])))
    print(json.dumps(result, sort_keys=True))


def trial_parser(doc, out, trials, windows, seed):
    """The arguments every trial script of duets shares (this one, duet_cost.py)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--analyse", metavar="JSONL", help="only analyse an earlier run's file")
    parser.add_argument("--out", default=out)
    parser.add_argument("--machine", help="machine key of the built envs (default: this one)")
    parser.add_argument("--mode", default="graph")
    parser.add_argument("--threads", default="auto")
    parser.add_argument("--trials", type=int, default=trials)
    parser.add_argument("--windows", type=int, default=windows, help="windows per side")
    parser.add_argument("--window-s", type=float, default=0.25)
    parser.add_argument("--seed", type=int, default=seed)
    return parser


def run_or_analyse(parser, argv, run, analyse, show):
    args = parser.parse_args(argv)
    if not args.analyse:
        run(args)
    show(analyse(args.analyse or args.out))


def main(argv=None):
    parser = trial_parser(__doc__, "build/components/components.jsonl", 20, 4, 20261126)
    parser.add_argument("--comparisons", nargs="+", default=list(DEFAULT_COMPARISONS),
                        help="ENV:KERAS/ENV:KERAS pairs, side A first")
    parser.add_argument("--fresh-window-s", type=float, default=0.5,
                        help="a fresh process's window (config stop.budget_s)")
    run_or_analyse(parser, argv, run, analyse, show)


if __name__ == "__main__":
    main()
