"""Which configuration to use, as rules a reader can act on: the guidance table's DO / DON'T
rows (driver/tables/summaries.py) per machine, model and data and task (training and inference
apart), merged across versions ("graph · train_on_batch · numpy, tf_keras: TF 2.16-2.21, 1.00-1.04x
the fastest"), each with the one line of code that selects its mode."""
import math
import re

import pandas as pd

from driver.report.fmt import col, ncol, num, records, text, version_key
from tfspeed import frameworks
from tfspeed.cells import task

TASK_TEXT = {"train": "Training", "infer": "Inference"}


def switches() -> dict:
    """(framework, mode) -> the one line that selects the mode, as the study's backends do it: the
    catalogue rows' `switches` (tfspeed/frameworks.py), in catalogue order."""
    return {(fw.name, mode): line for fw in frameworks.CATALOGUE
            for mode, line in fw.switches.items()}


def __getattr__(name):
    """`guidance.SWITCH`: switches() as the catalogue holds them now."""
    if name == "SWITCH":
        return switches()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _framework(row):
    """The catalogue row of a guidance row's framework: its `framework` column where the row has
    one, else told from its env's name (frameworks.of_env: 'tf2.3', 'torch2.13', 'keras3-jax');
    an env the catalogue cannot place counts as the first framework's (TensorFlow's)."""
    return (frameworks.get(text(row.get("framework"))) or frameworks.of_env(text(row.get("env")))
            or frameworks.CATALOGUE[0])


def _family(row) -> str:
    """'TF', 'PyTorch' (the framework's short label) or, for a Keras 3 env, 'Keras 3 on jax'."""
    env = text(row.get("env"))
    if env.startswith("keras3-"):
        return f"Keras 3 on {env.split('-', 1)[1]}"
    return _framework(row).short_label


def versions_text(chosen: list[str], measured: list[str], family: str) -> str:
    """'TF 2.16.2–2.21.0 (every version it was measured in, 6)', 'TF ≥ 2.1.4 (9 versions)', or
    runs of consecutive measured versions ('TF 1.14.0, 2.2.3–2.3.4')."""
    chosen = sorted(set(chosen), key=version_key)
    measured = sorted(set(measured) | set(chosen), key=version_key)
    tf = frameworks.CATALOGUE[0].short_label  # its versions are spelled out in runs
    if not chosen or family != tf:
        return family + (" " + ", ".join(chosen) if chosen and chosen != [""] else "")
    if len(chosen) == 1:
        return f"{tf} {chosen[0]}"
    if chosen == measured:
        return f"{tf} {chosen[0]}–{chosen[-1]} (every version it was measured in, {len(chosen)})"
    if chosen == measured[-len(chosen):]:
        return f"{tf} ≥ {chosen[0]} ({len(chosen)} versions)"
    idx = [measured.index(v) for v in chosen]
    runs, start = [], 0
    for i in range(1, len(idx) + 1):
        if i == len(idx) or idx[i] != idx[i - 1] + 1:
            a, b = chosen[start], chosen[i - 1]
            runs.append(a if a == b else f"{a}–{b}")
            start = i
    return f"{tf} " + ", ".join(runs)


def _rule_key(row) -> tuple:
    return (_family(row), text(row.get("keras")), text(row.get("mode")), text(row.get("api")),
            text(row.get("input")))


def _measured(cells: pd.DataFrame) -> dict:
    out = {}
    if cells is None or cells.empty:
        return out
    ok = cells[col(cells, "status").map(text) == "ok"]
    for r in records(ok):
        key = (text(r.get("machine")), text(r.get("model")), text(r.get("data")), *_rule_key(r))
        out.setdefault(key, set()).add(text(r.get("framework_version")))
    return out


def rules(guidance: pd.DataFrame, cells: pd.DataFrame | None = None) -> list[dict]:
    """Per machine, model/data and task: merged DO and DON'T rules, fastest first."""
    if guidance.empty:
        return []
    df = guidance[col(guidance, "api").map(text) != "matmul"].copy()
    df["_list"] = col(df, "list", "").map(lambda v: re.sub(r"[^A-Z]", "", text(v).upper()))
    df["_ratio"] = ncol(df, "ratio_to_fastest")
    # the table's task column (driver/tables/summaries.py); tables written before it had one
    # (an earlier run's, the published ones) get it from the API as aggregation names it
    df["_task"] = (df["task"].map(text) if "task" in df.columns
                   else col(df, "api").map(lambda a: task(text(a))))
    measured = _measured(cells)
    out = []
    keys = ["machine", "model", "data", "_task"]
    for c in keys:
        if c not in df.columns:
            df[c] = ""
    order = {"train": 0, "infer": 1}
    for (machine, model, data, tk), part in sorted(
            df.groupby(keys, sort=False), key=lambda kv: (text(kv[0][0]), text(kv[0][1]),
                                                          text(kv[0][2]), order.get(kv[0][3], 9))):
        fastest = ncol(part, "fastest_median_s").dropna()
        block = {"machine": text(machine), "model": text(model), "data": text(data),
                 "task": TASK_TEXT.get(tk, tk), "do": [], "dont": [],
                 "fastest_ms": float(fastest.iloc[0]) * 1e3 if len(fastest) else math.nan}
        for kind, target in (("DO", "do"), ("DONT", "dont")):
            sub = part[part["_list"] == kind]
            groups = {}
            for r in records(sub):
                groups.setdefault(_rule_key(r), []).append(r)
            items = []
            for key, rows in groups.items():
                family, keras, mode, api, inp = key
                ratios = [num(r.get("_ratio")) for r in rows]
                lo, hi = min(ratios), max(ratios)
                seen = measured.get((text(machine), text(model), text(data), *key), set())
                where = versions_text([text(r.get("framework_version")) for r in rows],
                                      sorted(seen), family)
                items.append({
                    "rule": " · ".join(x for x in (mode, api, inp, keras) if x and x != "none"),
                    "where": where, "ratio_lo": lo,
                    "ratio": f"{lo:.2f}x" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}x",
                    "switch": _switch(rows[0], mode)})
            items.sort(key=lambda i: i["ratio_lo"])
            block[target] = items
        out.append(block)
    return out


def _switch(row, mode: str) -> str:
    return _framework(row).switches.get(mode, "")


def switch_lines(blocks: list[dict]) -> list[tuple[str, str]]:
    """(mode, the line of code) for every mode the rules name, in the catalogue's order (each
    framework's `switches`, tagged with its `tag`)."""
    named = {i["rule"].split(" · ")[0] for b in blocks for i in b["do"] + b["dont"]}
    return [(f"{mode} ({fw.tag})", line) for fw in frameworks.CATALOGUE
            for mode, line in fw.switches.items() if mode in named]
