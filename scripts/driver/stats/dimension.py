"""Dimensioning (Kalibera and Jones 2013): where the variance is, what each level costs, and the
repeats and sampling window that give the narrowest CI per minute of machine time.

Levels, all on the log scale (relative spreads):
- samples inside a process's timed window: a = variance of the process's log estimate times the
  window's seconds (variance per second of sampling: a window of w seconds leaves a / w), from
  batch means of the samples, so that autocorrelated samples are not counted as independent;
- processes inside a run: T2 = the between-process variance of the processes' log medians less
  what their own windows explain (method of moments, pooled over cells);
- runs (with two runs): T3 = the variance of a cell's level between runs less what its processes
  explain.
Costs: o = a process's wall time outside its timed window (interpreter, framework import, model
build, warm-up, first calls) and the window w itself.

A cell estimate of k processes of window w has variance (T2 + a / w) / k and costs k (o + w)
seconds; for any k the best window is w* = sqrt(a o / T2) (K&J's optimal count at a level in
seconds). The CI half-width is t(k - 1) sqrt((T2 + a / w) / k).

`nested_components` is the textbook nested ANOVA estimator (tested against statsmodels' MixedLM).
"""
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats as sps

BATCHES = 8


def nested_components(df: pd.DataFrame, value: str = "y", process: str = "process",
                      run: str | None = None) -> dict:
    """Method-of-moments variance components of a nested design (samples in processes, processes
    in runs when `run` is given): {"within", "process", "run"} (run: None without runs). Unequal
    group sizes use the usual n0 coefficients; negative estimates are clipped to 0."""
    y = df[value].to_numpy(dtype=float)
    grand = y.mean()
    pkey = [run, process] if run else [process]
    g = df.groupby(pkey)[value]
    n_i, m_i = g.size().to_numpy(float), g.mean().to_numpy(float)
    n_p, n = len(n_i), len(y)
    ss_within = float(((df[value] - g.transform("mean")) ** 2).sum())
    ms_within = ss_within / (n - n_p)
    if not run:
        ms_proc = float((n_i * (m_i - grand) ** 2).sum()) / (n_p - 1)
        n0 = (n - (n_i ** 2).sum() / n) / (n_p - 1)
        return {"within": ms_within, "process": max(0.0, (ms_proc - ms_within) / n0),
                "run": None}
    runs = df.groupby(run)[value]
    r_n, r_m = runs.size().to_numpy(float), runs.mean().to_numpy(float)
    n_r = len(r_n)
    proc_run = g.mean().reset_index()[run].to_numpy()
    run_mean = dict(zip(runs.mean().index, r_m))
    ms_proc = float((n_i * (m_i - np.array([run_mean[r] for r in proc_run])) ** 2).sum()) / (
        n_p - n_r)
    ms_run = float((r_n * (r_m - grand) ** 2).sum()) / (n_r - 1)
    # expected mean squares (Sokal and Rohlf): coefficients of the process and run components
    sizes = pd.Series(n_i, index=pd.Index(proc_run)).groupby(level=0)
    n0 = (n - float(sizes.apply(lambda s: (s ** 2).sum() / s.sum()).sum())) / (n_p - n_r)
    n0p = (float(sizes.apply(lambda s: (s ** 2).sum() / s.sum()).sum())
           - float((n_i ** 2).sum()) / n) / (n_r - 1)
    n0r = (n - float((r_n ** 2).sum()) / n) / (n_r - 1)
    process_var = max(0.0, (ms_proc - ms_within) / n0)
    run_var = max(0.0, (ms_run - ms_within - n0p * process_var) / n0r)
    return {"within": ms_within, "process": process_var, "run": run_var}


def batch_variance_rate(samples: Sequence[float], window_s: float,
                        batches: int = BATCHES) -> float | None:
    """Variance of the process's log estimate times its window (per second of sampling), from the
    means of `batches` contiguous batches of log samples; None with too few samples."""
    logs = np.log(np.asarray(samples, dtype=float))
    if logs.size < 2 * batches or not window_s > 0:
        return None
    means = np.array([b.mean() for b in np.array_split(logs, batches)])
    return float(means.var(ddof=1) / batches * window_s)


def cell_levels(records: Iterable[Mapping]) -> pd.DataFrame:
    """One row per ok cell (machine, env, cell_id): k processes, a (variance per second inside a
    window), between (variance of log medians), T2 (between less a / window), overhead o, window
    w and process wall time (medians over the cell's processes)."""
    groups: dict = {}
    for rec in records:
        if rec.get("status") == "ok" and rec.get("samples_s"):
            groups.setdefault((rec["machine"], rec["env"], rec["cell_id"]), []).append(rec)
    rows = []
    for (machine, env, cid), reps in groups.items():
        windows = [float(r.get("timed_wall_s") or sum(r["samples_s"])) for r in reps]
        rates = [batch_variance_rate(r["samples_s"], w) for r, w in zip(reps, windows)]
        rates = [x for x in rates if x is not None]
        walls = [(r.get("provenance") or {}).get("cell_wall_s") for r in reps]
        medians = np.log([float(np.median(r["samples_s"])) for r in reps])
        window = float(np.median(windows))
        a = float(np.median(rates)) if rates else math.nan
        between = float(medians.var(ddof=1)) if len(reps) > 1 else math.nan
        wall = float(np.median([w for w in walls if w])) if any(walls) else math.nan
        rows.append({"machine": machine, "env": env, "cell_id": cid, "k": len(reps), "a": a,
                     "between": between, "T2": between - a / window, "window_s": window,
                     "wall_s": wall, "overhead_s": wall - window,
                     "level": float(medians.mean())})
    return pd.DataFrame(rows)


def run_component(a: pd.DataFrame, b: pd.DataFrame) -> dict:
    """T3 from the same cells in two runs: per cell (level_A - level_B)^2 / 2 less the part its
    processes explain (between / k averaged over the runs), pooled (mean) over cells."""
    keys = ["env", "cell_id"]
    both = a.merge(b, on=keys, suffixes=("_a", "_b")).dropna(subset=["between_a", "between_b"])
    if both.empty:
        return {"cells": 0, "T3": math.nan}
    diff = (both["level_a"] - both["level_b"]) ** 2 / 2.0
    explained = (both["between_a"] / both["k_a"] + both["between_b"] / both["k_b"]) / 2.0
    return {"cells": len(both), "T3": float((diff - explained).mean()),
            "T3_per_cell_median": float((diff - explained).median())}


def pooled(levels: pd.DataFrame) -> dict:
    """The study's levels pooled over cells: a and T2 weighted by the cells' degrees of freedom,
    overhead and window as medians; T2 clipped at 0."""
    ok = levels.dropna(subset=["a", "between"])
    if ok.empty:
        raise ValueError("no cell with two or more ok processes and enough samples")
    w = ok["k"] - 1
    t2 = float(np.average(ok["T2"], weights=w))
    return {"cells": len(ok), "a": float(np.average(ok["a"], weights=w)),
            "T2": max(0.0, t2), "T2_raw": t2, "overhead_s": float(ok["overhead_s"].median()),
            "window_s": float(ok["window_s"].median()), "wall_s": float(ok["wall_s"].median())}


def best_window(a: float, t2: float, overhead_s: float) -> float:
    """w* = sqrt(a o / T2): the window that minimises variance x cost for any number of processes."""
    if not t2 > 0:
        return math.inf
    return math.sqrt(a * overhead_s / t2)


def halfwidth(k: int, window_s: float, a: float, t2: float, level: float = 0.95,
              df: float = math.inf, comparison: bool = False) -> float:
    """Relative CI half-width (log scale) from k processes of this window each: of a cell
    estimate, or with comparison=True of the ratio of two such cells (variance twice a cell's).
    The critical value is the analysis's own: the study's moderated model pools the spread over
    every cell, so its degrees of freedom are large (df = inf: the normal quantile), not the
    k - 1 of one cell alone (t at k - 1 = 3 is 3.18 against 1.96)."""
    if k < 2:
        return math.nan
    crit = float(sps.norm.ppf(0.5 + level / 2) if math.isinf(df)
                 else sps.t.ppf(0.5 + level / 2, df))
    return crit * math.sqrt((2.0 if comparison else 1.0) * (t2 + a / window_s) / k)


def plan_table(levels: Mapping, repeats: Sequence[int] = range(2, 13),
               windows: Sequence[float] = (0.25, 0.5, 1.0, 2.0, 4.0),
               level: float = 0.95) -> pd.DataFrame:
    """Every (k, window): seconds per cell, CI half-width, and half-width x sqrt(minutes): the
    width one minute of machine time buys (smaller is better)."""
    wstar = best_window(levels["a"], levels["T2"], levels["overhead_s"])
    grid = sorted(set(windows) | ({round(wstar, 3)} if math.isfinite(wstar) else set()))
    rows = []
    for k in repeats:
        for w in grid:
            hw = halfwidth(k, w, levels["a"], levels["T2"], level)
            cost = k * (levels["overhead_s"] + w)
            # the headline's equivalence test: the (1 - 2 alpha) = 90 % interval of a ratio
            tost = halfwidth(k, w, levels["a"], levels["T2"], 0.90, comparison=True)
            rows.append({"repeats": k, "window_s": w, "seconds_per_cell": cost,
                         "halfwidth": hw, "tost_halfwidth": tost,
                         "halfwidth_x_sqrt_min": hw * math.sqrt(cost / 60.0)})
    return pd.DataFrame(rows)


def recommend(levels: Mapping, seconds_per_cell: float, level: float = 0.95, **grid) -> dict:
    """The (k, window) with the narrowest CI that costs at most `seconds_per_cell`."""
    table = plan_table(levels, level=level, **grid)
    fits = table[table["seconds_per_cell"] <= seconds_per_cell * (1 + 1e-9)]
    if fits.empty:
        return {}
    return fits.loc[fits["halfwidth"].idxmin()].to_dict()


def equivalence_power(k: int, window_s: float, a: float, t2: float, margin: float,
                      log_ratio: float = 0.0, alpha: float = 0.05) -> float:
    """Probability that the equivalence test (TOST: the 1 - 2 alpha interval of the ratio of two
    cells of k processes each inside +-margin, in log) says equivalent when the true log ratio is
    `log_ratio`, with the spread known (the normal quantile, as the study's moderated model has
    it): the ratio's estimate d ~ N(log_ratio, se^2), se^2 = 2 (T2 + a / w) / k, and equivalence
    when -margin + z se < d < margin - z se. An estimated spread only lowers it."""
    if k < 2:
        return 0.0
    se = math.sqrt(2.0 * (t2 + a / window_s) / k)
    z = float(sps.norm.ppf(1 - alpha))
    if margin <= z * se:
        return 0.0
    hi = (margin - z * se - log_ratio) / se
    lo = (-margin + z * se - log_ratio) / se
    return float(sps.norm.cdf(hi) - sps.norm.cdf(lo))


def equivalence_processes(window_s: float, a: float, t2: float, margin: float,
                          log_ratio: float = 0.0, power: float = 0.8, alpha: float = 0.05,
                          k_max: int = 10000) -> int | None:
    """The fewest processes per cell (both cells alike) at which `equivalence_power` reaches
    `power`; None when even k_max does not (a true ratio at or beyond the margin)."""
    if abs(log_ratio) >= margin:
        return None
    lo, hi = 2, k_max
    if equivalence_power(hi, window_s, a, t2, margin, log_ratio, alpha) < power:
        return None
    while lo < hi:  # the power grows with k once k is past the margin's reach
        mid = (lo + hi) // 2
        if equivalence_power(mid, window_s, a, t2, margin, log_ratio, alpha) >= power:
            hi = mid
        else:
            lo = mid + 1
    return lo
