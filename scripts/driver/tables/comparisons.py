"""The comparison tables: pairs of ok cells that differ in one factor, each compared at the
process level: the source study's `%` beside the ratio of cell estimates with its CI from the study's
model (driver/stats/blocks.py: log process median = cell + round, moderated per-cell variances), the
p-value, the study-wide Benjamini-Hochberg adjusted p-value and the per-test threshold it implies,
the equivalence test's p-value and interval, the bound ("differ by at most bound_pct %") and a
verdict (driver/stats/verdicts.py).

The CI drawn is the CI tested, as in the duets table: once BH over every comparison of the study
has called R of m rows different, each row's CI is at ci_level = 1 - R q / (m k) (Benjamini and
Yekutieli's false-coverage-rate level; k = `candidates`, the pairs a picked row was picked from,
1 otherwise), so a row is faster or slower exactly when its CI excludes 1 (and it is not
equivalent: equivalence is decided first); equivalent exactly when tost_ci_low/high (at
tost_level = 1 - 2 alpha / k) lies inside 1 +- min_effect."""
import inspect
import math
from collections.abc import Mapping, Sequence

import pandas as pd

from driver.stats import blocks, moderated, verdicts
from driver.stats import pooled as compare
from driver.study import layout
from driver.tables import labels
from driver.tables.ordering import SORT_ORDER, env_order, sort_rows
from driver.tables.registry import COMPARISONS, NAMES, REGISTRY
from driver.tables.twins_rate import threshold_of, twins_rate
from tfspeed.cells import AXES, task
from tfspeed.versions import version_tuple

# keras_vs_tfkeras: standalone Keras vs tf.keras (the seed's factor 3); Keras 3 vs the tf_keras
# package (what tf.keras was before TF 2.16); and the private tensorflow.python.keras that the
# seed warns "can run 10-100x slower" vs tf.keras.
KERAS_PAIRS = (("keras", "tf.keras"), ("keras3", "tf_keras"), ("tf.python.keras", "tf.keras"))
# call_vs_predict: the seventh factor, inference call styles (first-named on the left). Only
# inference APIs appear here, so no training step is ever set against an inference step.
CALL_PAIRS = (("call", "predict"), ("call", "predict_on_batch"), ("predict_on_batch", "predict"),
              ("inference_mode", "call"))
# compiled_vs_eager: the ways a TF 2 (or PyTorch) step is compiled, against the way it runs
# without (first-named on the left); mode `eager` of a Keras step is Keras' default (its step in
# a tf.function), of a custom loop or model(x) plain Python
MODE_PAIRS = (("function", "eager"), ("xla", "function"), ("xla", "eager"), ("eager", "run_eagerly"),
              ("compile", "eager"), ("torchscript", "eager"))

METRICS = ["left_median_s", "right_median_s", "pct", "ratio", "ratio_ci_low", "ratio_ci_high",
           "ci_level", "bound_pct", "p", "p_adjusted", "p_threshold", "p_equivalent",
           "tost_ci_low", "tost_ci_high", "tost_level", "verdict", "significant", "n_left",
           "n_right", "se_log", "df", "candidates"]


class Comparer:
    """The study's model (blocks.fit_study over every cell's log medians, fitted once) and one
    comparison per pair of cells, each computed once. The verdict needs every comparison of the
    study (Benjamini-Hochberg): `decide_study` adds it."""

    def __init__(self, logs: Mapping, level: float = 0.95, margin: float = 0.10,
                 alpha_equivalence: float = 0.05):
        self.logs, self.level = logs, level
        self.margin, self.alpha_equivalence = margin, alpha_equivalence
        self.fit = blocks.fit_study(logs)
        # the pairs' prior (blocks.PairedPrior), learnt from the study's own comparisons by
        # `learn_pairs` once every table has named its pairs; until then comparisons are unpaired
        self.prior: blocks.PairedPrior | None = None
        self._cache: dict = {}

    def learn_pairs(self) -> None:
        """Learn the paired prior from every pair asked for so far, and forget their results
        (the next call computes each pair with its covariance)."""
        self.prior = blocks.PairedPrior.learn(self.fit, [k[:2] for k in self._cache])
        self._cache.clear()

    def __call__(self, left_key: tuple, right_key: tuple, candidates: int = 1) -> dict:
        """The comparison of two cells; `candidates` > 1 when the data picked the pair among that
        many (moderated.selected: simultaneous over them, so no winner's curse)."""
        key = (left_key, right_key, candidates)
        if key not in self._cache:
            out = blocks.compare_paired(self.fit, left_key, right_key, self.prior, self.level,
                                        self.margin, self.alpha_equivalence)
            if candidates > 1:
                out = moderated.selected(out, candidates, self.level, self.margin,
                                         self.alpha_equivalence)
            out["candidates"] = int(max(candidates, 1))
            le = math.exp(self.fit[left_key]["mean"])
            re_ = math.exp(self.fit[right_key]["mean"])
            out.update(left_median_s=le, right_median_s=re_, pct=compare.seed_pct(le, re_),
                       p_adjusted=math.nan, p_threshold=math.nan, verdict=None, significant=None)
            self._cache[key] = out
        return self._cache[key]


def decide_study(tables: dict, q: float, min_effect: float,
                 alpha_equivalence: float = 0.05) -> None:
    """Verdicts for every comparison row of the study at once, BH over all of them, and each
    row's CI redrawn at the level it is tested at (verdicts.tested), in place."""
    names = [n for n in COMPARISONS if n in tables and len(tables[n])]
    if not names:
        return
    used = ["ratio", "ratio_ci_low", "ratio_ci_high", "se_log", "df", "p", "p_equivalent",
            "candidates"]
    stacked = pd.concat([tables[n][used] for n in names], keys=names)
    decided = verdicts.tested(stacked, q=q, min_effect=min_effect,
                              alpha_equivalence=alpha_equivalence)
    for name in names:
        part = decided.loc[name]
        for col in ("ratio_ci_low", "ratio_ci_high", "ci_level", "p_adjusted", "p_threshold",
                    "verdict"):
            tables[name][col] = part[col].to_numpy()
        tables[name]["significant"] = part["verdict"].isin(
            [verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER]).to_numpy()


def ok_cells(cells: pd.DataFrame) -> pd.DataFrame:
    return cells[cells["status"] == "ok"]


def _key(row: Mapping, side: str = "") -> tuple:
    return (row["machine"], row[side + "env"], row[side + "cell_id"])


def _comparison_rows(pairs: pd.DataFrame, comparer: Comparer, columns: Sequence[str]) -> list:
    rows = []
    for rec in pairs.to_dict("records"):
        result = comparer(_key(rec, "left_"), _key(rec, "right_"))
        out = {c: rec[c] for c in columns if c in rec}
        out.update({m: result[m] for m in METRICS})
        out["left_cell_id"], out["right_cell_id"] = rec["left_cell_id"], rec["right_cell_id"]
        rows.append(out)
    return rows


def _frame(rows: list, shared: Sequence[str], sides: Sequence[str], envs: Sequence[str],
           order: Sequence[str] = SORT_ORDER) -> pd.DataFrame:
    side_cols = [f"{s}_{c}" for c in sides for s in ("left", "right")]
    columns = ["machine", *shared, *side_cols, *METRICS, "left_cell_id", "right_cell_id"]
    return sort_rows(pd.DataFrame(rows, columns=columns), envs, order)


def factor_table(cells: pd.DataFrame, comparer: Comparer, factor: str, left_value: str,
                 right_value: str, envs: Sequence[str]) -> pd.DataFrame:
    """Pairs of ok cells, on one machine and in one env, equal in every axis but `factor`, whose
    value is `left_value` on the left (the first-named side) and `right_value` on the right."""
    ok = ok_cells(cells)
    shared = ["env", "framework_version"] + [a for a in AXES if a != factor]
    match = ["machine", "env"] + [a for a in AXES if a != factor]
    left = ok[ok[factor] == left_value][match + [factor, "cell_id", "framework_version"]]
    right = ok[ok[factor] == right_value][match + [factor, "cell_id"]]
    pairs = left.merge(right, on=match, suffixes=("_l", "_r"))
    pairs = pairs.rename(columns={f"{factor}_l": f"left_{factor}", f"{factor}_r":
                                  f"right_{factor}", "cell_id_l": "left_cell_id",
                                  "cell_id_r": "right_cell_id"})
    pairs["left_env"] = pairs["right_env"] = pairs["env"]
    rows = _comparison_rows(pairs, comparer, ["machine", *shared, f"left_{factor}",
                                              f"right_{factor}"])
    return _frame(rows, shared, [factor], envs)


def pairs_table(cells: pd.DataFrame, comparer: Comparer, factor: str, pairs: Sequence[tuple],
                envs: Sequence[str]) -> pd.DataFrame:
    """factor_table for several (left, right) value pairs of one factor, stacked."""
    parts = [factor_table(cells, comparer, factor, left, right, envs) for left, right in pairs]
    df = pd.concat([p for p in parts if not p.empty] or parts[:1], ignore_index=True)
    return sort_rows(df, envs)


def keras_table(cells: pd.DataFrame, comparer: Comparer, envs: Sequence[str]) -> pd.DataFrame:
    return pairs_table(cells, comparer, "keras", KERAS_PAIRS, envs)


def call_table(cells: pd.DataFrame, comparer: Comparer, envs: Sequence[str]) -> pd.DataFrame:
    return pairs_table(cells, comparer, "api", CALL_PAIRS, envs)


def compiled_table(cells: pd.DataFrame, comparer: Comparer, envs: Sequence[str]) -> pd.DataFrame:
    """MODE_PAIRS of the ways to train and predict (the matmul micro-case, whose modes time a
    kernel and no model, has its own place in the history and guidance)."""
    df = pairs_table(cells, comparer, "mode", MODE_PAIRS, envs)
    return df[df["api"] != "matmul"].reset_index(drop=True) if "api" in df.columns else df


def _is_tf2(framework, version) -> bool:
    return framework == "tensorflow" and isinstance(version, str) and \
        version_tuple(version)[:1] >= (2,)


def _tf2_mask(df: pd.DataFrame) -> pd.Series:
    return pd.Series([_is_tf2(f, v) for f, v in zip(df["framework"], df["framework_version"])],
                     index=df.index, dtype=bool)


def reference_keras(keras: str, env_flavours: set) -> str | None:
    """The reference (TF 1) env's Keras flavour that a TF 2 env's cell of flavour `keras` is
    compared with in TF2 vs TF1; None when there is none.

    The same flavour where the TF 2 env has it. From TF 2.16 on, `tf.keras` is Keras 3 (our
    `keras3`) and the Keras 2 that `tf.keras` used to be ships as the `tf_keras` package; in an env
    without a `tf.keras` flavour both stand for the reference's tf.keras, as the seed's "TF2" stood
    for the whole stack (TensorFlow 2.0.0 + Keras 2.3.1). `left_keras`/`right_keras` say which.
    Standalone `keras` pairs with standalone `keras` only (tf2.0 has Keras 2.3.1; later envs none).
    Cells without Keras (`none`: the matmul micro-case) pair with `none`.
    """
    if keras in ("keras3", "tf_keras") and "tf.keras" not in env_flavours:
        return "tf.keras"
    if keras in ("keras", "tf.keras", "tf.python.keras", "none"):
        return keras
    return None


def tf2_vs_tf1_table(cells: pd.DataFrame, comparer: Comparer, reference_env: str,
                     envs: Sequence[str]) -> pd.DataFrame:
    """Every TF 2.x env's ok cells vs the reference env's, same machine and axes (keras: see
    `reference_keras`)."""
    ok = ok_cells(cells)
    flavours = cells.groupby(["machine", "env"])["keras"].agg(set).to_dict()
    match = ["machine", "model", "data", "mode", "api", "input", "device"]
    tf2 = ok[(ok["env"] != reference_env) & _tf2_mask(ok)].copy()
    tf2["ref_keras"] = pd.Series([reference_keras(k, flavours.get((m, e), set()))
                                  for m, e, k in zip(tf2["machine"], tf2["env"], tf2["keras"])],
                                 index=tf2.index, dtype=object)
    ref = ok[ok["env"] == reference_env].copy()
    ref["ref_keras"] = ref["keras"].astype(object)
    cols = ["env", "framework_version", "keras", "cell_id"]
    pairs = tf2[match + ["ref_keras"] + cols].merge(ref[match + ["ref_keras"] + cols],
                                                     on=match + ["ref_keras"],
                                                     suffixes=("_l", "_r"))
    pairs = pairs.rename(columns={f"{c}_{s}": f"{side}_{c}" for c in cols
                                  for s, side in (("l", "left"), ("r", "right"))})
    shared = ["model", "data", "mode", "api", "input", "device"]
    sides = ["env", "framework_version", "keras"]
    side_cols = [f"{s}_{c}" for c in sides for s in ("left", "right")]
    rows = _comparison_rows(pairs, comparer, ["machine", *shared, *side_cols])
    return _frame(rows, shared, sides, envs)


def _tf_reference(group: pd.DataFrame):
    """The TF reference cell of one (machine, model, data, device, task) and how many cells it was
    picked from: TensorFlow's fastest ok cell (lowest cell median, any TF env, Keras flavour,
    mode, API and input), so that a row says how far a way of running is from the best TF gives,
    not from its slowest path. Mode `numpy` (the matmul micro-case in NumPy alone, no TensorFlow)
    is never the reference. Ties: the first in the study's order. (None, 0) without one."""
    cand = group[(group["framework"] == "tensorflow") & (group["mode"] != "numpy")
                 & group["median_s"].notna()]
    if cand.empty:
        return None, 0
    return cand.loc[cand["median_s"].idxmin()].to_dict(), len(cand)


def frameworks_table(cells: pd.DataFrame, comparer: Comparer, envs: Sequence[str]) -> pd.DataFrame:
    """Per (machine, model, data, device) and task (training and inference apart): the fastest
    ok cell of each env and mode (left) vs TensorFlow's fastest cell of the same model, data,
    device and task (right, see `_tf_reference`), the reference itself left out. Not a
    one-factor comparison: it answers "how far is the best way to train (or to infer) in X, in
    this mode, from the best TensorFlow gives", the question of seeds 002 and 003. Both sides
    are picked by the same processes that compare them, so each row's CI, p-values and verdict
    are simultaneous over every pair it could have picked (the left group's cells times the TF
    cells: moderated.selected), never the winner's curse of a plain comparison with the fastest."""
    ok = ok_cells(cells)
    ok = ok.assign(_task=[task(a) for a in ok["api"]])
    sides = ["env", "framework", "framework_version", "keras", "mode", "api", "input"]
    rows = []
    for (machine, model, data, device, _), group in ok.groupby(
            ["machine", "model", "data", "device", "_task"], sort=False):
        ref, n_ref = _tf_reference(group)
        if ref is None:
            continue
        sizes = group.groupby(["env", "mode"], sort=False)["median_s"].count()
        best = group.loc[group.groupby(["env", "mode"], sort=False)["median_s"].idxmin()]
        for cand in best.to_dict("records"):
            if cand["cell_id"] == ref["cell_id"] and cand["env"] == ref["env"]:
                continue
            result = comparer((machine, cand["env"], cand["cell_id"]),
                              (machine, ref["env"], ref["cell_id"]),
                              candidates=int(sizes[(cand["env"], cand["mode"])]) * n_ref)
            row = {"machine": machine, "model": model, "data": data, "device": device}
            for c in sides:
                row[f"left_{c}"], row[f"right_{c}"] = cand[c], ref[c]
            row.update({m: result[m] for m in METRICS})
            row["left_cell_id"], row["right_cell_id"] = cand["cell_id"], ref["cell_id"]
            rows.append(row)
    return _frame(rows, ["model", "data", "device"], sides, envs,
                  ["machine", "model", "data", "device", "left_env", "left_mode"])


FAMILY_TEXT = labels.FRAMEWORK


def family(framework, keras) -> str:
    """What a user picks: TensorFlow (with any Keras), PyTorch, or Keras 3 on JAX / torch."""
    name = FAMILY_TEXT.get(framework, framework if isinstance(framework, str) else "?")
    if framework != "tensorflow" and keras == "keras3":
        return f"Keras 3 on {name}"
    return name


def frameworks_best_table(cells: pd.DataFrame, comparer: Comparer,
                          envs: Sequence[str]) -> pd.DataFrame:
    """Per (machine, model, data, device) and task (training, inference; never one against the
    other): each framework's fastest ok cell (any env, mode, API and input) vs TensorFlow's
    fastest, both picked by their cell estimates. The answer to "is the best way to train in X
    faster than the best way in TensorFlow". Its rows take part in the study's one
    Benjamini-Hochberg family like every comparison. The picks are made on the same processes
    that test them, so each row is made simultaneous over every pair it could have picked (the
    family's cells times TensorFlow's: moderated.selected), which removes the winner's curse."""
    ok = ok_cells(cells)
    ok = ok.assign(task=[task(a) for a in ok["api"]])
    ok = ok[ok["task"].isin(["train", "infer"]) & ok["median_s"].notna()]
    ok = ok.assign(family=[family(f, k) for f, k in zip(ok["framework"], ok["keras"])])
    sides = ["family", "env", "framework", "framework_version", "keras", "mode", "api", "input"]
    rows = []
    for (machine, model, data, device, tsk), group in ok.groupby(
            ["machine", "model", "data", "device", "task"], sort=False):
        best = {fam: part.loc[part["median_s"].idxmin()].to_dict()
                for fam, part in group.groupby("family", sort=True)}
        sizes = group.groupby("family", sort=True)["median_s"].count()
        tf = best.pop("TensorFlow", None)
        if tf is None:
            continue
        for fam, other in best.items():
            result = comparer((machine, other["env"], other["cell_id"]),
                              (machine, tf["env"], tf["cell_id"]),
                              candidates=int(sizes[fam]) * int(sizes["TensorFlow"]))
            row = {"machine": machine, "model": model, "data": data, "device": device,
                   "task": tsk}
            for c in sides:
                row[f"left_{c}"], row[f"right_{c}"] = other[c], tf[c]
            row.update({m: result[m] for m in METRICS})
            row["left_cell_id"], row["right_cell_id"] = other["cell_id"], tf["cell_id"]
            rows.append(row)
    return _frame(rows, ["model", "data", "device", "task"], sides, envs,
                  ["machine", "model", "data", "device", "task", "left_env"])


def machines_table(cells: pd.DataFrame, comparer: Comparer, envs: Sequence[str]) -> pd.DataFrame:
    """The same cell (env and every axis) on two machines; left is the first machine key in
    alphabetical order. Empty when the study holds one machine's results."""
    ok = ok_cells(cells)
    match = ["env", *AXES]
    columns = ["env", "framework_version", *AXES, "left_machine", "right_machine", *METRICS,
               "left_cell_id", "right_cell_id"]
    rows = []
    pairs = ok.merge(ok, on=match, suffixes=("_l", "_r"))
    pairs = pairs[pairs["machine_l"] < pairs["machine_r"]]
    for rec in pairs.to_dict("records"):
        result = comparer((rec["machine_l"], rec["env"], rec["cell_id_l"]),
                          (rec["machine_r"], rec["env"], rec["cell_id_r"]))
        row = {c: rec[c] for c in match}
        row.update(framework_version=rec["framework_version_l"], left_machine=rec["machine_l"],
                   right_machine=rec["machine_r"], left_cell_id=rec["cell_id_l"],
                   right_cell_id=rec["cell_id_r"], **{m: result[m] for m in METRICS})
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def twins_table(all_cells: pd.DataFrame, comparer: Comparer) -> pd.DataFrame:
    """Each twin cell (machine key <machine>.twin) vs the same cell of its machine."""
    columns = ["machine", "env", "framework_version", *AXES, *METRICS, "left_cell_id",
               "right_cell_id"]
    if all_cells.empty:
        return pd.DataFrame(columns=columns)
    ok = ok_cells(all_cells)
    twins = ok[ok["machine"].map(layout.is_twin)]
    rows = []
    for rec in twins.to_dict("records"):
        base = layout.base_machine(rec["machine"])
        right = (base, rec["env"], rec["cell_id"])
        if right not in comparer.logs:
            continue
        result = comparer((rec["machine"], rec["env"], rec["cell_id"]), right)
        row = {c: rec[c] for c in ["env", "framework_version", *AXES]}
        row.update(machine=base, left_cell_id=rec["cell_id"], right_cell_id=rec["cell_id"],
                   **{m: result[m] for m in METRICS})
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def twins_rate_table(tables: Mapping, q: float, level: float) -> pd.DataFrame:
    """The twins' A/A rate at the study's per-test threshold (driver/tables/twins_rate.py), once
    every comparison has its verdict."""
    rows = sum(len(tables[n]) for n in COMPARISONS if n in tables)
    return twins_rate(tables["twins"], threshold_of(tables["twins"], q / rows if rows else math.nan),
                      level)


def build_tables(cells: pd.DataFrame, logs: Mapping, reference_env: str, level: float = 0.95,
                 q: float = 0.05, min_effect: float = 0.10,
                 alpha_equivalence: float = 0.05) -> dict[str, pd.DataFrame]:
    """Every table of the registry, each by its builder (driver/tables/registry.py), from the
    pooled cells and their processes' log medians (pd.Series indexed by time block, see
    driver/tables/pooling.py). min_effect: the equivalence margin; alpha_equivalence: the size of
    each one-sided test of TOST."""
    envs = env_order(cells) if not cells.empty else []
    comparer = Comparer(logs, level=level, margin=min_effect, alpha_equivalence=alpha_equivalence)
    study = {"all_cells": cells, "comparer": comparer, "envs": envs, "logs": logs,
             "reference_env": reference_env, "level": level, "q": q, "alpha": q,
             "min_effect": min_effect}
    # twin cells are for calibration only: builders see them as all_cells, never as cells
    study["cells"] = cells[~cells["machine"].map(layout.is_twin)] if not cells.empty else cells
    tables: dict[str, pd.DataFrame] = {}
    before = [t for t in REGISTRY if t.build and not t.after_verdicts]
    # two passes: the first names every pair of the study, from which the paired prior is
    # learnt (blocks.PairedPrior); the second computes each comparison with its pair's covariance
    for table in before:
        tables[table.name] = _build(table, study, tables)
    comparer.learn_pairs()
    for table in before:
        tables[table.name] = _build(table, study, tables)
    decide_study(tables, q, min_effect, alpha_equivalence)
    for table in [t for t in REGISTRY if t.build and t.after_verdicts]:
        tables[table.name] = _build(table, study, tables)
    # a table without a builder (processes) is made from the cell files (driver/tables/aggregate.py)
    return {name: tables[name] for name in NAMES if name in tables}


def _build(table, study: Mapping, tables: Mapping) -> pd.DataFrame:
    """Call a table's builder with the parameters it names (see driver/tables/registry.py)."""
    fn = table.builder()
    given = dict(study, tables=tables, factor=table.factor, left_value=table.left,
                 right_value=table.right)
    names = [p for p in inspect.signature(fn).parameters if p in given]
    return fn(**{p: given[p] for p in names})
