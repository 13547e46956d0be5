"""One error statement for a list of claims such as "as fast as TF 1.14 or faster in N of 22
versions".

The study decides each row by two tests: faster/slower by Benjamini-Hochberg over the whole duet
family, equivalent (within the margin) by a per-row TOST at 5 % with no multiplicity correction.
A count of rows that passed either has no single error statement. `headline_claims` gives one:
every row of the list contributes two hypotheses, H_diff (the ratio is 1) and H_eq (the ratio
lies beyond 1 +- margin), and one multiple-testing procedure runs over all 2m p-values:

- method "fdr_bh" (default): Benjamini-Hochberg at q. The expected share of false claims among
  all the claims made (directions and equivalences together) is at most q. Rows are independent
  within a run (a duet row shares no process), and the two nulls of one row are disjoint (a ratio
  cannot be both 1 and beyond the margin), so at most one null per row is true: the true nulls
  are independent of each other, the case BH was proved for; its dependence on a false null of
  the same row is not covered by the proof, so tests/unit/stats/test_claims.py simulates the
  study's sizes (df 3) and checks the false-claim rate.
- "fdr_by": Benjamini-Yekutieli, FDR <= q under any dependence (more conservative).
- "holm": Holm at q: the probability that any claim in the list is false is at most q (a
  family-wise statement: every claim holds together).

A row both different and within the margin is claimed "equivalent" (the study's precedence) and
flagged `different`; a direction claim's false when the ratio is on the other side of 1 or at 1.
Everything holds within the run; across runs the run-level offset (driver/stats/crossrun.py)
is on top.
"""
import math

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from driver.stats import sequential, verdicts

METHODS = {"fdr_bh": "false-discovery rate (Benjamini-Hochberg)",
           "fdr_by": "false-discovery rate under any dependence (Benjamini-Yekutieli)",
           "holm": "family-wise error rate (Holm)"}


def test_pvalues(log_ratio, se, df, margin: float = 0.10) -> tuple[np.ndarray, np.ndarray]:
    """(p_diff, p_eq): the two-sided t-test p of log ratio 0 and the TOST p of |log ratio| >=
    log(1 + margin), each row's own se and df (the duets table's p and p_equivalent)."""
    lr, se, df = (np.asarray(x, float) for x in (log_ratio, se, df))
    m = math.log1p(margin)
    p_diff = 2 * sps.t.sf(np.abs(lr) / se, df)
    p_eq = np.maximum(sps.t.sf((lr + m) / se, df), sps.t.sf((m - lr) / se, df))
    return p_diff, p_eq


def design_pvalues(rows: pd.DataFrame, p_diff, p_eq) -> tuple[np.ndarray, np.ndarray]:
    """The last look's p-values mapped to each row's sequential p (driver/stats/sequential.py)
    where the rows carry their two-look design (columns n_look1 and n_max, as the duets table
    has them): a row looked at twice is then tested at its stated size, as the duets table's own
    p and p_equivalent are. Rows without a design (one look) keep their p."""
    p_diff, p_eq = np.array(p_diff, float), np.array(p_eq, float)
    if not {"n_look1", "n_max"} <= set(rows.columns):
        return p_diff, p_eq
    for i, (n1, n2) in enumerate(zip(rows["n_look1"], rows["n_max"])):
        if n1 == n1 and n2 == n2 and int(n2) > int(n1) >= 2:
            lk = sequential.looks(int(n1), int(n2))
            p_diff[i] = float(lk.two_sided(p_diff[i])) if p_diff[i] == p_diff[i] else p_diff[i]
            p_eq[i] = float(lk.one_sided(p_eq[i])) if p_eq[i] == p_eq[i] else p_eq[i]
    return p_diff, p_eq


def headline_claims(rows: pd.DataFrame, q: float = 0.05, margin: float = 0.10,
                    method: str = "fdr_bh") -> dict:
    """The claims a list of rows supports, with one error statement for the whole list.

    rows: one row per version (e.g. the duets table's rows of one mode), with columns log_ratio
    (or ratio), se_log and df (and n_look1, n_max where the rows had two looks: their sequential
    p-values, `design_pvalues`). Returns {"rows": rows plus p_diff, p_eq, different,
    within_margin, claim (verdict code: left_faster, right_faster, equivalent, undecided)},
    "claimed" (rows with a claim), "of" (rows), "counts" ({claim: n}), "level" (q), "method",
    "error" (the statement in words)}. Raises ValueError naming a missing column or method."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    missing = [c for c in ("se_log", "df") if c not in rows.columns]
    if "log_ratio" not in rows.columns and "ratio" not in rows.columns:
        missing.append("log_ratio")
    if missing:
        raise ValueError(f"headline_claims: rows lack column(s) {', '.join(missing)}")
    out = rows.copy()
    lr = (out["log_ratio"] if "log_ratio" in out.columns else np.log(out["ratio"])).astype(float)
    p_diff, p_eq = design_pvalues(out, *test_pvalues(lr, out["se_log"], out["df"], margin))
    have = np.isfinite(p_diff) & np.isfinite(p_eq)
    reject = np.zeros(2 * len(out), bool)
    if have.any():
        both = np.r_[p_diff[have], p_eq[have]]
        rej = multipletests(both, alpha=q, method=method)[0]
        k = int(have.sum())
        reject[np.r_[np.flatnonzero(have), len(out) + np.flatnonzero(have)]] = \
            np.r_[rej[:k], rej[k:]]
    different, within = reject[:len(out)], reject[len(out):]
    claim = np.where(within, verdicts.EQUIVALENT,
                     np.where(different & (lr.to_numpy() < 0), verdicts.LEFT_FASTER,
                              np.where(different, verdicts.RIGHT_FASTER, verdicts.UNDECIDED)))
    out = out.assign(p_diff=p_diff, p_eq=p_eq, different=different, within_margin=within,
                     claim=claim)
    claimed = int((claim != verdicts.UNDECIDED).sum())
    counts = {c: int((claim == c).sum()) for c in verdicts.VERDICTS}
    error = (f"{METHODS[method]} at {q:g} over all {2 * len(out)} tests of the {len(out)} rows "
             f"(a difference and an equivalence within {margin:.0%} each): "
             + ("the chance that any of the claims is false is at most "
                if method == "holm" else "the expected share of false claims among the claims "
                "is at most ") + f"{q:g}")
    return {"rows": out, "claimed": claimed, "of": int(len(out)), "counts": counts, "level": q,
            "method": method, "error": error}
