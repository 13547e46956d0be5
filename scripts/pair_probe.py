#!/usr/bin/env python
"""Does a pair in one process cancel the process's own state? Measured against duets.

`make pair-probe` (docs/design.md, "Pairs in one process"): on a quiet machine, for comparisons
whose two sides live in one env and one mode (another API, another input, the same cell twice),
trials in randomized order, each trial one replicate of each arm in random order:

  together   one fresh process builds and warms up both cells (which one first alternates by
             trial), then times them window by window in ABBA turns (duet.start_together)
  mix        the same one process, its two cells interleaved call by call (blocks of
             `--mix-block` timed calls, ABBA) for the same timed seconds (duet.start_together
             with mix_block)
  group      the mix arm with more cells of the same env built in the process and interleaved
             with the pair (`--group-extra`): what a configuration's whole group in one process
             does to the pair
  fine       a duet whose windows are `--fine-factor` times as many and as short (the same timed
             seconds): finer turns between the two processes
  duet       two fresh processes, one per side, alternating the same way (duet.start_pair: what
             the headline's duets do)

A comparison across envs (side b's overrides name `env=`) runs the two-process arms only.

Both arms take the same windows (`--windows` per side of `--window-s`). It writes every replicate
to a JSON-lines file and prints, per comparison and arm, the sd of the log ratio between
replicates with its 95 % CI (chi-square), the ratio of the two arms' variances with the F test's
95 % CI, the cost of a replicate, the precision per second of each arm, whether being in one
process moves the ratio (the arms' mean log ratios, Welch CI), whether the build order does, and
how much each side's own median moves between processes (the state the pair shares). Needs the
envs built (results/envs/<machine>/<env>.json). Usage:

    python scripts/pair_probe.py --trials 10 --out build/pair_probe/pair_probe.jsonl
    python scripts/pair_probe.py --analyse build/pair_probe/pair_probe.jsonl
    python scripts/pair_probe.py --duets results/duets/<machine>   # a study's recorded duets
    python scripts/pair_probe.py --pool A.jsonl B.jsonl   # each arm against duets, pooled
"""
import json
import math
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from components import log_median, run_or_analyse, trial_parser  # noqa: E402
from components import side as env_side  # noqa: E402

from driver.study import duet  # noqa: E402
from driver.study.provenance import machine_key  # noqa: E402

ARMS = ("together", "mix", "group", "fine", "duet")
IN_PROCESS = ("together", "mix", "group")
AXES = ("mode", "keras", "api", "input")
OVERRIDES = AXES + ("env",)

# NAME=ENV:MODE:KERAS:API:INPUT/OVERRIDES: side b is side a with the overrides (none: A/A)
DEFAULT_COMPARISONS = (
    "aa=tf1.14:graph:tf.keras:train_on_batch:numpy/",
    "api=tf1.14:graph:tf.keras:train_on_batch:numpy/api=fit",
    "input=tf2.21:eager:keras3:train_on_batch:numpy/input=tfdata",
)


def parse_comparison(text):
    """NAME=ENV:MODE:KERAS:API:INPUT/KEY=VALUE,... -> (name, env, cell a, cell b). A clear
    error naming the text when it does not follow that form."""
    try:
        name, rest = text.split("=", 1)
        left, right = rest.split("/", 1)
        env, *axes = left.split(":")
        if len(axes) != len(AXES) or not name or not env:
            raise ValueError
        a = dict(zip(AXES, axes))
        b = dict(a)
        for item in filter(None, right.split(",")):
            key, value = item.split("=", 1)
            if key not in OVERRIDES:
                raise ValueError
            b[key] = value
    except ValueError:
        raise SystemExit("comparison %r: expected NAME=ENV:%s/KEY=VALUE,... with KEY one of %s"
                         % (text, ":".join(a.upper() for a in AXES), ", ".join(OVERRIDES))
                         ) from None
    return name, env, a, b


def sides_of(machine, env, a, b, threads):
    out = {}
    for label, axes in (("a", a), ("b", b)):
        axes = dict(axes)
        s = env_side(machine, axes.pop("env", env), axes["keras"], axes["mode"], threads)
        s["cell"] = dict(s["cell"], **axes)
        out[label] = s
    return out


def one_replicate(sides, windows, window_s, arm, first, mix_block=4, fine=4, extra=()):
    t0 = time.monotonic()
    if arm in IN_PROCESS:
        rec, workers = duet.start_together(sides, window_s, windows, first=first,
                                           mix_block=mix_block if arm != "together" else 0,
                                           extra=extra if arm == "group" else ())
    elif arm == "fine":
        rec, workers = duet.start_pair(sides, window_s / fine, windows * fine)
    else:
        rec, workers = duet.start_pair(sides, window_s, windows)
    for w in workers.values():
        w.close()
    med = {s: log_median(sum(rec["windows"][s], [])) for s in "ab"}
    return {"wall_s": time.monotonic() - t0, "alternation_s": rec["alternation_s"],
            "built_first": first if arm in IN_PROCESS else None,
            "log_median": med, "log_ratio": med["b"] - med["a"],
            "window_log_ratios": [log_median(wb) - log_median(wa) for wa, wb
                                  in zip(rec["windows"]["a"], rec["windows"]["b"])],
            "foreign_cpu_share": [c.get("foreign_cpu_share") if c else None
                                  for s in "ab" for c in workers[s].cpu]}


def group_extras(texts, comparisons):
    """--group-extra NAME|KEY=VALUE,...: an extra cell for comparison NAME's group arm, its
    side a with those changes. {name: [cell, ...]}."""
    by_name = {name: a for name, _, a, _ in comparisons}
    out = {name: [] for name in by_name}
    for text in texts:
        name, _, changes = text.partition("|")
        if name not in by_name or not changes:
            raise SystemExit("--group-extra %r: expected NAME|KEY=VALUE,... with NAME one of %s"
                             % (text, ", ".join(sorted(by_name))))
        _, _, _, cell = parse_comparison("%s=x:%s/%s" % (
            name, ":".join(by_name[name][k] for k in AXES), changes))
        out[name].append(cell)
    return out


def run(args):
    machine = args.machine or machine_key()
    comparisons = [parse_comparison(text) for text in args.comparisons]
    extras = group_extras(args.group_extra, comparisons)
    built = {name: sides_of(machine, env, a, b, args.threads)
             for name, env, a, b in comparisons}
    rng = random.Random(args.seed)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "a") as out:
        for trial in range(args.trials):
            for name, env, a, b in rng.sample(comparisons, len(comparisons)):
                arms = [arm for arm in args.arms if (arm not in IN_PROCESS or "env" not in b)
                        and (arm != "group" or extras[name])]
                for arm in rng.sample(arms, len(arms)):
                    extra = [dict(built[name]["a"]["cell"], **c) for c in extras[name]]
                    rec = one_replicate(built[name], args.windows, args.window_s, arm,
                                        "a" if trial % 2 == 0 else "b", args.mix_block,
                                        args.fine_factor, extra)
                    rec.update(arm=arm, trial=trial, comparison=name, env=env, a=a, b=b,
                               machine=machine)
                    out.write(json.dumps(rec, sort_keys=True) + "\n")
                    out.flush()
                    print("trial %d %s %s: %.1f s, log ratio %+.3f"
                          % (trial, name, arm, rec["wall_s"], rec["log_ratio"]), flush=True)


def sd_ci(x, level=0.95):
    """The sample sd of `x` and its chi-square CI."""
    x = np.asarray(x, dtype=float)
    n = len(x)
    sd = float(np.std(x, ddof=1))
    df = n - 1
    lo = sd * math.sqrt(df / stats.chi2.ppf(0.5 + level / 2, df))
    hi = sd * math.sqrt(df / stats.chi2.ppf(0.5 - level / 2, df))
    return sd, lo, hi


def welch(x, y, level=0.95):
    """mean(x) - mean(y) with its Welch CI."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    vx, vy = np.var(x, ddof=1) / len(x), np.var(y, ddof=1) / len(y)
    se = math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    d = float(np.mean(x) - np.mean(y))
    t = stats.t.ppf(0.5 + level / 2, df)
    return d, d - t * se, d + t * se


def windows_part(rows, sd):
    """A replicate's se of its log ratio from its window pairs' spread (None with one window:
    the mix arm), and the between-replicate sd beyond it (0 where the windows explain it all)."""
    w = [r["window_log_ratios"] for r in rows]
    if not w or min(len(x) for x in w) < 2:
        return {"window_se": None, "beyond_windows_sd": None}
    se = math.sqrt(float(np.mean([np.var(x, ddof=1) / len(x) for x in w])))
    return {"window_se": se, "beyond_windows_sd": math.sqrt(max(sd ** 2 - se ** 2, 0.0))}


def analyse(path, level=0.95):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    out = {"machine": rows[0]["machine"] if rows else "", "comparisons": {}}
    for name in sorted({r["comparison"] for r in rows}):
        mine = [r for r in rows if r["comparison"] == name]
        res = {"n": {}}
        for arm in ARMS:
            arm_rows = [r for r in mine if r["arm"] == arm]
            lr = [r["log_ratio"] for r in arm_rows]
            res["n"][arm] = len(lr)
            if len(lr) < 3:
                continue
            sd, lo, hi = sd_ci(lr, level)
            wall = float(np.median([r["wall_s"] for r in arm_rows]))
            res[arm] = {"mean_log_ratio": float(np.mean(lr)), "sd": sd, "sd_ci": [lo, hi],
                        "median_wall_s": wall, "precision_per_s": 1.0 / (sd ** 2 * wall),
                        # each side's own median between processes: the state a pair shares
                        "sd_side_a": sd_ci([r["log_median"]["a"] for r in arm_rows], level)[0],
                        # the windows' own share: a replicate's se from its windows, and the
                        # spread between replicates beyond it (the processes' and builds')
                        **windows_part(arm_rows, sd),
                        "corr_sides": float(stats.pearsonr(
                            [r["log_median"]["a"] for r in arm_rows],
                            [r["log_median"]["b"] for r in arm_rows])[0])}
        for arm in ARMS[:-1]:  # each other way of pairing against the duets
            if arm not in res or "duet" not in res:
                continue
            n1, n2 = res["n"]["duet"] - 1, res["n"][arm] - 1
            ratio = (res["duet"]["sd"] / res[arm]["sd"]) ** 2
            vs = {"var_ratio_duet_over_arm": ratio,
                  "var_ratio_ci": [ratio / stats.f.ppf(0.5 + level / 2, n1, n2),
                                   ratio / stats.f.ppf(0.5 - level / 2, n1, n2)],
                  "precision_per_s_ratio": (res[arm]["precision_per_s"]
                                            / res["duet"]["precision_per_s"]),
                  "shift_arm_minus_duet": list(welch(
                      [r["log_ratio"] for r in mine if r["arm"] == arm],
                      [r["log_ratio"] for r in mine if r["arm"] == "duet"], level))}
            own = [r for r in mine if r["arm"] == arm]
            fa = [r["log_ratio"] for r in own if r["built_first"] == "a"]
            fb = [r["log_ratio"] for r in own if r["built_first"] == "b"]
            if len(fa) >= 2 and len(fb) >= 2:
                vs["build_order_a_first_minus_b_first"] = list(welch(fa, fb, level))
            res[arm]["against_duet"] = vs
        out["comparisons"][name] = res
    return out


def pooled(paths, level=0.95):
    """Per arm, over every comparison of every file that has the arm and duets: the ratio of
    the duets' pooled variance to the arm's (each comparison's variance around its own mean,
    weighted by its degrees of freedom) with the F test's CI on the pooled degrees of freedom.
    Assumes one common ratio across the comparisons."""
    acc = {}
    for path in paths:
        for res in analyse(path, level)["comparisons"].values():
            for arm in ARMS[:-1]:
                if arm in res and "duet" in res:
                    a = acc.setdefault(arm, [0.0, 0, 0.0, 0, 0])
                    a[0] += (res["n"]["duet"] - 1) * res["duet"]["sd"] ** 2
                    a[1] += res["n"]["duet"] - 1
                    a[2] += (res["n"][arm] - 1) * res[arm]["sd"] ** 2
                    a[3] += res["n"][arm] - 1
                    a[4] += 1
    out = {}
    for arm, (sd_duet, df_duet, sd_arm, df_arm, k) in acc.items():
        ratio = (sd_duet / df_duet) / (sd_arm / df_arm)
        out[arm] = {"var_ratio_duet_over_arm": ratio, "comparisons": k,
                    "df": [df_duet, df_arm],
                    "ci": [ratio / stats.f.ppf(0.5 + level / 2, df_duet, df_arm),
                           ratio / stats.f.ppf(0.5 - level / 2, df_duet, df_arm)]}
    return out


def show_pooled(result):
    for arm, r in result.items():
        print("%s: variance duet / %s %.2f (95 %% CI %.2f-%.2f), pooled over %d comparisons on "
              "%d and %d df" % (arm, arm, r["var_ratio_duet_over_arm"], r["ci"][0], r["ci"][1],
                                r["comparisons"], r["df"][0], r["df"][1]))
    print(json.dumps(result, sort_keys=True))


def recorded_duets(folder):
    """The same split for a study's recorded duets (results/duets/<machine>/...): per mode, over
    the rows with at least 3 ok duets, the median and the mean-square of the between-duet sd and
    of the windows' own se. Where the between-duet variance is far above the windows', something
    beyond the windows (a process's or a build's state) moves the duets."""
    from driver.tables import duets as duets_table

    paths = sorted(Path(folder).rglob("*.json"))
    recs = [r for r in duets_table.load(paths) if r["status"] == "ok"]
    rows = {}
    for r in recs:
        key = (r["machine"], r["env"], json.dumps(r["cell"], sort_keys=True))
        rows.setdefault(key, []).append(r)
    out = {}
    for (machine, _, cell), group in rows.items():
        if len(group) < 3:
            continue
        sd = float(np.std([g["log_ratio"] for g in group], ddof=1))
        part = windows_part(group, sd)
        if part["window_se"] is None:
            continue
        mode = "%s %s" % (machine, json.loads(cell)["mode"])
        out.setdefault(mode, []).append((sd, part["window_se"]))
    summary = {}
    for mode, pairs in sorted(out.items()):
        a = np.array(pairs)
        summary[mode] = {"rows": len(a), "median_sd": float(np.median(a[:, 0])),
                         "median_window_se": float(np.median(a[:, 1])),
                         "rms_sd": float(np.sqrt(np.mean(a[:, 0] ** 2))),
                         "rms_window_se": float(np.sqrt(np.mean(a[:, 1] ** 2))),
                         "rms_beyond_windows": float(np.sqrt(max(
                             np.mean(a[:, 0] ** 2) - np.mean(a[:, 1] ** 2), 0.0)))}
    return summary


def show_recorded(summary):
    for mode, r in summary.items():
        print("%s: %d rows; between-duet sd median %.4f (root mean square %.4f); the windows' "
              "own se median %.4f (rms %.4f); beyond the windows (rms) %.4f"
              % (mode, r["rows"], r["median_sd"], r["rms_sd"], r["median_window_se"],
                 r["rms_window_se"], r["rms_beyond_windows"]))
    print(json.dumps(summary, sort_keys=True))


def show(result):
    print("pairs in one process against duets on %s" % result["machine"])
    for name, res in result["comparisons"].items():
        print("%s (replicates: %s)" % (name, ", ".join(
            "%s %d" % (arm, res["n"].get(arm, 0)) for arm in ARMS)))
        for arm in ARMS:
            if arm not in res:
                continue
            r = res[arm]
            print("  %-8s sd of the log ratio %.4f (95 %% CI %.4f-%.4f), mean %+.4f, %.1f s "
                  "a replicate; a side's own sd %.3f, sides' correlation %+.2f"
                  % (arm, r["sd"], r["sd_ci"][0], r["sd_ci"][1], r["mean_log_ratio"],
                     r["median_wall_s"], r["sd_side_a"], r["corr_sides"]))
            if r["window_se"] is not None:
                print("           its windows' own se %.4f; beyond the windows %.4f"
                      % (r["window_se"], r["beyond_windows_sd"]))
            vs = r.get("against_duet")
            if vs:
                print("           variance duet / %s %.2f (95 %% CI %.2f-%.2f); precision per "
                      "second %s / duet %.2f" % (arm, vs["var_ratio_duet_over_arm"],
                                                 vs["var_ratio_ci"][0], vs["var_ratio_ci"][1],
                                                 arm, vs["precision_per_s_ratio"]))
                print("           %s minus duet: %+.4f (95 %% CI %+.4f to %+.4f)"
                      % ((arm,) + tuple(vs["shift_arm_minus_duet"])))
                if "build_order_a_first_minus_b_first" in vs:
                    print("           built first a minus b: %+.4f (95 %% CI %+.4f to %+.4f)"
                          % tuple(vs["build_order_a_first_minus_b_first"]))
    print(json.dumps(result, sort_keys=True))


def main(argv=None):
    parser = trial_parser(__doc__, "build/pair_probe/pair_probe.jsonl", 10, 8, 20261128)
    parser.add_argument("--comparisons", nargs="+", default=list(DEFAULT_COMPARISONS),
                        help="NAME=ENV:MODE:KERAS:API:INPUT/KEY=VALUE,... (side b is side a "
                        "with the KEY=VALUE changes; none: the cell against itself)")
    parser.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    parser.add_argument("--duets", metavar="FOLDER",
                        help="only split a study's recorded duets (results/duets/<machine>) "
                        "into their windows' own se and what lies beyond it")
    parser.add_argument("--mix-block", type=int, default=4,
                        help="the mix arm's timed calls per block and side")
    parser.add_argument("--group-extra", nargs="*", default=[], metavar="NAME|KEY=VALUE,...",
                        help="an extra cell for comparison NAME's group arm: its side a with "
                        "these changes (repeat for more)")
    parser.add_argument("--fine-factor", type=int, default=4,
                        help="the fine arm's windows: this many times as many, as short")
    parser.add_argument("--pool", nargs="+", metavar="JSONL",
                        help="only pool earlier runs' files: each arm's variance against the "
                        "duets' over all their comparisons")
    args, _ = parser.parse_known_args(argv)
    if args.duets:
        return show_recorded(recorded_duets(args.duets))
    if args.pool:
        return show_pooled(pooled(args.pool))
    run_or_analyse(parser, argv, run, analyse, show)


if __name__ == "__main__":
    main()
