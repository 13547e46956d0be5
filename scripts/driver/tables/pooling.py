"""From cell files to one row per cell: repeats (separate processes) pooled, the machine's
attainable FLOP/s applied. `CELL_COLUMNS` is the column list of results/tables/cells.csv (its types:
driver/tables/bundle.py)."""
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from driver.stats import blocks, drift, spikes, verdicts
from driver.stats import pooled as compare
from driver.study import layout
from driver.tables.ordering import env_order, sort_rows
from tfspeed.cells import AXES, task

CELL_COLUMNS = [
    "machine", "env", "framework", "framework_version", "python", "keras", "keras_version",
    "mode", "api", "input", "device", "model", "data", "status", "reason", "n_samples",
    "steps_per_call", "n_repeats", "n_failed_repeats", "median_s", "ci_low_s", "ci_high_s", "ci_level",
    "ci_rel_halfwidth", "ci_df", "first_call_s", "mean_s", "sd_s", "iqr_s", "min_s", "max_s", "noisy",
    "drift", "drift_p", "drift_ratio", "between_sd", "within_ci_rel", "retraces", "stopped_by",
    "flops_per_step", "achieved_flops", "peak_flops", "efficiency", "numpy_version", "optimizer",
    "cpu_model", "gpu", "peak_rss_mb", "started_utc", "cell_id", "best_process_median_s",
    "warmup_calls", "warmup_capped", "too_few_samples", "foreign_cpu_share", "foreign_cpu_flag",
    "threads", "process_wall_s", "allocation", "task", *spikes.COLUMNS,
]


def apply_machine_peaks(cells: pd.DataFrame) -> pd.DataFrame:
    """Attainable FLOP/s per machine = its fastest ok matmul cell (seed 004's 1000 x 1000 matmul, in
    NumPy and every framework's modes); every cell's efficiency is its achieved FLOP/s over that.
    Machines without a matmul cell keep these columns empty."""
    if cells.empty or "achieved_flops" not in cells:
        return cells
    ok = cells[(cells["status"] == "ok") & (cells["api"] == "matmul")]
    # The best process, not the pooled median: a peak is what the machine can do, and a process
    # that drew a worse memory layout or a busier neighbour says less about that.
    best = ok["flops_per_step"] / ok["best_process_median_s"]
    peaks = best.groupby(ok["machine"]).max()
    for machine, peak in peaks.items():
        if peak and peak > 0:
            mask = cells["machine"] == machine
            cells.loc[mask, "peak_flops"] = peak
            cells.loc[mask, "efficiency"] = cells.loc[mask, "achieved_flops"] / peak
    return cells


def first(values: Iterable):
    return next((v for v in values if v is not None), None)


def _median_or_none(values: Iterable) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def _threads_text(threads: dict | None) -> str | None:
    """'intra 0, inter 0, BLAS 2, OS 9' (0 = the framework's own choice), 'pinned N' first."""
    if not threads:
        return None
    parts = ["pinned %d" % threads["pinned"]] if threads.get("pinned") else []
    for key, label in (("intra_op_threads", "intra"), ("inter_op_threads", "inter")):
        if threads.get(key) is not None:
            parts.append(f"{label} {threads[key]}")
    blas = sorted(set((threads.get("blas") or {}).values()))
    if blas:
        parts.append("BLAS " + "/".join(map(str, blas)))
    if threads.get("os_threads") is not None:
        parts.append(f"OS {threads['os_threads']}")
    return ", ".join(parts)


def _gpu_name(prov: dict) -> str | None:
    gpus = (prov.get("machine") or {}).get("gpus")
    if isinstance(gpus, list) and gpus:
        return ", ".join(str(g.get("name", "gpu")) for g in gpus if isinstance(g, dict)) or None
    return None


def pool_cells(records: Sequence[dict], level: float = 0.95, noisy_threshold: float = 0.10,
               spike_factor: float = 2.0) -> tuple[pd.DataFrame, dict]:
    """One row per (machine, env, cell_id) with its repeats (processes) pooled.

    Returns (cells, logs): `cells` has CELL_COLUMNS in version order; `logs` maps (machine, env,
    cell_id) of every ok cell to the log medians of its ok processes, what comparisons test.

    median_s, ci_low_s, ci_high_s: the cell estimate and its CI from the study's model
    (driver/stats/blocks.py: round-adjusted, moderated spread; no CI with one process); ci_df:
    that CI's degrees of freedom (the moderated t's d0 + d).
    n_samples, mean_s, sd_s, iqr_s, min_s, max_s describe all samples pooled. between_sd: sd of
    the processes' log medians (about their relative spread); within_ci_rel: the median
    process's own CI half-width over its median.
    noisy: between_sd above the threshold; drift: any process drifts (driver/stats/drift.py).
    task: train, infer or micro (tfspeed.cells.task). p95_over_median, p99_over_median,
    max_over_median, spikes, spike_factor: the tail of the samples (driver/stats/spikes.py).

    Status: ok when at least one repeat is ok (the reason then says how many repeats were not and
    why); otherwise failed when any repeat failed, else skipped. `retraces` is the largest count of
    retraces during timing in any repeat.
    """
    groups: dict[tuple, list[dict]] = {}
    for rec in records:
        groups.setdefault((rec["machine"], rec["env"], rec["cell_id"]), []).append(rec)
    rows, logs = [], {}
    for (machine, env, cid), reps in groups.items():
        reps = sorted(reps, key=lambda r: r["repeat"])
        oks = [r for r in reps if r["status"] == "ok"]
        bad = [r for r in reps if r["status"] != "ok"]
        reasons = list(dict.fromkeys(f"{r['status']}: {r['reason']}" if oks else r["reason"]
                                     for r in bad))
        if oks:
            status = "ok"
            reason = (f"{len(bad)} of {len(reps)} repeats not ok, pooled the rest; "
                      + " | ".join(reasons)) if bad else ""
        else:
            status = "failed" if any(r["status"] == "failed" for r in bad) else "skipped"
            reason = " | ".join(reasons)
        facts = first((r.get("framework_facts") or {}) for r in oks) or {}
        provs = [r.get("provenance") or {} for r in (oks or reps)]
        row = {
            "machine": machine, "env": env, "cell_id": cid,
            "framework": first(r.get("framework") for r in reps),
            "framework_version": first(r.get("framework_version") for r in reps),
            "python": first(r.get("python") for r in oks + bad),
            "keras_version": facts.get("keras_version"),
            "optimizer": facts.get("optimizer"),
            "numpy_version": first(r.get("numpy_version") for r in oks + bad),
            **{axis: reps[0][axis] for axis in AXES},
            "task": task(reps[0]["api"]),
            "status": status, "reason": reason,
            "n_repeats": len(oks), "n_failed_repeats": len(bad),
            "flops_per_step": first(r.get("flops_per_step") for r in reps),
            "cpu_model": first((p.get("machine") or {}).get("cpu_model") for p in provs),
            "gpu": first(_gpu_name(p) for p in provs),
            "peak_rss_mb": max((p["peak_rss_mb"] for p in provs
                                if isinstance(p.get("peak_rss_mb"), (int, float))), default=None),
            "started_utc": min(r["started_utc"] for r in reps),
        }
        if oks:
            pooled = compare.pooled_summary([r["samples_s"] for r in oks], level=level,
                                            noisy_threshold=noisy_threshold)
            # The cell's estimate and CI from its processes (driver/stats/verdicts.py): the samples of
            # one process are not independent evidence about the cell.
            est = verdicts.cell_estimate(pooled["per_process_medians"], level)
            # indexed by time block (the machine's round; a twin shares its machine's rounds)
            logs[(machine, env, cid)] = pd.Series(
                verdicts.log_medians(pooled["per_process_medians"]),
                index=[f"{layout.base_machine(machine)}#{r['repeat']}" for r in oks])
            trends = [drift.block_trend(r["samples_s"]) for r in oks]
            worst = min(trends, key=lambda t: t["drift_p"] if t["drift_p"] is not None else 2.0)
            retraces = [r.get("retraces_during_timing") for r in oks]
            median = est["estimate_s"]
            shares = [(r.get("cpu_window") or {}).get("foreign_cpu_share") for r in oks]
            shares = [x for x in shares if x is not None]
            within = [(r.get("summary") or {}).get("ci_rel_halfwidth") for r in oks]
            row.update({
                "best_process_median_s": min(pooled["per_process_medians"]),
                "process_wall_s": _median_or_none(
                    [(r.get("provenance") or {}).get("cell_wall_s") for r in oks]),
                "warmup_calls": _median_or_none([r.get("warmup_calls") for r in oks]),
                "warmup_capped": any(r.get("warmup_stopped_by") == "cap" for r in oks),
                "too_few_samples": any(bool(r.get("too_few_samples")) for r in oks),
                "foreign_cpu_share": max(shares) if shares else None,
                "foreign_cpu_flag": any(bool(r.get("foreign_cpu_flag")) for r in oks),
                "threads": _threads_text(oks[0].get("threads")),
                "n_samples": pooled["n"],
                "steps_per_call": max(int(r.get("steps_per_call") or 1) for r in oks),
                "median_s": median, "ci_low_s": est["ci_low_s"], "ci_high_s": est["ci_high_s"],
                "ci_level": level,
                "ci_rel_halfwidth": (est["ci_high_s"] - est["ci_low_s"]) / 2.0 / median,
                **{k: pooled[k] for k in ("mean_s", "sd_s", "iqr_s", "min_s", "max_s")},
                # noisy: the processes disagree by more than the threshold (sd of log medians)
                "noisy": bool(est["between_sd"] > noisy_threshold),
                "drift": any(t["drift"] for t in trends),
                "drift_p": worst["drift_p"], "drift_ratio": worst["drift_ratio"],
                "between_sd": est["between_sd"],
                "within_ci_rel": _median_or_none(within),
                "first_call_s": float(np.median([r["first_call_s"] for r in oks])),
                "retraces": max((x for x in retraces if x is not None), default=None),
                "stopped_by": ", ".join(dict.fromkeys(r["stopped_by"] for r in oks)),
                **spikes.tail_figures([r["samples_s"] for r in oks], spike_factor),
            })
            flops = row["flops_per_step"]
            if flops and median > 0:
                row["achieved_flops"] = flops / median
        else:
            row["n_samples"] = 0
        rows.append(row)
    cells = pd.DataFrame(rows, columns=CELL_COLUMNS)
    if cells.empty:
        return cells, logs
    return sort_rows(model_estimates(cells, logs, level), env_order(cells)), logs


def model_estimates(cells: pd.DataFrame, logs: dict, level: float) -> pd.DataFrame:
    """Each ok cell's estimate and CI from the study's model (driver/stats/blocks.py: round-adjusted
    mean of log medians, moderated-t interval), in place of the cell-by-cell figures."""
    fit = blocks.fit_study(logs)
    for i, key in zip(cells.index, zip(cells["machine"], cells["env"], cells["cell_id"])):
        if key not in fit:
            continue
        est = blocks.cell_ci(fit[key], level)
        median = est["estimate_s"]
        cells.loc[i, ["median_s", "ci_low_s", "ci_high_s"]] = [median, est["ci_low_s"],
                                                               est["ci_high_s"]]
        cells.loc[i, "ci_rel_halfwidth"] = (est["ci_high_s"] - est["ci_low_s"]) / 2.0 / median
        cells.loc[i, "ci_df"] = est["df"]
        flops = cells.loc[i, "flops_per_step"]
        if flops and not pd.isna(flops) and median > 0:
            cells.loc[i, "achieved_flops"] = flops / median
    return cells
