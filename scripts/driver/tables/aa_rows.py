"""The A/A rows of one or more runs (duets_aa: the reference against itself in duets; pairs_aa: a
cell against itself in one process), judged together: how many the procedure called different
(its false positives, with their binomial CI against the rows' nominal rate q: too many fail)
and the bias (calibration.lean: the rows pooled with every replicate weighing alike, with a t
interval; an interval that leaves 0 out fails: both sides run the same code, and for pairs the
side labels are not tied to the build order). `compare-runs` prints it over the runs it is given.
"""
from collections.abc import Sequence

import pandas as pd

from driver.stats import calibration, verdicts

# table: (what its rows are, the config key that makes them, what its bias is)
AA_TABLES = {"duets_aa": ("A/A duet rows", "duets.aa", "order bias, second-timed side / first"),
             "pairs_aa": ("A/A pairs", "pairs.aa", "lean, left side / right")}


def headline_threshold(aa: pd.DataFrame, headline: pd.DataFrame | None) -> pd.Series:
    """Each A/A row's threshold: the level at which the headline rows of its run and machine
    are tested, 1 - ci_level = R q / m (BH at q calls a row different exactly when its p is at
    or below it), NaN where the run has no such headline table."""
    if headline is None or headline.empty or "ci_level" not in headline.columns:
        return pd.Series(float("nan"), index=aa.index)
    level = 1 - headline["ci_level"].astype(float)
    if "machine" not in headline.columns or "machine" not in aa.columns:
        return pd.Series(float(level.iloc[0]), index=aa.index)
    by = level.groupby(headline["machine"].astype(str)).first()
    return aa["machine"].astype(str).map(by).astype(float)


def aa_figures(tables: Sequence[pd.DataFrame], q: float = 0.05, table: str = "duets_aa",
               headlines: Sequence[pd.DataFrame | None] | None = None) -> dict:
    """The figures over every run's A/A table given (one frame per run that has one); rows of
    fewer than two replicates carry no interval and are left out. headlines: each run's
    headline table (duets for duets_aa, pairs for pairs_aa), whose per-test threshold the A/A
    rows are judged at (`at_threshold`, calibration.threshold_rate): a decided "different"
    verdict of an A/A row is rarer than that (equivalence comes first, its own BH family of two
    rows), so the count of verdicts can only fail grossly."""
    headlines = list(headlines) if headlines is not None else [None] * len(tables)
    thresholds = [headline_threshold(tab, h) for tab, h in zip(tables, headlines)]
    tabs = [tab.assign(_threshold=t)[tab["n"] >= 2] for tab, t in zip(tables, thresholds)]
    rows = pd.concat(tabs, ignore_index=True) if tabs else pd.DataFrame()
    if rows.empty:
        return {"runs": len(tabs), "n": 0, "table": table}
    codes = [verdicts.norm_code(v) for v in rows["verdict"]]
    k = sum(c in verdicts.DECIDED for c in codes)
    rate = calibration.rate(k, len(rows), q)
    rate["ok"] = bool(rate["ci_low"] <= q)  # too many false positives fail; fewer do not
    bias = calibration.lean(rows["log_ratio"], rows.get("se_log"), rows.get("n"))
    have = rows[rows["_threshold"].notna()] if "p" in rows.columns else rows.iloc[:0]
    at = calibration.threshold_rate(
        have["p"], have["_threshold"], have.get("n_look1", have["n"]).fillna(have["n"]),
        have.get("n_max", have["n"]).fillna(have["n"]),
        have.get("sd_log", pd.Series(float("nan"), index=have.index)),
        stop_level=1 - have.get("ci_level", 1 - have["_threshold"]).astype(float),
        draws=5000) if len(have) else {"n": 0}
    return {"at_threshold": at, "runs": len(tabs), "n": int(len(rows)), "different": rate, "table": table,
            "equivalent": sum(c == verdicts.EQUIVALENT for c in codes), "bias": bias}
