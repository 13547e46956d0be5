"""The twins' A/A rate: how often the study's own test calls a cell different from itself.

Every twin pair is the same cell run twice as independent cells, placed in the rounds like a real
comparison's two sides (driver/study/order.py) and allocated like them. At the study's per-test
threshold (the largest p-value that Benjamini-Hochberg rejects over the whole study, `p_threshold`
of the comparison tables) a calibrated method calls a share of about that threshold different.
The table states the share with its Clopper-Pearson interval, so that a method whose A/A rate is
well above nominal shows it, and states how well it can: `fails_if_1_5x_narrow` and
`fails_if_2x_narrow` are the chances that it fails when the intervals are that much too narrow,
for this run's pairs and threshold (with a few dozen pairs the first is small; the cross-run
check of compare-runs has more rows).
"""
import math

import pandas as pd
from scipy.stats import binom, norm
from statsmodels.stats.proportion import proportion_confint

COLUMNS = ["pairs", "called_different", "rate", "ci_low", "ci_high", "ci_level", "threshold",
           "nominal_inside_ci", "fails_if_1_5x_narrow", "fails_if_2x_narrow"]


def power(n: int, threshold: float, factor: float, level: float = 0.95) -> float:
    """The chance that this figure fails (the threshold outside the Clopper-Pearson CI) when
    every pair's interval is `factor` times too narrow: each pair is then called different with
    probability 2 (1 - Phi(z / factor)), z the threshold's two-sided normal quantile (the pairs'
    df are large), and the chance is summed over the binomial outcomes. factor 1: the figure's
    own false-alarm rate. States how much the figure can see with this run's pairs."""
    if n <= 0 or not 0 < threshold < 1:
        return math.nan
    z = float(norm.ppf(1 - threshold / 2))
    rate = 2 * float(norm.sf(z / factor))
    total = 0.0
    for k in range(n + 1):
        low, high = proportion_confint(k, n, alpha=1 - level, method="beta")
        if not low <= threshold <= high:
            total += float(binom.pmf(k, n, rate))
    return total


def threshold_of(twins: pd.DataFrame, fallback: float) -> float:
    """The per-test threshold the study used: the comparison tables' `p_threshold` when present,
    else `fallback` (e.g. fdr_q divided by the number of tests)."""
    if "p_threshold" in twins.columns:
        values = pd.to_numeric(twins["p_threshold"], errors="coerce").dropna()
        if len(values):
            return float(values.iloc[0])
    return float(fallback)


def twins_rate(twins: pd.DataFrame, threshold: float, level: float = 0.95) -> pd.DataFrame:
    """One row: twin pairs with a p-value, how many have p <= threshold, the rate and its
    Clopper-Pearson CI at `level`, and whether the threshold (the nominal A/A rate) lies inside
    it. No pairs: one row of blanks with pairs 0."""
    p = pd.to_numeric(twins["p"], errors="coerce").dropna() if "p" in twins.columns \
        else pd.Series(dtype=float)
    n = int(len(p))
    if n == 0 or math.isnan(threshold):
        return pd.DataFrame([{"pairs": n, "called_different": None, "rate": None,
                              "ci_low": None, "ci_high": None, "ci_level": level,
                              "threshold": None if math.isnan(threshold) else threshold,
                              "nominal_inside_ci": None, "fails_if_1_5x_narrow": None,
                              "fails_if_2x_narrow": None}], columns=COLUMNS)
    k = int((p <= threshold).sum())
    low, high = proportion_confint(k, n, alpha=1 - level, method="beta")
    return pd.DataFrame([{"pairs": n, "called_different": k, "rate": k / n,
                          "ci_low": float(low), "ci_high": float(high), "ci_level": level,
                          "threshold": threshold,
                          "nominal_inside_ci": bool(low <= threshold <= high),
                          "fails_if_1_5x_narrow": power(n, threshold, 1.5, level),
                          "fails_if_2x_narrow": power(n, threshold, 2.0, level)}],
                        columns=COLUMNS)
