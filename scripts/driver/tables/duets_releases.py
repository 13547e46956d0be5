"""The duets_releases table: what each release changed, from the headline's duets.

Every row of the duets table is one TF 2.x env against the same reference env, in one machine,
mode and API, from its own duets (fresh workers each; no two rows share a process). The ratio of
two rows' ratios is then the ratio of the two envs' step times, the reference cancelling:
exp(log ratio later - log ratio earlier). Consecutive envs of a (machine, mode, api, input)
series and Keras line, in version order (driver/tables/ordering.py), give one row each, the
later env on the left, as in adjacent_releases: the Keras 2 line (tf.keras, going on in tf_keras
from TF 2.16) and the Keras 3 line, whose first version is also compared with the Keras 2 line's
version before it (`consecutive`). Its standard error is sqrt(se_left^2 + se_right^2) with
Welch-Satterthwaite degrees of freedom (machines_compared.welch: the two rows' duets are
independent), its test of "the two releases take the same time" is Benjamini-Hochberg at q over
this table's rows, its interval at the level that makes the drawn interval the tested one (as
every table of duets), and its equivalence test TOST at 1 +- min_effect, each row at
alpha_equivalence. The verdict is the study's (driver/stats/verdicts.py).

Why beside adjacent_releases: on a machine whose processes differ (the AMD EPYC VMs), cells of
a few processes leave most adjacent releases undecided, while a duet row's spread is the duets'
(docs/design.md). The Keras of each side is the headline's, the one its users get (tf.keras,
from TF 2.16 Keras 3 or tf_keras as the duets table says): a row across TF 2.15 and 2.16 in
eager mode compares what a user who upgrades and keeps the default Keras sees.

The duets' second look extends a row on its own result against the reference, and a row that
stopped early did so partly because its spread came out small: plain Welch intervals of two such
rows cover less than they say (about 0.93 for 0.95 in the test's simulation). So each row is
judged under the rows' two-look design (duets.design_of), as the duets table judges
its own rows: sequential p-values, intervals at the nominal level of one look. The test measures
the coverage under that extension and plants a miscalibration that fails it
(tests/unit/tables/test_duets_releases.py).
"""
import math

import numpy as np
import pandas as pd

from driver.stats import verdicts
from driver.study import layout
from driver.tables.duets import design_of, tost_p
from driver.tables.machines_compared import welch, welch_intervals
from driver.tables.ordering import env_sort_key

SERIES = ["machine", "mode", "api", "input"]
KERAS3 = "keras3"
COLUMNS = [
    *SERIES, "left_env", "right_env", "left_keras", "right_keras", "left_framework_version",
    "right_framework_version", "left_n", "right_n", "ratio", "ratio_ci_low", "ratio_ci_high",
    "ci_level", "log_ratio", "se_log", "df", "p", "p_adjusted", "p_equivalent", "tost_ci_low",
    "tost_ci_high", "tost_level", "bound_pct", "verdict", "reason",
]


def consecutive(ordered: list[dict]) -> list[tuple[dict, dict]]:
    """(earlier, later) pairs of one series' duets rows in version order, per Keras line: the
    Keras 2 line (tf.keras, going on in tf_keras from TF 2.16, as adjacent_releases has it) and
    the Keras 3 line, whose first version is compared with the last earlier row of the Keras 2
    line (the upgrade that keeps the default Keras). Two rows of one env are never paired."""
    two = [r for r in ordered if r["keras"] != KERAS3]
    three = [r for r in ordered if r["keras"] == KERAS3]
    pairs = list(zip(two, two[1:])) + list(zip(three, three[1:]))
    if three:
        before = [r for r in two if env_sort_key("tensorflow", r["left_framework_version"],
                                                 r["env"])
                  < env_sort_key("tensorflow", three[0]["left_framework_version"],
                                 three[0]["env"])]
        if before:
            pairs.append((before[-1], three[0]))
    return [(a, b) for a, b in pairs if a["env"] != b["env"]]


def duets_releases_table(duets: pd.DataFrame, q: float = 0.05, min_effect: float = 0.10,
                         alpha_equivalence: float = 0.05) -> pd.DataFrame:
    """One row per pair of consecutive envs of each (machine, mode, api, input) series of the
    duets table (twin machine keys left out)."""
    if duets is None or duets.empty:
        return pd.DataFrame(columns=COLUMNS)
    df = duets[~duets["machine"].astype(str).map(layout.is_twin)]
    rows = []
    for key, part in df.groupby(SERIES, sort=True):
        part = part.assign(_key=[env_sort_key("tensorflow", v, e) for v, e in
                                 zip(part["left_framework_version"], part["env"])])
        ordered = [r._asdict() for r in part.sort_values("_key").itertuples(index=False)]
        for earlier, later in consecutive(ordered):
            diff, se, dof, p = welch(later["log_ratio"], later["se_log"], later["df"],
                                     earlier["log_ratio"], earlier["se_log"], earlier["df"])
            rows.append({
                **dict(zip(SERIES, key)), "left_env": later["env"], "right_env": earlier["env"],
                "left_keras": later["keras"], "right_keras": earlier["keras"],
                "left_framework_version": later["left_framework_version"],
                "right_framework_version": earlier["left_framework_version"],
                "left_n": later["n"], "right_n": earlier["n"], "log_ratio": diff, "se_log": se,
                "_design": design_of(later, earlier),
                "df": dof, "p": p, "p_equivalent": tost_p(diff, se, dof, min_effect),
                "reason": None if math.isfinite(se) else
                "fewer than two duets in a row: no interval"})
    if not rows:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.DataFrame(rows)
    return judged(out, q, min_effect, alpha_equivalence)[COLUMNS]


def judged(out: pd.DataFrame, q: float, min_effect: float,
           alpha_equivalence: float) -> pd.DataFrame:
    """Derived rows (log_ratio, se_log, df, p, p_equivalent and each row's two-look `_design`)
    judged as the duets' tables are: sequential p-values under each row's design, BH over the
    rows at q, the tested interval, TOST at 1 +- min_effect and the study's verdicts
    (machines_compared.welch_intervals). Shared by duets_releases and duets_graph_vs_eager."""
    got = welch_intervals(out["log_ratio"].to_numpy(float), out["se_log"].to_numpy(float),
                          out["df"].to_numpy(float), out["p"].to_numpy(float), q,
                          alpha_equivalence, designs=list(out.pop("_design")),
                          p_eq=out["p_equivalent"].to_numpy(float))
    out["p"], out["p_equivalent"] = got["p"], got["p_equivalent"]
    out["ratio"] = np.exp(out["log_ratio"].to_numpy(float))
    out["p_adjusted"], out["ci_level"] = got["p_adjusted"], got["ci_level"]
    out["ratio_ci_low"], out["ratio_ci_high"] = got["ci_low"], got["ci_high"]
    out["tost_ci_low"], out["tost_ci_high"] = got["tost_ci_low"], got["tost_ci_high"]
    out["tost_level"] = 1 - 2 * alpha_equivalence
    out["bound_pct"] = 100.0 * np.expm1(np.abs(out["log_ratio"].to_numpy(float))
                                        + got["tost_half"])
    out["verdict"] = [verdicts.verdict(lo, hi, pa, q, min_effect, pe, alpha_equivalence)
                      for lo, hi, pa, pe in zip(out["ratio_ci_low"], out["ratio_ci_high"],
                                                out["p_adjusted"], out["p_equivalent"])]
    return out
