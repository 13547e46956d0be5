"""The `processes` table: one row per process (cell file), with where it ran in its round.

The unit of replication is the process; this table publishes what every CI and verdict is made
from, so that the round and position effects, the spread between processes and the foreign CPU
can be checked from the published tables alone: the cell, its round and planned position (from
results/rounds/<machine>/order<round>.json, driver/study/order.py), the start time, the
process's median and its own CI, foreign CPU over its timed window, warm-up, wall time and how
the process was made.
"""
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from driver.study import layout

PROCESS_COLUMNS = [
    "machine", "env", "cell_id", "twin", "round", "position", "order_seed", "started_utc",
    "start_rank", "status", "median_s", "ci_low_s", "ci_high_s", "within_ci_rel", "n_samples",
    "foreign_cpu_share", "foreign_cpu_flag", "warmup_calls", "warmup_s", "first_call_s",
    "process_wall_s", "process_origin",
]


def load_orders(paths: Iterable[Path | str]) -> dict[tuple, dict]:
    """(machine, round) -> the round's plan document; a missing file is skipped (an older run)."""
    out = {}
    for path in paths:
        path = Path(path)
        if not path.exists():
            continue
        doc = json.loads(path.read_text())
        out[(doc["machine"], int(doc["round"]))] = doc
    return out


def _positions(orders: Mapping[tuple, dict]) -> dict[tuple, tuple]:
    """(machine, round, env, cell_id, twin) -> (position, seed)."""
    out = {}
    for (machine, rep), doc in orders.items():
        for entry in doc["order"]:
            key = (machine, rep, entry["env"], entry["cell_id"], bool(entry.get("twin")))
            out[key] = (entry["position"], doc["seed"])
    return out


def processes_table(records: Iterable[Mapping], orders: Mapping[tuple, dict] | None = None
                    ) -> pd.DataFrame:
    """One row per record, sorted by machine, round and start. `position` and `order_seed` come
    from the round's plan (empty where there is none); `start_rank` is the rank of the start
    time among the round's processes of the same machine (twins included): where the plan was
    executed as planned, start_rank equals position."""
    where = _positions(orders or {})
    rows = []
    for rec in records:
        base = layout.base_machine(rec["machine"])
        twin = layout.is_twin(rec["machine"])
        position, seed = where.get((base, rec["repeat"], rec["env"], rec["cell_id"], twin),
                                   (None, None))
        summary = rec.get("summary") or {}
        window = rec.get("cpu_window") or {}
        prov = rec.get("provenance") or {}
        rows.append({
            "machine": base, "env": rec["env"], "cell_id": rec["cell_id"], "twin": twin,
            "round": rec["repeat"], "position": position, "order_seed": seed,
            "started_utc": rec["started_utc"], "status": rec["status"],
            "median_s": summary.get("median_s"), "ci_low_s": summary.get("ci_low_s"),
            "ci_high_s": summary.get("ci_high_s"),
            "within_ci_rel": summary.get("ci_rel_halfwidth"), "n_samples": summary.get("n"),
            "foreign_cpu_share": window.get("foreign_cpu_share"),
            "foreign_cpu_flag": rec.get("foreign_cpu_flag"),
            "warmup_calls": rec.get("warmup_calls"), "warmup_s": rec.get("warmup_s"),
            "first_call_s": rec.get("first_call_s"), "process_wall_s": prov.get("cell_wall_s"),
            "process_origin": rec.get("process_origin", "fresh"),
        })
    df = pd.DataFrame(rows, columns=PROCESS_COLUMNS)
    if df.empty:
        return df
    stamp = pd.to_datetime(df["started_utc"], utc=True, format="ISO8601")
    df["start_rank"] = (stamp.groupby([df["machine"], df["round"]]).rank(method="first")
                        .astype(int) - 1)
    df["position"] = df["position"].astype("Int64")
    df["order_seed"] = df["order_seed"].astype("Int64")
    return df.sort_values(["machine", "round", "start_rank"], kind="stable").reset_index(drop=True)


def order_followed(processes: pd.DataFrame) -> pd.DataFrame:
    """Per (machine, round) with a plan: processes, how many started at their planned rank, and
    Spearman's rho between position and start (1.0: executed as planned)."""
    planned = processes[processes["position"].notna()]
    rows = []
    for (machine, rep), part in planned.groupby(["machine", "round"]):
        rank = part["position"].astype(int).rank(method="first").astype(int) - 1
        rows.append({"machine": machine, "round": rep, "processes": len(part),
                     "at_planned_rank": int((rank.to_numpy() == part["start_rank"].rank(
                         method="first").astype(int).to_numpy() - 1).sum()),
                     "spearman": float(part["position"].astype(float).corr(
                         part["start_rank"].astype(float), method="spearman"))
                     if len(part) > 1 else 1.0})
    return pd.DataFrame(rows, columns=["machine", "round", "processes", "at_planned_rank",
                                       "spearman"])
