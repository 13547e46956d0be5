"""The machine probe: a short calibration run at the start of every study, and the rule that stops a
study adding cells under a machine key whose machine is no longer the one that wrote them.

The probe is two cells (NumPy's 1000x1000 matmul, and the small model's train_on_batch in the probe
env), each in `probe.processes` fresh processes. The first probe under a key is its reference
(results/machines/<key>/probe.json). A later study that adds cells under that key compares its probe
with the reference, cell by cell, on log process medians:

    d = mean(log m_now) - mean(log m_ref),   se^2 = s^2 (1/n_ref + 1/n_now) + 2 RUN_SD^2

(s: the spread of log medians pooled over every probe cell of both probes; RUN_SD: the shift of a
whole run that the processes' spread leaves out). The probe has moved when, for some cell, |d|
exceeds the t quantile (pooled degrees of freedom) at LEVEL (Bonferroni over the probe's cells) times se
and the ratio exp(d) lies more than `min_change` from 1. The fingerprint (driver/study/fingerprint.py)
must match too: of the reference and of every cell file under the key that carries one.

Pure functions here; scripts/probe_machine.py runs the processes and applies `decide`.
"""
import json
import math
import statistics

from driver.study import fingerprint

# Two-sided level of the probe's test, over all its cells together (Bonferroni).
LEVEL = 0.99
# Run-level standard deviation of log medians: a whole run shifts by about this much (the size of
# the run-level offset that compare-runs' calibration must flag, docs/METHOD.md).
RUN_SD = 0.03


def summarize(records):
    """{cell_id: {"log_medians": [...], "n", "mean", "sd", "median_s"}} of the probe's ok processes."""
    by_cell = {}
    for rec in records:
        if rec.get("status") == "ok" and (rec.get("summary") or {}).get("median_s"):
            by_cell.setdefault(rec["cell_id"], []).append(math.log(rec["summary"]["median_s"]))
    out = {}
    for cell, logs in sorted(by_cell.items()):
        out[cell] = {"log_medians": logs, "n": len(logs), "mean": statistics.fmean(logs),
                     "sd": statistics.stdev(logs) if len(logs) > 1 else None,
                     "median_s": math.exp(statistics.median(logs))}
    return out


def pooled_spread(*sides):
    """(variance, degrees of freedom) of log medians pooled over every cell of both probes: one
    machine's spread, from all the probe's processes (two processes a side leave Welch's test with
    one or two degrees of freedom, and its quantile without bound)."""
    num = dof = 0.0
    for side in sides:
        for summary in side.values():
            if summary.get("sd") is not None and summary["n"] > 1:
                num += (summary["n"] - 1) * summary["sd"] ** 2
                dof += summary["n"] - 1
    return (num / dof if dof else 0.0), dof


def compare_cell(ref, now, m=1, level=LEVEL, run_sd=RUN_SD, min_change=0.10, pooled=None):
    """The test of one probe cell: ratio now/ref, its CI, and whether it has moved. `pooled`:
    (variance, df) of the spread (default: this cell's two sides pooled)."""
    from scipy import stats  # here: every cell's supervisor imports this module

    d = now["mean"] - ref["mean"]
    variance, df = pooled or pooled_spread({"r": ref}, {"n": now})
    se = math.sqrt(variance * (1.0 / ref["n"] + 1.0 / now["n"]) + 2 * run_sd ** 2)
    crit = float(stats.t.ppf(1 - (1 - level) / (2 * m), df)) if df else float(
        stats.norm.ppf(1 - (1 - level) / (2 * m)))
    ratio = math.exp(d)
    beyond_ci = bool(abs(d) > crit * se)
    return {"ratio": ratio, "ci_low": math.exp(d - crit * se), "ci_high": math.exp(d + crit * se),
            "df": float(df), "beyond_ci": beyond_ci,
            "moved": bool(beyond_ci and abs(ratio - 1) > min_change)}


def compare(reference, current, min_change=0.10, level=LEVEL, run_sd=RUN_SD):
    """{cell_id: compare_cell(...)} over the cells both probes hold, with the spread pooled over
    all of them."""
    common = sorted(set(reference) & set(current))
    pooled = pooled_spread({c: reference[c] for c in common}, {c: current[c] for c in common})
    return {c: compare_cell(reference[c], current[c], len(common), level, run_sd, min_change,
                            pooled) for c in common}


def decide(key, reference, current, cell_fingerprints, min_change=0.10, force=False):
    """(verdict, message, details): verdict "ok", "stop" or "forced".

    `reference` and `current` are probe documents ({"fingerprint", "cells": summarize(...)});
    `cell_fingerprints` the fingerprint hashes of the cell files already under `key` (cell files
    written before fingerprints carry none and are not counted). With no cell file under the key
    there is nothing to protect: the probe is recorded and the study goes on."""
    changes = []
    fp_now = current["fingerprint"]
    if reference is not None and reference.get("fingerprint", {}).get("hash") != fp_now["hash"]:
        changes.append("the fingerprint differs from the reference probe's: "
                       + "; ".join(fingerprint.differences(reference["fingerprint"], fp_now)))
    others = sorted(h for h in set(cell_fingerprints) if h and h != fp_now["hash"])
    if others:
        changes.append("%d fingerprint(s) of cell files under the key differ from this machine's "
                       "(%s; this machine %s)" % (len(others), ", ".join(h[:8] for h in others),
                                                  fp_now["hash"][:8]))
    tests = {}
    if reference is not None:
        tests = compare(reference["cells"], current["cells"], min_change)
        for cell, t in tests.items():
            if t["moved"]:
                changes.append("probe cell %s runs %.3gx its reference time (CI %.3g-%.3g; more "
                               "than %d %% from 1 and beyond the CI)" % (
                                   cell, t["ratio"], t["ci_low"], t["ci_high"],
                                   round(100 * min_change)))
    details = {"tests": tests, "changes": changes, "cells_under_key": len(cell_fingerprints)}
    if not changes or not cell_fingerprints:
        return "ok", "machine %s: the probe matches its reference" % key, details
    what = "\n  - ".join(changes)
    if force:
        return "forced", ("machine %s is not the machine that wrote its cells; going on because "
                          "force_machine is true (recorded in results/machines/%s/overrides.json):"
                          "\n  - %s" % (key, key, what)), details
    return "stop", (
        "machine %s: this machine is not the one that wrote the cells under this key, so the study "
        "stops before timing anything.\n  - %s\nHow to go on: run under a new key (--config "
        "machine=<new key>; `machine: auto` gives one when the fingerprint differs) so that the two "
        "machines' cells are never pooled, or, if you know the machine is the same and the change "
        "is transient (another tenant's load), rerun later, or pass --config force_machine=true to "
        "add the cells anyway (the override is recorded in results/machines/%s/overrides.json and "
        "in the probe's record)." % (key, what, key)), details


def brief(path):
    """What a cell file keeps of the probe its study ran first (provenance.machine.probe): the
    verdict, when, and each probe cell's median and ratio to the reference; None without one."""
    try:
        with open(path) as handle:
            doc = json.load(handle)
    except (OSError, ValueError):
        return None
    tests = (doc.get("details") or {}).get("tests") or {}
    cells = {}
    for cell, summary in (doc.get("cells") or {}).items():
        test = tests.get(cell) or {}
        cells[cell] = {"median_s": summary.get("median_s"), "n": summary.get("n"),
                       "ratio": test.get("ratio"), "ci_low": test.get("ci_low"),
                       "ci_high": test.get("ci_high")}
    return {"verdict": doc.get("verdict"), "stamp": doc.get("stamp"), "env": doc.get("env"),
            "reference_stamp": doc.get("reference_stamp"), "forced": doc.get("force"),
            "cells": cells}
