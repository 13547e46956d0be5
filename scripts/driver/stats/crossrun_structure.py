"""Cross-run check of comparisons that share cells: the differences whitened by their covariance.

Comparisons share cells (every TF 2.x row of "TF2 vs TF1" has the TF 1.14 cell on its right), so
their cross-run differences are correlated and a count of rows beyond their intervals comes in
clusters (calibration.shared_cells_range). Counting then absorbs an excess move of the shared
cells as "clustering". This check uses the structure instead of fighting it: the same model of
each run's errors as shared_cells_range (each cell an error N(0, se_cell^2); a row's error its
cells' difference, rescaled to the row's own se; a row whose cells are unknown, an error of its
own), so the vector D of the rows' differences (run A - run B, logs) has covariance
Sigma = L_A L_A' + L_B L_B'. The statistic is the Mahalanobis distance M = D' Sigma^+ D (the
pseudo-inverse on the eigenvalues above 1e-8 of the largest: rows that are combinations of
others add nothing), referred to a parametric bootstrap of M under the model, each draw with
every cell's and row's se redrawn from its df (a calibrated method's intervals are estimated
too). The check fails when M lies above the bootstrap's 1 - alpha quantile.

What it can detect at the real sizes: crossrun_power-style planting in `fail_rate` ("cell": every
cell's error factor x its se; "reference": only the cells shared by 5 or more rows).
"""
import numpy as np

from driver.stats import crossrun
from driver.stats.crossrun_power import rate_of


class Structure:
    """The rows' error model of two runs, whitened once; draws of M under the model."""

    def __init__(self, left, right, cell_se_a, cell_se_b, se_a, se_b, df_a, df_b,
                 cell_df_a=None, cell_df_b=None):
        self.se = (np.asarray(se_a, float), np.asarray(se_b, float))
        self.df = tuple(np.minimum(np.nan_to_num(np.asarray(x, float), nan=1e6, posinf=1e6), 1e6)
                        for x in (df_a, df_b))
        n = self.se[0].size
        names = sorted({c for c in list(left) + list(right) if c is not None and
                        c in cell_se_a and c in cell_se_b})
        index = {c: i for i, c in enumerate(names)}
        li = np.array([index.get(c, -1) for c in left])
        ri = np.array([index.get(c, -1) for c in right])
        both = (li >= 0) & (ri >= 0) & (li != ri)
        self.counts = np.bincount(np.r_[li[both], ri[both]], minlength=len(names))
        self.loadings, self.col_df = [], []
        for cell_se, cell_df, row_se, row_df in ((cell_se_a, cell_df_a, self.se[0], self.df[0]),
                                                 (cell_se_b, cell_df_b, self.se[1], self.df[1])):
            s = np.array([cell_se[c] for c in names], float)
            load = np.zeros((n, len(names) + n))
            rows = np.flatnonzero(both)
            scale = row_se[rows] / np.sqrt(s[li[rows]] ** 2 + s[ri[rows]] ** 2)
            load[rows, li[rows]] = scale * s[li[rows]]
            load[rows, ri[rows]] = -scale * s[ri[rows]]
            alone = np.flatnonzero(~both)
            load[alone, len(names) + alone] = row_se[alone]
            cdf = np.array([(cell_df or {}).get(c, 1e6) for c in names], float)
            self.loadings.append(load)
            self.col_df.append(np.r_[np.minimum(np.nan_to_num(cdf, nan=1e6), 1e6), row_df])
        sigma = sum(x @ x.T for x in self.loadings)
        vals, vecs = np.linalg.eigh(sigma)
        keep = vals > 1e-8 * vals.max()
        self.white = (vecs[:, keep] / np.sqrt(vals[keep])).T
        self.rank = int(keep.sum())
        self.reference = np.flatnonzero(self.counts >= 5)

    def stat(self, d) -> np.ndarray:
        """M for each row of d (sims x rows) or for one vector."""
        w = np.asarray(d, float) @ self.white.T
        return (w ** 2).sum(axis=-1)

    def draw(self, rng, sims: int, factor: float = 1.0, pattern: str = "cell") -> np.ndarray:
        """sims draws of D: each run's column errors at their (redrawn) true se, the planted
        ones factor x."""
        d = 0.0
        for sign, load, cdf in zip((1, -1), self.loadings, self.col_df):
            # the estimated se is what the loadings hold; the truth differs by chi-square noise
            true = np.sqrt(cdf / rng.chisquare(np.broadcast_to(cdf, (sims, cdf.size))))
            plant = np.ones(cdf.size)
            if pattern == "cell":
                plant[:] = factor
            elif pattern == "reference":
                plant[self.reference] = factor
            else:
                raise ValueError(f"pattern must be 'cell' or 'reference', got {pattern!r}")
            z = rng.standard_normal((sims, cdf.size)) * true * plant
            d = d + sign * z @ load.T
        return d


def check(structure: Structure, d, alpha: float = crossrun.ALPHA, draws: int = 2000,
          seed: int = 0) -> dict:
    """{"M", "rank", "p", "critical", "ok", "draws"}: M of the observed differences d (logs, run A
    - run B) against its bootstrap under the model."""
    rng = np.random.default_rng(seed)
    null = structure.stat(structure.draw(rng, draws))
    m = float(structure.stat(np.asarray(d, float)))
    p = float((1 + (null >= m).sum()) / (draws + 1))
    crit = float(np.quantile(null, 1 - alpha))
    return {"M": m, "rank": structure.rank, "p": p, "critical": crit, "ok": m <= crit,
            "draws": draws, "alpha": alpha}


def fail_rate(structure: Structure, factor: float, pattern: str = "cell",
              alpha: float = crossrun.ALPHA, sims: int = 1000, draws: int = 2000,
              seed: int = 0) -> dict:
    """P(check fails) for intervals `factor` x too narrow planted as `pattern`, on this structure
    ({"k", "sims", "rate", "ci"}; the threshold from its own null draws)."""
    rng = np.random.default_rng(seed)
    crit = float(np.quantile(structure.stat(structure.draw(rng, draws)), 1 - alpha))
    k = int((structure.stat(structure.draw(rng, sims, factor, pattern)) > crit).sum())
    return rate_of(k, sims)


def power_table(structure: Structure, alpha: float = crossrun.ALPHA, sims: int = 1000,
                seed: int = 0) -> dict:
    """The figures printed beside the comparisons' verdict (keys as crossrun_power.power_table)."""
    size = fail_rate(structure, 1.0, "cell", alpha, sims, seed=seed)
    out = {"size": size, "pass": 1 - size["rate"], "rows": int(structure.se[0].size),
           "sims": sims, "alpha": alpha, "reference_cells": int(structure.reference.size)}
    for pattern in ("cell", "reference"):
        if pattern == "reference" and not structure.reference.size:
            continue
        for factor in (1.5, 2.0):
            out[f"{pattern} {factor:g}x"] = fail_rate(structure, factor, pattern, alpha, sims,
                                                      seed=seed + int(10 * factor))
    return out
