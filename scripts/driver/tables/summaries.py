"""The summary tables: the performance history across versions and the DO / DON'T lists, and
the seed's way of naming a configuration."""
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from driver.tables import labels
from driver.tables.ordering import AXIS_ORDER, sort_rows
from tfspeed.cells import task

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

GUIDANCE_COLUMNS = ["machine", "model", "data", "task", "list", "configuration", "ratio_to_fastest",
                    "median_s", "ci_low_s", "ci_high_s", "fastest_median_s", "env",
                    "framework_version", "keras", "mode", "api", "input", "device", "cell_id"]

DONT_FACTOR = 2.0
TASK_ORDER = {"train": 0, "infer": 1, "micro": 2}


def guidance_table(cells: pd.DataFrame) -> pd.DataFrame:
    """DO / DON'T lists per (machine, model, data) and task (training first, then inference: an
    inference call is never "faster" than a training step; the `task` column says which: train,
    infer or micro, tfspeed/cells.py: task), like the seed's: DO are the
    configurations whose median lies within the CI of the fastest one's median (median <= its
    ci_high_s: not distinguishable from the fastest), DONT those at least 2x slower than the
    fastest. DO rows come fastest first, DONT rows worst first."""
    rows = []
    ok = cells[cells["status"] == "ok"]
    ok = ok.assign(_task=[task(a) for a in ok["api"]])
    for _, group in ok.groupby(["machine", "model", "data", "_task"], sort=False):
        fastest = group.loc[group["median_s"].idxmin()]
        for rec in group.to_dict("records"):
            ratio = rec["median_s"] / fastest["median_s"]
            if rec["median_s"] <= fastest["ci_high_s"]:
                kind = "DO"
            elif ratio >= DONT_FACTOR:
                kind = "DONT"
            else:
                continue
            rows.append({**{c: rec[c] for c in GUIDANCE_COLUMNS if c in rec},
                         "task": rec["_task"], "list": kind,
                         "configuration": configuration_text(rec), "ratio_to_fastest": ratio,
                         "fastest_median_s": float(fastest["median_s"])})
    df = pd.DataFrame(rows, columns=GUIDANCE_COLUMNS)
    if df.empty:
        return df
    df["_order"] = np.where(df["list"] == "DO", df["ratio_to_fastest"], -df["ratio_to_fastest"])
    df["_task"] = df["task"].map(TASK_ORDER)
    df = df.sort_values(["machine", "model", "data", "_task", "list", "_order"],
                        key=lambda c: c.map(AXIS_ORDER[c.name]) if c.name in ("model", "data")
                        else c, kind="stable")
    return df.drop(columns=["_order", "_task"]).reset_index(drop=True)
