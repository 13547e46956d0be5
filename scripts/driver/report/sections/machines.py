"""Machines compared: first the headline (the duets, table machines_compared) on two machines side
by side: each version's ratio on each machine with that machine's own interval and verdict, and
whether the machine changes the ratio (the interaction, left ratio / right ratio, with its tested
interval), counted per mode in one sentence each built from the rows, and why no combined ratio
over machines is given. Then the like-for-like rows of tf2_vs_tf1 (cells) side by side per machine
key, with each machine's ratio, CI and verdict, whether the machines agree, and the spread of the
ratio over machines (the sd of log ratios) where several measured the same configuration.

A twin key (<machine>.twin) is the A/A copy of its machine, not a machine: it is left out. With one
machine the section says so and points to docs/publishing.md (how a second machine's run joins).
"""
import math
import statistics

import pandas as pd

from driver.report import answer
from driver.report.fmt import cell, col, fmt_ratio, records, text, version_key
from driver.stats.verdicts import words
from driver.study import layout
from driver.tables import machines_compared as mc
from driver.tables.ordering import AXIS_ORDER

ID, TITLE, ORDER = "machines", "Machines compared", 12

# what a configuration row is, across machines (the machine column aside)
ROW_KEY = ("device", "mode", "api", "input", "model", "data", "left_keras", "right_keras",
           "left_env", "right_env")


def _rank(axis, value):
    return AXIS_ORDER.get(axis, {}).get(value, 99)


def _row_order(key: tuple, version: str) -> tuple:
    axes = dict(zip(ROW_KEY, key))
    return (_rank("device", axes["device"]), _rank("mode", axes["mode"]),
            _rank("api", axes["api"]), version_key(version), _rank("input", axes["input"]),
            _rank("model", axes["model"]), _rank("data", axes["data"]), axes["left_keras"])


agreement = mc.agreement  # one rule for both tables (driver/tables/machines_compared.py)


def log_sd(ratios: list[float]) -> float:
    """The sample sd of log ratios over machines (nan with fewer than two finite ratios)."""
    logs = [math.log(r) for r in ratios if isinstance(r, float) and math.isfinite(r) and r > 0]
    return statistics.stdev(logs) if len(logs) >= 2 else math.nan


def compare(df: pd.DataFrame) -> dict:
    """The like-for-like tf2_vs_tf1 rows per configuration and machine: {"machines": [keys],
    "rows": [{"key", "what", "version", "per": {machine: {"ratio", "lo", "hi", "verdict"}},
    "agreement", "log_sd"}], "groups": [per (device, mode, api): counts]}. Plain data, for the
    report and for docs/RESULTS.md (scripts/publish.py)."""
    rows = answer.like_for_like(df if df is not None else pd.DataFrame())
    if not rows.empty:
        rows = rows[~col(rows, "machine").map(text).map(layout.is_twin)]
    machines = sorted({text(m) for m in col(rows, "machine")} - {""})
    table: dict = {}
    for r in records(rows):
        key = tuple(text(r.get(k)) for k in ROW_KEY)
        entry = table.setdefault(key, {"key": key, "per": {},
                                       "version": text(r.get("left_framework_version"))
                                       or text(r.get("left_env"))})
        ratio = r.get("ratio")
        entry["per"][text(r.get("machine"))] = {
            "ratio": float(ratio) if ratio is not None else math.nan,
            "lo": float(r["ratio_ci_low"]) if r.get("ratio_ci_low") is not None else math.nan,
            "hi": float(r["ratio_ci_high"]) if r.get("ratio_ci_high") is not None else math.nan,
            "verdict": r.get("verdict_n", answer.INCONCL)}
    out, groups = [], {}
    for key in sorted(table, key=lambda k: _row_order(k, table[k]["version"])):
        entry = table[key]
        axes = dict(zip(ROW_KEY, key))
        per = entry["per"]
        verdicts = [per[m]["verdict"] for m in machines if m in per]
        entry["agreement"] = agreement(verdicts) if len(verdicts) > 1 else "one machine"
        entry["log_sd"] = log_sd([per[m]["ratio"] for m in machines if m in per])
        keras = axes["left_keras"] if axes["left_keras"] == axes["right_keras"] else \
            f"{axes['left_keras']} vs {axes['right_keras']}"
        entry["what"] = (f"{axes['mode']} · {axes['api']} · {axes['input']} · {keras} · "
                         f"{axes['model']}-{axes['data']}"
                         + (f" · {axes['device']}" if axes["device"] != "cpu" else ""))
        out.append(entry)
        g = groups.setdefault((axes["device"], axes["mode"], axes["api"]), {
            "device": axes["device"], "mode": axes["mode"], "api": axes["api"], "n": 0,
            "n_shared": 0, "same": 0, "differ": 0, "opposite": 0, "sds": []})
        g["n"] += 1
        if len(verdicts) > 1:
            g["n_shared"] += 1
            g[entry["agreement"]] += 1
            if math.isfinite(entry["log_sd"]):
                g["sds"].append(entry["log_sd"])
    summary = []
    for g in groups.values():
        sds = g.pop("sds")
        g["median_log_sd"] = statistics.median(sds) if sds else math.nan
        what = f"{answer.MODE_TEXT.get(g['mode'], g['mode'])}, " \
               f"{answer.API_TEXT.get(g['api'], g['api'])}" + \
               (f" ({g['device'].upper()})" if g["device"] != "cpu" else "")
        g["what"] = what
        g["text"] = sentence(g)
        summary.append(g)
    return {"machines": machines, "rows": out, "groups": summary}


def sentence(g: dict) -> str:
    """One group's agreement in words."""
    if not g["n_shared"]:
        return (f"{g['n']} configuration{'s' if g['n'] != 1 else ''}, none measured on more than "
                "one machine.")
    parts = [f"same verdict in {g['same']} of {g['n_shared']} configurations measured on "
             "several machines"]
    if g["differ"]:
        parts.append(f"different in {g['differ']} (decided on one machine, undecided or "
                     "equivalent on another)")
    if g["opposite"]:
        parts.append(f"opposite in {g['opposite']} (slower on one machine, faster on another)")
    if math.isfinite(g["median_log_sd"]):
        parts.append("spread of the ratio over machines: median sd of log ratios "
                     f"{g['median_log_sd']:.3f} (about {math.expm1(g['median_log_sd']):.0%})")
    return "; ".join(parts) + "."


def _ratio_cell(p: dict | None) -> dict:
    if not p:
        return cell("–", "muted")
    ci = f" [{fmt_ratio(p['lo'])}, {fmt_ratio(p['hi'])}]" if math.isfinite(p["lo"]) else ""
    shown = words(p["verdict"])
    return cell(f"{fmt_ratio(p['ratio'])}{ci} {shown.word}", shown.cls,
                v=p["ratio"] if math.isfinite(p["ratio"]) else None)


EFFECT_CLS = {mc.DIFFERS: "neg", mc.SAME: "", mc.UNDECIDED: "muted"}


def headline(df: pd.DataFrame) -> dict:
    """The machines_compared rows for the report: {"pairs": [(left, right)], "rows": [...],
    "modes": [{"mode", "n", "differs", "same", "undecided", "one_machine", "text"}],
    "weight": median fixed-effect weight of the left machine, "sd": {machine: median sd_log}}.
    Every count is taken from the rows it covers."""
    if df is None or df.empty:
        return {"pairs": [], "rows": [], "modes": [], "weight": math.nan, "sd": {}}
    df = df.assign(_order=[(_rank("mode", m), version_key(text(v)))
                           for m, v in zip(df["mode"], df["framework_version"])])
    df = df.sort_values(["left_machine", "right_machine", "_order"], kind="stable")
    pairs = list(dict.fromkeys(zip(df["left_machine"], df["right_machine"])))
    modes = []
    for mode, part in df.groupby("mode", sort=False):
        effect = part["machine_effect"].map(text)
        g = {"mode": mode, "n": len(part), "differs": int((effect == mc.DIFFERS).sum()),
             "same": int((effect == mc.SAME).sum()),
             "undecided": int((effect == mc.UNDECIDED).sum()),
             "one_machine": int((part["agreement"].map(text) == "one machine").sum())}
        g["text"] = mode_sentence(g)
        modes.append(g)
    sd = {}
    for side in ("left", "right"):
        for machine, part in df.groupby(f"{side}_machine"):
            sd[machine] = float(part[f"{side}_sd_log"].median())
    weights = df["fixed_effect_weight_left"].dropna()
    return {"pairs": pairs, "rows": records(df), "modes": modes, "sd": sd,
            "weight": float(weights.median()) if len(weights) else math.nan}


def mode_sentence(g: dict) -> str:
    """One mode's interactions in words: '<mode>: the machine changes the ratio in X of N
    versions, ...'."""
    tested = g["n"] - g["one_machine"]
    word = answer.MODE_TEXT.get(g["mode"], g["mode"])
    if not tested:
        return f"{word}: no version measured on both machines."
    parts = [f"{word}: the machine changes the ratio in {g['differs']} of {tested} versions "
             "measured on both (interaction interval excludes 1)",
             f"the same ratio within the band in {g['same']}",
             f"undecided in {g['undecided']}"]
    if g["one_machine"]:
        parts.append(f"{g['one_machine']} measured on one machine only")
    return "; ".join(parts) + "."


def _side_cell(r: dict, side: str) -> dict:
    p = {"ratio": r.get(f"{side}_ratio"), "lo": r.get(f"{side}_ratio_ci_low"),
         "hi": r.get(f"{side}_ratio_ci_high"), "verdict": r.get(f"{side}_verdict")}
    if p["ratio"] is None or not math.isfinite(float(p["ratio"])):
        return cell("–", "muted")
    return _ratio_cell({k: (float(v) if k != "verdict" and v is not None else
                            (math.nan if k != "verdict" else v or answer.INCONCL))
                        for k, v in p.items()})


def _headline_table(rows: list[dict], left: str, right: str) -> dict:
    columns = [{"label": "mode · Keras", "num": False}, {"label": "TF 2", "num": False},
               {"label": f"{left}: TF 2 / TF 1 [CI], verdict", "num": True},
               {"label": f"{right}: TF 2 / TF 1 [CI], verdict", "num": True},
               {"label": f"interaction ({left} / {right}) [CI]", "num": True},
               {"label": "the machine changes the ratio?", "num": False},
               {"label": "verdicts", "num": False}]
    out = []
    for r in rows:
        inter = r.get("interaction")
        inter = float(inter) if inter is not None else math.nan
        ci = (f" [{fmt_ratio(r.get('interaction_ci_low'))}, "
              f"{fmt_ratio(r.get('interaction_ci_high'))}]") if math.isfinite(inter) else ""
        effect = text(r.get("machine_effect")) or text(r.get("reason")) or "–"
        out.append([cell(f"{r['mode']} · {r['keras']}"), cell(text(r.get("framework_version"))),
                    _side_cell(r, "left"), _side_cell(r, "right"),
                    cell(f"{fmt_ratio(inter)}{ci}", "num",
                         v=inter if math.isfinite(inter) else None),
                    cell(effect, EFFECT_CLS.get(effect, "muted")),
                    cell(text(r.get("agreement")))])
    return {"id": f"t-machines-headline-{left}-{right}", "columns": columns, "rows": out}


def build(data) -> dict:
    top = headline(data.table("machines_compared"))
    top["tables"] = [_headline_table([r for r in top["rows"]
                                      if (r["left_machine"], r["right_machine"]) == pair], *pair)
                     for pair in top["pairs"]]
    found = compare(data.table("tf2_vs_tf1"))
    machines = found["machines"]
    columns = [{"label": "configuration", "num": False}, {"label": "TF 2", "num": False}]
    columns += [{"label": f"{m}: TF 2 / TF 1 [CI], verdict", "num": True} for m in machines]
    columns += [{"label": "machines agree", "num": False},
                {"label": "sd of log ratio", "num": True}]
    rows = []
    for entry in found["rows"]:
        sd = entry["log_sd"]
        agree = entry["agreement"]
        rows.append([cell(entry["what"]), cell(entry["version"]),
                     *[_ratio_cell(entry["per"].get(m)) for m in machines],
                     cell(agree, {"opposite": "neg", "differ": "muted"}.get(agree, "")),
                     cell(f"{sd:.3f}" if math.isfinite(sd) else "–", "num",
                          v=sd if math.isfinite(sd) else None)])
    return {"machines": machines, "n_machines": len(machines), "groups": found["groups"],
            "headline": top,
            "table": {"id": "t-machines-compared", "columns": columns, "rows": rows},
            "n_rows": len(rows), "min_effect": data.min_effect}
