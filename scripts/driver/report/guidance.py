"""Which configuration to use, as rules a reader can act on: the guidance table's DO / DON'T
rows (driver/tables/summaries.py: guidance_table, which decides them on the ratio's interval)
per machine, model and data, task (training and inference apart) and scope (TensorFlow today,
>= 2.16; every framework and version), merged across versions, each with its ratio and
interval, the versions it holds in as one range (a version whose interval does not decide
against the rule belongs to the range; one that does is named as an exception), and the
switches that select it. A configuration is in one list only: the list of its newest decided
version, its versions decided the other way named as exceptions.

Also the call-vs-predict rule (`call_vs_predict` table): call the model rather than predict() on
small batches, per mode, with its range of ratios and intervals."""
import math
import re

import pandas as pd

from driver.report.fmt import col, ncol, num, records, text, version_key
from driver.stats import verdicts
from driver.tables import labels
from driver.tables.summaries import DONT_FACTOR
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


KERAS_TEXT = {"tf_keras": "tf_keras (legacy Keras 2)", "keras3": "Keras 3",
              "tf.keras": "tf.keras", "keras": "standalone Keras", "tf.python.keras":
              "tf.python.keras"}
LEGACY_KERAS = "pip install tf_keras; TF_USE_LEGACY_KERAS=1 before importing TensorFlow"


def rule_label(key: tuple) -> str:
    """'graph · train_on_batch() · numpy · tf_keras (legacy Keras 2)', the family first where
    it is not TensorFlow ('Keras 3 on jax · eager · ...')."""
    family, keras, mode, api, inp = key
    parts = [] if family == frameworks.CATALOGUE[0].short_label else [family]
    parts += [mode if mode in ("graph", "eager") else labels.MODE.get(mode, mode),
              labels.API_PHRASE.get(api, api), "tf.data" if inp == "tfdata" else inp]
    if keras and keras != "none" and not (family.startswith("Keras 3") and keras == "keras3"):
        parts.append(KERAS_TEXT.get(keras, keras))
    return " · ".join(p for p in parts if p)


def switch_text(row, key: tuple) -> str:
    """The lines of code that select a rule's configuration: the legacy Keras where the row
    uses tf_keras (TF >= 2.16), the mode's line (tfspeed/frameworks.py; TF 2's half of it on
    TF 2), and tf.function around the model's call."""
    family, keras, mode, api, _ = key
    parts = []
    if keras == "tf_keras":
        parts.append(LEGACY_KERAS)
    tf2 = (family == frameworks.CATALOGUE[0].short_label
           and text(row.get("framework_version")).startswith("2."))
    if mode == "function" and api == "call":
        parts.append("f = tf.function(model); y = f(x)")
    elif tf2 and mode == "eager":
        parts.append("TF 2's default")
    elif tf2 and mode == "graph":
        parts.append("tf.compat.v1.disable_eager_execution() before any model")
    else:
        line = _framework(row).switches.get(mode, "")
        if line:
            parts.append(line)
    return "; ".join(parts)


def _measured(cells: pd.DataFrame) -> dict:
    out = {}
    if cells is None or cells.empty:
        return out
    ok = cells[col(cells, "status").map(text) == "ok"]
    for r in records(ok):
        key = (text(r.get("machine")), text(r.get("model")), text(r.get("data")), *_rule_key(r))
        out.setdefault(key, set()).add(text(r.get("framework_version")))
    return out


def interval_text(points: list[float], lows: list[float], highs: list[float]) -> str:
    """'2.01x (1.85–2.19x)' for one version, '2.05–5.81x (intervals 1.97–6.02x)' for several."""
    lo, hi = min(points), max(points)
    ratio = f"{lo:.2f}x" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}x"
    a, b = min(lows), max(highs)
    if any(math.isnan(v) for v in lows + highs):
        return ratio
    return f"{ratio} ({'interval' if len(points) == 1 else 'intervals'} {a:.2f}–{b:.2f}x)"


def merge_range(status: dict) -> dict:
    """The versions a rule holds in, as one range: `status` maps each measured version to
    'in' (the rule's verdict), 'open' (undecided: its interval reaches the verdict) or 'out'
    (decided against it). The range runs from the first to the last 'in' version; 'open'
    versions inside it belong to it; 'out' ones anywhere are the exceptions."""
    order = sorted(status, key=version_key)
    ins = [v for v in order if status[v] == "in"]
    if not ins:
        return {"first": "", "last": "", "inside": [], "exceptions": [], "all": False}
    a, b = order.index(ins[0]), order.index(ins[-1])
    inside = [v for v in order[a:b + 1] if status[v] != "out"]
    exceptions = [v for v in order if status[v] == "out"]
    return {"first": ins[0], "last": ins[-1], "inside": inside, "exceptions": exceptions,
            "all": len(inside) == len(order)}


def _where(rng: dict, family: str, n_measured: int) -> str:
    tf = frameworks.CATALOGUE[0].short_label
    if family != tf:
        return family + (f" {rng['first']}" if rng["first"] else "")
    if rng["first"] == rng["last"]:
        span = f"{tf} {rng['first']}"
    else:
        span = f"{tf} {rng['first']}–{rng['last']}"
    if rng["all"] and len(rng["inside"]) == n_measured > 1:
        span += f" (every version measured, {n_measured})"
    return span


def _status(row, kind: str) -> str:
    lst = text(row.get("_list"))
    if lst == kind:
        return "in"
    if kind == "DONT":  # undecided about 2x: its interval reaches it
        high = num(row.get("_high"))
        return "open" if (num(row.get("_ratio")) if math.isnan(high) else high) >= DONT_FACTOR \
            else "out"
    return "out"  # DO: an interval that does not reach the fastest's time decides against


def duet_verdicts(duets: pd.DataFrame | None) -> dict:
    """{(machine, Keras, mode, TF version): the duets' words for that version against the
    reference}: the headline's configuration (train_on_batch, numpy, small model and data),
    which the duets answer more precisely than the cells the guidance splits versions on."""
    out = {}
    if duets is None or duets.empty:
        return out
    for r in records(duets):
        if text(r.get("api")) != "train_on_batch" or text(r.get("env")) == text(
                r.get("right_env")):
            continue
        v = text(r.get("verdict"))
        out[(text(r.get("machine")), text(r.get("keras")), text(r.get("mode")),
             text(r.get("left_framework_version")))] = (
            f"TF {text(r.get('left_framework_version'))} / TF "
            f"{text(r.get('right_framework_version'))} {num(r.get('ratio')):.2f}x "
            f"[{num(r.get('ratio_ci_low')):.2f}, {num(r.get('ratio_ci_high')):.2f}], "
            f"{verdicts.verdict_word(v)}")
    return out


def _rule(key, rows: list[dict], kind: str, n_measured: int, answered: dict | None = None
          ) -> dict:
    """A USE or AVOID rule of one configuration over its versions. `answered` ({version: the
    duets' words}, the headline's configuration only): an exception the duets answer is marked
    descriptive, with the duets' verdict, since the split is the cells' alone."""
    by_version: dict = {}
    for r in rows:  # a version measured twice (twins): its worse row speaks for it
        v = text(r.get("framework_version"))
        if v not in by_version or num(r.get("_ratio")) > num(by_version[v].get("_ratio")):
            by_version[v] = r
    status = {v: _status(r, kind) for v, r in by_version.items()}
    rng = merge_range(status)
    ins = [by_version[v] for v in by_version if status[v] == "in"]
    exc = []
    for v in rng["exceptions"]:
        r = by_version[v]
        said = f"{v}: " + interval_text([num(r.get("_ratio"))], [num(r.get("_low"))],
                                        [num(r.get("_high"))])
        if answered and v in answered:
            said += f", descriptive (the duets answer this: {answered[v]})"
        exc.append(said)
    family = key[0]
    # the ratios and intervals of every version the range names (its undecided ones too), so
    # the range printed covers exactly the versions it states; the undecided ones are named
    covered = [by_version[v] for v in rng["inside"]]
    open_ = [v for v in rng["inside"] if status[v] == "open"]
    return {"rule": rule_label(key), "key": key,
            "where": _where(rng, family, n_measured), "exceptions": exc,
            "open": [f"{v}: " + interval_text([num(by_version[v].get("_ratio"))],
                                              [num(by_version[v].get("_low"))],
                                              [num(by_version[v].get("_high"))])
                     for v in open_],
            "ratio_lo": min(num(r.get("_ratio")) for r in ins),
            "ratio": interval_text([num(r.get("_ratio")) for r in covered],
                                   [num(r.get("_low")) for r in covered],
                                   [num(r.get("_high")) for r in covered]),
            "switch": switch_text(ins[-1], key)}


def _frame(guidance: pd.DataFrame) -> pd.DataFrame:
    df = guidance[col(guidance, "api").map(text) != "matmul"].copy()
    df["_list"] = col(df, "list", "").map(
        lambda v: {"DO": "DO", "DONT": "DONT"}.get(re.sub(r"[^A-Z]", "", text(v).upper()),
                                                  "neither"))
    df["_ratio"] = ncol(df, "ratio_to_fastest")
    # tables written before the interval columns have none (NaN: no interval shown, the point
    # estimate decides where a version belongs)
    df["_low"], df["_high"] = ncol(df, "ratio_ci_low"), ncol(df, "ratio_ci_high")
    # the table's task column (driver/tables/summaries.py); tables written before it had one
    # (an earlier run's) get it from the API as aggregation names it
    df["_task"] = (df["task"].map(text) if "task" in df.columns
                   else col(df, "api").map(lambda a: task(text(a))))
    for c in ["machine", "model", "data"]:
        if c not in df.columns:
            df[c] = ""
    return df


def scope_range(guidance: pd.DataFrame) -> str:
    """'TF 2.16.2–2.21.0': the versions a guidance table's rows span."""
    if guidance.empty:
        return ""
    vs = sorted({text(v) for v in col(guidance, "framework_version") if text(v)},
                key=version_key)
    return f"TF {vs[0]}–{vs[-1]}" if len(vs) > 1 else (f"TF {vs[0]}" if vs else "")


def rules(guidance: pd.DataFrame, cells: pd.DataFrame | None = None,
          duets: pd.DataFrame | None = None) -> list[dict]:
    """Per machine, model/data and task of a guidance table (of one scope, summaries.SCOPES):
    merged USE (DO) and AVOID (DONT) rules, fastest first; a configuration in one list only.
    With the duets table, a version that a rule of the headline's configuration sets apart and
    that the duets answer is marked descriptive (duet_verdicts)."""
    if guidance.empty:
        return []
    duet_words = duet_verdicts(duets)
    df = _frame(guidance)
    measured = _measured(cells)
    out = []
    keys = ["machine", "model", "data", "_task"]
    order = {"train": 0, "infer": 1}
    for (machine, model, data, tk), part in sorted(
            df.groupby(keys, sort=False), key=lambda kv: (text(kv[0][0]), text(kv[0][1]),
                                                          text(kv[0][2]), order.get(kv[0][3], 9))):
        fastest = ncol(part, "fastest_median_s").dropna()
        block = {"machine": text(machine), "model": text(model), "data": text(data),
                 "task": TASK_TEXT.get(tk, tk), "do": [], "dont": [], "between": [],
                 "fastest_ms": float(fastest.iloc[0]) * 1e3 if len(fastest) else math.nan}
        groups: dict = {}
        for r in records(part):
            groups.setdefault(_rule_key(r), []).append(r)
        for key, rows in groups.items():
            decided = [r for r in rows if r["_list"] in ("DO", "DONT")]
            if not decided:  # in between in every version: slower, but not surely 2x
                ratios = [num(r.get("_ratio")) for r in rows]
                versions = sorted({text(r.get("framework_version")) for r in rows},
                                  key=version_key)
                span = versions[0] if len(versions) == 1 else f"{versions[0]}–{versions[-1]}"
                block["between"].append({
                    "rule": rule_label(key), "ratio_lo": min(ratios),
                    "where": f"{key[0]} {span}" if span else key[0],
                    "ratio": interval_text(ratios, [num(r.get("_low")) for r in rows],
                                           [num(r.get("_high")) for r in rows])})
                continue
            newest = max(decided, key=lambda r: version_key(text(r.get("framework_version"))))
            kind = newest["_list"]
            seen = measured.get((text(machine), text(model), text(data), *key), set())
            n = len(seen | {text(r.get("framework_version")) for r in rows})
            answered = ({v: w for (m, k, mo, v), w in duet_words.items()
                         if (m, k, mo) == (text(machine), key[1], key[2])}
                        if (text(model), text(data), key[3], key[4])
                        == ("small", "small", "train_on_batch", "numpy") else {})
            block["do" if kind == "DO" else "dont"].append(_rule(key, rows, kind, n, answered))
        block["do"].sort(key=lambda i: i["ratio_lo"])
        block["dont"].sort(key=lambda i: i["ratio_lo"])
        block["between"].sort(key=lambda i: i["ratio_lo"])
        out.append(block)
    return out


def call_vs_predict(table: pd.DataFrame, names: dict | None = None) -> dict | None:
    """Call the model (model(x), or tf.function around it) rather than predict() on small
    batches: per machine and mode, predict()'s time over the call's with its intervals, the
    versions where the call is faster (the table's verdict) as one range and the versions
    decided the other way as exceptions; each entry names its machine (`names`: key -> plain
    words) when the table holds several. None without call-vs-predict rows."""
    if table is None or table.empty:
        return None
    keys = sorted({text(m) for m in table["machine"]} - {""}) if "machine" in table else [""]
    if len(keys) > 1:
        found = [dict(m, machine=(names or {}).get(k, k))
                 for k in keys
                 for m in (call_vs_predict(table[table["machine"].map(text) == k]) or {}).get(
                     "modes", [])]
        return {"modes": found} if found else None
    modes: dict = {}
    for r in records(table):
        la, ra = text(r.get("left_api")), text(r.get("right_api"))
        if {la, ra} != {"call", "predict"}:
            continue
        ratio, lo, hi = (num(r.get(c)) for c in ("ratio", "ratio_ci_low", "ratio_ci_high"))
        v = text(r.get("verdict"))
        if la == "call":  # predict / call
            ratio, lo, hi = 1 / ratio, 1 / hi, 1 / lo
            call_faster, predict_faster = verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER
        else:
            call_faster, predict_faster = verdicts.RIGHT_FASTER, verdicts.LEFT_FASTER
        state = "in" if v == call_faster else "out" if v == predict_faster else "open"
        version = text(r.get("framework_version"))
        modes.setdefault(text(r.get("mode")), {})[version] = (state, ratio, lo, hi)
    if not modes:
        return None
    out = []
    for mode in sorted(modes, key=lambda m: {"eager": 0, "function": 1, "graph": 2}.get(m, 3)):
        vs = modes[mode]
        rng = merge_range({v: s[0] for v, s in vs.items()})
        ins = [vs[v] for v in vs if vs[v][0] == "in"]
        if not ins:
            continue
        exc = [f"{v}: predict() {1 / vs[v][1]:.2f}x as fast" for v in rng["exceptions"]]
        # "machine": named only when the table holds several (the template reads the key)
        out.append({"mode": mode, "where": _where(rng, "TF", len(vs)), "exceptions": exc,
                    "machine": "",
                    "ratio": interval_text([s[1] for s in ins], [s[2] for s in ins],
                                           [s[3] for s in ins])})
    if not out:
        return None
    return {"modes": out}


def _switch(row, mode: str) -> str:
    return _framework(row).switches.get(mode, "")


def switch_lines(blocks: list[dict]) -> list[tuple[str, str]]:
    """(mode, the line of code) for every mode the rules name, in the catalogue's order (each
    framework's `switches`, tagged with its `tag`)."""
    named = {i["key"][2] for b in blocks for i in b["do"] + b["dont"]}
    return [(f"{mode} ({fw.tag})", line) for fw in frameworks.CATALOGUE
            for mode, line in fw.switches.items() if mode in named]
