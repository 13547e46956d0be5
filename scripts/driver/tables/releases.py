"""What each release changed: every configuration's version series, the comparison of each
release with the one before it (`adjacent_releases`) and the change points along the series
(`changepoints`).

A series is one configuration (machine, model, data, Keras flavour, mode, API, input, device)
in the envs of one line, a line being what a user upgrades along (comparisons.family: TensorFlow
with any Keras, PyTorch, Keras 3 on JAX, Keras 3 on torch), envs in version order
(driver/tables/ordering.py). TensorFlow's tf.keras series goes on in the tf_keras package from
the first env without a `tf.keras` flavour (TF >= 2.16, where tf.keras is Keras 3): the Keras 2
that tf.keras was, as TF2 vs TF1 pairs it (comparisons.reference_keras); Keras 3 in TensorFlow is
a series of its own from TF 2.16 on.

adjacent_releases: each pair of consecutive versions of a series, the later one on the left,
compared like every comparison of the study (comparisons.Comparer: Welch on the processes' log
medians) and decided in the study's one Benjamini-Hochberg family. `releases_skipped` counts the
line's envs between the two where the configuration was not measured (0: adjacent releases).

changepoints: driver/stats/changepoints.py on each series of at least 3 versions, alpha = the
study's q: one row per change point (the level moved between before_env and after_env, by
`ratio` = after / before with its CI), and one row per series without any (direction `none`) or
not segmented (`not segmented`, with the reason), so that every series tested is listed.
"""
from collections.abc import Mapping, Sequence

import pandas as pd

from driver.stats import changepoints
from driver.tables.comparisons import Comparer, _comparison_rows, _frame, family, ok_cells, reference_keras
from driver.tables.ordering import sort_rows

SERIES_KEYS = ["machine", "line", "model", "data", "keras", "mode", "api", "input", "device"]
ADJACENT_SHARED = ["line", "model", "data", "keras", "mode", "api", "input", "device",
                   "releases_skipped"]
ADJACENT_SIDES = ["env", "framework_version", "keras"]
CHANGEPOINT_COLUMNS = [
    *SERIES_KEYS, "n_versions", "direction", "before_env", "after_env", "before_version",
    "after_version", "after_keras", "ratio", "ratio_ci_low", "ratio_ci_high", "before_level_s",
    "after_level_s", "z2", "penalty", "alpha", "between_sd", "df", "reason"]


def _series_keras(framework, keras, flavours: set) -> str:
    """The Keras flavour a cell's series is named by (see the module docstring)."""
    if framework == "tensorflow" and keras == "tf_keras":
        return reference_keras(keras, flavours) or keras
    return keras


def series_frame(cells: pd.DataFrame, envs: Sequence[str]) -> pd.DataFrame:
    """The ok cells with their series: `line`, series `keras`, the cell's own `cell_keras`, and
    `_rank`, the env's place in the study's order."""
    ok = ok_cells(cells)
    if ok.empty:
        return ok.assign(line=[], cell_keras=[], _rank=[])
    flavours = cells.groupby(["machine", "env"])["keras"].agg(set).to_dict()
    rank = {e: i for i, e in enumerate(envs)}
    out = ok.assign(
        line=[family(f, k) for f, k in zip(ok["framework"], ok["keras"])],
        cell_keras=ok["keras"],
        keras=[_series_keras(f, k, flavours.get((m, e), set())) for f, k, m, e in
               zip(ok["framework"], ok["keras"], ok["machine"], ok["env"])],
        _rank=ok["env"].map(lambda e: rank.get(e, len(rank))))
    return out.sort_values("_rank", kind="stable")


def _line_envs(series: pd.DataFrame) -> dict:
    """Per (machine, line): its envs in order."""
    return {key: list(dict.fromkeys(part["env"]))
            for key, part in series.groupby(["machine", "line"], sort=False)}


def adjacent_table(cells: pd.DataFrame, comparer: Comparer, envs: Sequence[str]) -> pd.DataFrame:
    """Each pair of consecutive versions of every series: later (left) vs earlier (right)."""
    series = series_frame(cells, envs)
    line_envs = _line_envs(series)
    pairs = []
    for key, part in series.groupby(SERIES_KEYS, sort=False):
        recs = part.to_dict("records")
        order = line_envs[(key[0], key[1])]
        for before, after in zip(recs, recs[1:]):
            row = dict(zip(SERIES_KEYS, key))
            row["releases_skipped"] = order.index(after["env"]) - order.index(before["env"]) - 1
            for side, rec in (("left", after), ("right", before)):
                row[f"{side}_env"], row[f"{side}_cell_id"] = rec["env"], rec["cell_id"]
                row[f"{side}_framework_version"] = rec["framework_version"]
                row[f"{side}_keras"] = rec["cell_keras"]
            pairs.append(row)
    columns = ["machine", *ADJACENT_SHARED, *(f"{s}_{c}" for c in ADJACENT_SIDES
                                               for s in ("left", "right"))]
    rows = _comparison_rows(pd.DataFrame(pairs), comparer, columns) if pairs else []
    return _frame(rows, ADJACENT_SHARED, ADJACENT_SIDES, envs)


def changepoints_table(cells: pd.DataFrame, logs: Mapping, envs: Sequence[str],
                       alpha: float = 0.05, level: float = 0.95) -> pd.DataFrame:
    """Change points of every series (driver/stats/changepoints.py), one row each; a row per
    series without any."""
    series = series_frame(cells, envs)
    rows = []
    for key, part in series.groupby(SERIES_KEYS, sort=False):
        recs = part.to_dict("records")
        if len(recs) < 2:  # one version: not a series
            continue
        base = dict(zip(SERIES_KEYS, key), n_versions=len(recs), alpha=alpha)
        found = changepoints.segment(
            [logs[(r["machine"], r["env"], r["cell_id"])] for r in recs], alpha=alpha,
            level=level)
        base.update(between_sd=found["sigma"], df=found["df"], penalty=found["penalty"],
                    reason=found["reason"])
        if found["reason"]:
            rows.append({**base, "direction": "not segmented"})
            continue
        if not found["change_points"]:
            rows.append({**base, "direction": "none"})
        for cp in found["change_points"]:
            before, after = recs[cp["index"] - 1], recs[cp["index"]]
            rows.append({**base, "direction": "slower" if cp["ratio"] > 1 else "faster",
                         "before_env": before["env"], "after_env": after["env"],
                         "before_version": before["framework_version"],
                         "after_version": after["framework_version"],
                         "after_keras": after["cell_keras"],
                         **{c: float(cp[c]) for c in ("ratio", "ratio_ci_low", "ratio_ci_high",
                                                      "before_level_s", "after_level_s", "z2")}})
    df = pd.DataFrame(rows, columns=CHANGEPOINT_COLUMNS)
    # stable: within a series, its change points stay in version order
    return sort_rows(df, envs, ["machine", "model", "data", "keras", "mode", "api", "input",
                                "device"])

