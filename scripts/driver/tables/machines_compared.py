"""The machines_compared table: the headline (the duets table, TF 2.x over TF 1 per version and
mode) on two machines side by side, and whether the machine changes the ratio.

One row per duet configuration (env, cell) and pair of machine keys (left = the first key in
alphabetical order; twin keys are not machines). Each machine keeps its own row of the duets
table as it is (its ratio, interval, sd and verdict: machines that differ in noise keep their own
intervals, nothing is pooled between them). The interaction is the ratio of the two ratios,
left / right: exp(log ratio left - log ratio right), its standard error sqrt(se_left^2 +
se_right^2) with Welch-Satterthwaite degrees of freedom (each machine's duets are independent of
the other's; their variances are not assumed equal), which is scipy.stats.ttest_ind(...,
equal_var=False) on the two machines' duets' log ratios. Where the duets had a second look, the
test and intervals are judged under the rows' two-look design (duets.design_of, `welch_intervals`:
sequential p-values, intervals at one look's nominal level), since rows that stopped early have
spreads selected small (tests/unit/tables/test_duets_releases.py measures it). Its test of "the
machine does not change the ratio" is Benjamini-Hochberg at q over the table's rows, its
interval at the level that makes the drawn interval the tested one (Benjamini-Yekutieli FCR, as
the duets table), and the equivalence test (TOST, 1 +- min_effect on the interaction, each row
at alpha_equivalence; its (1 - 2 alpha) interval interaction_tost_ci_low/high) says where the
machines give the same ratio. machine_effect, equivalence first as every verdict of the study
(driver/stats/verdicts.py): `same` (the TOST interval inside the band), else `differs` (the
tested interval excludes 1), else `undecided`.

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
from driver.stats.sequential import looks
from driver.study import layout
from driver.tables.duets import critical, design_of, tost_p

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
            p_eq = tost_p(diff, se, dof, min_effect)
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
            row["_design"] = design_of(a, b)
            if a is not None and b is not None and not math.isfinite(se):
                row["reason"] = "fewer than two duets on a machine: no interval"
            rows.append(row)
    out = pd.DataFrame(rows)
    return _intervals(out, q, alpha_equivalence, min_effect)[COLUMNS]


def welch_intervals(log: np.ndarray, se: np.ndarray, df: np.ndarray, p: np.ndarray, q: float,
                    alpha_eq: float, designs=None, p_eq=None) -> dict:
    """A family of Welch differences (log, se, df, two-sided p per row): with each row's two-look
    design (`design_of`; None: one look), the sequential p-values (and of the equivalence test's
    `p_eq`), BH-adjusted p over the family, the FCR level that makes each drawn interval the
    tested one and that interval, and the equivalence test's (1 - 2 alpha) interval, each at its
    look's nominal level as the duets table has them. Shared by every table derived from two
    duets rows (machines_compared, duets_releases)."""
    n = len(np.asarray(p))
    designs = designs if designs is not None else [looks(2, 2)] * n
    p = np.array([float(d.two_sided(x)) if x == x else math.nan for d, x in zip(designs, p)])
    p_eq = None if p_eq is None else np.array(
        [float(d.one_sided(x)) if x == x else math.nan for d, x in zip(designs, p_eq)])
    p_adj = verdicts.bh_adjust(p)
    a_diff, _ = verdicts.fcr_alpha(p_adj, q)
    crit = np.array([critical(g, d, a_diff) for g, d in zip(designs, df)])
    crit_eq = np.array([critical(g, d, alpha_eq, sides=1) for g, d in zip(designs, df)])
    log, se = np.asarray(log, float), np.asarray(se, float)
    return {"p": p, "p_equivalent": p_eq, "p_adjusted": p_adj, "ci_level": 1 - a_diff,
            "ci_low": np.exp(log - crit * se), "ci_high": np.exp(log + crit * se),
            "tost_ci_low": np.exp(log - crit_eq * se), "tost_ci_high": np.exp(log + crit_eq * se),
            "tost_half": crit_eq * se}


def _intervals(out: pd.DataFrame, q: float, alpha_eq: float, min_effect: float) -> pd.DataFrame:
    """BH over the table's interaction tests; each interval at the FCR level that makes it the
    tested one; machine_effect."""
    out = out.copy()
    got = welch_intervals(np.log(out["interaction"].to_numpy(float)),
                          out["interaction_se_log"].to_numpy(float),
                          out["interaction_df"].to_numpy(float),
                          out["interaction_p"].to_numpy(float), q, alpha_eq,
                          designs=list(out.pop("_design")),
                          p_eq=out["interaction_p_equivalent"].to_numpy(float))
    out["interaction_p"], out["interaction_p_equivalent"] = got["p"], got["p_equivalent"]
    p_adj = got["p_adjusted"]
    out["interaction_p_adjusted"] = p_adj
    out["interaction_ci_level"] = got["ci_level"]
    out["interaction_ci_low"], out["interaction_ci_high"] = got["ci_low"], got["ci_high"]
    out["interaction_tost_ci_low"] = got["tost_ci_low"]
    out["interaction_tost_ci_high"] = got["tost_ci_high"]
    out["machine_effect"] = [
        None if not math.isfinite(pe) else
        SAME if pe <= alpha_eq else DIFFERS if pa <= q and (lo > 1 or hi < 1) else UNDECIDED
        for pe, pa, lo, hi in zip(out["interaction_p_equivalent"], p_adj,
                                  out["interaction_ci_low"], out["interaction_ci_high"])]
    return out
