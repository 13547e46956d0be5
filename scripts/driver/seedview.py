"""The source study's BENCHMARKS layout as one sheet of the workbook."""
from collections.abc import Mapping, Sequence

import pandas as pd

from driver.ordering import sort_rows
from driver.summaries import MODE_TEXT

SEED_INDEX = ["machine", "device", "keras", "api", "input", "model", "data"]

SIG_PREFIX = "significant: "


def seed_view(cells: pd.DataFrame, tables: Mapping[str, pd.DataFrame], reference_env: str,
              envs: Sequence[str]) -> pd.DataFrame:
    """The source study's BENCHMARKS layout: rows model x data (within keras flavour, API, input,
    device), columns seconds per iteration for each TF env in Graph and Eager, then the
    TF2 vs TF1 % per TF 2 env and mode, then GvE % per env. In rows of a TF 2 flavour that the
    reference lacks (keras3, tf_keras), the reference columns show the reference cell that the
    TF2 vs TF1 % was computed against (its tf.keras).

    Each % column has a boolean twin named SIG_PREFIX + its name (the comparison's
    `significant`), which the workbook uses to grey non-significant values and then drops.
    """
    ok = cells[cells["status"] == "ok"]
    ok = ok[(ok["framework"] == "tensorflow") & ok["mode"].isin(["graph", "eager"])]
    present = set(ok["env"])
    tf_envs = [e for e in [reference_env, *envs] if e in present]
    tf_envs = list(dict.fromkeys(tf_envs))
    if ok.empty:
        return pd.DataFrame(columns=SEED_INDEX)
    rows: dict[tuple, dict] = {}

    def put(key, col, value):
        rows.setdefault(key, {})[col] = value

    for rec in ok.to_dict("records"):
        put(tuple(rec[c] for c in SEED_INDEX), f"{rec['env']} {MODE_TEXT[rec['mode']]} s/iter",
            rec["median_s"])
    tf2 = tables.get("tf2_vs_tf1", pd.DataFrame())
    for rec in tf2.to_dict("records"):
        if rec["mode"] not in ("graph", "eager"):
            continue
        key = (rec["machine"], rec["device"], rec["left_keras"], rec["api"], rec["input"],
               rec["model"], rec["data"])
        mode = MODE_TEXT[rec["mode"]]
        col = f"TF2 vs TF1 % {rec['left_env']} {mode}"
        put(key, col, rec["pct"])
        put(key, SIG_PREFIX + col, rec["significant"])
        ref_col = f"{rec['right_env']} {mode} s/iter"
        rows[key].setdefault(ref_col, rec["right_median_s"])
    gve = tables.get("graph_vs_eager", pd.DataFrame())
    for rec in gve.to_dict("records"):
        if rec["env"] not in tf_envs:
            continue
        key = (rec["machine"], rec["device"], rec["keras"], rec["api"], rec["input"],
               rec["model"], rec["data"])
        put(key, f"GvE % {rec['env']}", rec["pct"])
        put(key, f"{SIG_PREFIX}GvE % {rec['env']}", rec["significant"])
    time_cols = [f"{e} {m} s/iter" for e in tf_envs for m in ("Graph", "Eager")]
    pct_cols = [f"TF2 vs TF1 % {e} {m}" for e in tf_envs for m in ("Graph", "Eager")]
    pct_cols += [f"GvE % {e}" for e in tf_envs]
    df = pd.DataFrame([{**dict(zip(SEED_INDEX, k)), **v} for k, v in rows.items()])
    present_cols = [c for c in time_cols + pct_cols if c in df.columns]
    df = df.reindex(columns=SEED_INDEX + present_cols
                    + [SIG_PREFIX + c for c in pct_cols if c in present_cols])
    return sort_rows(df, envs, SEED_INDEX)
