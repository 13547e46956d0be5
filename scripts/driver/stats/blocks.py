"""The study's analysis model: log process median = cell + time block (the round), with per-cell
variances shrunk toward the study's common variance (driver/stats/moderated.py).

Why. Every round runs every cell once, so whatever the machine does over minutes (a neighbour, a
thermal state, slow drift) moves all processes of one round together. Fitting the round as a block
removes that shared part from every cell's spread: the paired structure of two sides that ran in the
same rounds, used for every comparison at once. Each round's effect is estimated from all the cells
in it (100-odd), so it costs the cells almost nothing in degrees of freedom.

How.
1. Fit the additive model y = cell + block by least squares (statsmodels OLS with cell and block
   fixed effects). Blocks with fewer than MIN_CELLS_PER_BLOCK cells (a short extra round) are not
   estimated: their effect is taken as 0 (the average block), so a lone process never defines its
   own block. A block is one machine's round: machines share no rounds.
2. Adjusted log medians y' = y - block effect (centred over the estimated blocks). Per cell: the
   mean of y' (the estimate) and the residual variance s^2 with d = (k - 1) * shrink degrees of
   freedom, where shrink spreads the block parameters' degrees of freedom over the cells.
3. Shrink the variances (moderated.squeeze_var); the cell's CI and every comparison use the
   posterior variance with d0 + d degrees of freedom (moderated.compare).
4. Pairs (`PairedPrior`, `compare_paired`). The planned order runs a comparison's two sides close
   together in every round, so what the machine does over seconds moves both: their residuals are
   positively correlated and var(mean_l - mean_r) is smaller than var_l / n_l + var_r / n_r.
   Where the two cells share at least MIN_COMMON_BLOCKS blocks, the variance of their per-block
   differences s_d^2 (n_c - 1 degrees of freedom; the blocks cancel in it) measures that directly.
   It is moderated like the cells' variances, on the scale of the unpaired variance
   S = s~_l^2 + s~_r^2: u = s_d^2 / S over all the study's pairs is squeezed toward its common value
   (moderated.squeeze_var), V = u~ * S, and
       var(diff) = s~_l^2 / n_l + s~_r^2 / n_r - (S - V) * n_c / (n_l * n_r)
   (V / n in a balanced pair: the paired t). Degrees of freedom: Satterthwaite over V's prior part
   (from S, itself on the unpaired Welch df) and its own part (n_c - 1); with no prior weight this is
   scipy's paired t test exactly (tests/unit/stats/test_moderated.py).
"""
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from driver.stats import moderated

# A round with fewer cells than this gets no block effect of its own (see the module's docstring).
MIN_CELLS_PER_BLOCK = 10


def components(part: pd.DataFrame) -> np.ndarray:
    """Connected components of the cells-and-blocks graph (a process joins its cell and its block):
    blocks of different components share no cell, so their relative level cannot be told from the
    cells' (two machines; the even and the odd rounds of split halves)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    cell_codes = pd.factorize(part["cell"].map(str))[0]
    block_codes = pd.factorize(part["block"])[0]
    n_cells = int(cell_codes.max()) + 1
    n = n_cells + int(block_codes.max()) + 1
    graph = coo_matrix((np.ones(len(part)), (cell_codes, n_cells + block_codes)), shape=(n, n))
    _, labels = connected_components(graph, directed=False)
    return labels[cell_codes]


def block_effects(frame: pd.DataFrame) -> pd.Series:
    """Block effects (index: block) of y = cell + block, fitted by OLS on the processes of the
    blocks with at least MIN_CELLS_PER_BLOCK cells (a frame with columns cell, block, y), centred
    to mean 0 over the blocks of each connected component (see `components`); 0 for the other
    blocks and where a component has fewer than two blocks."""
    blocks = frame.groupby("block")["cell"].nunique()
    fit_blocks = sorted(blocks[blocks >= MIN_CELLS_PER_BLOCK].index)
    effects = pd.Series(0.0, index=sorted(blocks.index))
    part = frame[frame["block"].isin(fit_blocks)]
    if part.empty:
        return effects
    for _, comp in part.groupby(components(part)):
        comp_blocks = sorted(comp["block"].unique())
        if len(comp_blocks) >= 2:
            effects.loc[comp_blocks] = _fit_component(comp, comp_blocks)
    return effects


def _fit_component(part: pd.DataFrame, fit_blocks: list) -> np.ndarray:
    import statsmodels.api as sm

    # Frisch-Waugh-Lovell: the block coefficients of y ~ cell + block are those of the
    # within-cell-demeaned y on the within-cell-demeaned block dummies (a small regression)
    dummies = pd.DataFrame({b: (part["block"] == b).to_numpy(dtype=float)
                            for b in fit_blocks[1:]}, index=part.index)
    cells = part["cell"].map(str)
    X = dummies - dummies.groupby(cells).transform("mean")
    y = part["y"] - part["y"].groupby(cells).transform("mean")
    fit = sm.OLS(y.to_numpy(dtype=float), X.to_numpy(dtype=float)).fit()
    raw = np.concatenate([[0.0], np.asarray(fit.params)])
    return raw - raw.mean()


def process_frame(logs: Mapping) -> pd.DataFrame:
    """A long frame (cell, block, block_name, y) from {cell key: pd.Series of log medians indexed
    by time block (any hashable: a round, or (machine, round))}, or plain arrays (then the
    position is the block). `block` is an integer code of block_name."""
    rows = []
    for key, values in logs.items():
        series = values if isinstance(values, pd.Series) else pd.Series(np.asarray(values))
        for block, y in zip(series.index, series.to_numpy(dtype=float)):
            rows.append((key, str(block), float(y)))
    frame = pd.DataFrame(rows, columns=["cell", "block_name", "y"])
    frame["block"] = pd.factorize(frame["block_name"], sort=True)[0]
    return frame


def fit_study(logs: Mapping, blocked: bool = True) -> dict:
    """The model over the whole study: {cell key: {"n", "mean", "s2", "df", "s2_post", "df_post"}},
    plus "_prior": {"d0", "s02", "block_effects", "blocked"}. blocked=False leaves the blocks out
    (every process independent)."""
    frame = process_frame(logs)
    out: dict = {}
    if frame.empty:
        out["_prior"] = {"d0": math.nan, "s02": math.nan, "block_effects": {}, "blocked": False}
        return out
    effects = block_effects(frame) if blocked else pd.Series(0.0, index=[])
    # block parameters the fit spent: one less than the blocks fitted, in every component
    part = frame[frame["block"].isin(effects.index[effects != 0])]
    fitted = sum(max(comp["block"].nunique() - 1, 0)
                 for _, comp in part.groupby(components(part))) if len(part) else 0
    frame["adj"] = frame["y"] - frame["block"].map(effects).fillna(0.0).to_numpy()
    n_total, n_cells = len(frame), frame["cell"].nunique()
    shrink = 1.0
    if fitted and n_total > n_cells:
        shrink = max(0.0, (n_total - n_cells - fitted) / (n_total - n_cells))
    keys, s2, df = [], [], []
    for key, part in frame.groupby("cell", sort=False):
        k = len(part)
        mean = float(part["adj"].mean())
        var = float(part["adj"].var(ddof=1)) if k >= 2 else math.nan
        out[key] = {"n": k, "mean": mean, "s2": var, "df": (k - 1) * shrink,
                    # block-adjusted residuals by block name, for the paired comparisons
                    "resid": dict(zip(part["block_name"], (part["adj"] - mean).tolist()))}
        keys.append(key)
        s2.append(var)
        df.append((k - 1) * shrink)
    sq = moderated.squeeze_var(s2, df)
    for key, post, dpost in zip(keys, sq["s2_post"], sq["df_post"]):
        out[key].update(s2_post=float(post), df_post=float(dpost))
    out["_prior"] = {"d0": sq["d0"], "s02": sq["s02"], "blocked": bool(fitted),
                     "block_effects": {name: float(effects.get(code, 0.0)) for code, name in
                                       frame.drop_duplicates("block")[["block", "block_name"]]
                                       .itertuples(index=False)}}
    return out


def cell_ci(fit: Mapping, level: float = 0.95) -> dict:
    """{"estimate_s", "ci_low_s", "ci_high_s", "se_log", "df"} of one cell of fit_study: the
    block-adjusted mean with a moderated-t interval (NaN with one process)."""
    n, mean = fit["n"], fit["mean"]
    out = {"estimate_s": math.exp(mean), "ci_low_s": math.nan, "ci_high_s": math.nan,
           "se_log": math.nan, "df": math.nan}
    if n < 2 or not math.isfinite(fit["s2_post"]):
        return out
    se = math.sqrt(fit["s2_post"] / n)
    df = fit["df_post"]
    half = moderated.t_quantile(0.5 + level / 2, df) * se
    out.update(ci_low_s=math.exp(mean - half), ci_high_s=math.exp(mean + half), se_log=se,
               df=float(df))
    return out


def compare_cells(fit: Mapping, left, right, level: float = 0.95, margin: float = 0.10,
                  alpha_equivalence: float = 0.05) -> dict:
    """moderated.compare of two cells of fit_study (keys left, right)."""
    a, b = fit[left], fit[right]
    return moderated.compare(a["mean"], a["s2_post"], a["df_post"], a["n"], b["mean"],
                             b["s2_post"], b["df_post"], b["n"], level=level, margin=margin,
                             alpha_equivalence=alpha_equivalence)


# A pair's own covariance is used from this many shared blocks on (2 degrees of freedom).
MIN_COMMON_BLOCKS = 3
# The paired prior is learnt from at least this many pairs; with fewer, comparisons stay unpaired.
MIN_PAIRS_FOR_PRIOR = 5


def paired_ratio(fit: Mapping, left, right):
    """(u, df, n_common) of a pair of fit_study cells: u = s_d^2 / (s~_l^2 + s~_r^2), the variance
    of their per-block differences over the unpaired posterior variance; None when they share
    fewer than MIN_COMMON_BLOCKS blocks or a side has no spread."""
    a, b = fit[left], fit[right]
    ra, rb = a.get("resid") or {}, b.get("resid") or {}
    common = [k for k in ra if k in rb]
    unpaired = a["s2_post"] + b["s2_post"]
    if len(common) < MIN_COMMON_BLOCKS or not (math.isfinite(unpaired) and unpaired > 0):
        return None
    d = np.array([ra[k] - rb[k] for k in common])
    return float(d.var(ddof=1)) / unpaired, len(common) - 1, len(common)


class PairedPrior:
    """The study's prior for pairs: (d0, u0) of moderated.squeeze_var over the pairs' u
    (`paired_ratio`). d0 = 0 (`none`) uses every pair's own covariance alone."""

    def __init__(self, d0: float, u0: float, pairs: int):
        self.d0, self.u0, self.pairs = d0, u0, pairs

    @classmethod
    def learn(cls, fit: Mapping, pairs) -> "PairedPrior | None":
        ratios = [paired_ratio(fit, a, b) for a, b in dict.fromkeys(pairs)]
        ratios = [x for x in ratios if x is not None and x[0] > 0]
        if len(ratios) < MIN_PAIRS_FOR_PRIOR:
            return None
        d0, u0 = moderated.fit_f_dist([x[0] for x in ratios], [x[1] for x in ratios])
        if math.isnan(d0):
            return None
        return cls(d0, u0, len(ratios))

    @classmethod
    def none(cls) -> "PairedPrior":
        return cls(0.0, 1.0, 0)


def compare_paired(fit: Mapping, left, right, prior: "PairedPrior | None", level: float = 0.95,
                   margin: float = 0.10, alpha_equivalence: float = 0.05) -> dict:
    """compare_cells with the pair's covariance (see the module's docstring, step 4); the unpaired
    comparison where the cells share too few blocks or there is no prior. "paired": whether it was
    used; "pair_u": the pair's moderated u (1: uncorrelated sides)."""
    out = compare_cells(fit, left, right, level, margin, alpha_equivalence)
    out.update(paired=False, pair_u=math.nan)
    got = paired_ratio(fit, left, right) if prior is not None else None
    if got is None or not math.isfinite(out["se_log"]) or out["se_log"] <= 0:
        return out
    u, d, nc = got
    a, b = fit[left], fit[right]
    nl, nr = a["n"], b["n"]
    s_unpaired = a["s2_post"] + b["s2_post"]
    welch = moderated.welch_df(a["s2_post"] / nl, a["df_post"], b["s2_post"] / nr, b["df_post"])
    if math.isinf(prior.d0):
        u_post, part_prior, part_own = prior.u0, prior.u0, 0.0
    else:
        u_post = (prior.d0 * prior.u0 + d * u) / (prior.d0 + d)
        part_prior, part_own = prior.d0 * prior.u0 / (prior.d0 + d), d * u / (prior.d0 + d)
    v_pair = u_post * s_unpaired
    var = (a["s2_post"] / nl + b["s2_post"] / nr
           - (s_unpaired - v_pair) * nc / (nl * nr))
    var = max(var, v_pair * nc / (nl * nr))
    # Satterthwaite over V's two parts: the prior's (uncertain through S, on the Welch df, and
    # through the prior, on d0) and the pair's own (d degrees of freedom)
    inverse = sum(0.0 if math.isinf(x) else 1.0 / x for x in (welch, prior.d0) if x > 0)
    df_prior = 1.0 / inverse if inverse > 0 else math.inf
    terms = [(part_prior, df_prior), (part_own, float(d))]
    denom = sum(t * t / f for t, f in terms if t > 0 and not math.isinf(f))
    # pooling never leaves fewer degrees of freedom than the pair's own paired t has
    dof = max((part_prior + part_own) ** 2 / denom if denom > 0 else math.inf, float(d))
    paired = moderated.from_se(math.log(out["ratio"]), math.sqrt(var), dof, out["n_left"],
                               out["n_right"], level, margin, alpha_equivalence)
    out.update(paired, paired=True, pair_u=float(u_post))
    return out


