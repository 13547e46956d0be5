"""The duets_graph_vs_eager table: graph vs eager in every version, from the headline's duets.

The headline's duets time each TF 2.x env against the reference env in the same mode: per
machine, one row of log ratios x_g,v = log(g_v / g_ref) in graph mode and x_e,v = log(e_v / e_ref)
in eager mode. One more duets row, the reference env's graph cell against its eager cell
(config duets.graph_vs_eager; driver/tables/duets.py family `duets_modes`) gives
y = log(g_ref / e_ref). Then

    log(g_v / e_v) = x_g,v - x_e,v + y

for every version timed in both modes, with no duet of its own: the reference cancels. The three
rows come from duets of their own (fresh workers each, no process shared), so the variances add:
se^2 = se_g^2 + se_e^2 + se_y^2. Degrees of freedom: the smallest of the three rows' (n - 1).
The Welch-Satterthwaite df (df_welch, written beside it) is never below that and is what a plain
analysis would use, but for three parts of unequal spread its far tails are thin: at the levels
a BH-widened interval reaches (two-sided 0.002), with spreads 0.02 / 0.09 / 0.05 and 4, 4 and 8
duets, its true tail was two to three times nominal in simulation (still above it at 10, 10 and
20); the smallest df is conservative whatever the spreads are. The price is power while the rows
are small: with 4 duets a row (df 3) and equal spreads its two-sided size is about 0.01 at a
nominal 0.05 (Welch's 0.046), and under the duets' two looks its 95 % interval covered 0.996 of
simulated truths where Welch's covered 0.965; from 10 duets a row the two differ by about a
tenth of the interval. Each row is judged under its rows' two-look design (duets.design_of, as
duets_releases judges its two rows: here the version's two, whose df the row takes; the
reference row has duets.graph_vs_eager times their duets at each look), with its sequential
p-values, Benjamini-Hochberg over this table's rows at q, the tested interval at the level that
makes the drawn interval the tested one, TOST at 1 +- min_effect at alpha_equivalence, and the
study's verdicts (machines_compared.welch_intervals, shared with duets_releases and
machines_compared).

Which rows: per machine (twin keys left out), API and input, the reference's own row (source
`duet`: measured directly, the reference env's tf.keras) and one row per TF 2.x env and Keras
with a duets row in both modes (source `derived`). From TF 2.16 that is tf_keras (Keras 3 has no
graph mode). Without the reference row there is no row at all (the log says so, and the report).

Caveats, stated where the rows are read: the reference row enters every derived row, so their
errors are positively correlated (about 1/3 at equal se): BH and FCR hold, but false calls come
together, and a count such as "graph faster in N versions" rests partly on one row; this is why
that row gets duets.graph_vs_eager times the replicates. Each duets row's context bias (the
order bias the A/A rows measure) adds up over three rows.
"""
import logging
import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from driver.study import layout
from driver.tables.duets import design_of, tost_p
from driver.tables.duets_releases import judged
from driver.tables.ordering import env_sort_key

log = logging.getLogger("tfspeed.aggregate")

SERIES = ["machine", "api", "input"]
SOURCE_DUET, SOURCE_DERIVED = "duet", "derived"
COLUMNS = [
    *SERIES, "env", "framework_version", "keras", "source", "left_env", "right_env",
    "left_keras", "right_keras", "left_mode", "right_mode", "reference_env", "graph_n", "eager_n",
    "reference_n", "graph_ratio", "eager_ratio", "reference_ratio", "ratio", "ratio_ci_low",
    "ratio_ci_high", "ci_level", "log_ratio", "se_log", "df", "df_welch", "p", "p_adjusted",
    "p_equivalent", "tost_ci_low", "tost_ci_high", "tost_level", "bound_pct", "verdict",
    "reason",
]


def combine(rows: list) -> tuple[float, float, float, float]:
    """(sum of the rows' signed log ratios, its se, the smallest df, the Welch-Satterthwaite df)
    of independent rows given as (sign, row); NaN se and df when a row has no se."""
    log_ratio = sum(s * float(r["log_ratio"]) for s, r in rows)
    se2 = np.array([float(r["se_log"]) ** 2 for _, r in rows])
    dfs = np.array([float(r["df"]) for _, r in rows])
    if not (np.isfinite(se2).all() and np.isfinite(dfs).all()) or se2.sum() <= 0:
        return log_ratio, math.nan, math.nan, math.nan
    welch = float(se2.sum() ** 2 / np.sum(se2 ** 2 / dfs))
    return log_ratio, float(math.sqrt(se2.sum())), float(dfs.min()), welch


def _row(key: dict, parts: list, source: str, env: str, version, keras: str, ref_env: str,
         graph, eager, reference, min_effect: float) -> dict:
    diff, se, dof, welch = combine(parts)
    p = float(2 * sps.t.sf(abs(diff) / se, dof)) if math.isfinite(se) else math.nan
    return {**key, "env": env, "framework_version": version, "keras": keras, "source": source,
            "left_env": env, "right_env": env, "left_keras": keras, "right_keras": keras,
            "left_mode": "graph", "right_mode": "eager", "reference_env": ref_env,
            **{f"{name}_n": r["n"] if r is not None else math.nan
               for name, r in (("graph", graph), ("eager", eager), ("reference", reference))},
            **{f"{name}_ratio": math.exp(float(r["log_ratio"])) if r is not None else math.nan
               for name, r in (("graph", graph), ("eager", eager), ("reference", reference))},
            "log_ratio": diff, "se_log": se, "df": dof,
            "df_welch": welch, "p": p, "p_equivalent": tost_p(diff, se, dof, min_effect),
            # the design of the version's rows (the reference row's has k times their duets; the
            # df taken is theirs), or the reference row's own when it stands alone
            "_design": design_of(*([graph, eager] if graph is not None else [reference])),
            "reason": None if math.isfinite(se) else "fewer than two duets in a row: no interval"}


def duets_graph_vs_eager_table(duets: pd.DataFrame, modes: pd.DataFrame, q: float = 0.05,
                               min_effect: float = 0.10,
                               alpha_equivalence: float = 0.05) -> pd.DataFrame:
    """One row per (machine, api, input) and env with Keras timed in both modes, beside the
    reference's own row; `duets` is the duets table (the headline), `modes` the duets_modes
    family's table (the reference's graph against its eager cell)."""
    if modes is None or modes.empty or duets is None or duets.empty:
        if duets is not None and not duets.empty and set(duets["mode"]) >= {"graph", "eager"}:
            log.warning("duets_graph_vs_eager: no duets row of the reference's graph against its "
                        "eager cell (config duets.graph_vs_eager): no graph vs eager per version")
        return pd.DataFrame(columns=COLUMNS)
    duets = duets[~duets["machine"].astype(str).map(layout.is_twin)]
    modes = modes[~modes["machine"].astype(str).map(layout.is_twin)]
    refs = {tuple(r[k] for k in SERIES): r for r in modes.to_dict("records")}
    rows = []
    for key, part in duets.groupby(SERIES, sort=True):
        ref = refs.get(key)
        if ref is None:
            log.warning("duets_graph_vs_eager: %s has no reference graph vs eager row: no rows",
                        "/".join(map(str, key)))
            continue
        key = dict(zip(SERIES, key))
        rows.append(_row(key, [(1, ref)], SOURCE_DUET, ref["env"], ref["left_framework_version"],
                         ref["keras"], ref["env"], None, None, ref, min_effect))
        by = {(r["env"], r["keras"], r["mode"]): r for r in part.to_dict("records")}
        for (env, keras, mode), graph in sorted(by.items(), key=lambda item: (env_sort_key(
                "tensorflow", item[1]["left_framework_version"], item[0][0]), item[0][1:])):
            eager = by.get((env, keras, "eager"))
            if mode != "graph" or eager is None:
                continue
            rows.append(_row(key, [(1, graph), (-1, eager), (1, ref)], SOURCE_DERIVED, env,
                             graph["left_framework_version"], keras, ref["env"], graph, eager,
                             ref, min_effect))
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.DataFrame(rows)
    return judged(out, q, min_effect, alpha_equivalence)[COLUMNS]
