"""The seed's DO / DON'T list checked line by line, and this machine's own rules, both from the
one-factor comparison tables' verdicts (driver/stats/verdicts.py), never from cell files.

A seed line names a configuration ("fit() + numpy + tf.keras + TF1/TF2 + Eager"). Its one-factor
neighbours are the rows of graph_vs_eager, fit_vs_train_on_batch, numpy_vs_tfdata and
keras_vs_tfkeras in which one side is that configuration and the other differs in one of the
factors the line fixes. A DO says "nothing one change away is faster": it holds in an env when no
neighbour is significantly faster. A DON'T says "one change makes it faster": it holds in an env
when some neighbour is. Cells of the line that failed (crashed, hung, unusable) count for a
DON'T: the seed's "[Major] tf.python.keras" warns of exactly that.
"""
import itertools
import math

import pandas as pd

from driver.report.answer import EQUIV, INCONCL, LEFT, RIGHT, norm_verdict, row_kind
from driver.report.fmt import num, records, text, version_key
from tfspeed import cells as tfcells
from tfspeed import versions as tfversions

NEIGHBOUR_TABLES = {"graph_vs_eager": "mode", "fit_vs_train_on_batch": "api",
                    "numpy_vs_tfdata": "input", "keras_vs_tfkeras": "keras"}

# (DO or DONT, the seed's words, the configuration it names, what the study must hold to test it)
SEED_LINES = [
    ("DO", "train_on_batch() + numpy + tf.keras + TF1 + Eager/Graph",
     {"api": ["train_on_batch"], "input": ["numpy"], "keras": ["tf.keras"], "tf": [1],
      "mode": ["eager", "graph"]}),
    ("DO", "train_on_batch() + numpy + tf.keras + TF2 + Graph",
     {"api": ["train_on_batch"], "input": ["numpy"], "keras": ["tf.keras"], "tf": [2],
      "mode": ["graph"]}),
    ("DO", "fit() + numpy + tf.keras + TF1/TF2 + Graph + large model & data",
     {"api": ["fit"], "input": ["numpy"], "keras": ["tf.keras"], "tf": [1, 2], "mode": ["graph"],
      "model": ["large"], "data": ["large"]}),
    ("DONT", "fit() + numpy + keras for small & medium models and data",
     {"api": ["fit"], "input": ["numpy"], "keras": ["keras"], "model": ["small", "medium"],
      "data": ["small", "medium"]}),
    ("DONT", "fit() + numpy + tf.keras + TF1/TF2 + Eager",
     {"api": ["fit"], "input": ["numpy"], "keras": ["tf.keras"], "tf": [1, 2],
      "mode": ["eager"]}),
    ("DONT", "train_on_batch() + numpy + keras + TF1 + Eager",
     {"api": ["train_on_batch"], "input": ["numpy"], "keras": ["keras"], "tf": [1],
      "mode": ["eager"]}),
    ("DONT", "[Major] tf.python.keras; it can run 10-100x slower",
     {"keras": ["tf.python.keras"]}),
]


def _major(version) -> int | None:
    return tfversions.major(text(version))


def matches(row: dict, spec: dict, side: str = "") -> bool:
    """Whether one side of a comparison row (or a cell, side '') is the configuration."""
    for axis, allowed in spec.items():
        if axis == "tf":
            fw = text(row.get(side + "framework")) or text(row.get("framework")) or "tensorflow"
            version = text(row.get(side + "framework_version")) or text(
                row.get("framework_version"))
            if fw != "tensorflow" or _major(version) not in allowed:
                return False
            continue
        value = text(row.get(side + axis)) or text(row.get(axis))
        if value not in allowed:
            return False
    return True


def neighbours(tabs: dict, spec: dict) -> list[dict]:
    """Rows with one side the configuration and the other not, oriented: `speedup` > 1 when
    the configuration is faster, `outcome` faster / slower / equivalent / undecided."""
    out = []
    for name, factor in NEIGHBOUR_TABLES.items():
        df = tabs.get(name, pd.DataFrame())
        for r in records(df):
            if row_kind(r, name) != "one":
                continue
            left, right = matches(r, spec, "left_"), matches(r, spec, "right_")
            if left == right:
                continue
            ratio = num(r.get("ratio"))  # left / right
            speedup = 1 / ratio if left else ratio
            v = norm_verdict(r.get("verdict"))
            outcome = {LEFT: "faster" if left else "slower",
                       RIGHT: "slower" if left else "faster",
                       EQUIV: "equivalent", INCONCL: INCONCL}[v]
            other = text(r.get("right_" + factor if left else "left_" + factor))
            out.append({"table": name, "factor": factor, "other": other, "speedup": speedup,
                        "outcome": outcome, "env": text(r.get("env"))})
    return out


def failed_cells(cells: pd.DataFrame, spec: dict) -> list[dict]:
    return [r for r in records(cells) if text(r.get("status")) in ("failed", "skipped")
            and matches(r, spec)]


def _times(values) -> str:
    values = sorted(v for v in values if not math.isnan(v))
    if not values:
        return ""
    lo, hi = f"{values[0]:.2f}x", f"{values[-1]:.2f}x"
    return lo if lo == hi else f"{lo}–{hi}"


def check_line(kind: str, words: str, spec: dict, tabs: dict, cells: pd.DataFrame) -> dict:
    """Per env (one TF version's cells): a DO holds there when no one-factor alternative is
    significantly faster, a DON'T when at least one is (or its cells failed there). The line
    holds when it holds in more than half of the envs tested; it does not hold when it fails in
    more than half; undecided otherwise."""
    rows = neighbours(tabs, spec)
    fails = failed_cells(cells, spec)
    measured = [r for r in records(cells) if text(r.get("status")) == "ok" and matches(r, spec)]
    if not rows and not fails:
        reason = impossible_reason(spec, cells)
        if reason:
            return {"kind": kind, "words": words, "status": "impossible", "cls": "nodata",
                    "evidence": f"this configuration cannot exist: {reason}"}
        why = ("no cell of this configuration was measured here" if not measured else
               "its cells have no one-factor neighbour here")
        return {"kind": kind, "words": words, "status": "not testable here", "cls": "nodata",
                "evidence": why}
    envs = sorted({r["env"] for r in rows} | {text(f.get("env")) for f in fails})
    failed_envs = {text(f.get("env")) for f in fails}
    beaten, clean, open_ = [], [], []
    for env in envs:
        mine = [r for r in rows if r["env"] == env]
        if any(r["outcome"] == "slower" for r in mine) or env in failed_envs:
            beaten.append(env)
        elif mine and all(r["outcome"] in ("faster", "equivalent") for r in mine):
            clean.append(env)
        else:
            open_.append(env)
    good, bad = (clean, beaten) if kind == "DO" else (beaten, clean)
    n = len(envs)
    if len(good) > n / 2:
        status, cls = "holds", "holds"
    elif len(bad) > n / 2:
        status, cls = "does not hold", "fails"
    else:
        status, cls = "undecided", "ns"
    split = _split(good, bad, envs)
    if split:
        status, cls = split, "mixed"
    better: dict = {}
    for r in rows:
        if r["outcome"] == "slower" and r["speedup"] > 0:
            better.setdefault(f"{r['factor']} {r['other']}", []).append(1 / r["speedup"])
    parts = [f"{n} env{'s' if n != 1 else ''}: a one-factor change is significantly faster in "
             f"{len(beaten)}" + (f" ({', '.join(beaten)})" if beaten else ""),
             f"no change is faster in {len(clean)}", f"undecided in {len(open_)}"]
    if better:
        parts.append("faster alternatives: " + ", ".join(
            f"{k} ({_times(v)} as fast)" for k, v in sorted(better.items())))
    if fails:
        parts.append(f"{len(fails)} cell{'s' if len(fails) != 1 else ''} failed or unusable "
                     f"({', '.join(sorted(failed_envs))}): counted for the DON'T")
    return {"kind": kind, "words": words, "status": status, "cls": cls,
            "evidence": "; ".join(parts) + f" ({len(rows)} comparisons)"}


def _major_of(env: str) -> int | None:
    key = version_key(env)
    return key[0] if key and key[0] != math.inf else None


def _split(good: list, bad: list, envs: list) -> str:
    """'holds in TF 1 (tf1.14), not in TF 2 (tf2.0)' when the line's verdict follows the TF
    major version: every env of one major holds and every env of the other does not."""
    majors = {}
    for env in envs:
        majors.setdefault(_major_of(env), []).append(env)
    if len(majors) != 2 or None in majors:
        return ""
    verdicts = {m: ("holds" if all(e in good for e in es) else "fails" if all(e in bad for e in es)
                    else "undecided" if not any(e in good for e in es) else "")
                for m, es in majors.items()}
    if sorted(verdicts.values()) not in (["fails", "holds"], ["holds", "undecided"]):
        return ""
    yes = next(m for m, v in verdicts.items() if v == "holds")
    no = next(m for m, v in verdicts.items() if v != "holds")
    how = "does not hold" if verdicts[no] == "fails" else "undecided"
    return (f"split: holds in TF {yes} ({', '.join(majors[yes])}); {how} in TF {no} "
            f"({', '.join(majors[no])})")


def impossible_reason(spec: dict, cells: pd.DataFrame) -> str:
    """The reason the study's own rules (tfspeed.cells.why_not) give why every configuration the
    line names cannot exist in the TF versions it names, or '' when one of them can."""
    versions = {}
    for r in records(cells):
        if text(r.get("framework")) == "tensorflow" and text(r.get("framework_version")):
            v = text(r.get("framework_version"))
            versions.setdefault(version_key(v)[0], v)
    majors = [m for m in spec.get("tf", [1, 2]) if m in versions]
    if not majors:
        return ""
    axes = {a: spec.get(a) or [default] for a, default in (
        ("model", "small"), ("data", "small"), ("keras", "tf.keras"), ("mode", "graph"),
        ("api", "train_on_batch"), ("input", "numpy"), ("device", "cpu"))}
    reasons = []
    for major in majors:
        env = {"framework": "tensorflow", "framework_version": versions[major],
               "flavours": list(tfcells.KERAS), "devices": ["cpu", "gpu"]}
        for combo in itertools.product(*axes.values()):
            try:
                why = tfcells.why_not(env, dict(zip(axes, combo)))
            except (KeyError, TypeError, ValueError):
                return ""
            if not why:
                return ""
            reasons.append(why)
    return reasons[0] if reasons else ""


def seed_checks(tabs: dict, cells: pd.DataFrame) -> list[dict]:
    return [check_line(kind, words, spec, tabs, cells) for kind, words, spec in SEED_LINES]


# ------------------------------------------------------------------ this machine's own rules

RULE_CONTEXT = {"fit_vs_train_on_batch": ("fit() 1 step/call", "train_on_batch()",
                                          ["mode", "input"]),
                "fit_epoch_vs_train_on_batch": ("fit() epoch/call", "train_on_batch()",
                                                ["mode", "input"]),
                "numpy_vs_tfdata": ("numpy input", "tf.data input", ["mode", "api"]),
                "graph_vs_eager": ("graph mode", "eager mode", ["api", "input"])}


def machine_rules(tabs: dict) -> list[dict]:
    """Factor-level rules like the seed's: per one-factor table and context (e.g. fit vs
    train_on_batch in eager mode with numpy input), which side is faster, by how much, in how
    many pairs and envs. A rule is a DO/DON'T when most pairs are decided the same way. With
    several machines, per machine: each rule's pairs are one machine's, its text names it."""
    out = []
    keys = sorted({text(m) for df in tabs.values() if isinstance(df, pd.DataFrame)
                   and "machine" in df.columns for m in df["machine"]} - {""})
    several = len([k for k in keys if not k.endswith(".twin")]) > 1
    for name, (left_txt, right_txt, ctx) in RULE_CONTEXT.items():
        df = tabs.get(name, pd.DataFrame())
        one = [r for r in records(df) if row_kind(r, name) == "one"]
        groups: dict = {}
        for r in one:
            machine = text(r.get("machine")) if several else ""
            groups.setdefault((machine, *(text(r.get(c)) for c in ctx)), []).append(r)
        for (machine, *key), rows in sorted(groups.items()):
            on = f"{machine}: " if machine else ""
            v = [norm_verdict(r.get("verdict")) for r in rows]
            ratios = [num(r.get("ratio")) for r in rows]
            n, envs = len(rows), len({text(r.get("env")) for r in rows})
            n_left, n_right, n_eq = v.count(LEFT), v.count(RIGHT), v.count(EQUIV)
            where = " + ".join(key)
            if n_right > n / 2:
                slow, fast, k = left_txt, right_txt, n_right
                by = _times([x for x, w in zip(ratios, v) if w == RIGHT])
            elif n_left > n / 2:
                slow, fast, k = right_txt, left_txt, n_left
                by = _times([1 / x for x, w in zip(ratios, v) if w == LEFT and x > 0])
            else:
                text_ = (f"{on}{left_txt} vs {right_txt} ({where}): no rule; {n_eq} equivalent, "
                         f"{n_left} {left_txt} faster, {n_right} {right_txt} faster, "
                         f"{n - n_left - n_right - n_eq} undecided of {n} pairs in {envs} envs")
                out.append({"kind": "none", "text": text_, "n": n, "strength": 0.0,
                            "machine": machine})
                continue
            text_ = (f"{on}DON'T use {slow} with {where}; use {fast}: {slow} takes {by} the time "
                     f"of {fast} in {k} of {n} pairs ({envs} env{'s' if envs != 1 else ''})")
            out.append({"kind": "DONT", "text": text_, "n": n, "use": fast,
                        "strength": max(_num_list(by)), "machine": machine})
    out.sort(key=lambda r: ({"DONT": 0, "none": 1}[r["kind"]], -r["strength"]))
    return out


def _num_list(span: str) -> list[float]:
    vals = [num(p.rstrip("x")) for p in span.replace("–", " ").split()]
    return [v for v in vals if not math.isnan(v)] or [0.0]
