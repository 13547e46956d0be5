"""The machines_compared table: the headline (the duets table, TF 2.x over TF 1 per version and
mode) on two machines side by side, and whether the machine changes the ratio.

One row per duet configuration (env, cell) and pair of machine keys (left = the first key in
alphabetical order; twin keys are not machines). Each machine keeps its own row of the duets
table as it is (its ratio, interval, sd and verdict: machines that differ in noise keep their own
intervals, nothing is pooled between them). The interaction is the ratio of the two ratios,
left / right: exp(log ratio left - log ratio right), its standard error sqrt(se_left^2 +
se_right^2) with Welch-Satterthwaite degrees of freedom (each machine's duets are independent of
the other's; their variances are not assumed equal), which is scipy.stats.ttest_ind(...,
equal_var=False) on the two machines' duets' log ratios. Its test of "the machine does not
change the ratio" is Benjamini-Hochberg at q over the table's rows, its interval at the level
that makes the drawn interval the tested one (Benjamini-Yekutieli FCR, as the duets table), and
the equivalence test (TOST, 1 +- min_effect on the interaction, each row at alpha_equivalence;
its (1 - 2 alpha) interval interaction_tost_ci_low/high) says where the machines give the same
ratio. machine_effect, equivalence first as every verdict of the study (driver/stats/verdicts.py):
`same` (the TOST interval inside the band), else `differs` (the tested interval excludes 1), else
`undecided`.

A combined ratio over machines is not given: with two machines the spread between machines has
one degree of freedom and cannot be estimated, and a fixed-effect (inverse-variance) mean would
weight each machine by its duets' precision, the quieter machine dominating it
(fixed_effect_weight_left says how much) and would describe neither machine where the
interaction is decided. The statement that holds on both machines is `agreement`: the two
verdicts the same, or not.

A configuration measured on one machine only has its row with that machine's side filled and the
interaction empty (`reason` names the machine), so every headline row appears.
"""
import itertools
import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from driver.stats import verdicts
from driver.study import layout

CONFIG = ["env", "cell_id", "mode", "keras", "api", "framework_version", "reference_env"]
SIDE = ["machine", "n", "ratio", "ratio_ci_low", "ratio_ci_high", "ci_level", "sd_log", "se_log",
        "df", "log_ratio", "verdict"]
COLUMNS = [*CONFIG, *[f"{side}_{c}" for side in ("left", "right") for c in SIDE],
           "interaction", "interaction_ci_low", "interaction_ci_high", "interaction_ci_level",
           "interaction_se_log", "interaction_df", "interaction_p", "interaction_p_adjusted",
           "interaction_p_equivalent", "interaction_tost_ci_low", "interaction_tost_ci_high",
           "machine_effect", "agreement", "fixed_effect_weight_left",
           "reason"]
DIFFERS, SAME, UNDECIDED = "differs", "same", "undecided"


def agreement(verdict_list: list[str]) -> str:
    """'same' (one verdict on every machine), 'opposite' (slower on one, faster on another) or
    'differ' (any other mix, e.g. decided on one machine, undecided on another)."""
    found = set(verdict_list)
    if len(found) <= 1:
        return "same"
    if {verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER} <= found:
        return "opposite"
    return "differ"


def welch(log_left: float, se_left: float, df_left: float, log_right: float, se_right: float,
          df_right: float) -> tuple[float, float, float, float]:
    """(difference of the log ratios, its se, Welch-Satterthwaite df, two-sided p)."""
    diff = log_left - log_right
    var = se_left ** 2 + se_right ** 2
    if not all(map(math.isfinite, (diff, var, df_left, df_right))) or var <= 0:
        return diff, math.nan, math.nan, math.nan
    df = var ** 2 / (se_left ** 4 / df_left + se_right ** 4 / df_right)
    se = math.sqrt(var)
    return diff, se, df, float(2 * sps.t.sf(abs(diff) / se, df))


def _side(row) -> dict:
    return {c: (row[c] if row is not None and c in row else math.nan) for c in SIDE}


def machines_compared_table(duets: pd.DataFrame, q: float = 0.05, min_effect: float = 0.10,
                            alpha_equivalence: float = 0.05) -> pd.DataFrame:
    """The duets table's rows side by side per pair of machines, with the interaction."""
    if duets is None or duets.empty:
        return pd.DataFrame(columns=COLUMNS)
    df = duets[~duets["machine"].astype(str).map(layout.is_twin)]
    machines = sorted(set(df["machine"].astype(str)))
    if len(machines) < 2:
        return pd.DataFrame(columns=COLUMNS)
    by = {(str(r["machine"]), r["env"], r["cell_id"]): r for _, r in df.iterrows()}
    configs = df.drop_duplicates(["env", "cell_id"])
    rows = []
    for left, right in itertools.combinations(machines, 2):
        for _, c in configs.iterrows():
            a, b = by.get((left, c["env"], c["cell_id"])), by.get((right, c["env"], c["cell_id"]))
            if a is None and b is None:
                continue
            row = {"env": c["env"], "cell_id": c["cell_id"], "mode": c["mode"],
                   "keras": c["keras"], "api": c["api"],
                   "framework_version": c.get("left_framework_version"),
                   "reference_env": c["right_env"]}
            row.update({f"left_{k}": v for k, v in _side(a).items()})
            row.update({f"right_{k}": v for k, v in _side(b).items()})
            row["left_machine"], row["right_machine"] = left, right
            diff, se, dof, p = welch(row["left_log_ratio"], row["left_se_log"], row["left_df"],
                                     row["right_log_ratio"], row["right_se_log"],
                                     row["right_df"])
            m = math.log1p(min_effect)
            p_eq = max(float(sps.t.sf((diff + m) / se, dof)), float(sps.t.cdf((diff - m) / se,
                                                                               dof))) \
                if math.isfinite(se) else math.nan
            weight = (row["right_se_log"] ** 2 / (row["left_se_log"] ** 2
                                                  + row["right_se_log"] ** 2)
                      if math.isfinite(se) else math.nan)
            row.update(interaction=math.exp(diff) if math.isfinite(diff) else math.nan,
                       interaction_se_log=se, interaction_df=dof, interaction_p=p,
                       interaction_p_equivalent=p_eq, fixed_effect_weight_left=weight,
                       agreement=agreement([row["left_verdict"], row["right_verdict"]])
                       if a is not None and b is not None else "one machine",
                       reason=None if a is not None and b is not None else
                       f"measured on {left if a is not None else right} only")
            if a is not None and b is not None and not math.isfinite(se):
                row["reason"] = "fewer than two duets on a machine: no interval"
            rows.append(row)
    out = pd.DataFrame(rows)
    return _intervals(out, q, alpha_equivalence, min_effect)[COLUMNS]


def _intervals(out: pd.DataFrame, q: float, alpha_eq: float, min_effect: float) -> pd.DataFrame:
    """BH over the table's interaction tests; each interval at the FCR level that makes it the
    tested one; machine_effect."""
    out = out.copy()
    p_adj = verdicts.bh_adjust(out["interaction_p"].to_numpy(float))
    a_diff, _ = verdicts.fcr_alpha(p_adj, q)
    out["interaction_p_adjusted"] = p_adj
    out["interaction_ci_level"] = 1 - a_diff
    crit = np.array([float(sps.t.ppf(1 - a_diff / 2, d)) if d == d else math.nan
                     for d in out["interaction_df"]])
    log = np.log(out["interaction"].to_numpy(float))
    half = crit * out["interaction_se_log"].to_numpy(float)
    out["interaction_ci_low"], out["interaction_ci_high"] = np.exp(log - half), np.exp(log + half)
    crit_eq = np.array([float(sps.t.ppf(1 - alpha_eq, d)) if d == d else math.nan
                        for d in out["interaction_df"]])
    half_eq = crit_eq * out["interaction_se_log"].to_numpy(float)
    out["interaction_tost_ci_low"] = np.exp(log - half_eq)
    out["interaction_tost_ci_high"] = np.exp(log + half_eq)
    out["machine_effect"] = [
        None if not math.isfinite(pe) else
        SAME if pe <= alpha_eq else DIFFERS if pa <= q and (lo > 1 or hi < 1) else UNDECIDED
        for pe, pa, lo, hi in zip(out["interaction_p_equivalent"], p_adj,
                                  out["interaction_ci_low"], out["interaction_ci_high"])]
    return out
