"""Cell estimates and comparisons at the level where the variance is: the process.

Why. On a shared machine the same cell's median moves by 5-30 % from one fresh process to the next
(memory layout, thread placement, the neighbours), while thousands of samples pin one process's
median to about 1 %. Samples within a process are therefore not independent evidence about the
cell (they are autocorrelated too), and a test that treats them as such calls two processes of the
same cell "different" most of the time. The unit of replication is the process, as Kalibera and
Jones (2013) recommend: repeat at the level where the variance is.

How.
- Per process: the log of its median step time (logs, because effects on run time are ratios and
  the spread between processes is roughly proportional to the time).
- Per cell (k processes): the estimate is exp(mean of the log medians). The study-level model
  (driver/stats/blocks.py: log median = cell + round, per-cell variances shrunk toward the common
  one by empirical Bayes, driver/stats/moderated.py) gives the interval the tables report;
  `cell_estimate` and `welch` here are the plain per-cell forms it reduces to without shrinkage.
- Per comparison: the ratio of two cell estimates with its interval and p-value on the log scale.
- Over the study: Benjamini-Hochberg on all comparisons' p-values (scipy's
  false_discovery_control); `bh_threshold` states the per-test threshold that implies.
- The drawn interval is the tested one (`fcr_alpha`, `tested`): after BH at q has called R of
  m rows different, each row's interval is drawn at 1 - R q / m (Benjamini and Yekutieli's
  false-coverage-rate intervals, 2005), so it excludes 1 exactly when BH calls the row.
- Four verdicts (`verdict`): equivalent first, by TOST (the (1 - 2 alpha_equivalence) interval
  inside 1 +- min_effect, symmetric in log), so a row the data show inside the margin is never
  called faster; then left/right faster (BH-adjusted p <= q, i.e. the tested interval excludes
  1); else undecided, which every row qualifies with its bound (bound_pct: the two sides differ
  by at most that much).

The verdict codes are what the tables' `verdict` column holds. "undecided" was written
"inconclusive" before; readers of older tables map it with `norm_code`.
"""
import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats as sps

LEFT_FASTER, RIGHT_FASTER = "left_faster", "right_faster"
EQUIVALENT, UNDECIDED = "equivalent", "undecided"
INCONCLUSIVE = UNDECIDED  # the constant's older name: the same code
VERDICTS = (LEFT_FASTER, RIGHT_FASTER, EQUIVALENT, UNDECIDED)
# codes that older tables wrote, and the code each stands for now
LEGACY_CODES = {"inconclusive": UNDECIDED}
DECIDED = (LEFT_FASTER, RIGHT_FASTER)  # a direction called; EQUIVALENT is decided too, no direction


class Words(NamedTuple):
    """How people see a verdict: the one table of them (`WORDS`). The `verdict` column keeps the
    codes above (published tables are read back by them); every display text, colour and mark
    comes from here."""
    word: str  # the word, from the first-named (left) side's point of view
    cls: str  # the report's CSS class of a cell that shows the verdict (report/report.css)
    colour: str  # its colour in figures
    marker: str  # its marker shape in figures (matplotlib), so that colour is not the only cue
    mark: str  # the mark after a figure whose difference is not significant
    sheet: tuple = ()  # the workbook's cell format of a figure with this verdict: (key, value)s


# One word per verdict (the code of an undecided row is its word too).
WORDS = {
    LEFT_FASTER: Words("faster", "pos", "#1e7b34", "<", "",
                       (("bg_color", "#C6EFCE"), ("font_color", "#006100"))),
    RIGHT_FASTER: Words("slower", "neg", "#a12622", ">", "",
                        (("bg_color", "#FFC7CE"), ("font_color", "#9C0006"))),
    EQUIVALENT: Words("equivalent", "", "#1f4e99", "D", " ≈"),
    INCONCLUSIVE: Words("undecided", "ns", "#5f6672", "s", " ?", (("font_color", "#9A9A9A"),)),
}


def norm_code(value) -> str:
    """A verdict code as this code writes it, from a table of any age: an older code
    ("inconclusive") becomes today's ("undecided"), spaces and capitals are forgiven ("Right
    faster"); anything that is not a code (empty, NaN, unknown) is undecided."""
    code = value.strip().lower().replace(" ", "_") if isinstance(value, str) else None
    code = LEGACY_CODES.get(code, code)
    return code if code in VERDICTS else UNDECIDED


def words(verdict) -> Words:
    """The display of a verdict code (older codes too); anything that is not one shows as
    undecided."""
    return WORDS[norm_code(verdict)]


def verdict_word(verdict, subject: str = "") -> str:
    """A verdict in words, a decided direction named for `subject` (the left side) when given:
    verdict_word("right_faster", "TF 2") == "TF 2 slower"."""
    text = words(verdict).word
    return f"{subject} {text}" if subject and verdict in DECIDED else text


def log_medians(medians: Sequence[float]) -> np.ndarray:
    x = np.asarray(medians, dtype=float)
    if x.size and not np.all(x > 0):
        raise ValueError("process medians must be positive")
    return np.log(x)


def cell_estimate(medians: Sequence[float], level: float = 0.95) -> dict:
    """The cell's step time from its processes' medians: estimate, process-level CI, spreads.

    With one process there is no between-process information: the CI is NaN, and so is the spread.
    """
    logs = log_medians(medians)
    k = int(logs.size)
    if k == 0:
        raise ValueError("a cell estimate needs at least one process")
    mean = float(logs.mean())
    out = {"k": k, "estimate_s": math.exp(mean), "ci_low_s": math.nan, "ci_high_s": math.nan,
           "between_sd": math.nan}
    if k >= 2:
        sd = float(logs.std(ddof=1))
        half = float(sps.t.ppf(0.5 + level / 2, k - 1)) * sd / math.sqrt(k)
        out.update(ci_low_s=math.exp(mean - half), ci_high_s=math.exp(mean + half),
                   between_sd=sd)
    return out


def welch(left_logs: np.ndarray, right_logs: np.ndarray, level: float = 0.95) -> dict:
    """Ratio left/right of the cell estimates, Welch CI and p-value on the log scale."""
    nl, nr = left_logs.size, right_logs.size
    diff = float(left_logs.mean() - right_logs.mean())
    out = {"ratio": math.exp(diff), "ratio_ci_low": math.nan, "ratio_ci_high": math.nan,
           "p": math.nan, "df": math.nan, "n_left": int(nl), "n_right": int(nr)}
    if nl < 2 or nr < 2:
        return out
    vl, vr = float(left_logs.var(ddof=1)) / nl, float(right_logs.var(ddof=1)) / nr
    se = math.sqrt(vl + vr)
    if se == 0.0:  # identical medians in every process: no spread to test against
        out.update(ratio_ci_low=out["ratio"], ratio_ci_high=out["ratio"],
                   p=0.0 if diff else 1.0, df=float(nl + nr - 2))
        return out
    df = (vl + vr) ** 2 / (vl ** 2 / (nl - 1) + vr ** 2 / (nr - 1))
    half = float(sps.t.ppf(0.5 + level / 2, df)) * se
    p = float(sps.ttest_ind(left_logs, right_logs, equal_var=False).pvalue)
    out.update(ratio_ci_low=math.exp(diff - half), ratio_ci_high=math.exp(diff + half), p=p,
               df=float(df))
    return out


def paired(left_logs: np.ndarray, right_logs: np.ndarray, level: float = 0.95) -> dict:
    """For sides run in adjacent pairs (process i of each side in the same round): a paired t on
    the per-round log ratios, which removes what the rounds share (slow drift of the machine).
    Use it only where the rounds really were interleaved; Welch otherwise."""
    if left_logs.size != right_logs.size:
        raise ValueError("a paired comparison needs one process per side in every round")
    d = left_logs - right_logs
    n = int(d.size)
    out = {"ratio": math.exp(float(d.mean())), "ratio_ci_low": math.nan,
           "ratio_ci_high": math.nan, "p": math.nan, "df": float(n - 1), "n_left": n,
           "n_right": n}
    if n < 2:
        return out
    sd = float(d.std(ddof=1))
    if sd == 0.0:
        out.update(ratio_ci_low=out["ratio"], ratio_ci_high=out["ratio"],
                   p=0.0 if d.mean() else 1.0)
        return out
    half = float(sps.t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    out.update(ratio_ci_low=math.exp(float(d.mean()) - half),
               ratio_ci_high=math.exp(float(d.mean()) + half),
               p=float(sps.ttest_rel(left_logs, right_logs).pvalue))
    return out


def seed_pct(left_s: float, right_s: float) -> float:
    """The source study's %: (1 - longer/shorter) * 100 in magnitude, + when left is faster."""
    from driver.stats.pooled import seed_pct as pct

    return pct(left_s, right_s)


def bh_adjust(p_values: Sequence[float]) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (scipy.stats.false_discovery_control); NaN stays NaN
    and takes no part (a comparison without a test is no discovery)."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    have = ~np.isnan(p)
    if have.any():
        out[have] = sps.false_discovery_control(p[have], method="bh")
    return out


def bh_threshold(p_values: Sequence[float], q: float = 0.05) -> float:
    """The per-test threshold that Benjamini-Hochberg at q implies for this family: the largest
    p-value it rejects (p_(i) <= i q / m), or q / m (the first step) when it rejects none."""
    p = np.sort(np.asarray(p_values, dtype=float))
    p = p[~np.isnan(p)]
    if not p.size:
        return math.nan
    ok = p <= q * np.arange(1, p.size + 1) / p.size
    return float(p[np.nonzero(ok)[0].max()]) if ok.any() else q / p.size


def verdict(ratio_ci_low: float, ratio_ci_high: float, p_adjusted: float, q: float = 0.05,
            min_effect: float = 0.10, p_equivalent: float = math.nan,
            alpha_equivalence: float = 0.05) -> str:
    """One of VERDICTS. Equivalent first: the equivalence test (TOST) rejects "the ratio is
    beyond 1 +- min_effect" at alpha_equivalence (p_equivalent <= alpha, i.e. the (1 - 2 alpha) CI
    inside the margin, symmetric in log); a row the data show inside the margin is never called
    faster. Otherwise faster/slower when the BH-adjusted p <= q and the CI excludes 1; else
    undecided. Without a p_equivalent the CI given must lie inside the margin. With the CI at
    the tested level (`tested`) the two conditions for faster/slower are one."""
    if any(math.isnan(v) for v in (ratio_ci_low, ratio_ci_high)):
        return UNDECIDED
    if math.isnan(p_equivalent):
        inside = 1.0 / (1.0 + min_effect) <= ratio_ci_low and ratio_ci_high <= 1.0 + min_effect
    else:
        inside = p_equivalent <= alpha_equivalence
    if inside:
        return EQUIVALENT
    if not math.isnan(p_adjusted) and p_adjusted <= q:
        if ratio_ci_high < 1.0:
            return LEFT_FASTER
        if ratio_ci_low > 1.0:
            return RIGHT_FASTER
    return UNDECIDED


def decide(comparisons, q: float = 0.05, min_effect: float = 0.10,
           alpha_equivalence: float = 0.05):
    """Add `p_adjusted` (BH over every row given: pass the whole study's comparisons at once),
    `p_threshold` (the per-test threshold that BH implies for this family) and `verdict` to a
    DataFrame with ratio_ci_low, ratio_ci_high, p and (optionally) p_equivalent."""
    df = comparisons.copy()
    p = df["p"].to_numpy(dtype=float) if len(df) else np.array([])
    df["p_adjusted"] = bh_adjust(p) if len(df) else []
    df["p_threshold"] = bh_threshold(p, q) if len(df) else []
    p_eq = (df["p_equivalent"].astype(float) if "p_equivalent" in df.columns
            else pd.Series(math.nan, index=df.index))
    df["verdict"] = [verdict(lo, hi, pa, q, min_effect, pe, alpha_equivalence)
                     for lo, hi, pa, pe in
                     zip(df["ratio_ci_low"].astype(float), df["ratio_ci_high"].astype(float),
                         df["p_adjusted"].astype(float), p_eq)]
    return df


def fcr_alpha(p_adjusted: Sequence[float], q: float = 0.05) -> tuple[float, int]:
    """Benjamini and Yekutieli's false-coverage-rate level for a family after BH at q: each
    row's interval at 1 - R q / m (R of the m tested rows called different; R = 1 when none is),
    so that a row's interval excludes 1 exactly when BH calls it. Returns (alpha per interval,
    R); alpha is NaN for a family without a test."""
    p = np.asarray(p_adjusted, dtype=float)
    have = ~np.isnan(p)
    m = int(have.sum())
    r = int((p[have] <= q).sum())
    return (max(r, 1) * q / m if m else math.nan), r


def tested(comparisons, q: float = 0.05, min_effect: float = 0.10,
           alpha_equivalence: float = 0.05):
    """`decide` with every interval drawn at the level it is tested at: add p_adjusted (BH over
    every row given: one family), p_threshold, ci_level, ratio_ci_low/high (replaced) and
    verdict to a DataFrame with ratio, se_log, df, p, p_equivalent and (optionally) candidates.

    A row's interval is at 1 - a / k: a = fcr_alpha over the family, k its `candidates` (the
    pairs the data picked it from, driver/stats/moderated.py: selected, whose p-value is already
    k times the pair's; 1 for a plain comparison). So faster / slower is decided by p_adjusted
    <= q and by "the drawn interval excludes 1" alike. A row without a standard error keeps the
    interval it has (NaN: undecided), a row with a zero one the point (an exact difference)."""
    df = comparisons.copy()
    p = df["p"].to_numpy(dtype=float) if len(df) else np.array([])
    df["p_adjusted"] = bh_adjust(p)
    df["p_threshold"] = bh_threshold(p, q) if len(df) else []
    alpha, _ = fcr_alpha(df["p_adjusted"].to_numpy(dtype=float), q)
    k = (df["candidates"].astype(float).fillna(1.0).clip(lower=1.0).to_numpy()
         if "candidates" in df.columns else np.ones(len(df)))
    each = alpha / k
    se = df["se_log"].to_numpy(dtype=float)
    dof = df["df"].to_numpy(dtype=float)
    ratio = df["ratio"].to_numpy(dtype=float)
    have = np.isfinite(se) & (se >= 0) & ~np.isnan(dof) & (ratio > 0) & ~np.isnan(each)
    low = df["ratio_ci_low"].to_numpy(dtype=float).copy()
    high = df["ratio_ci_high"].to_numpy(dtype=float).copy()
    for i in np.nonzero(have)[0]:
        half = float(sps.norm.ppf(1 - each[i] / 2) if math.isinf(dof[i])
                     else sps.t.ppf(1 - each[i] / 2, dof[i])) * se[i]
        low[i], high[i] = math.exp(math.log(ratio[i]) - half), math.exp(math.log(ratio[i]) + half)
    df["ratio_ci_low"], df["ratio_ci_high"] = low, high
    df["ci_level"] = np.where(have, 1.0 - each, np.nan)
    p_eq = (df["p_equivalent"].astype(float) if "p_equivalent" in df.columns
            else pd.Series(math.nan, index=df.index))
    df["verdict"] = [verdict(lo, hi, pa, q, min_effect, pe, alpha_equivalence)
                     for lo, hi, pa, pe in zip(low, high, df["p_adjusted"].astype(float), p_eq)]
    return df


def mde(between_sd: float, k: int, alpha: float = 0.05, power: float = 0.8,
        df: float | None = None) -> float:
    """Smallest ratio (> 1) that a comparison of two cells with k processes each detects with
    `power` at the two-sided per-test threshold `alpha`, given the between-process sd of log
    medians. df: the test's degrees of freedom (the moderated t's, e.g. 2 (d0 + k - 1)); None:
    the pooled t's 2 k - 2, as statsmodels' TTestIndPower."""
    if k < 2 or not between_sd > 0:
        return math.nan
    if df is None:
        from statsmodels.stats.power import TTestIndPower

        d = TTestIndPower().solve_power(nobs1=k, alpha=alpha, power=power, ratio=1.0)
        return math.exp(float(d) * between_sd)
    from scipy import optimize

    se = between_sd * math.sqrt(2.0 / k)
    crit = float(sps.norm.ppf(1 - alpha / 2) if math.isinf(df) else sps.t.ppf(1 - alpha / 2, df))

    def achieved(delta):
        nc = delta / se
        if math.isinf(df):
            return float(sps.norm.sf(crit - nc) + sps.norm.cdf(-crit - nc)) - power
        return float(sps.nct.sf(crit, df, nc) + np.nan_to_num(sps.nct.cdf(-crit, df, nc))) - power

    return math.exp(float(optimize.brentq(achieved, 1e-9, (crit + 8.0) * se)))
