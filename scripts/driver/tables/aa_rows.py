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


def aa_figures(tables: Sequence[pd.DataFrame], q: float = 0.05, table: str = "duets_aa") -> dict:
    """The figures over every run's A/A table given (one frame per run that has one); rows of
    fewer than two replicates carry no interval and are left out."""
    tabs = [tab[tab["n"] >= 2] for tab in tables]
    rows = pd.concat(tabs, ignore_index=True) if tabs else pd.DataFrame()
    if rows.empty:
        return {"runs": len(tabs), "n": 0, "table": table}
    codes = [verdicts.norm_code(v) for v in rows["verdict"]]
    k = sum(c in verdicts.DECIDED for c in codes)
    rate = calibration.rate(k, len(rows), q)
    rate["ok"] = bool(rate["ci_low"] <= q)  # too many false positives fail; fewer do not
    bias = calibration.lean(rows["log_ratio"], rows.get("se_log"), rows.get("n"))
    return {"runs": len(tabs), "n": int(len(rows)), "different": rate, "table": table,
            "equivalent": sum(c == verdicts.EQUIVALENT for c in codes), "bias": bias}
