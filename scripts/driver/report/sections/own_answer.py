"""The answer for a user's own model (config `models`, docs/own-model.md), in one sentence per
model and task: the fastest way to train it (and to predict with it) on this machine, the ways as
fast within the margin, the ways to avoid, each with its ratio to the fastest and its interval, and
what the run did not decide. That sentence opens a paragraph: one sentence more per other env and
mode with pairs, and one of what stayed undecided. An OPTIONAL section: a study without a
user's model has no data for it, and the page leaves it out.

Every verdict in it comes from a paired row (docs/design.md "Every verdict from a paired row"):

- inside one env and mode, the ways (Keras flavour, API, input) are compared by the `pairs`
  table (pairs in one process, config `pairs`; driver/tables/duets.py). Its rows join the ways
  of an env and mode into a graph (a way's key: its env and cell id); the fastest way is the
  one the pairs' log ratios put first
  (a weighted least-squares fit of one log time per way, weights 1 / se^2), never one a pair
  calls slower than another. Every other way is set against it by the pair of the two where
  there is one (its verdict, ratio and interval as the pairs table has them, turned round
  where the fastest is the pair's left side), else by a row derived along the shortest chain of
  pairs between them: the sum of the chain's log ratios, se sqrt(sum se^2), Welch-Satterthwaite
  df, judged as the derived duet rows are (duets_releases.judged: under the rows' two-look
  design, Benjamini-Hochberg over this paragraph's derived rows, TOST at the margin);
- across envs and modes (TF 1 graph against TF 2 eager, one env against another), the
  `duets_own` table's duets (config `duets.models`, duetplan.plan_own: each TF 2.x env's cell
  against the reference env's in each mode, and the reference's graph against its eager cell)
  join the groups of ways into one graph, chained as the pairs are (a chain may step through
  pairs and duets alike); so do the `duets_frameworks` table's duets of the model (config
  `duets.frameworks`: Keras 3 on JAX or torch against a TensorFlow way);
- where no paired row joins an env and mode to the fastest way (no `duets.models`, or a cell the
  duets do not time), which env and mode is fastest is taken from the cells' `frameworks` rows
  (fresh processes; driver/tables/comparisons.py: frameworks_table), and the paragraph says so:
  those rows are *descriptive*, named with their ratio and the cells' own verdict in a clause of
  their own, and counted apart. A cells-only row is never called fastest, as fast or to avoid;
- without any pairs row for the model and task (a study with `pairs.tables: []`), the paragraph
  says that nothing decided it and gives the cells' rows, descriptive.
"""
import math
from collections import deque

import numpy as np
import pandas as pd
from scipy import stats as sps

from driver.stats.verdicts import EQUIVALENT, LEFT_FASTER, RIGHT_FASTER, UNDECIDED, norm_code
from tfspeed.cells import parse_cell_id
from tfspeed.cells import task as task_of

ID, TITLE, ORDER = "own_answer", "Your model", 10.5  # right after the answer (verdict, 10)
OPTIONAL = True

TASKS = {"train": "train", "infer": "predict with"}
SWAP = {LEFT_FASTER: RIGHT_FASTER, RIGHT_FASTER: LEFT_FASTER}
VERDICT_WORDS = {LEFT_FASTER: "faster", RIGHT_FASTER: "slower", EQUIVALENT: "equivalent",
                 UNDECIDED: "undecided"}


def way(row: dict, side: str) -> str:
    """'tf_keras, graph, train_on_batch, numpy in tf2.21': one way of running the model (a
    frameworks row's side)."""
    parts = [row.get(f"{side}_{k}") for k in ("keras", "mode", "api", "input")]
    return "%s in %s" % (", ".join(str(p) for p in parts if isinstance(p, str) and p != "none"),
                         row.get(f"{side}_env"))


def way_of(cell_id: str, env: str) -> str:
    """The same words for a cell of the pairs table (its cell id and env)."""
    cell = parse_cell_id(cell_id)
    return way({f"c_{k}": v for k, v in cell.items()} | {"c_env": env}, "c")


def _num(value) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return math.nan
    return value


def _ratio(ratio, low, high) -> str:
    interval = ("%.2f–%.2f" % (low, high) if math.isfinite(_num(low))
                and math.isfinite(_num(high)) else "no interval")
    return "%.2fx [%s]" % (ratio, interval)


# ------------------------------------------------------------------------------ paired rows

def _records(df) -> list[dict]:
    if df is None or getattr(df, "empty", True):
        return []
    return df.to_dict("records")


def node(env, cell_id) -> str:
    """A way's key in the graph of paired rows: its env and cell id."""
    return "%s|%s" % (env, cell_id)


def way_of_node(key: str) -> str:
    env, cell_id = key.split("|", 1)
    return way_of(cell_id, env)


def setting_of(key: str) -> tuple:
    """(env, mode) of a way's key."""
    env, cell_id = key.split("|", 1)
    return env, parse_cell_id(cell_id)["mode"]


def paired_rows(pairs: pd.DataFrame, model: str, task: str,
                duets: pd.DataFrame | None = None) -> list[dict]:
    """The rows of `model` and `task` (their left cell's) that join two of its ways: the pairs
    table's (inside an env and mode) and the duets_own table's (across envs and modes), A/A rows
    left out (a cell against itself compares no ways); each with `_left`, `_right` (the cells'
    axes), `_l`, `_r` (the ways' keys, `node`) and `_design` (pair or duet)."""
    out = []
    for design, table in (("pair", pairs), ("duet", duets)):
        for r in _records(table):
            try:
                left, right = (parse_cell_id(str(r.get(f"{s}_cell_id"))) for s in ("left",
                                                                                   "right"))
            except ValueError:
                continue
            lk = node(r.get("left_env") or r["env"], r["left_cell_id"])
            rk = node(r.get("right_env") or r["env"], r["right_cell_id"])
            if left["model"] != model or task_of(left["api"]) != task or lk == rk:
                continue
            out.append(dict(r, _left=left, _right=right, _l=lk, _r=rk, _design=design))
    return out


def _decided(r: dict) -> bool:
    return math.isfinite(_num(r.get("log_ratio"))) and math.isfinite(_num(r.get("ratio")))


def _groups(rows: list[dict]) -> list[list[dict]]:
    """The rows of each connected group of ways (ways joined by a paired row with an estimate:
    pairs inside an env and mode, duets across them), in a stable order."""
    todo = sorted((r for r in rows if _decided(r)), key=lambda r: (r["_l"], r["_r"]))
    out = []
    while todo:
        group = [todo.pop(0)]
        seen = {group[0]["_l"], group[0]["_r"]}
        grew = True
        while grew:
            grew = False
            for r in list(todo):
                if {r["_l"], r["_r"]} & seen:
                    group.append(r)
                    todo.remove(r)
                    seen |= {r["_l"], r["_r"]}
                    grew = True
        out.append(group)
    return out


def _fit(group: list[dict]) -> dict:
    """{cell id: log time relative to the group's first way}: weighted least squares over the
    group's pairs (each a log ratio left / right, weight 1 / se^2; a pair without an se gets
    the smallest weight of the others)."""
    nodes = sorted({r[k] for r in group for k in ("_l", "_r")})
    index = {c: i for i, c in enumerate(nodes)}
    ses = [_num(r.get("se_log")) for r in group]
    finite = [1 / s ** 2 for s in ses if math.isfinite(s) and s > 0]
    floor = min(finite) if finite else 1.0
    a = np.zeros((len(group), len(nodes)))
    y = np.zeros(len(group))
    for i, (r, se) in enumerate(zip(group, ses)):
        w = math.sqrt(1 / se ** 2 if math.isfinite(se) and se > 0 else floor)
        a[i, index[r["_l"]]], a[i, index[r["_r"]]] = w, -w
        y[i] = w * _num(r["log_ratio"])
    est = np.zeros(len(nodes))
    est[1:] = np.linalg.lstsq(a[:, 1:], y, rcond=None)[0]
    return dict(zip(nodes, est))


def _chain(group: list[dict], start: str, goal: str) -> list[tuple[dict, int]]:
    """The shortest chain of pairs from way `start` to way `goal`: [(row, sign)], sign +1 where
    the chain steps from the row's right side to its left, -1 the other way round, so that the
    sum of sign * log ratio is log(goal / start)."""
    edges = {}
    for r in group:
        edges.setdefault(r["_l"], []).append((r["_r"], r, -1))
        edges.setdefault(r["_r"], []).append((r["_l"], r, +1))
    back, queue = {start: None}, deque([start])
    while queue:
        node = queue.popleft()
        for nxt, r, sign in edges.get(node, []):
            if nxt not in back:
                back[nxt] = (node, r, sign)
                queue.append(nxt)
    out, node = [], goal
    while back.get(node) is not None:
        node, r, sign = back[node]
        out.append((r, sign))
    return out[::-1]


def _against_best(group: list[dict], best: str, other: str) -> dict:
    """`other` against the group's fastest way `best` (ratio other / best): the pair of the two
    where there is one (turned round where `best` is its left side), else the chain's sums for
    a derived row (judged later, with the paragraph's other derived rows)."""
    for r in group:
        if (r["_l"], r["_r"]) == (other, best):
            return {"design": r["_design"], "ratio": _num(r["ratio"]),
                    "low": _num(r["ratio_ci_low"]),
                    "high": _num(r["ratio_ci_high"]), "verdict": norm_code(r.get("verdict"))}
        if (r["_l"], r["_r"]) == (best, other):
            return {"design": r["_design"], "ratio": 1 / _num(r["ratio"]),
                    "low": 1 / _num(r["ratio_ci_high"]), "high": 1 / _num(r["ratio_ci_low"]),
                    "verdict": SWAP.get(norm_code(r.get("verdict")), norm_code(r.get("verdict")))}
    chain = _chain(group, best, other)
    return {"design": "derived", "chain": chain, "n_pairs": len(chain),
            "duets": sum(r["_design"] == "duet" for r, _ in chain)}


def paired_best(pairs: pd.DataFrame, model: str, task: str,
                duets: pd.DataFrame | None = None) -> list[dict]:
    """Per connected group of ways that the paired rows join (pairs inside an env and mode; with
    the duets_own table, duets across them): {"env", "mode" (the fastest way's), "cell_id",
    "way" (the fastest way), "others": [{"cell_id", "way", "design", ...}], "settings" (the
    group's envs and modes)}, the fastest of the rows' fit among the ways no row calls slower
    than another (all, where every way is called slower by some row: a cycle of verdicts)."""
    out = []
    for group in _groups(paired_rows(pairs, model, task, duets)):
        est = _fit(group)
        slower = set()
        for r in group:
            code = norm_code(r.get("verdict"))
            if code == RIGHT_FASTER:
                slower.add(r["_l"])
            elif code == LEFT_FASTER:
                slower.add(r["_r"])
        pool = [c for c in est if c not in slower] or list(est)
        best = min(pool, key=lambda c: (est[c], c))
        env, mode = setting_of(best)
        others = [dict(_against_best(group, best, c), cell_id=c, way=way_of_node(c))
                  for c in sorted(est, key=lambda c: (est[c], c)) if c != best]
        out.append({"env": env, "mode": mode, "cell_id": best, "way": way_of_node(best),
                    "others": others, "n_pairs": len(group),
                    "settings": sorted({setting_of(c) for c in est})})
    return out


def _judge_derived(settings: list[dict], q: float, min_effect: float, alpha: float) -> None:
    """The derived rows of a paragraph (chains of pairs), judged together as the derived duet
    rows are (duets_releases.judged), in place."""
    from driver.tables.duets import design_of, tost_p
    from driver.tables.duets_releases import judged
    from driver.tables.machines_compared import welch

    derived = [o for s in settings for o in s["others"] if o["design"] == "derived"]
    if not derived:
        return
    rows = []
    for o in derived:
        diff, se, dof = 0.0, 0.0, math.inf
        for i, (r, sign) in enumerate(o["chain"]):
            step = sign * _num(r["log_ratio"])
            if i == 0:
                diff, se, dof = step, _num(r["se_log"]), _num(r["df"])
            else:
                diff, se, dof, _ = welch(diff, se, dof, -step, _num(r["se_log"]), _num(r["df"]))
        p = (float(2 * sps.t.sf(abs(diff) / se, dof))
             if math.isfinite(se) and se > 0 and math.isfinite(dof) else math.nan)
        rows.append({"log_ratio": diff, "se_log": se, "df": dof, "p": p,
                     "p_equivalent": tost_p(diff, se, dof, min_effect),
                     "_design": design_of(*[r for r, _ in o["chain"]])})
    got = judged(pd.DataFrame(rows), q, min_effect, alpha)
    for o, g in zip(derived, got.to_dict("records")):
        o.update(ratio=_num(g["ratio"]), low=_num(g["ratio_ci_low"]),
                 high=_num(g["ratio_ci_high"]), verdict=norm_code(g["verdict"]))


# ------------------------------------------------------------------------------ the paragraph

def _cells_rows(frameworks: pd.DataFrame, model: str, task: str) -> list[dict]:
    return sorted((r for r in _records(frameworks) if r.get("model") == model
                   and task_of(str(r.get("left_api"))) == task), key=lambda r: _num(r["ratio"]))


def _setting_order(cells: list[dict]) -> dict:
    """{(env, mode): the cells' ratio of its fastest cell to TensorFlow's fastest} (that one's
    own env and mode: 1)."""
    out = {(r["left_env"], r["left_mode"]): _num(r["ratio"]) for r in cells}
    for r in cells:
        out.setdefault((r["right_env"], r["right_mode"]), 1.0)
    return out


def _item(o: dict) -> str:
    how = {"pair": "a pair", "duet": "a duet"}.get(o["design"]) or (
        "derived from %d pairs" % o["n_pairs"] if not o.get("duets")
        else "derived from %d paired rows, %d of them duets" % (o["n_pairs"], o["duets"]))
    return "%s (%s, %s)" % (o["way"], _ratio(o["ratio"], o["low"], o["high"]), how)


def _descriptive(r: dict) -> str:
    return "%s (%s, the cells' verdict: %s)" % (
        way(r, "left"), _ratio(_num(r["ratio"]), r.get("ratio_ci_low"), r.get("ratio_ci_high")),
        VERDICT_WORDS.get(norm_code(r.get("verdict")), "undecided"))


def answer(pairs: pd.DataFrame, frameworks: pd.DataFrame, model: str, task: str,
           margin_pct: float, q: float = 0.05, alpha: float = 0.05,
           duets: pd.DataFrame | None = None) -> dict | None:
    """{"text", "paired", "derived", "descriptive", "fastest"} for `model` and `task` ("train",
    "infer"): the paragraph and how many of its rows each design gave; None without rows.
    `duets`: the duets_own table (the model across envs and modes), where the study has one."""
    settings = paired_best(pairs, model, task, duets)
    cells = _cells_rows(frameworks, model, task)
    if not settings and not cells:
        return None
    verb = TASKS[task]
    if not settings:
        text = ("No paired row decides how to %s %s here (config `pairs` times its ways in one "
                "process, `duets.models` across envs and modes). From the cells of fresh "
                "processes, descriptive only: the cells put %s first; the others, against it: "
                "%s." % (verb, model, way(cells[0], "right"),
                         "; ".join(_descriptive(r) for r in cells) or "none"))
        return {"text": text, "paired": 0, "derived": 0, "descriptive": len(cells),
                "fastest": None}
    _judge_derived(settings, q, margin_pct / 100.0, alpha)
    order = _setting_order(cells)
    settings.sort(key=lambda s: (-len(s["settings"]), order.get((s["env"], s["mode"]), math.inf),
                                 s["env"], s["mode"]))
    top = settings[0]
    joined = {tuple(x) for x in top["settings"]}
    first = min(order, key=order.get) if order else None
    if len(joined) > 1:
        where = ("paired rows join %d envs and modes: pairs in one process inside each, duets "
                 "across them" % len(joined))
        if order and not set(order) <= joined:
            where += "; the others are descriptive (below)"
    elif len(order) <= 1:
        where = "the only env and mode with ways to compare"
    elif first == (top["env"], top["mode"]):
        where = "which env and mode holds it is descriptive: the cells put it first"
    else:
        where = ("the first of the envs and modes the pairs compare; which is fastest of all is "
                 "descriptive: the cells put %s, %s first" % first)
    text, undecided = "", []
    for i, s in enumerate(settings):
        by = {v: [o for o in s["others"] if o.get("verdict") == v]
              for v in (EQUIVALENT, RIGHT_FASTER, LEFT_FASTER, UNDECIDED)}
        undecided += by[UNDECIDED] + by[LEFT_FASTER]  # a faster one: a chain against its pair
        text += (("The fastest way to %s %s here is %s" % (verb, model, s["way"])) if i == 0
                 else " In %s, %s the pairs put %s first" % (s["env"], s["mode"], s["way"]))
        if by[EQUIVALENT]:
            text += "; as fast within ±%g %%: %s" % (
                margin_pct, "; ".join(_item(o) for o in by[EQUIVALENT]))
        if by[RIGHT_FASTER]:
            text += "; avoid: %s" % "; ".join(
                _item(o) for o in sorted(by[RIGHT_FASTER], key=lambda o: -o["ratio"]))
        if i == 0:
            text += (" (%s)." % where if len(joined) > 1
                     else " (pairs in one process within %s, %s; %s)." % (s["env"], s["mode"],
                                                                          where))
        else:
            text += "."
    # the cells' rows of the envs and modes no paired row joins to the fastest way: descriptive
    others = [r for r in cells if (r["left_env"], r["left_mode"]) not in joined
              or len(joined) == 1]
    not_decided = ["%s against %s" % (_item(o), best["way"]) for best in settings
                   for o in best["others"] if o in undecided]
    if others or len(joined) == 1:
        why = ("no paired design compares your model across envs and modes yet"
               if len(joined) == 1 else "no paired row joins them to the fastest way")
        not_decided.append(
            "which env and mode is fastest%s: %s, so the cells' rows (fresh processes, "
            "descriptive, counted apart) stand there, each env and mode's fastest cell against "
            "the cells' fastest (%s): %s" % (
                "" if len(joined) == 1 else " among the others", why,
                way(cells[0], "right") if cells else "none",
                "; ".join(_descriptive(r) for r in others) or "none"))
    text += " Not decided by this run: %s." % ("; ".join(not_decided) or "nothing")
    n_pair = sum(o["design"] in ("pair", "duet") for s in settings for o in s["others"])
    n_derived = sum(o["design"] == "derived" for s in settings for o in s["others"])
    return {"text": text, "paired": n_pair, "derived": n_derived, "descriptive": len(others),
            "fastest": top}


def lead(pairs: pd.DataFrame, frameworks: pd.DataFrame, model: str, task: str,
         margin_pct: float, q: float = 0.05, alpha: float = 0.05,
         duets: pd.DataFrame | None = None) -> str | None:
    """The paragraph of answer(), or None."""
    got = answer(pairs, frameworks, model, task, margin_pct, q, alpha, duets)
    return got["text"] if got else None


def _this_machine(df: pd.DataFrame, machine: str) -> pd.DataFrame:
    """The rows of the report's machine (a study of several machines has rows of each; a pair's
    ways are never chained across machines); all rows where none names it."""
    if df is None or df.empty or "machine" not in df.columns or not machine:
        return df
    mine = df[df["machine"].astype(str) == str(machine)]
    return mine if len(mine) else df


def build(data) -> dict:
    """{"leads": [{"model", "task", "text", "paired", "derived", "descriptive"}]} for each of
    the config's own models; {} for a study of the seed's models alone."""
    config = data.config or {}
    own = list(config.get("models") or {})
    if not own:
        return {}
    pairs, frameworks, duets, others = (_this_machine(data.table(t), data.machine)
                                        for t in ("pairs", "frameworks", "duets_own",
                                                  "duets_frameworks"))
    # other frameworks' ways of the model in duets (config duets.frameworks): Keras 3 on JAX or
    # torch joined to TensorFlow's ways, as duets_own joins envs and modes
    duets = pd.concat([t for t in (duets, others) if t is not None] or [pd.DataFrame()],
                      ignore_index=True)
    margin = 100 * float(config.get("min_effect") or 0.1)
    q, alpha = float(config.get("fdr_q") or 0.05), float(config.get("equivalence_alpha") or 0.05)
    leads = []
    for m in own:
        for t in TASKS:
            got = answer(pairs, frameworks, m, t, margin, q, alpha, duets)
            if got:
                leads.append({"model": m, "task": t, **{k: v for k, v in got.items()
                                                        if k != "fastest"}})
    return {"leads": leads}
