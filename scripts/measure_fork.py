"""`make measure-fork`: are forked cell processes as good as fresh ones, and how much cheaper?

A process that has imported the framework can fork children that build and time a cell, skipping
the import. Two questions decide whether the study may use them: does a forked child draw the
process's own state afresh (or inherit its parent's, so that its siblings are not independent
replicates), and how much precision does a second of the machine buy either way?

For each env (default TF 1.14, TF 2.21) and each chosen training cell, `--helpers` H helper
processes of the env import only the framework and stay alive; in each of `--children` k rounds,
every helper forks one child (which builds, warms up and times the cell, exactly run_cell.run) and
as many fresh processes run (a new interpreter of the env running scripts/run_cell.py, as the
study does), all in a seeded random order, so that a helper's children are spread over the probe
and drift of the machine falls on every helper and on the fresh processes alike. Printed per cell
and pooled over the cells:

- the siblings' intraclass correlation (one-way random-effects ANOVA of the children's log medians
  by helper; its exact F-based CI, the F test of "no helper effect" and that test's power at a
  stated ICC at these sizes): a helper effect means siblings share a state, and the check says
  SHARED when the F test rejects at 0.05;
- the variance of a forked child's log median against a fresh process's (F-test CI);
- seconds per process of each kind, and the precision per second of forking k children per helper
  relative to fresh processes, counting the siblings' correlation.

Times the machine: run it on a quiet machine only. The study's cells stay fresh processes; the
figures decide whether they should not (docs/design.md).
"""
import argparse
import glob
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml
from scipy import stats as sps

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from driver.study import envspec  # noqa: E402
from tfspeed import cells as tfcells  # noqa: E402
from tfspeed import frameworks, models  # noqa: E402

# The helper: imports the framework, then forks one child per line "go <out.json>" on stdin; each
# child runs the cell (run_cell.run) with its stdout on /dev/null and writes its result to out.
HELPER = r"""
import json, os, sys, time
sys.path.insert(0, {scripts!r})
import {module}
import run_cell
from tfspeed.atomic import write_json
cell, rule = json.loads({cell!r}), json.loads({rule!r})
print("READY", flush=True)
for line in sys.stdin:
    out = line.split(None, 1)[1].strip()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        try:
            write_json(out, run_cell.run(cell, rule, {framework!r}, 1.0))
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    print("DONE %.6f" % (time.monotonic() - t0), flush=True)
"""


def framework_module(framework):
    """What the helper imports first: the framework's module (its catalogue row's `module`)."""
    row = frameworks.get(framework)
    return row.module if row is not None else framework


def f_test(fork_logs, fresh_logs, level=0.95):
    """Variance ratio fork / fresh of one cell's log medians, its F-test CI and two-sided p
    (`pooled_ratio` of that one cell)."""
    r = pooled_ratio([centred_ss(fork_logs)], [centred_ss(fresh_logs)], level)
    return {k: r[k] for k in ("var_ratio", "ci_low", "ci_high", "p")}


def anova_sums(groups):
    """Sums of squares of a balanced one-way layout: rows are helpers, columns their children.
    Returns (ssb, df_between, ssw, df_within, k)."""
    y = np.asarray(groups, float)
    if y.ndim != 2 or y.shape[0] < 2 or y.shape[1] < 2:
        raise ValueError("sibling spread needs at least 2 helpers with at least 2 children each, "
                         f"got shape {y.shape}")
    h, k = y.shape
    means = y.mean(axis=1)
    ssb = float(k * ((means - y.mean()) ** 2).sum())
    ssw = float(((y - means[:, None]) ** 2).sum())
    return ssb, h - 1, ssw, h * (k - 1), k


def siblings(sums, level=0.95, alpha=0.05, planted_icc=0.3):
    """The siblings' intraclass correlation from one or more cells' `anova_sums` (pooled: the
    sums and degrees of freedom add; every cell must have the same k). ICC = (MSB - MSW) /
    (MSB + (k - 1) MSW), its exact CI from F = MSB / MSW (Searle), the F test of no helper effect
    (p), and that test's power at `planted_icc` (F is (1 + k icc / (1 - icc)) times a central F
    there). `shared` is the check: the F test rejects at `alpha`."""
    ssb = sum(s[0] for s in sums)
    d1 = sum(s[1] for s in sums)
    ssw = sum(s[2] for s in sums)
    d2 = sum(s[3] for s in sums)
    ks = {s[4] for s in sums}
    if len(ks) != 1:
        raise ValueError(f"cells pooled for the siblings' ICC must share k, got {sorted(ks)}")
    k = ks.pop()
    msb, msw = ssb / d1, ssw / d2
    f0 = msb / msw
    lo_f = f0 / float(sps.f.ppf(0.5 + level / 2, d1, d2))
    hi_f = f0 / float(sps.f.ppf(0.5 - level / 2, d1, d2))
    crit = float(sps.f.ppf(1 - alpha, d1, d2))
    stretch = 1 + k * planted_icc / (1 - planted_icc)
    return {"k": k, "df_between": d1, "df_within": d2, "ms_between": msb, "ms_within": msw,
            "var_between": max(0.0, (msb - msw) / k), "var_within": msw, "F": f0,
            "p": float(sps.f.sf(f0, d1, d2)),
            "icc": (msb - msw) / (msb + (k - 1) * msw),
            "icc_low": max(-1.0 / (k - 1), (lo_f - 1) / (lo_f + k - 1)),
            "icc_high": (hi_f - 1) / (hi_f + k - 1),
            "planted_icc": planted_icc, "power": float(sps.f.sf(crit / stretch, d1, d2)),
            "shared": bool(float(sps.f.sf(f0, d1, d2)) < alpha)}


def centred_ss(values):
    """(sum of squares about the mean, degrees of freedom) of one cell's log medians."""
    x = np.asarray(values, float)
    return float(((x - x.mean()) ** 2).sum()), x.size - 1


def pooled_ratio(fork_ss, fresh_ss, level=0.95):
    """Variance ratio fork / fresh pooled over cells (each cell about its own mean: the sums of
    squares and degrees of freedom add), with its F-test CI and two-sided p."""
    sf, df_f = sum(s for s, _ in fork_ss), sum(d for _, d in fork_ss)
    sr, df_r = sum(s for s, _ in fresh_ss), sum(d for _, d in fresh_ss)
    ratio = (sf / df_f) / (sr / df_r)
    p = 2 * min(float(sps.f.cdf(ratio, df_f, df_r)), float(sps.f.sf(ratio, df_f, df_r)))
    return {"var_ratio": ratio, "df_fork": df_f, "df_fresh": df_r,
            "ci_low": ratio / float(sps.f.ppf(0.5 + level / 2, df_f, df_r)),
            "ci_high": ratio / float(sps.f.ppf(0.5 - level / 2, df_f, df_r)), "p": min(1.0, p)}


def precision_per_second(var_fresh, s_fresh, var_child, icc, k, s_child, s_import):
    """How much more precision a second buys with k forked children per helper than with fresh
    processes: variance of a mean per second spent, fresh over forked. A helper's k children
    estimate with variance var_child (1 + (k - 1) icc) / k at a cost of s_import + k s_child."""
    icc = max(0.0, icc)
    forked = var_child * (1 + (k - 1) * icc) / k * (s_import + k * s_child)
    return var_fresh * s_fresh / forked


def env_python(env, env_root):
    found = sorted(glob.glob(os.path.join(env_root, env + "-*", "bin", "python")),
                   key=os.path.getmtime)
    if not found:
        sys.exit(f"measure_fork: no built venv for {env} under {env_root} (build it: make quick)")
    return found[-1]


def default_cells(env, count, only=()):
    """The env's first `count` small-model training cells (numpy input, CPU): train_on_batch
    first, eager first; only those whose id contains one of `only`, when given."""
    doc = yaml.safe_load(open(os.path.join(REPO, "envs", env + ".yaml")))
    spec = envspec.parse_spec(env, doc)
    grid = {"pairs": [["small", "small"]], "keras": "all", "modes": "all",
            "apis": ["train_on_batch", "custom_loop", "fit"], "inputs": ["numpy"],
            "devices": ["cpu"]}
    cells = tfcells.expand_grid(spec, grid)
    cells.sort(key=lambda c: (c["api"] != "train_on_batch", c["mode"] != "eager", c["mode"],
                              c["keras"]))
    if only:
        cells = [c for c in cells if any(p in tfcells.cell_id(c) for p in only)]
    return spec, cells[:count]


def stop_rule(model):
    stop = dict(yaml.safe_load(open(os.path.join(REPO, "config.yaml")))["stop"])
    iterations = stop.pop("iterations")
    if iterations == "seed":
        iterations = models.SEED_ITERATIONS.get(model, 10)
    return {"kind": stop.pop("rule"), "iterations": iterations, **stop}


def median_of(path):
    with open(path) as handle:
        doc = json.load(handle)
    if doc.get("status") != "ok":
        raise RuntimeError(f"{path}: {doc.get('status')}: {doc.get('reason')}")
    return float(np.median(doc["samples_s"]))


def start_helper(python, framework, cell_json, rule, env):
    """A helper of the env that has imported the framework (and run_cell); returns it with the
    seconds its start and import took."""
    t0 = time.monotonic()
    helper = subprocess.Popen(
        [python, "-c", HELPER.format(scripts=HERE, module=framework_module(framework),
                                     cell=cell_json, rule=rule, framework=framework)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    while helper.stdout.readline().strip() != "READY":
        if helper.poll() is not None:
            raise RuntimeError("the fork helper died before it was ready")
    return helper, time.monotonic() - t0


def fork_child(helper, path):
    """One child of the helper times the cell into path; returns its wall seconds."""
    helper.stdin.write(f"go {path}\n")
    helper.stdin.flush()
    line = ""
    while not line.startswith("DONE"):
        line = helper.stdout.readline()
        if not line:
            raise RuntimeError("the fork helper died")
    return float(line.split()[1])


def schedule(helpers, children, rng):
    """k rounds; in each, one child of every helper and as many fresh processes, shuffled."""
    order = []
    for r in range(children):
        items = [("fork", h, r) for h in range(helpers)] + [("fresh", i, r) for i in range(helpers)]
        order.extend(items[j] for j in rng.permutation(len(items)))
    return order


def measure(python, spec, cell, helpers, children, tmp, rng, records):
    """Times one cell's helpers' children and fresh processes in shuffled rounds; appends every
    process's record (and each helper's import) to `records` and returns the cell's figures."""
    framework = spec["framework"]
    rule = json.dumps(stop_rule(cell["model"]))
    cell_json = json.dumps(cell)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONHASHSEED="0", TF_CPP_MIN_LOG_LEVEL="1")
    base = {"env": spec["name"], "cell": tfcells.cell_id(cell)}
    mine = []
    started = []
    for h in range(helpers):
        when = time.time()
        started.append(start_helper(python, framework, cell_json, rule, env))
        mine.append({**base, "kind": "helper", "helper": h, "round": None, "order": None,
                     "start_unix": when, "wall_s": started[-1][1], "log_median": None})
    try:
        for n, (kind, who, r) in enumerate(schedule(helpers, children, rng)):
            path = os.path.join(tmp, f"{kind}{who}-{r}.json")
            when = time.time()
            if kind == "fresh":
                t = time.monotonic()
                subprocess.run([python, os.path.join(HERE, "run_cell.py"), "--cell", cell_json,
                                "--rule", rule, "--framework", framework,
                                "--foreign-cpu-max-share", "1.0", "--out", path],
                               env=env, check=True, stdout=subprocess.DEVNULL)
                wall = time.monotonic() - t
            else:
                wall = fork_child(started[who][0], path)
            mine.append({**base, "kind": kind, "helper": who if kind == "fork" else None,
                         "round": r, "order": n, "start_unix": when, "wall_s": wall,
                         "log_median": math.log(median_of(path))})
    finally:
        for helper, _ in started:
            helper.stdin.close()
            helper.wait(timeout=60)
    records.extend(mine)
    return summarise(mine)


def summarise(records):
    """One cell's figures from its records (what `measure` appended, or a kept JSON-lines file):
    the spreads, the F test fork / fresh, the siblings' ANOVA sums and ICC, seconds per process and
    the precision per second (None without the helpers' import records)."""
    forks = [r for r in records if r["kind"] == "fork"]
    fresh = [r["log_median"] for r in records if r["kind"] == "fresh"]
    imports = [r["wall_s"] for r in records if r["kind"] == "helper"]
    helpers = sorted({r["helper"] for r in forks})
    children = sorted({r["round"] for r in forks})
    grid = np.full((len(helpers), len(children)), np.nan)
    for r in forks:
        grid[helpers.index(r["helper"]), children.index(r["round"])] = r["log_median"]
    if np.isnan(grid).any():
        raise ValueError(f"{records[0]['cell']}: every helper needs a child in every round")
    logs = grid.ravel()
    sums = anova_sums(grid)
    sib = siblings([sums])
    wall_fresh = float(np.mean([r["wall_s"] for r in records if r["kind"] == "fresh"]))
    wall_child = float(np.mean([r["wall_s"] for r in forks]))
    import_s = float(np.mean(imports)) if imports else None
    return {"env": records[0]["env"], "cell": records[0]["cell"], "helpers": len(helpers),
            "children": len(children), "sd_fresh": float(np.std(fresh, ddof=1)),
            "sd_fork": float(np.std(logs, ddof=1)), **f_test(logs, fresh), "sums": sums,
            "ss_fork": centred_ss(logs), "ss_fresh": centred_ss(fresh),
            "icc": sib["icc"], "icc_low": sib["icc_low"], "icc_high": sib["icc_high"],
            "icc_p": sib["p"], "wall_fresh_s": wall_fresh, "wall_child_s": wall_child,
            "helper_import_s": import_s,
            "precision_per_s": None if import_s is None else precision_per_second(
                float(np.var(fresh, ddof=1)), wall_fresh, sib["var_between"] + sib["var_within"],
                sib["icc"], len(children), wall_child, import_s)}


def row_text(row):
    gain = "" if row["precision_per_s"] is None else "  precision/s x%.2f" % row["precision_per_s"]
    imp = "" if row["helper_import_s"] is None else " import %.2f" % row["helper_import_s"]
    return ("%-8s %-42s sd fresh %.4f fork %.4f var ratio %.2f [%.2f, %.2f]  siblings' ICC %+.2f"
            " [%+.2f, %+.2f] p=%.3f  s fresh %.2f child %.2f%s%s" % (
                row["env"], row["cell"], row["sd_fresh"], row["sd_fork"], row["var_ratio"],
                row["ci_low"], row["ci_high"], row["icc"], row["icc_low"], row["icc_high"],
                row["icc_p"], row["wall_fresh_s"], row["wall_child_s"], imp, gain))


def report(rows, json_path=None):
    """Prints the rows and the pooled figures; writes them to json_path when given."""
    for row in rows:
        print(row_text(row), flush=True)
    pooled = siblings([row["sums"] for row in rows])
    ratio = pooled_ratio([row["ss_fork"] for row in rows], [row["ss_fresh"] for row in rows])
    print(pooled_text(pooled, len(rows)))
    print("variance of a forked child's log median over a fresh process's, over %d cells: %.2f "
          "(95 %% CI %.2f to %.2f, p %.3f)" % (len(rows), ratio["var_ratio"], ratio["ci_low"],
                                               ratio["ci_high"], ratio["p"]))
    if json_path:
        with open(json_path, "w") as handle:
            json.dump({"rows": rows, "pooled": pooled, "pooled_ratio": ratio}, handle, indent=1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["tf1.14", "tf2.21"])
    parser.add_argument("--cells", type=int, default=2, help="cells per env")
    parser.add_argument("--only", nargs="+", default=[],
                        help="keep the cells whose id contains one of these (before --cells)")
    parser.add_argument("--helpers", type=int, default=5, help="helper processes per cell (H)")
    parser.add_argument("--children", type=int, default=3,
                        help="children per helper (k); as many fresh processes run")
    parser.add_argument("--seed", type=int, default=0, help="seed of the run order")
    parser.add_argument("--env-root", default=os.path.join(REPO, ".envs"))
    parser.add_argument("--json", help="also write the rows and the pooled figures to this file")
    parser.add_argument("--records", help="also write every process's record (JSON lines)")
    parser.add_argument("--analyse", metavar="RECORDS",
                        help="time nothing: print the figures of a kept --records file")
    args = parser.parse_args(argv)
    if args.analyse:
        if not os.path.isfile(args.analyse):
            parser.error(f"--analyse {args.analyse}: no such records file")
        with open(args.analyse) as handle:
            kept = [json.loads(line) for line in handle if line.strip()]
        cells = list(dict.fromkeys((r["env"], r["cell"]) for r in kept))
        report([summarise([r for r in kept if (r["env"], r["cell"]) == c]) for c in cells],
               args.json)
        return
    if args.helpers < 2 or args.children < 2:
        parser.error("--helpers and --children must be at least 2 (a sibling spread needs both)")
    rng = np.random.default_rng(args.seed)
    rows, records = [], []
    for env in args.envs:
        python = env_python(env, args.env_root)
        spec, cells = default_cells(env, args.cells, args.only)
        if not cells:
            parser.error(f"--only {args.only}: no training cell of {env} matches")
        for cell in cells:
            with tempfile.TemporaryDirectory() as tmp:
                rows.append(measure(python, spec, cell, args.helpers, args.children, tmp, rng,
                                    records))
            print(row_text(rows[-1]), flush=True)
            if args.records:  # kept as it goes: a stopped probe keeps its cells
                with open(args.records, "w") as handle:
                    handle.writelines(json.dumps(r) + "\n" for r in records)
    print()
    report(rows, args.json)


def pooled_text(pooled, cells):
    """The pooled siblings' check in words: SHARED when the F test rejects, else how large a
    share it could still miss."""
    verdict = ("SHARED: a helper's children are not independent replicates" if pooled["shared"]
               else "no helper effect found")
    return ("siblings' ICC over %d cells: %+.3f (95 %% CI %+.3f to %+.3f), F %.2f on %d and %d "
            "df, p %.3f: %s; this test finds an ICC of %.1f with probability %.2f" % (
                cells, pooled["icc"], pooled["icc_low"], pooled["icc_high"], pooled["F"],
                pooled["df_between"], pooled["df_within"], pooled["p"], verdict,
                pooled["planted_icc"], pooled["power"]))


if __name__ == "__main__":
    main()
