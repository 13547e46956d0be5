"""The source study's BENCHMARKS layout as one sheet of the workbook (and, via
driver/report/source_table.py, as the report's seed tables).

The seed compared two TensorFlows: TF1 = 1.14.0 and TF2 = 2.0.0. Its spreadsheet has one block
per configuration (Keras flavour x API x input x device), rows model x data (small / medium /
large), columns: seconds per iteration of TF1 Graph, TF1 Eager, TF2 Graph, TF2 Eager, then the
`%` columns (TF2 vs TF1 per mode, Graph vs Eager per TF version). So does this view: the
reference env and ONE TF 2 env (`seed_tf2_env`), a handful of columns, none empty for the whole
sheet. The history across every TF version is the `versions` table's.

A row's TF 1 columns only ever hold the reference env's cell of the row's own Keras flavour. A
keras3 / tf_keras row has no TF 1 counterpart of its flavour: its TF 1 columns stay blank, its
TF2 vs TF1 % (which the `tf2_vs_tf1` table computes against the reference's tf.keras) goes to a
column labelled "vs TF 1 tf.keras", and its `note` says so.
"""
from collections.abc import Mapping, Sequence

import pandas as pd

from driver.stats.verdicts import LEFT_FASTER, RIGHT_FASTER, UNDECIDED, norm_code
from driver.study.layout import is_twin
from driver.tables.labels import MODE as MODE_TEXT
from driver.tables.ordering import sort_rows
from tfspeed.versions import major

SEED_INDEX = ["machine", "device", "keras", "api", "input", "model", "data"]
BLOCK = SEED_INDEX[:5]  # a block: one configuration; its rows: model x data
SEED_MODES = ("graph", "eager")

# Each % column has a twin named VERDICT_PREFIX + its name holding the comparison's verdict
# (left_faster / right_faster / equivalent / undecided); the workbook colours by it and drops
# the twins, the report marks the % with it.
VERDICT_PREFIX = "verdict: "
NOTE = "note"


def time_col(env: str, mode: str) -> str:
    return f"{env} {MODE_TEXT[mode]} s/iter"


def tf2_vs_tf1_col(env: str, mode: str, other_keras: str | None = None) -> str:
    """TF2 vs TF1 % of `env` in `mode`; with other_keras, the explicitly labelled column of a
    flavour that the TF 1 env lacks, compared with the TF 1 env's `other_keras`."""
    base = f"TF2 vs TF1 % {env} {MODE_TEXT[mode]}"
    return base if other_keras is None else f"{base} vs TF 1 {other_keras}"


def gve_col(env: str) -> str:
    return f"GvE % {env}"


def verdict_of(rec: Mapping) -> str:
    """A comparison row's verdict; from `significant` and the sign where a table has none."""
    verdict = rec.get("verdict")
    if isinstance(verdict, str) and verdict:
        return norm_code(verdict)
    significant = rec.get("significant")
    if significant is None or pd.isna(significant) or not bool(significant):
        return UNDECIDED
    return LEFT_FASTER if float(rec.get("pct") or 0.0) > 0 else RIGHT_FASTER


def _seed_cells(cells: pd.DataFrame) -> pd.DataFrame:
    """The cells the seed's tables can hold: TensorFlow, ok, Graph or Eager, a Keras model (not
    the matmul micro-case), not an A/A twin."""
    if cells.empty or "status" not in cells.columns:
        return cells.iloc[0:0]
    ok = cells[(cells["status"] == "ok") & (cells["framework"] == "tensorflow")
               & cells["mode"].isin(SEED_MODES) & (cells["keras"] != "none")]
    return ok[~ok["machine"].map(is_twin)]


def _is_tf2(cells: pd.DataFrame, env: str) -> bool:
    versions = cells.loc[cells["env"] == env, "framework_version"].dropna().astype(str)
    return any(major(v) == 2 for v in versions)


def seed_tf2_env(cells: pd.DataFrame, tables: Mapping[str, pd.DataFrame], reference_env: str,
                 envs: Sequence[str]) -> str | None:
    """The TF 2 env shown beside the reference: the one with the most TF2 vs TF1 pairs of the
    same Keras flavour (the seed's own comparison, e.g. TF 2.0 tf.keras vs TF 1.14 tf.keras),
    then the most cells in the view; ties go to the oldest (the seed's TF2 was 2.0.0)."""
    ok = _seed_cells(cells)
    present = set(ok["env"]) if not ok.empty else set()
    candidates = [e for e in dict.fromkeys(envs) if e in present and e != reference_env
                  and _is_tf2(ok, e)]
    if not candidates:
        return None
    tf2 = tables.get("tf2_vs_tf1", pd.DataFrame())
    same = {}
    if not tf2.empty:
        rows = tf2[tf2["mode"].isin(SEED_MODES) & (tf2["left_keras"] == tf2["right_keras"])
                   & (tf2["left_keras"] != "none") & (tf2["right_env"] == reference_env)]
        same = rows["left_env"].value_counts().to_dict()
    n_cells = ok["env"].value_counts().to_dict()
    return max(candidates, key=lambda e: (same.get(e, 0), n_cells.get(e, 0),
                                          -candidates.index(e)))


def seed_view(cells: pd.DataFrame, tables: Mapping[str, pd.DataFrame], reference_env: str,
              envs: Sequence[str], tf2_env: str | None = None) -> pd.DataFrame:
    """The seed's blocks: rows SEED_INDEX (sorted so that each configuration's rows are together,
    model x data in the seed's order), then the reference env's and `tf2_env`'s (default:
    seed_tf2_env) seconds per iteration in Graph and Eager, TF2 vs TF1 % per mode, GvE % per
    env, a note where the row's flavour has no TF 1 counterpart; then the VERDICT_PREFIX twins.
    Columns that no row fills are left out."""
    ok = _seed_cells(cells)
    if ok.empty:
        return pd.DataFrame(columns=SEED_INDEX)
    tf2_env = tf2_env or seed_tf2_env(cells, tables, reference_env, envs)
    shown = [e for e in (reference_env, tf2_env) if e]
    ref_flavours = {(m, k) for m, k in zip(ok.loc[ok["env"] == reference_env, "machine"],
                                           ok.loc[ok["env"] == reference_env, "keras"])}
    rows: dict[tuple, dict] = {}

    def put(key, col, value):
        rows.setdefault(key, {})[col] = value

    for rec in ok[ok["env"].isin(shown)].to_dict("records"):
        put(tuple(rec[c] for c in SEED_INDEX), time_col(rec["env"], rec["mode"]), rec["median_s"])
    tf2 = tables.get("tf2_vs_tf1", pd.DataFrame())
    cross_kerases = []
    for rec in tf2.to_dict("records"):
        if (rec["mode"] not in SEED_MODES or rec["left_env"] != tf2_env
                or rec["right_env"] != reference_env or rec["left_keras"] == "none"
                or is_twin(rec["machine"])):
            continue
        key = (rec["machine"], rec["device"], rec["left_keras"], rec["api"], rec["input"],
               rec["model"], rec["data"])
        other = None if rec["left_keras"] == rec["right_keras"] else rec["right_keras"]
        if other is not None and other not in cross_kerases:
            cross_kerases.append(other)
        col = tf2_vs_tf1_col(tf2_env, rec["mode"], other)
        put(key, col, rec["pct"])
        put(key, VERDICT_PREFIX + col, verdict_of(rec))
    gve = tables.get("graph_vs_eager", pd.DataFrame())
    for rec in gve.to_dict("records"):
        if rec["env"] not in shown or rec["keras"] == "none" or is_twin(rec["machine"]):
            continue
        key = (rec["machine"], rec["device"], rec["keras"], rec["api"], rec["input"],
               rec["model"], rec["data"])
        put(key, gve_col(rec["env"]), rec["pct"])
        put(key, VERDICT_PREFIX + gve_col(rec["env"]), verdict_of(rec))
    for key, values in rows.items():
        machine, keras = key[0], key[2]
        if (machine, keras) in ref_flavours or reference_env not in set(ok["env"]):
            continue
        crossed = [c for c in values if c.startswith("TF2 vs TF1 %") and " vs TF 1 " in c]
        note = f"no {keras} in {reference_env}: the {reference_env} columns stay blank"
        if crossed:
            others = sorted({c.rsplit(" vs TF 1 ", 1)[1] for c in crossed})
            note += (f"; TF2 vs TF1 % compares with {reference_env}'s "
                     f"{' / '.join(others)} (its block)")
        values[NOTE] = note
    time_cols = [time_col(e, m) for e in shown for m in SEED_MODES]
    pct_cols = [tf2_vs_tf1_col(tf2_env, m) for m in SEED_MODES] if tf2_env else []
    pct_cols += [tf2_vs_tf1_col(tf2_env, m, k) for k in cross_kerases for m in SEED_MODES]
    pct_cols += [gve_col(e) for e in shown]
    df = pd.DataFrame([{**dict(zip(SEED_INDEX, k)), **v} for k, v in rows.items()])
    present = [c for c in time_cols + pct_cols + [NOTE]
               if c in df.columns and df[c].notna().any()]
    twins = [VERDICT_PREFIX + c for c in pct_cols if c in present]
    df = df.reindex(columns=SEED_INDEX + present + twins)
    return sort_rows(df, envs, SEED_INDEX)
