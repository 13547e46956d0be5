"""Benchmark the harness itself (not a test): prints figures and a final JSON line.

  overhead_rel            per-sample cost of the sampling loop (two clock reads and an append),
                          measured against a bare loop, over the small cell's median step.  <= 1e-4
  orchestrator_cpu_share  CPU of Snakemake, the shells and the supervisors during the cells' timed
                          windows, in cores (each supervisor meters it at the window's edges). <= 0.01
  aa_rate                 A/A pairs (the same cell twice) tested as the study tests (its model:
                          round blocks, moderated spreads): the share with p <= the study's own
                          per-test threshold (the largest p Benjamini-Hochberg rejects over the
                          study's comparisons; never BH over the A/A pairs alone, which is about 0
                          by construction), with its Clopper-Pearson CI.       CI holds the threshold
  aa_coverage             the share of A/A CIs (at stop.level) that cover a ratio of 1.  CI holds level
  aa_ks_p                 Kolmogorov-Smirnov test that the A/A p-values are uniform.          > 0.05
                          Quick mode: the quick preset with `--aa-processes` (6) processes per
                          cell, each cell's processes split into even and odd rounds (two
                          interleaved halves). --from-runs: each cell of run A against itself in
                          run B (each run's own model; Welch df across the runs).
  mde_80                  smallest ratio the default design (`repeats` processes per cell)
                          detects with 80 % power at the study's per-test threshold, for the
                          75th-percentile cell's (moderated) spread, with the moderated t's df.
                                                                                           <= 1.10
  spread_ours / spread_seed  the small tf.keras eager train_on_batch cell measured 5 times:
                          (max - min) / median of our estimate (geometric mean of `--pool` fresh
                          processes' medians) vs the seed's (the mean of 200 calls in one
                          process).                                                   ours <= seed/3
  ci_rel_median, timed_share  the quick study's median within-process CI half-width over the
                          median, and the share of its wall time inside timed loops.
  decisions               --from-runs, per run: of the comparison rows whose ratio lies inside
                          the margin (min_effect), the share that end equivalent      >= 0.80
                          (Clopper-Pearson CI), and the graph-mode TF 2 vs TF 1 train_on_batch
                          versions decided (the report's headline rows)             >= 18 of 22

Usage: python scripts/selfbench.py [--processes 5] [--pool <repeats>] [--aa-processes 6] [--skip-study]
       python scripts/selfbench.py --from-runs A B   (A, B: results folders of two default studies)
Writes results/selfbench.json. Run it on an otherwise idle machine: it times things.

--from-runs takes the A/A pairs, the orchestrator's share and the between-process spread from two
finished runs of the default study instead of a quick study: each cell of run A against the same
cell of run B, every cell in its default design. That is the rerun itself: it includes whatever
changed on the machine between the runs, which split halves of one run do not. The figures are
computed by driver/stats/calibration.py (tests/unit/stats/test_calibration.py plants an inflated
A/A rate and checks that these figures fail it).
"""
import argparse
import json
import math
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

from driver.report import answer  # noqa: E402
from driver.report.bottom_line import duet_rows  # noqa: E402
from driver.stats import blocks, calibration, crossrun_judge, moderated, verdicts  # noqa: E402
from driver.study import layout  # noqa: E402
from driver.tables.results import Results  # noqa: E402
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
    records = Results(workdir / "results").cell_records(ok_only=False)
    return wall, [r for r in records if r["status"] == "ok"]


def _series(rounds_and_logs) -> pd.Series:
    return pd.Series([y for _, y in rounds_and_logs], index=[f"#{r}" for r, _ in rounds_and_logs])


def aa_pairs(records, k, level=0.95):
    """One A/A pair per cell with 2k processes: its even rounds against its odd rounds (two
    interleaved halves), each half a cell of the study's model (blocks.fit_study)."""
    by_cell = {}
    for r in records:
        by_cell.setdefault((r["env"], r["cell_id"]), {})[r["repeat"]] = math.log(
            float(np.median(r["samples_s"])))
    logs, pairs = {}, []
    for (env, cid), procs in by_cell.items():
        if len(procs) < 2 * k:
            continue
        reps = sorted(procs)[:2 * k]
        logs[(env, cid, "even")] = _series([(i, procs[i]) for i in reps[0::2]])
        logs[(env, cid, "odd")] = _series([(i, procs[i]) for i in reps[1::2]])
        pairs.append(((env, cid, "even"), (env, cid, "odd")))
    fit = blocks.fit_study(logs)
    return pd.DataFrame([blocks.compare_cells(fit, a, b, level) for a, b in pairs]), fit


def comparison_tables(tables_folder):
    """Each comparison table of the registry that the folder holds (the `machines` table, across
    machines, is not one of a run's comparisons)."""
    yield from Results(tables_folder).comparisons().values()


def study_threshold(tables_folder, q) -> float:
    """The per-test threshold a study's BH family implies (verdicts.bh_threshold over the p of
    every comparison table in the folder); NaN without tables."""
    p = []
    for table in comparison_tables(tables_folder):
        if "p" in table.columns:
            p += list(pd.to_numeric(table["p"], errors="coerce").dropna())
    return verdicts.bh_threshold(p, q) if p else math.nan


def mde_75(fit: dict, repeats: int, threshold: float) -> tuple[float, float]:
    """(mde_80, sd): for the 75th-percentile cell's moderated sd, at the threshold, with the
    moderated t's df 2 (d0 + repeats - 1)."""
    sds = [math.sqrt(v["s2_post"]) for k, v in fit.items()
           if k != "_prior" and v["n"] >= 2 and math.isfinite(v["s2_post"])]
    if not sds or not threshold > 0:
        return math.nan, math.nan
    sd = float(np.percentile(sds, 75))
    d0 = fit["_prior"]["d0"]
    df = math.inf if math.isinf(d0) else 2 * (d0 + repeats - 1)
    return verdicts.mde(sd, repeats, alpha=threshold, df=df), sd


def run_records(folder) -> list[dict]:
    """The ok cell records of a results folder (<folder>/cells/<machine>/<env>/*.json)."""
    return Results(folder).cell_records(ok_only=True)


def process_medians(records) -> dict:
    """(machine, env, cell_id) -> the medians of its processes."""
    out = {}
    for r in records:
        out.setdefault((r["machine"], r["env"], r["cell_id"]), []).append(
            float(np.median(r["samples_s"])))
    return out


def run_logs(records) -> dict:
    """(machine, env, cell_id) -> pd.Series of its processes' log medians by round."""
    out = {}
    for r in records:
        out.setdefault((r["machine"], r["env"], r["cell_id"]), []).append(
            (f"{layout.base_machine(r['machine'])}#{r['repeat']}",
             math.log(float(np.median(r["samples_s"])))))
    return {k: pd.Series([y for _, y in v], index=[b for b, _ in v]) for k, v in out.items()}


def runs_figures(a, b, repeats, level, q) -> tuple[dict, pd.DataFrame]:
    """A/A pairs, orchestrator share and spreads from two finished runs (see --from-runs)."""
    recs_a, recs_b = run_records(a), run_records(b)
    meds_a, meds_b = process_medians(recs_a), process_medians(recs_b)
    fit_a, fit_b = blocks.fit_study(run_logs(recs_a)), blocks.fit_study(run_logs(recs_b))
    rows = []
    for key in sorted(set(meds_a) & set(meds_b)):
        if fit_a[key]["n"] >= 2 and fit_b[key]["n"] >= 2:
            left, right = fit_a[key], fit_b[key]
            rows.append(moderated.compare(left["mean"], left["s2_post"], left["df_post"],
                                          left["n"], right["mean"], right["s2_post"],
                                          right["df_post"], right["n"], level=level))
    pairs = pd.DataFrame(rows)
    threshold = study_threshold(Path(a) / "tables", q)
    meters = [r["provenance"].get("orchestrator_cpu") for r in recs_a + recs_b]
    meters = [m for m in meters if m]
    between = [float(np.std(np.log(m), ddof=1)) for m in list(meds_a.values())
               + list(meds_b.values()) if len(m) >= 2]
    foreign = [r["cpu_window"]["foreign_cpu_share"] for r in recs_a + recs_b
               if (r.get("cpu_window") or {}).get("foreign_cpu_share") is not None]
    flagged = sum(bool(r.get("foreign_cpu_flag")) for r in recs_a + recs_b)
    mde, sd75 = mde_75(fit_a, repeats, threshold)
    figures = {
        "orchestrator_cpu_share": (sum(m["orchestrator_cpu_s"] for m in meters)
                                   / max(sum(m["window_s"] for m in meters), 1e-9))
        if meters else None,
        "orchestrator_cpu_share_max": max((m["orchestrator_cpu_s"] / m["window_s"]
                                           for m in meters if m["window_s"] > 0), default=None),
        "foreign_cpu_share_median": statistics.median(foreign) if foreign else None,
        "foreign_cpu_flagged": f"{flagged} of {len(recs_a) + len(recs_b)} processes",
        "between_sd_median": statistics.median(between) if between else float("nan"),
        "threshold": threshold,
        "mde_80": mde, "mde_80_sd": sd75, "mde_80_repeats": repeats,
        "aa_source": f"two runs: {a} vs {b}",
    }
    return figures, pairs


def decision_figures(tables_folder, margin: float) -> dict:
    """What one run's verdicts decide, from its tables:
    - equivalence: of the comparison rows whose estimated ratio lies inside the margin
      (1 / (1 + margin) .. 1 + margin), how many end `equivalent` (Clopper-Pearson CI);
    - graph_decided: TF 2 vs TF 1 like-for-like `train_on_batch` in graph mode, one row per TF 2
      version as the report's headline picks it: the versions whose verdict is not undecided
      (from the duets table when the run has one, else from tf2_vs_tf1);
    - headline: per mode, from the duets table, the versions decided and, of the rows within 5 %
      of equal, how many end equivalent (Clopper-Pearson CI).
    """
    res = Results(tables_folder)
    inside = equivalent = 0
    for table in res.comparisons().values():
        if "ratio" not in table.columns or "verdict" not in table.columns:
            continue
        ratio = pd.to_numeric(table["ratio"], errors="coerce")
        within = (ratio >= 1 / (1 + margin)) & (ratio <= 1 + margin)
        inside += int(within.sum())
        equivalent += int((table.loc[within, "verdict"].map(answer.norm_verdict)
                           == answer.EQUIV).sum())
    lo, hi = calibration.clopper_pearson(equivalent, inside)
    graph = {"decided": 0, "versions": 0, "undecided": []}
    headline = {}
    if res.has("duets"):  # the headline from duets (driver/tables/duets.py)
        duets = res.duets()
        for mode in ("graph", "eager"):
            head = duet_rows(duets, mode)
            decided = head[head["verdict"].map(answer.norm_verdict) != answer.INCONCL]
            near = head[(head["ratio"] >= 1 / 1.05) & (head["ratio"] <= 1.05)]
            near_eq = int((near["verdict"].map(answer.norm_verdict) == answer.EQUIV).sum())
            headline[mode] = {
                "decided": int(len(decided)), "versions": int(len(head)),
                "undecided": [str(e) for e in head.loc[~head.index.isin(decided.index), "env"]],
                "within_5pct": int(len(near)), "within_5pct_equivalent": near_eq,
                "within_5pct_equivalent_ci": list(calibration.clopper_pearson(near_eq,
                                                                              len(near)))}
        if "graph" in headline:
            graph = {k: headline["graph"][k] for k in ("decided", "versions", "undecided")}
    elif res.has("tf2_vs_tf1"):
        rows = answer.like_for_like(res.table("tf2_vs_tf1"))
        rows = rows[(rows["mode"] == "graph") & (rows["api"] == "train_on_batch")] \
            if not rows.empty else rows
        head = answer.headline_rows(rows) if not rows.empty else rows
        for r in head.to_dict("records"):
            graph["versions"] += 1
            if r["verdict_n"] == answer.INCONCL:
                graph["undecided"].append(str(r.get("left_env")))
            else:
                graph["decided"] += 1
    return {"margin": margin, "inside_margin": inside, "equivalent": equivalent,
            "equivalent_share": equivalent / inside if inside else math.nan,
            "equivalent_ci": [lo, hi], "graph_decided": graph, "headline": headline}


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
    level = default["stop"]["level"]
    pairs, fit = aa_pairs(cells, k, level)
    threshold = study_threshold(WORK / "study" / "results" / "tables", default["fdr_q"])
    mde, sd75 = mde_75(fit, default["repeats"], threshold)
    figures = {
        "orchestrator_cpu_share": (sum(m["orchestrator_cpu_s"] for m in meters)
                                   / max(sum(m["window_s"] for m in meters), 1e-9))
        if meters else None,
        "foreign_cpu_share_median": statistics.median(foreign) if foreign else None,
        "between_sd_median": between_sd,
        "threshold": threshold,
        "mde_80": mde, "mde_80_sd": sd75, "mde_80_repeats": default["repeats"],
        "ci_rel_median": statistics.median(rel),
        "timed_share": timed / wall,
        "study_wall_s": wall,
        "aa_source": f"quick study, {args.aa_processes} processes per cell, split in halves",
    }
    return figures, pairs


def calibration_checks(pairs: pd.DataFrame, runs, figures: dict) -> list[str]:
    """Cross-run checks with power and size as compare-runs prints them: the A/A pairs' spread
    and, with --from-runs, the two runs' (figures "aa_check", "cross_run")."""
    lines = []
    if len(pairs) >= 3 and {"ratio", "se_log", "df"} <= set(pairs.columns):
        log_ratio = np.log(pd.to_numeric(pairs["ratio"], errors="coerce").to_numpy(float))
        zero = np.zeros(len(pairs))
        figures["aa_check"] = crossrun_judge.rows_check(
            log_ratio, pairs["se_log"], pairs["df"], zero, zero, np.full(len(pairs), np.inf),
            centre=True)
        lines += crossrun_judge.verdict_text("A/A pairs, spread about their common shift",
                                             figures["aa_check"])
    if runs:
        import compare_runs

        out = compare_runs.compare_runs(*runs)
        figures["cross_run"] = {k: out[k].get("check") for k in (
            "cells_calibration", "comparisons_calibration", "duets_calibration")}
        lines += compare_runs.checks_text(out)
    return lines


def rate_text(r: dict) -> str:
    if not r["n"]:
        return "no pairs"
    return "%d of %d = %.3f (95 %% CI %.3f-%.3f; nominal %.3g: %s)" % (
        r["k"], r["n"], r["rate"], r["ci_low"], r["ci_high"], r["nominal"],
        "ok" if r["ok"] else "FAILS")


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
        study, pairs = runs_figures(*args.from_runs, default["repeats"],
                                    default["stop"]["level"], default["fdr_q"])
        recs = run_records(args.from_runs[0]) + run_records(args.from_runs[1])
        study["ci_rel_median"] = statistics.median(
            r["summary"]["ci_rel_halfwidth"] for r in recs)
        study["timed_share"] = study["study_wall_s"] = None
    else:
        study, pairs = quick_study(args, default, quick)
    # the shift common to every pair (run against run, even rounds against odd) out first
    pairs, study["aa_shift"] = calibration.centred_pairs(pairs, default["stop"]["level"])
    aa = calibration.aa_figures(pairs.get("p", []), pairs.get("ratio_ci_low", []),
                                pairs.get("ratio_ci_high", []), study["threshold"],
                                default["stop"]["level"])
    print("%s: %d A/A pairs (their common shift %.4f taken out); between-process sd: median "
          "%.3f; within-process CI half-width / median: median %.4f"
          % (study.get("aa_source", "quick study"), len(pairs), study["aa_shift"],
             study["between_sd_median"], study["ci_rel_median"]))

    if args.from_runs:
        # what each run's verdicts decide (goals: >= 80 % of the rows inside the margin end
        # equivalent; graph-mode TF 2 vs TF 1 train_on_batch decided in >= 18 of 22 versions)
        study["decisions"] = {}
        for name, folder in zip("AB", args.from_runs):
            d = decision_figures(Path(folder) / "tables", default["min_effect"])
            study["decisions"][name] = d
            g = d["graph_decided"]
            for mode, h in d["headline"].items():
                print("run %s, duets, %s mode: %d of %d versions decided; of the %d within 5 %% "
                      "of equal, %d end equivalent (95 %% CI of the share %.2f-%.2f)"
                      % (name, mode, h["decided"], h["versions"], h["within_5pct"],
                         h["within_5pct_equivalent"], *h["within_5pct_equivalent_ci"]))
            print("run %s: rows inside the margin (ratio within 1 +- %.2f) that end equivalent: "
                  "%d of %d = %.3f (95 %% CI %.3f-%.3f; goal >= 0.80); graph-mode TF 2 vs TF 1 "
                  "train_on_batch: %d of %d versions decided (goal >= 18 of 22)%s"
                  % (name, d["margin"], d["equivalent"], d["inside_margin"],
                     d["equivalent_share"], *d["equivalent_ci"], g["decided"], g["versions"],
                     "; undecided: " + ", ".join(g["undecided"]) if g["undecided"] else ""))

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
        "aa_rate": aa["aa_rate"], "aa_coverage": aa["coverage"], "aa_ks_p": aa["ks_p"],
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
    print("A/A at the study's per-test threshold p <= %.4g: %s" % (study["threshold"],
                                                                   rate_text(aa["aa_rate"])))
    print("A/A CIs (level %.2f) covering 1: %s" % (default["stop"]["level"],
                                                   rate_text(aa["coverage"])))
    print("A/A p-values uniform (Kolmogorov-Smirnov): p %.3g (%s)"
          % (aa["ks_p"], "ok" if aa["ks_ok"] else "NOT UNIFORM"))
    for line in calibration_checks(pairs, args.from_runs, figures):
        print(line)
    print("mde_80 %.3f at the study's threshold, 75th-percentile cell (sd %.3f), %d processes "
          "per cell (goal <= 1.10)" % (figures["mde_80"], figures["mde_80_sd"],
                                       default["repeats"]))
    print("spread of %d estimates: ours (%d processes each) %.3f, seed's 200-call mean %.3f"
          % (len(groups), args.pool, figures["spread_ours"], figures["spread_seed"]))
    write_json(str(REPO / "results" / "selfbench.json"), figures)
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
