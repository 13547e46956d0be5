"""The summary tables: the performance history across versions and the DO / DON'T lists, and
the seed's way of naming a configuration."""
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from driver.tables import labels
from driver.tables.ordering import AXIS_ORDER, sort_rows
from tfspeed.cells import task
from tfspeed.versions import version_tuple

VERSION_INDEX = ["machine", "model", "data", "keras", "mode", "api", "input", "device"]


def versions_table(cells: pd.DataFrame, envs: Sequence[str]) -> pd.DataFrame:
    """Median seconds per step of each configuration (rows) in every env (columns, in version
    order), plus the fastest env: the study's performance history."""
    ok = cells[cells["status"] == "ok"]
    if ok.empty:
        return pd.DataFrame(columns=VERSION_INDEX + ["fastest_env"])
    wide = ok.pivot_table(index=VERSION_INDEX, columns="env", values="median_s", aggfunc="first")
    wide = wide[[e for e in envs if e in wide.columns]]
    wide.columns.name = None
    wide["fastest_env"] = wide.idxmin(axis=1, skipna=True)
    return sort_rows(wide.reset_index(), envs)



def configuration_text(row: Mapping) -> str:
    """The seed's way of naming a configuration: 'train_on_batch() + numpy + tf.keras + TF 1.14.0
    + Graph + CPU'."""
    parts = [labels.API.get(row["api"], row["api"]),
             "tf.data" if row["input"] == "tfdata" else row["input"]]
    if row["keras"] != "none":
        parts.append(row["keras"])
    fw = row.get("framework")
    parts.append(f"{labels.FRAMEWORK_SHORT.get(fw, fw or '?')} {row.get('framework_version') or '?'}")
    parts += [labels.MODE.get(row["mode"], row["mode"]), str(row["device"]).upper()]
    return " + ".join(parts)

GUIDANCE_COLUMNS = ["machine", "model", "data", "task", "list", "configuration",
                    "ratio_to_fastest", "ratio_ci_low", "ratio_ci_high", "median_s", "ci_low_s",
                    "ci_high_s", "fastest_median_s", "env", "framework",
                    "framework_version", "keras", "mode", "api", "input", "device", "cell_id"]

DONT_FACTOR = 2.0
TASK_ORDER = {"train": 0, "infer": 1, "micro": 2}
# TensorFlow today: from 2.16 on, where Keras 3 is tf.keras (the legacy Keras 2 is the tf_keras
# package, selected with TF_USE_LEGACY_KERAS=1)
TODAY_FROM = (2, 16)
SCOPES = {"study": "every framework and version measured",
          "tf_today": "TensorFlow >= 2.16 (Keras 3 the default)"}


def in_scope(rec: Mapping, scope: str) -> bool:
    """Whether a cell belongs to a guidance scope (SCOPES)."""
    if scope == "tf_today":
        return (rec.get("framework") == "tensorflow"
                and version_tuple(rec.get("framework_version") or "")[:2] >= TODAY_FROM)
    return True


def ratio_interval(rec: Mapping, fastest: Mapping) -> tuple[float, float, float]:
    """rec's median / the fastest's, with an interval: each side's CI of its median taken on
    the log scale (its distance below and above the median) and the two combined as independent
    errors (root of the sum of squares), so that the ratio's interval is wider than either
    cell's. The fastest against itself gets 1 with an interval around it."""
    def arms(r):
        m, lo, hi = (float(r[c]) for c in ("median_s", "ci_low_s", "ci_high_s"))
        return np.log(m), np.log(m) - np.log(lo), np.log(hi) - np.log(m)
    a, a_lo, a_hi = arms(rec)
    b, b_lo, b_hi = arms(fastest)
    r = a - b
    return (float(np.exp(r)), float(np.exp(r - np.hypot(a_lo, b_hi))),
            float(np.exp(r + np.hypot(a_hi, b_lo))))


def guidance_table(cells: pd.DataFrame, scope: str = "study") -> pd.DataFrame:
    """DO / DON'T per (machine, model, data) and task in one scope, every ok cell one row.

    Tasks apart (training first, then inference: an inference call is never "faster" than a
    training step; the `task` column says which: train, infer or micro, tfspeed/cells.py: task).
    Scopes (SCOPES): `study` (the table aggregation writes), every cell against the fastest of
    the study; `tf_today` (the report's first rules), the cells of TensorFlow 2.16 and later
    against the fastest of them: what a TF 2 user can choose today.

    Each cell's `ratio_to_fastest` with its interval (ratio_interval) decides its list: DO when
    the interval reaches 1 (not distinguishable from the fastest), DONT when the whole interval
    lies at DONT_FACTOR (2x) or more, `neither` otherwise (slower than the fastest, but not
    surely 2x: a point estimate past 2x with an interval below it is not a DONT). DO rows come
    fastest first, DONT rows worst first, then the rest."""
    rows = []
    ok = cells[cells["status"] == "ok"]
    ok = ok.assign(_task=[task(a) for a in ok["api"]])
    if scope not in SCOPES:
        raise ValueError(f"guidance scope {scope!r}: one of {', '.join(SCOPES)}")
    # a boolean Series: an empty list would select no columns, not no rows (every cell skipped)
    ok = ok[pd.Series([in_scope(r, scope) for r in ok.to_dict("records")], index=ok.index,
                      dtype=bool)]
    for _, group in ok.groupby(["machine", "model", "data", "_task"], sort=False):
        fastest = group.loc[group["median_s"].idxmin()]
        for rec in group.to_dict("records"):
            ratio, low, high = ratio_interval(rec, fastest)
            kind = ("DO" if low <= 1.0 else "DONT" if low >= DONT_FACTOR else "neither")
            rows.append({**{c: rec[c] for c in GUIDANCE_COLUMNS if c in rec},
                         "task": rec["_task"], "list": kind,
                         "configuration": configuration_text(rec), "ratio_to_fastest": ratio,
                         "ratio_ci_low": low, "ratio_ci_high": high,
                         "fastest_median_s": float(fastest["median_s"])})
    df = pd.DataFrame(rows, columns=GUIDANCE_COLUMNS)
    if df.empty:
        return df
    df["_order"] = np.where(df["list"] == "DO", df["ratio_to_fastest"], -df["ratio_to_fastest"])
    df["_list"] = df["list"].map({"DO": 0, "DONT": 1, "neither": 2})
    df["_task"] = df["task"].map(TASK_ORDER)
    df = df.sort_values(["machine", "model", "data", "_task", "_list", "_order"],
                        key=lambda c: c.map(AXIS_ORDER[c.name]) if c.name in ("model", "data")
                        else c, kind="stable")
    return df.drop(columns=["_order", "_list", "_task"]).reset_index(drop=True)
