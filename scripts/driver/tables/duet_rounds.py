"""The duets' health check: did a replicate round move every row together?

Replicate r of every duet row runs before replicate r + 1 of any (duetplan.py), so a round spans a
stretch of the run. Duets cancel the machine's state that both workers see; a round whose log
ratios all lean one way is a state they did not cancel (a disturbance that hit one side more, or a
change of the machine between rounds). Per (machine, mode): a two-way analysis of variance of the
duets' log ratios on row + round (statsmodels OLS, type II), whose F test says whether rounds differ
at all, and per round its mean deviation from the rows' means with a t interval over the round's
rows. A round is `moved` when the F test rejects at q and the round's interval excludes 0.

`sd_round` is the sd of the rounds' common effect, from the same analysis by the method of
moments ((MS_round - MS_resid) / n0, n0 the rows per round as the unbalanced one-way layout
counts them; 0 where MS_round is the smaller). Such an effect (the machine over a round's stretch
of the run, or a fork helper renewed every round, config duets.renew_helpers) is inside every
row's interval (the row's replicates come from different rounds) but shared by the rows of a
round, so that they move together; the cross-run check replays it (crossrun_looks.py).
"""
import math

import pandas as pd
from scipy import stats as sps

from tfspeed.cells import cell_id

COLUMNS = ["machine", "mode", "round", "rows", "shift", "shift_ci_low", "shift_ci_high",
           "f", "df_round", "df_resid", "p_round", "moved", "sd_round"]


def duet_rounds(duets: pd.DataFrame, records, level: float = 0.95, q: float = 0.05) -> pd.DataFrame:
    """One row per (machine, mode, replicate round) of the headline's ok duets."""
    keep = set(zip(duets["machine"], duets["env"], duets["cell_id"])) if len(duets) else set()
    rows = []
    for rec in records:
        if rec.get("status") != "ok" or "log_ratio" not in rec or rec.get("kind") == "pair":
            continue
        key = (rec["machine"], rec["env"], cell_id(rec["cell"]))
        if key not in keep:
            continue
        rows.append({"machine": key[0], "mode": rec["cell"]["mode"], "row": key[1] + "|" + key[2],
                     "round": int(rec["replicate"]), "y": float(rec["log_ratio"])})
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    data = pd.DataFrame(rows)
    out = []
    for (machine, mode), part in data.groupby(["machine", "mode"]):
        f, df_round, df_resid, p, sd_round = anova_rounds(part)
        resid = part["y"] - part.groupby("row")["y"].transform("mean")
        for rnd, sub in resid.groupby(part["round"]):
            n = len(sub)
            mean = float(sub.mean())
            if n >= 2:
                crit = float(sps.t.ppf(0.5 + level / 2, n - 1))
                half = crit * float(sub.std(ddof=1)) / math.sqrt(n)
            else:
                half = math.nan
            lo, hi = mean - half, mean + half
            out.append({"machine": machine, "mode": mode, "round": int(rnd), "rows": n,
                        "shift": mean, "shift_ci_low": lo, "shift_ci_high": hi, "f": f,
                        "df_round": df_round, "df_resid": df_resid, "p_round": p,
                        "moved": bool(p == p and p <= q and (lo > 0 or hi < 0)),
                        "sd_round": sd_round})
    return pd.DataFrame(out, columns=COLUMNS)


def anova_rounds(part: pd.DataFrame):
    """(F, df_round, df_resid, p, sd_round) of the round effect in y ~ row + round (type II), or
    NaNs where it cannot be made."""
    import statsmodels.formula.api as smf
    from statsmodels.stats.anova import anova_lm

    nan = (math.nan,) * 5
    if part["round"].nunique() < 2 or part["row"].nunique() < 2:
        return nan
    fit = smf.ols("y ~ C(row) + C(round)", data=part).fit()
    if fit.df_resid < 1:
        return nan
    table = anova_lm(fit, typ=2)
    row = table.loc["C(round)"]
    ms_round, ms_resid = row["sum_sq"] / row["df"], fit.mse_resid
    sizes = part.groupby("round").size()
    total = float(sizes.sum())
    n0 = (total - float((sizes ** 2).sum()) / total) / (len(sizes) - 1)
    sd_round = math.sqrt(max(0.0, (ms_round - ms_resid) / n0))
    return (float(row["F"]), float(row["df"]), float(fit.df_resid), float(row["PR(>F)"]),
            sd_round)
