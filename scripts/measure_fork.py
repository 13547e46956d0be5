"""`make measure-fork`: are forked cell processes as good as fresh ones, and how much cheaper?

For each env (default TF 1.14, TF 2.21, PyTorch) and each of its first `--cells` training cells,
runs `--n` fresh processes (a new interpreter of the env running scripts/run_cell.py, as the study
does) and `--n` forked ones (children of one helper process of the env that has imported only the
framework; each child builds, warms up and times the cell, exactly run_cell.run), alternating
fresh and forked so that drift of the machine falls on both. Prints per cell the sd of the
processes' log medians of each kind, the F-test ratio of their variances with its CI, and the wall
time per process (the forked one's plus the helper's import spread over its children).

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
    """Variance ratio fork / fresh of the log medians, its F-test CI and two-sided p."""
    a, b = np.asarray(fork_logs, float), np.asarray(fresh_logs, float)
    da, db = a.size - 1, b.size - 1
    ratio = float(a.var(ddof=1) / b.var(ddof=1))
    lo = ratio / float(sps.f.ppf(0.5 + level / 2, da, db))
    hi = ratio / float(sps.f.ppf(0.5 - level / 2, da, db))
    p = 2 * min(float(sps.f.cdf(ratio, da, db)), float(sps.f.sf(ratio, da, db)))
    return {"var_ratio": ratio, "ci_low": lo, "ci_high": hi, "p": min(1.0, p)}


def env_python(env, env_root):
    found = sorted(glob.glob(os.path.join(env_root, env + "-*", "bin", "python")),
                   key=os.path.getmtime)
    if not found:
        sys.exit(f"measure_fork: no built venv for {env} under {env_root} (build it: make quick)")
    return found[-1]


def default_cells(env, count):
    """The env's first `count` small-model training cells (numpy input, CPU): train_on_batch
    first, eager first."""
    doc = yaml.safe_load(open(os.path.join(REPO, "envs", env + ".yaml")))
    spec = envspec.parse_spec(env, doc)
    grid = {"pairs": [["small", "small"]], "keras": "all", "modes": "all",
            "apis": ["train_on_batch", "custom_loop", "fit"], "inputs": ["numpy"],
            "devices": ["cpu"]}
    cells = tfcells.expand_grid(spec, grid)
    cells.sort(key=lambda c: (c["api"] != "train_on_batch", c["mode"] != "eager", c["mode"],
                              c["keras"]))
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


def measure(python, spec, cell, n, tmp):
    framework = spec["framework"]
    rule = json.dumps(stop_rule(cell["model"]))
    cell_json = json.dumps(cell)
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTHONHASHSEED="0", TF_CPP_MIN_LOG_LEVEL="1")
    t0 = time.monotonic()
    helper = subprocess.Popen(
        [python, "-c", HELPER.format(scripts=HERE, module=framework_module(framework),
                                     cell=cell_json, rule=rule, framework=framework)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    while helper.stdout.readline().strip() != "READY":
        if helper.poll() is not None:
            raise RuntimeError("the fork helper died before it was ready")
    import_s = time.monotonic() - t0
    out = {"fresh": [], "fork": [], "fresh_wall": [], "fork_wall": []}
    for i in range(n):
        path = os.path.join(tmp, f"fresh{i}.json")
        t = time.monotonic()
        subprocess.run([python, os.path.join(HERE, "run_cell.py"), "--cell", cell_json,
                        "--rule", rule, "--framework", framework,
                        "--foreign-cpu-max-share", "1.0", "--out", path],
                       env=env, check=True, stdout=subprocess.DEVNULL)
        out["fresh_wall"].append(time.monotonic() - t)
        out["fresh"].append(math.log(median_of(path)))
        path = os.path.join(tmp, f"fork{i}.json")
        helper.stdin.write(f"go {path}\n")
        helper.stdin.flush()
        line = ""
        while not line.startswith("DONE"):
            line = helper.stdout.readline()
            if not line:
                raise RuntimeError("the fork helper died")
        out["fork_wall"].append(float(line.split()[1]))
        out["fork"].append(math.log(median_of(path)))
    helper.stdin.close()
    helper.wait(timeout=60)
    test = f_test(out["fork"], out["fresh"])
    return {"env": spec["name"], "cell": tfcells.cell_id(cell), "n": n,
            "sd_fresh": float(np.std(out["fresh"], ddof=1)),
            "sd_fork": float(np.std(out["fork"], ddof=1)), **test,
            "wall_fresh_s": float(np.mean(out["fresh_wall"])),
            "wall_fork_s": float(np.mean(out["fork_wall"])) + import_s / n,
            "helper_import_s": import_s}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", nargs="+", default=["tf1.14", "tf2.21", "torch2.13"])
    parser.add_argument("--cells", type=int, default=3, help="cells per env")
    parser.add_argument("--n", type=int, default=20, help="processes of each kind per cell")
    parser.add_argument("--env-root", default=os.path.join(REPO, ".envs"))
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    if args.n < 2:
        parser.error("--n must be at least 2 (a spread needs two processes)")
    rows = []
    for env in args.envs:
        python = env_python(env, args.env_root)
        spec, cells = default_cells(env, args.cells)
        for cell in cells:
            with tempfile.TemporaryDirectory() as tmp:
                row = measure(python, spec, cell, args.n, tmp)
            rows.append(row)
            print("%-10s %-44s n=%d sd fresh %.4f fork %.4f  var ratio %.2f [%.2f, %.2f] p=%.3f"
                  "  s/process fresh %.2f fork %.2f" % (
                      row["env"], row["cell"], row["n"], row["sd_fresh"], row["sd_fork"],
                      row["var_ratio"], row["ci_low"], row["ci_high"], row["p"],
                      row["wall_fresh_s"], row["wall_fork_s"]), flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
