"""All cell files -> results/tables/cells.csv, the comparison tables and results/study.xlsx.

Run by Snakemake's `script:` directive (rules/aggregate.smk, rule tabulate_cells) on the workflow's
own Python; every step is a function that tests call without Snakemake (`main` does it all).

What it does, in order:
1. Reads every cell file, validates it against schemas/cell.schema.json and checks that its name,
   folder and axes agree. A truncated or invalid file stops the rule with an error naming the file:
   a silently dropped cell would make a table lie by omission.
2. Pools the repeats of each cell (separate processes) with compare.pooled_summary: one row per
   (machine, env, cell) in `cells`, ok, failed and skipped alike.
3. Pairs ok cells that differ in one factor alone (TF2 vs TF1, graph vs eager, ...) and compares
   them with compare.compare: the source study's `%` next to a ratio of medians with a CI and a
   significance verdict.
4. Writes the tidy CSVs (seconds, as measured) and a workbook for people (milliseconds, formatted).

The source study's `%` (seed 000, "BENCHMARKS"): `(1 - longer/shorter) * 100` in magnitude, signed
`+` when the first-named (left) side is faster: TF2 in "TF2 vs TF1", Graph in "GvE".
"""

# No `from __future__` import: Snakemake's script directive puts its preamble (code) above this
# file, and a __future__ import after code is a SyntaxError. The driver runs Python >= 3.11.
import datetime
import json
import logging
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import yaml
from xlsxwriter.utility import xl_col_to_name

# scripts/ is on sys.path here (Snakemake's script preamble adds the script's folder; tests'
# conftest.py adds it for pytest).
import compare
from tfspeed import cells as tfcells
from tfspeed import models as tfmodels
from tfspeed.envspec import version_tuple

log = logging.getLogger("tfspeed.aggregate")

# Found from the tfspeed package, not from __file__: Snakemake runs a copy of this script from
# .snakemake/scripts/.
REPO = Path(tfcells.__file__).resolve().parents[2]
SCHEMA_PATH = REPO / "schemas" / "cell.schema.json"
AXES = tuple(tfcells.AXES)  # model, data, keras, mode, api, input, device

# The comparison tables, in workbook order; each pairs a factor's first-named (left) value with
# the other (right) one. tf2_vs_tf1 and keras_vs_tfkeras have their own pairing rules below.
FACTOR_TABLES = {
    "tf2_vs_tf1": ("env", None, None),
    "graph_vs_eager": ("mode", "graph", "eager"),
    "keras_vs_tfkeras": ("keras", None, None),
    "numpy_vs_tfdata": ("input", "numpy", "tfdata"),
    "fit_vs_train_on_batch": ("api", "fit", "train_on_batch"),
    "gpu_vs_cpu": ("device", "gpu", "cpu"),
}
# keras_vs_tfkeras: standalone Keras vs tf.keras (the seed's factor 3); Keras 3 vs the tf_keras
# package (what tf.keras was before TF 2.16); and the private tensorflow.python.keras that the
# seed warns "can run 10-100x slower" vs tf.keras.
KERAS_PAIRS = (("keras", "tf.keras"), ("keras3", "tf_keras"), ("tf.python.keras", "tf.keras"))
TABLES = list(FACTOR_TABLES) + ["frameworks", "machines", "versions", "guidance"]

METRICS = ["left_median_s", "right_median_s", "pct", "ratio", "ratio_ci_low", "ratio_ci_high",
           "significant", "verdict", "mw_p", "n_left", "n_right"]

CELL_COLUMNS = [
    "machine", "env", "framework", "framework_version", "python", "keras", "keras_version",
    "mode", "api", "input", "device", "model", "data", "status", "reason", "n_samples",
    "n_repeats", "n_failed_repeats", "median_s", "ci_low_s", "ci_high_s", "ci_level",
    "ci_rel_halfwidth", "first_call_s", "mean_s", "sd_s", "iqr_s", "min_s", "max_s", "noisy",
    "drift", "drift_p", "drift_ratio", "between_rel_spread", "retraces", "stopped_by",
    "flops_per_step", "achieved_flops", "peak_flops", "efficiency", "numpy_version", "optimizer",
    "cpu_model", "gpu", "peak_rss_mb", "started_utc", "cell_id", "best_process_median_s",
    "warmup_calls", "warmup_capped", "too_few_samples", "foreign_cpu_share", "foreign_cpu_flag",
    "threads",
]

# The values each axis may take: tfspeed.cells is the one place that says (the schema checks the
# shape only, so that a new mode or API needs no schema change).
AXIS_VALUES = {"keras": tfcells.KERAS, "mode": tfcells.MODES, "api": tfcells.APIS,
               "input": tfcells.INPUTS, "device": tfcells.DEVICES}
_CELL_FILE = re.compile(r"^(?P<cell>[^.].*)\.r(?P<rep>\d+)\.json$")
_FRAMEWORK_ORDER = {"tensorflow": 0, "torch": 1, "jax": 2}
_MODEL_ORDER = {m: i for i, m in enumerate(tfmodels.MODELS)}
_DATA_ORDER = {d: i for i, d in enumerate(tfmodels.DATA)}
_AXIS_ORDER = {
    "keras": {k: i for i, k in enumerate(tfcells.KERAS)},
    "mode": {k: i for i, k in enumerate(tfcells.MODES)},
    "api": {k: i for i, k in enumerate(tfcells.APIS)},
    "input": {k: i for i, k in enumerate(tfcells.INPUTS)},
    "device": {k: i for i, k in enumerate(tfcells.DEVICES)},
    "model": _MODEL_ORDER,
    "data": _DATA_ORDER,
}


class CellFileError(ValueError):
    """A cell file that cannot be used; the message starts with the file's path."""


# --- reading ----------------------------------------------------------------------------------

def load_schema(path: Path | str = SCHEMA_PATH):
    schema = json.loads(Path(path).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _short(text: str, limit: int = 300) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


def read_cell_file(path: Path | str, validator=None) -> dict:
    """One cell file, validated; raises CellFileError naming the file otherwise.

    Besides the schema, the file must agree with itself and with where it lies: its cell_id is the
    id of its axes, and a file named `<cell_id>.r<repeat>.json` under `<machine>/<env>/` says that
    machine, env, cell and repeat. A copied or renamed file would otherwise be counted as a
    different cell.
    """
    path = Path(path)
    validator = validator or load_schema()
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise CellFileError(f"{path}: cell file is missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CellFileError(
            f"{path}: not a complete JSON document ({exc}); the file is truncated or corrupt. "
            "Delete it so that the cell runs again.") from None
    errors = sorted(validator.iter_errors(doc), key=lambda e: (len(e.path), list(map(str, e.path))))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.path) or "(top level)"
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise CellFileError(f"{path}: does not match {SCHEMA_PATH.name} at {where}: "
                            f"{_short(err.message)}{more}")
    for axis, allowed in AXIS_VALUES.items():
        if doc[axis] not in allowed:
            raise CellFileError(f"{path}: {axis} {doc[axis]!r} is not one of tfspeed.cells' "
                                f"values ({', '.join(allowed)})")
    expected_id = tfcells.cell_id({axis: doc[axis] for axis in AXES})
    if doc["cell_id"] != expected_id:
        raise CellFileError(f"{path}: cell_id {doc['cell_id']!r} does not match its axes "
                            f"({expected_id!r})")
    match = _CELL_FILE.match(path.name)
    if match:
        found = {"cell_id": match["cell"], "repeat": int(match["rep"]),
                 "env": path.parent.name, "machine": path.parent.parent.name}
        for key, value in found.items():
            if doc[key] != value:
                raise CellFileError(f"{path}: says {key} {doc[key]!r} but its path says {value!r}")
    return doc


def load_cells(files: Iterable[Path | str], validator=None) -> list[dict]:
    """Every file read and validated; two files for the same (machine, env, cell, repeat) is an
    error too (which one would be right?)."""
    validator = validator or load_schema()
    records, seen = [], {}
    for path in files:
        doc = read_cell_file(path, validator)
        key = (doc["machine"], doc["env"], doc["cell_id"], doc["repeat"])
        if key in seen:
            raise CellFileError(f"{path}: the same cell and repeat as {seen[key]}")
        seen[key] = path
        records.append(doc)
    return records


def apply_machine_peaks(cells: pd.DataFrame) -> pd.DataFrame:
    """Attainable FLOP/s per machine = its fastest ok matmul cell (seed 004's 1000 x 1000 matmul, in
    NumPy and every framework's modes); every cell's efficiency is its achieved FLOP/s over that.
    Machines without a matmul cell keep these columns empty."""
    if cells.empty or "achieved_flops" not in cells:
        return cells
    ok = cells[(cells["status"] == "ok") & (cells["api"] == "matmul")]
    # The best process, not the pooled median: a peak is what the machine can do, and a process
    # that drew a worse memory layout or a busier neighbour says less about that.
    best = ok["flops_per_step"] / ok["best_process_median_s"]
    peaks = best.groupby(ok["machine"]).max()
    for machine, peak in peaks.items():
        if peak and peak > 0:
            mask = cells["machine"] == machine
            cells.loc[mask, "peak_flops"] = peak
            cells.loc[mask, "efficiency"] = cells.loc[mask, "achieved_flops"] / peak
    return cells


# --- ordering ---------------------------------------------------------------------------------

def env_sort_key(framework, framework_version, env) -> tuple:
    """Envs in version order: TensorFlow first, then other frameworks, each by version number
    (so 2.3 comes before 2.15), envs without a framework (failed builds) last."""
    fw = framework if isinstance(framework, str) else None
    version = version_tuple(framework_version) if isinstance(framework_version, str) else ()
    return (fw is None, _FRAMEWORK_ORDER.get(fw, 9), fw or "", version, str(env))


def env_order(cells: pd.DataFrame) -> list[str]:
    facts = cells.drop_duplicates("env").set_index("env")
    return sorted(facts.index, key=lambda e: env_sort_key(facts.at[e, "framework"],
                                                          facts.at[e, "framework_version"], e))


_SORT_ORDER = ["machine", "env", "left_env", "right_env", "model", "data", "keras", "left_keras",
               "right_keras", "mode", "left_mode", "right_mode", "api", "left_api", "right_api",
               "input", "left_input", "right_input", "device", "left_device", "right_device"]


def _sort(df: pd.DataFrame, envs: Sequence[str], order: Sequence[str] = _SORT_ORDER
          ) -> pd.DataFrame:
    """Sort rows by machine, env (version order) and the axes in their natural order (the order
    of tfspeed.cells and tfspeed.models, not the alphabet)."""
    if df.empty:
        return df.reset_index(drop=True)
    env_rank = {e: i for i, e in enumerate(envs)}
    cols = [c for c in order if c in df.columns]

    def key(col: pd.Series) -> pd.Series:
        base = col.name.removeprefix("left_").removeprefix("right_")
        rank = env_rank if base == "env" else _AXIS_ORDER.get(base)
        if rank is None:
            return col
        return col.map(lambda v: rank.get(v, len(rank)))

    return df.sort_values(cols, key=key, kind="stable").reset_index(drop=True)


# --- pooling ----------------------------------------------------------------------------------

def _first(values: Iterable):
    return next((v for v in values if v is not None), None)


def _median_or_none(values: Iterable) -> float | None:
    values = [v for v in values if v is not None]
    return float(np.median(values)) if values else None


def _threads_text(threads: dict | None) -> str | None:
    """'intra 0, inter 0, BLAS 2, OS 9' (0 = the framework's own choice), 'pinned N' first."""
    if not threads:
        return None
    parts = ["pinned %d" % threads["pinned"]] if threads.get("pinned") else []
    for key, label in (("intra_op_threads", "intra"), ("inter_op_threads", "inter")):
        if threads.get(key) is not None:
            parts.append(f"{label} {threads[key]}")
    blas = sorted(set((threads.get("blas") or {}).values()))
    if blas:
        parts.append("BLAS " + "/".join(map(str, blas)))
    if threads.get("os_threads") is not None:
        parts.append(f"OS {threads['os_threads']}")
    return ", ".join(parts)


def _gpu_name(prov: dict) -> str | None:
    gpus = (prov.get("machine") or {}).get("gpus")
    if isinstance(gpus, list) and gpus:
        return ", ".join(str(g.get("name", "gpu")) for g in gpus if isinstance(g, dict)) or None
    return None


def pool_cells(records: Sequence[dict], level: float = 0.95,
               noisy_threshold: float = 0.10) -> tuple[pd.DataFrame, dict]:
    """One row per (machine, env, cell_id) with its repeats pooled, and the pooled samples.

    Returns (cells, samples): `cells` has CELL_COLUMNS in version order; `samples` maps
    (machine, env, cell_id) of every ok cell to its samples, all ok repeats concatenated in repeat
    order (as compare.pooled_summary pools them).

    Status: ok when at least one repeat is ok (the reason then says how many repeats were not and
    why); otherwise failed when any repeat failed, else skipped. `retraces` is the largest count of
    retraces during timing in any repeat; `between_rel_spread` is empty with a single repeat.
    """
    groups: dict[tuple, list[dict]] = {}
    for rec in records:
        groups.setdefault((rec["machine"], rec["env"], rec["cell_id"]), []).append(rec)
    rows, samples = [], {}
    for (machine, env, cid), reps in groups.items():
        reps = sorted(reps, key=lambda r: r["repeat"])
        oks = [r for r in reps if r["status"] == "ok"]
        bad = [r for r in reps if r["status"] != "ok"]
        reasons = list(dict.fromkeys(f"{r['status']}: {r['reason']}" if oks else r["reason"]
                                     for r in bad))
        if oks:
            status = "ok"
            reason = (f"{len(bad)} of {len(reps)} repeats not ok, pooled the rest; "
                      + " | ".join(reasons)) if bad else ""
        else:
            status = "failed" if any(r["status"] == "failed" for r in bad) else "skipped"
            reason = " | ".join(reasons)
        facts = _first((r.get("framework_facts") or {}) for r in oks) or {}
        provs = [r.get("provenance") or {} for r in (oks or reps)]
        row = {
            "machine": machine, "env": env, "cell_id": cid,
            "framework": _first(r.get("framework") for r in reps),
            "framework_version": _first(r.get("framework_version") for r in reps),
            "python": _first(r.get("python") for r in oks + bad),
            "keras_version": facts.get("keras_version"),
            "optimizer": facts.get("optimizer"),
            "numpy_version": _first(r.get("numpy_version") for r in oks + bad),
            **{axis: reps[0][axis] for axis in AXES},
            "status": status, "reason": reason,
            "n_repeats": len(oks), "n_failed_repeats": len(bad),
            "flops_per_step": _first(r.get("flops_per_step") for r in reps),
            "cpu_model": _first((p.get("machine") or {}).get("cpu_model") for p in provs),
            "gpu": _first(_gpu_name(p) for p in provs),
            "peak_rss_mb": max((p["peak_rss_mb"] for p in provs
                                if isinstance(p.get("peak_rss_mb"), (int, float))), default=None),
            "started_utc": min(r["started_utc"] for r in reps),
        }
        if oks:
            pooled = compare.pooled_summary([r["samples_s"] for r in oks], level=level,
                                            noisy_threshold=noisy_threshold)
            samples[(machine, env, cid)] = np.concatenate(
                [np.asarray(r["samples_s"], dtype=float) for r in oks])
            retraces = [r.get("retraces_during_timing") for r in oks]
            median = pooled["median_s"]
            shares = [(r.get("cpu_window") or {}).get("foreign_cpu_share") for r in oks]
            shares = [x for x in shares if x is not None]
            row.update({
                "best_process_median_s": min(float(np.median(r["samples_s"])) for r in oks),
                "warmup_calls": _median_or_none([r.get("warmup_calls") for r in oks]),
                "warmup_capped": any(r.get("warmup_stopped_by") == "cap" for r in oks),
                "too_few_samples": any(bool(r.get("too_few_samples")) for r in oks),
                "foreign_cpu_share": max(shares) if shares else None,
                "foreign_cpu_flag": any(bool(r.get("foreign_cpu_flag")) for r in oks),
                "threads": _threads_text(oks[0].get("threads")),
                "n_samples": pooled["n"],
                **{k: pooled[k] for k in ("median_s", "ci_low_s", "ci_high_s", "ci_level",
                                          "ci_rel_halfwidth", "mean_s", "sd_s", "iqr_s",
                                          "min_s", "max_s", "noisy", "drift", "drift_p",
                                          "drift_ratio")},
                "between_rel_spread": pooled["between_rel_spread"] if len(oks) > 1 else None,
                "first_call_s": float(np.median([r["first_call_s"] for r in oks])),
                "retraces": max((x for x in retraces if x is not None), default=None),
                "stopped_by": ", ".join(dict.fromkeys(r["stopped_by"] for r in oks)),
            })
            flops = row["flops_per_step"]
            if flops and median > 0:
                row["achieved_flops"] = flops / median
        else:
            row["n_samples"] = 0
        rows.append(row)
    cells = pd.DataFrame(rows, columns=CELL_COLUMNS)
    if cells.empty:
        return cells, samples
    return _sort(cells, env_order(cells)), samples


# --- comparisons ------------------------------------------------------------------------------

class Comparer:
    """compare.compare on pooled samples, each pair computed once (a pair can appear in several
    tables, and the bootstrap is the slow part)."""

    def __init__(self, samples: Mapping, level: float = 0.95, n_boot: int = 2000):
        self.samples, self.level, self.n_boot = samples, level, n_boot
        self._cache: dict = {}

    def __call__(self, left_key: tuple, right_key: tuple) -> dict:
        key = (left_key, right_key)
        if key not in self._cache:
            self._cache[key] = compare.compare(self.samples[left_key], self.samples[right_key],
                                               level=self.level, n_boot=self.n_boot)
        return self._cache[key]


def _ok(cells: pd.DataFrame) -> pd.DataFrame:
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
           order: Sequence[str] = _SORT_ORDER) -> pd.DataFrame:
    side_cols = [f"{s}_{c}" for c in sides for s in ("left", "right")]
    columns = ["machine", *shared, *side_cols, *METRICS, "left_cell_id", "right_cell_id"]
    return _sort(pd.DataFrame(rows, columns=columns), envs, order)


def factor_table(cells: pd.DataFrame, comparer: Comparer, factor: str, left_value: str,
                 right_value: str, envs: Sequence[str]) -> pd.DataFrame:
    """Pairs of ok cells, on one machine and in one env, equal in every axis but `factor`, whose
    value is `left_value` on the left (the first-named side) and `right_value` on the right."""
    ok = _ok(cells)
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


def keras_table(cells: pd.DataFrame, comparer: Comparer, envs: Sequence[str]) -> pd.DataFrame:
    parts = [factor_table(cells, comparer, "keras", left, right, envs)
             for left, right in KERAS_PAIRS]
    df = pd.concat([p for p in parts if not p.empty] or parts[:1], ignore_index=True)
    return _sort(df, envs)


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
    ok = _ok(cells)
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
    """The TF reference cell of one (machine, model, data, device): the newest TF 2 env's eager
    step with numpy input; of its cells, a custom loop (the other frameworks' way of training)
    where there is one, else fit, else any API (the matmul micro-case has its own); tf.keras
    before Keras 3 before tf_keras before no Keras."""
    keras_rank = {"tf.keras": 0, "keras3": 1, "tf_keras": 2, "none": 3}
    api_rank = {"custom_loop": 0, "fit": 1}
    cand = group[(group["mode"] == "eager") & (group["input"] == "numpy")
                 & group["keras"].isin(list(keras_rank)) & _tf2_mask(group)]
    if cand.empty:
        return None
    return min(cand.to_dict("records"),
               key=lambda r: (tuple(-x for x in version_tuple(r["framework_version"])),
                              api_rank.get(r["api"], 2), keras_rank[r["keras"]]))


def frameworks_table(cells: pd.DataFrame, comparer: Comparer, envs: Sequence[str]) -> pd.DataFrame:
    """Per (machine, model, data, device): the fastest ok cell of each env and mode vs the TF
    reference (see `_tf_reference`). Not a one-factor comparison: it answers "how does the best
    way to train in X compare with plain TF 2 Keras", the question of seeds 002 and 003."""
    ok = _ok(cells)
    sides = ["env", "framework", "framework_version", "keras", "mode", "api", "input"]
    rows = []
    for (machine, model, data, device), group in ok.groupby(["machine", "model", "data",
                                                             "device"], sort=False):
        ref = _tf_reference(group)
        if ref is None:
            continue
        best = group.loc[group.groupby(["env", "mode"], sort=False)["median_s"].idxmin()]
        for cand in best.to_dict("records"):
            if cand["cell_id"] == ref["cell_id"] and cand["env"] == ref["env"]:
                continue
            result = comparer((machine, cand["env"], cand["cell_id"]),
                              (machine, ref["env"], ref["cell_id"]))
            row = {"machine": machine, "model": model, "data": data, "device": device}
            for c in sides:
                row[f"left_{c}"], row[f"right_{c}"] = cand[c], ref[c]
            row.update({m: result[m] for m in METRICS})
            row["left_cell_id"], row["right_cell_id"] = cand["cell_id"], ref["cell_id"]
            rows.append(row)
    return _frame(rows, ["model", "data", "device"], sides, envs,
                  ["machine", "model", "data", "device", "left_env", "left_mode"])


VERSION_INDEX = ["machine", "model", "data", "keras", "mode", "api", "input", "device"]


def versions_table(cells: pd.DataFrame, envs: Sequence[str]) -> pd.DataFrame:
    """Median seconds per step of each configuration (rows) in every env (columns, in version
    order), plus the fastest env: the study's performance history."""
    ok = _ok(cells)
    if ok.empty:
        return pd.DataFrame(columns=VERSION_INDEX + ["fastest_env"])
    wide = ok.pivot_table(index=VERSION_INDEX, columns="env", values="median_s", aggfunc="first")
    wide = wide[[e for e in envs if e in wide.columns]]
    wide.columns.name = None
    wide["fastest_env"] = wide.idxmin(axis=1, skipna=True)
    return _sort(wide.reset_index(), envs)


# --- guidance ---------------------------------------------------------------------------------

_API_TEXT = {"train_on_batch": "train_on_batch()", "fit": "fit()", "custom_loop": "custom loop",
             "matmul": "matmul"}
_MODE_TEXT = {"eager": "Eager", "graph": "Graph", "run_eagerly": "run_eagerly",
              "function": "tf.function", "xla": "XLA", "compile": "torch.compile",
              "torchscript": "TorchScript", "numpy": "NumPy"}
_FRAMEWORK_TEXT = {"tensorflow": "TF", "torch": "PyTorch", "jax": "JAX"}


def configuration_text(row: Mapping) -> str:
    """The seed's way of naming a configuration: 'train_on_batch() + numpy + tf.keras + TF 1.14.0
    + Graph + CPU'."""
    parts = [_API_TEXT.get(row["api"], row["api"]),
             "tf.data" if row["input"] == "tfdata" else row["input"]]
    if row["keras"] != "none":
        parts.append(row["keras"])
    fw = row.get("framework")
    parts.append(f"{_FRAMEWORK_TEXT.get(fw, fw or '?')} {row.get('framework_version') or '?'}")
    parts += [_MODE_TEXT.get(row["mode"], row["mode"]), str(row["device"]).upper()]
    return " + ".join(parts)


GUIDANCE_COLUMNS = ["machine", "model", "data", "list", "configuration", "ratio_to_fastest",
                    "median_s", "ci_low_s", "ci_high_s", "fastest_median_s", "env",
                    "framework_version", "keras", "mode", "api", "input", "device", "cell_id"]
DONT_FACTOR = 2.0


def guidance_table(cells: pd.DataFrame) -> pd.DataFrame:
    """DO / DON'T lists per (machine, model, data), like the seed's: DO are the configurations
    whose median lies within the CI of the fastest one's median (median <= its ci_high_s: not
    distinguishable from the fastest), DONT those at least 2x slower than the fastest. DO rows
    come fastest first, DONT rows worst first."""
    rows = []
    for _, group in _ok(cells).groupby(["machine", "model", "data"], sort=False):
        fastest = group.loc[group["median_s"].idxmin()]
        for rec in group.to_dict("records"):
            ratio = rec["median_s"] / fastest["median_s"]
            if rec["median_s"] <= fastest["ci_high_s"]:
                kind = "DO"
            elif ratio >= DONT_FACTOR:
                kind = "DONT"
            else:
                continue
            rows.append({**{c: rec[c] for c in GUIDANCE_COLUMNS if c in rec}, "list": kind,
                         "configuration": configuration_text(rec), "ratio_to_fastest": ratio,
                         "fastest_median_s": float(fastest["median_s"])})
    df = pd.DataFrame(rows, columns=GUIDANCE_COLUMNS)
    if df.empty:
        return df
    df["_order"] = np.where(df["list"] == "DO", df["ratio_to_fastest"], -df["ratio_to_fastest"])
    df = df.sort_values(["machine", "model", "data", "list", "_order"],
                        key=lambda c: c.map(_AXIS_ORDER[c.name]) if c.name in ("model", "data")
                        else c, kind="stable")
    return df.drop(columns="_order").reset_index(drop=True)


# --- the seed-shaped view ---------------------------------------------------------------------

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
    ok = _ok(cells)
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
        put(tuple(rec[c] for c in SEED_INDEX), f"{rec['env']} {_MODE_TEXT[rec['mode']]} s/iter",
            rec["median_s"])
    tf2 = tables.get("tf2_vs_tf1", pd.DataFrame())
    for rec in tf2.to_dict("records"):
        if rec["mode"] not in ("graph", "eager"):
            continue
        key = (rec["machine"], rec["device"], rec["left_keras"], rec["api"], rec["input"],
               rec["model"], rec["data"])
        mode = _MODE_TEXT[rec["mode"]]
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
    return _sort(df, envs, SEED_INDEX)


# --- writing ----------------------------------------------------------------------------------

ABOUT_SHEETS = {
    "seed_view": "The source study's BENCHMARKS layout: seconds per iteration (median) for each "
                 "model x data size, per TF env in Graph and Eager, then the TF2 vs TF1 % and the "
                 "GvE (Graph vs Eager) % with the seed's sign conventions. Blocks by Keras "
                 "flavour, API, input and device. In keras3 / tf_keras rows the reference env's "
                 "columns show its tf.keras cell, which the % compares against.",
    "tf2_vs_tf1": "Each TF 2.x env vs the reference TF 1.x env ({ref}), same machine, model, data, "
                  "mode, API, input and device; same Keras flavour, except that in envs where "
                  "tf.keras is Keras 3 (TF >= 2.16) both keras3 and tf_keras stand for tf.keras. "
                  "Standalone keras pairs only with standalone keras. Left = TF2.",
    "graph_vs_eager": "Graph (v1 graph mode) vs Eager, everything else equal. Left = Graph.",
    "keras_vs_tfkeras": "Standalone keras vs tf.keras; Keras 3 vs tf_keras; the private "
                        "tensorflow.python.keras vs tf.keras; in one env. Left = the first-named.",
    "numpy_vs_tfdata": "numpy arrays vs a tf.data.Dataset as input. Left = numpy.",
    "fit_vs_train_on_batch": "fit() vs train_on_batch(). Left = fit.",
    "gpu_vs_cpu": "GPU vs CPU, same env and configuration. Left = GPU.",
    "frameworks": "Per model, data and device: the fastest cell of each env and mode (left) vs "
                  "the TF reference (right): the newest TF 2 env's eager cell with numpy input, "
                  "a custom loop where there is one, else fit, else any API (matmul); tf.keras "
                  "before Keras 3, tf_keras and no Keras.",
    "machines": "The same cell (env and every axis) on two machines, when results of several "
                "machines are combined. Left = the first machine key in alphabetical order.",
    "versions": "Median time per step of each configuration in every env, envs in version "
                "order: the performance history across TF versions. fastest_env names the "
                "fastest.",
    "guidance": "DO / DON'T per machine, model and data, like the seed's lists: DO = "
                "configurations whose median is within the confidence interval of the fastest "
                "one's median; DONT = at least 2x the fastest median.",
    "cells": "Every cell (ok, failed, skipped), repeats pooled: axes, status and reason, median "
             "and CI of the median, first call (build/trace), spread, noise and drift flags, "
             "FLOP/s and provenance.",
}
ABOUT_WIDTH = 110
SHEET_ORDER = ["about", "seed_view", *FACTOR_TABLES, "frameworks", "machines", "versions",
               "guidance", "cells"]


class _ConfigDumper(yaml.SafeDumper):
    """Block style, but lists of plain values on one line, as config.yaml writes them."""


_ConfigDumper.add_representer(list, lambda dumper, data: dumper.represent_sequence(
    "tag:yaml.org,2002:seq", data,
    flow_style=all(not isinstance(x, (list, dict)) for x in data)))


def about_frame(cells: pd.DataFrame, reference_env: str, level: float, noisy_threshold: float,
                config: Mapping | None, now: datetime.datetime) -> pd.DataFrame:
    counts = cells["status"].value_counts().to_dict() if not cells.empty else {}
    machines = sorted(set(cells["machine"])) if not cells.empty else []
    cpu = {m: _first(cells.loc[cells["machine"] == m, "cpu_model"].dropna()) for m in machines}
    gpu = {m: _first(cells.loc[cells["machine"] == m, "gpu"].dropna()) for m in machines}
    rows = [
        ("title", "tfspeed: Why is TensorFlow 2 much slower than TensorFlow 1? (reran as cells)"),
        ("generated", now.strftime("%Y-%m-%d %H:%M UTC")),
        ("machines", "; ".join(f"{m} (CPU: {cpu[m] or '?'}; GPU: {gpu[m] or 'none'})"
                               for m in machines) or "none"),
        ("envs", ", ".join(env_order(cells)) if not cells.empty else "none"),
        ("cells", ", ".join(f"{counts.get(s, 0)} {s}" for s in ("ok", "failed", "skipped"))),
        ("reference env", reference_env),
        ("units", "Times are seconds per training step in the CSV files (results/tables/*.csv) "
                  "and milliseconds in this workbook (columns named *_ms), except seed_view, "
                  "which keeps the seed's seconds per iteration."),
        ("% formula", "The source study's: (1 - longer/shorter) * 100 in magnitude, i.e. "
                      "(longer/shorter - 1) * 100, of the two medians."),
        ("% sign", "+ when the first-named (left) side is faster: TF2 vs TF1: + if TF2 is "
                   "faster; GvE (Graph vs Eager): + if Graph is faster; likewise keras vs "
                   "tf.keras, numpy vs tf.data, fit vs train_on_batch, GPU vs CPU. Example: left "
                   "1 s, right 2 s -> +100.0 %; left 3 s, right 2 s -> -50.0 %."),
        ("ratio", f"left median / right median (< 1: left faster), with a {level:.0%} "
                  "percentile-bootstrap CI (each side resampled on its own, fixed seed)."),
        ("significant", f"TRUE when the ratio's CI excludes 1 AND a two-sided Mann-Whitney U "
                        f"test on the samples gives p < {compare.SIGNIFICANCE_P}. Non-significant "
                        "rows are grey; significant % cells are green (left faster) or red "
                        "(left slower)."),
        ("median CI", f"{level:.0%} distribution-free CI of the median from order statistics "
                      "over all samples of all repeats (separate processes) of a cell."),
        ("flags", f"noisy: IQR/median > {noisy_threshold}; drift: a Mann-Kendall trend over "
                  "the iteration index with p < 0.01 and last/first-quarter median ratio "
                  "(drift_ratio) off by > 5 %: the seed's 'rising stem plot'. "
                  "between_rel_spread: (max - min) / median of the per-process medians."),
    ]
    rows += [(f"sheet {name}", text.format(ref=reference_env))
             for name, text in ABOUT_SHEETS.items()]
    text = yaml.dump(json.loads(json.dumps(config or {}, default=str)), Dumper=_ConfigDumper,
                     sort_keys=False, width=100)
    rows.append(("config (YAML)", ""))
    rows += [("", line) for line in text.splitlines()]
    return pd.DataFrame(rows, columns=["topic", "text"])


def _to_ms(df: pd.DataFrame) -> pd.DataFrame:
    """Seconds columns (*_s) as milliseconds (*_ms) for the workbook."""
    out = df.copy()
    rename = {}
    for col in out.columns:
        if isinstance(col, str) and col.endswith("_s"):
            out[col] = pd.to_numeric(out[col], errors="coerce") * 1000.0
            rename[col] = col[:-2] + "_ms"
    return out.rename(columns=rename)


def _number_format(col: str) -> str | None:
    """Excel number format by column name; `_)` leaves a little space after right-aligned
    numbers so that they do not run into the text of the next column."""
    if col.endswith("_ms") or col.endswith(" ms"):
        return "0.00_)"
    if col.endswith("s/iter"):
        return "0.0000_)"
    if col == "pct" or "%" in col:
        return '+0.0"%"_);-0.0"%"_);0.0"%"_)'
    if col in ("ci_rel_halfwidth", "between_rel_spread", "efficiency"):
        return "0.0%_)"
    if col.startswith("ratio") or col in ("drift_ratio", "ci_level"):
        return "0.000_)"
    if col in ("mw_p", "drift_p"):
        return "0.0000_)"
    if col in ("flops_per_step", "achieved_flops", "peak_flops"):
        return "0.00E+00_)"
    if col == "peak_rss_mb":
        return "#,##0_)"
    return None


def _width(df: pd.DataFrame, col, fmt: str | None) -> float:
    header = len(str(col))
    values = df[col].dropna()
    if values.empty:
        body = 0
    elif fmt and pd.api.types.is_numeric_dtype(values):
        body = 11
    else:
        body = int(values.astype(str).str.len().max())
    return float(min(max(min(header, 24), body, 6) + 2, 60))


def write_workbook(path: Path | str, sheets: Mapping[str, pd.DataFrame]) -> None:
    """The workbook, via pandas' ExcelWriter on XlsxWriter; formatting through the worksheets it
    returns: frozen header row, widths, number formats, autofilter, conditional colours."""
    with pd.ExcelWriter(path, engine="xlsxwriter") as writer:
        book = writer.book
        header = book.add_format({"bold": True, "text_wrap": True, "valign": "bottom",
                                  "bg_color": "#DDE5EE", "bottom": 1})
        green = book.add_format({"bg_color": "#C6EFCE", "font_color": "#006100"})
        red = book.add_format({"bg_color": "#FFC7CE", "font_color": "#9C0006"})
        grey = book.add_format({"font_color": "#9A9A9A"})
        wrap = book.add_format({"text_wrap": True, "valign": "top"})
        mono = book.add_format({"font_name": "Courier New", "font_size": 9})
        bold = book.add_format({"bold": True, "valign": "top"})
        formats: dict[str, object] = {}
        for name in SHEET_ORDER:
            if name not in sheets:
                continue
            df = sheets[name]
            if name == "about":
                df.to_excel(writer, sheet_name=name, index=False)
                ws = writer.sheets[name]
                ws.set_column(0, 0, 26, bold)
                ws.set_column(1, 1, ABOUT_WIDTH, wrap)
                in_yaml = False
                for i, (topic, text) in enumerate(df.itertuples(index=False), start=1):
                    in_yaml = in_yaml or topic == "config (YAML)"
                    if in_yaml:
                        ws.write_string(i, 1, text, mono)
                    else:  # row heights by hand: spreadsheet apps do not size wrapped rows
                        ws.write_string(i, 1, text, wrap)
                        ws.set_row(i, 15 * max(1, math.ceil(len(text) / (ABOUT_WIDTH * 1.05))))
                for j, col in enumerate(df.columns):
                    ws.write(0, j, col, header)
                ws.freeze_panes(1, 0)
                _page_setup(ws, pages_wide=1)
                continue
            sig_cols = [c for c in df.columns if str(c).startswith(SIG_PREFIX)]
            significance = df[sig_cols]
            df = df.drop(columns=sig_cols)
            df.to_excel(writer, sheet_name=name, index=False)
            ws = writer.sheets[name]
            ncol, nrow = len(df.columns), len(df)
            for j, col in enumerate(df.columns):
                fmt_text = _number_format(str(col))
                fmt = None
                if fmt_text:
                    fmt = formats.setdefault(fmt_text, book.add_format({"num_format": fmt_text}))
                elif col in ("significant", "noisy", "drift", "list", "status"):
                    fmt = formats.setdefault("center", book.add_format({"align": "center"}))
                ws.set_column(j, j, _width(df, col, fmt_text), fmt)
                ws.write(0, j, col, header)
            ws.set_row(0, 30)
            key_cols = {"versions": len(VERSION_INDEX), "seed_view": len(SEED_INDEX),
                        "cells": 2, "guidance": 4}.get(name, 0)
            ws.freeze_panes(1, key_cols)
            if nrow:
                ws.autofilter(0, 0, nrow, ncol - 1)
            _conditional(ws, df, nrow, ncol, green, red, grey)
            if sig_cols:
                _colour_by_significance(ws, df, significance, book)
            _page_setup(ws, pages_wide=1 if ncol <= 32 else 2)


def _colour_by_significance(ws, df: pd.DataFrame, significance: pd.DataFrame, book) -> None:
    """seed_view's % cells: green (left faster) / red (left slower) where the comparison is
    significant, grey where it is not; written per cell, as there is no column to test."""
    styles = {}
    for key, extra in (("up", {"bg_color": "#C6EFCE", "font_color": "#006100"}),
                       ("down", {"bg_color": "#FFC7CE", "font_color": "#9C0006"}),
                       ("ns", {"font_color": "#9A9A9A"})):
        styles[key] = book.add_format({"num_format": _number_format("pct"), **extra})
    for sig_col in significance.columns:
        col = sig_col[len(SIG_PREFIX):]
        j = list(df.columns).index(col)
        for i, (value, sig) in enumerate(zip(df[col], significance[sig_col]), start=1):
            if pd.isna(value):
                continue
            significant = not pd.isna(sig) and bool(sig)  # np.bool_ or bool, NaN if none
            style = ("up" if value > 0 else "down") if significant else "ns"
            ws.write_number(i, j, float(value), styles[style])


def _page_setup(ws, pages_wide: int) -> None:
    """Printing (and PDF export): landscape A4, the header row on every page, one or two pages
    wide."""
    ws.set_landscape()
    ws.set_paper(9)
    ws.set_margins(left=0.4, right=0.4, top=0.5, bottom=0.6)
    ws.repeat_rows(0)
    ws.set_footer("&L&A&R&P / &N")
    ws.fit_to_pages(pages_wide, 0)


def _conditional(ws, df: pd.DataFrame, nrow: int, ncol: int, green, red, grey) -> None:
    if not nrow:
        return
    cols = list(df.columns)
    last = nrow  # zero-based last data row (the header is row 0)
    if "significant" in cols and "pct" in cols:
        sig = xl_col_to_name(cols.index("significant"))
        j = cols.index("pct")
        pct = xl_col_to_name(j)
        ws.conditional_format(1, j, last, j, {"type": "formula", "format": green,
                                              "criteria": f"=AND(${sig}2, ${pct}2>0)"})
        ws.conditional_format(1, j, last, j, {"type": "formula", "format": red,
                                              "criteria": f"=AND(${sig}2, ${pct}2<0)"})
        ws.conditional_format(1, 0, last, ncol - 1, {"type": "formula", "format": grey,
                                                     "criteria": f"=NOT(${sig}2)"})
    if "list" in cols:
        j = cols.index("list")
        ws.conditional_format(1, j, last, j, {"type": "cell", "criteria": "==",
                                              "value": '"DO"', "format": green})
        ws.conditional_format(1, j, last, j, {"type": "cell", "criteria": "==",
                                              "value": '"DONT"', "format": red})
    if "status" in cols:
        j = cols.index("status")
        letter = xl_col_to_name(j)
        ws.conditional_format(1, j, last, j, {"type": "cell", "criteria": "==",
                                              "value": '"failed"', "format": red})
        ws.conditional_format(1, 0, last, ncol - 1, {"type": "formula", "format": grey,
                                                     "criteria": f'=${letter}2<>"ok"'})


def workbook_sheets(tables: Mapping[str, pd.DataFrame], cells: pd.DataFrame,
                    seed: pd.DataFrame, about: pd.DataFrame) -> dict[str, pd.DataFrame]:
    sheets = {"about": about, "seed_view": seed}
    for name in TABLES:
        df = tables[name]
        if name == "versions":
            env_cols = [c for c in df.columns if c not in VERSION_INDEX + ["fastest_env"]]
            df = df.copy()
            df[env_cols] = df[env_cols] * 1000.0
            df = df.rename(columns={c: f"{c} ms" for c in env_cols})
        else:  # the axis columns say what the ids say; the CSVs keep them for tracing
            df = _to_ms(df.drop(columns=["left_cell_id", "right_cell_id", "cell_id"],
                                errors="ignore"))
        sheets[name] = df
    sheets["cells"] = _to_ms(cells)
    return sheets


def machines_table(cells: pd.DataFrame, comparer: Comparer, envs: Sequence[str]) -> pd.DataFrame:
    """The same cell (env and every axis) on two machines; left is the first machine key in
    alphabetical order. Empty when the study holds one machine's results."""
    ok = _ok(cells)
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


def build_tables(cells: pd.DataFrame, samples: Mapping, reference_env: str, level: float = 0.95,
                 n_boot: int = 2000) -> dict[str, pd.DataFrame]:
    """Every table of TABLES from the pooled cells and their samples."""
    envs = env_order(cells) if not cells.empty else []
    comparer = Comparer(samples, level=level, n_boot=n_boot)
    tables = {"tf2_vs_tf1": tf2_vs_tf1_table(cells, comparer, reference_env, envs)}
    for name, (factor, left, right) in FACTOR_TABLES.items():
        if left is not None:
            tables[name] = factor_table(cells, comparer, factor, left, right, envs)
    tables["keras_vs_tfkeras"] = keras_table(cells, comparer, envs)
    tables["frameworks"] = frameworks_table(cells, comparer, envs)
    tables["machines"] = machines_table(cells, comparer, envs)
    tables["versions"] = versions_table(cells, envs)
    tables["guidance"] = guidance_table(cells)
    return {name: tables[name] for name in TABLES}


def main(cell_files: Iterable[Path | str], out_csv: Path | str, out_xlsx: Path | str,
         out_tables: Mapping[str, Path | str], reference_env: str,
         noisy_threshold: float = 0.10,
         level: float = 0.95, config: Mapping | None = None, n_boot: int = 2000,
         now: datetime.datetime | None = None) -> dict[str, pd.DataFrame]:
    """Read, validate and pool every cell file; write cells.csv, every table of `out_tables`
    ({name: path}, names from TABLES; each written, header-only when empty) and the workbook.
    Returns {"cells": ..., <table>: ..., "seed_view": ...} as DataFrames (seconds)."""
    unknown = set(out_tables) - set(TABLES)
    if unknown:
        raise ValueError(f"unknown tables {sorted(unknown)}; known: {TABLES}")
    files = [Path(f) for f in cell_files]
    log.info("reading %d cell files", len(files))
    records = load_cells(files)
    cells, samples = pool_cells(records, level=level, noisy_threshold=noisy_threshold)
    cells = apply_machine_peaks(cells)
    log.info("%d cells (%s)", len(cells), cells["status"].value_counts().to_dict())
    if not cells.empty and reference_env not in set(cells["env"]):
        log.warning("reference env %r has no cells: tf2_vs_tf1 is empty", reference_env)
    tables = build_tables(cells, samples, reference_env, level=level, n_boot=n_boot)
    envs = env_order(cells) if not cells.empty else []
    seed = seed_view(cells, tables, reference_env, envs)
    about = about_frame(cells, reference_env, level, noisy_threshold, config,
                        now or datetime.datetime.now(datetime.timezone.utc))

    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    cells.to_csv(out_csv, index=False)
    for name, path in out_tables.items():
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        tables[name].to_csv(path, index=False)
        log.info("%s: %d rows -> %s", name, len(tables[name]), path)
    Path(out_xlsx).parent.mkdir(parents=True, exist_ok=True)
    write_workbook(out_xlsx, workbook_sheets(tables, cells, seed, about))
    log.info("workbook -> %s", out_xlsx)
    return {"cells": cells, **tables, "seed_view": seed}


def _run_snakemake(smk) -> None:
    sys.stderr = open(smk.log[0], "w")  # first: everything after this goes to the rule log
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    params = smk.params
    # Other machines' cell files are inputs too (rules/common.smk), so new ones rerun this rule.
    files = list(smk.input.cells) + list(smk.input.others)
    tables = {Path(p).stem: p for p in smk.output.tables}
    main(files, smk.output.cells_csv, smk.output.xlsx, tables, params.reference_env,
         noisy_threshold=params.noisy_threshold,
         level=params.level, config=params.config)


if "snakemake" in globals():
    _run_snakemake(snakemake)  # noqa: F821
