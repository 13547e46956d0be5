"""The comparison tables as the report shows them: every registered comparison (driver/tables/registry.py,
so a table added there appears here), its rows split by what they change. Rows that change one
factor come first; rows whose sides also use different Keras flavours, and the matmul micro-case
(whose `numpy` mode runs no TensorFlow), get their own tables. The aggregation's CSVs keep every
row; only the report separates them.

The frameworks answer (`frameworks_best`): each framework's fastest cell per model, data and task
against TensorFlow's fastest, as aggregation compared them (in the study's one Benjamini-Hochberg
family); the report only lays the rows out."""
import pandas as pd

from driver.report.answer import norm_verdict, row_kind
from driver.report.fmt import cell, col, fmt_ms, fmt_p, fmt_ratio, num, records, text
from driver.report.views import comparison_view
from driver.stats.verdicts import EQUIVALENT, LEFT_FASTER, RIGHT_FASTER, words
from driver.tables.labels import value_label
from driver.tables.registry import BY_NAME, COMPARISONS, REGISTRY
from tfspeed.cells import parse_cell_id

# Shown by best_vs_best, above the one-factor tables.
SHOWN_APART = tuple(t.name for t in REGISTRY if t.shown_apart)  # each table's `shown_apart`
KIND_TITLE = {"cross": "rows that also change the Keras flavour",
              "micro": "the matmul micro-case"}
# The comparisons whose glance is open on the page (the questions the answer names: TF 2 against
# TF 1, graph against eager, calling the model against predict()); the others are folded under
# their one-line digest, every row a click away.
OPEN = ("tf2_vs_tf1", "graph_vs_eager", "call_vs_predict")
# ... while their glance is short enough to read open (a study of two machines doubles it)
OPEN_MAX_ROWS = 24


def open_glance(view: dict) -> bool:
    """Whether a comparison's glance fits open on the page: rows, and at most OPEN_MAX_ROWS."""
    shown = view.get("glance") or view.get("full") or {}
    return bool(view["rows"]) and len(shown.get("rows") or []) <= OPEN_MAX_ROWS


def digest(view: dict) -> str:
    """A comparison in one line: '<n> pairs: TF 2 slower in <k>, faster in <j>, equivalent in
    <e>, undecided in <u>' (the counts of its verdicts, the words of the report)."""
    if not view.get("rows"):
        return "no rows"
    counts = view.get("counts") or {}
    side = (view.get("sides") or ("first",))[0]
    parts = [f"{w} in {n}" for w, n in counts.items()]
    if parts and list(counts)[0] in ("slower", "faster"):
        parts[0] = f"{side} {parts[0]}"
    return f"{view['rows']} pairs" + (": " + ", ".join(parts) if parts else "")


def split_views(tabs: dict) -> list[dict]:
    """One entry per registered comparison: its one-factor view and, where there are any, its
    cross-flavour rows; the matmul rows of every table are gathered at the end."""
    out, micro = [], []
    for name in COMPARISONS:
        if name in SHOWN_APART:
            continue
        df = tabs.get(name, pd.DataFrame())
        kinds = pd.Series([row_kind(r, name) for r in records(df)], index=df.index, dtype=object)
        one = comparison_view(name, df[kinds == "one"] if len(df) else df)
        entry = {"name": name, "main": one, "extra": [], "n_all": len(df),
                 "open": name in OPEN and open_glance(one)}
        if name == "frameworks":
            one["title"] = "Frameworks: every env and mode vs one TF reference cell"
        cross = df[kinds == "cross"] if len(df) else df
        if len(cross):
            view = comparison_view(name, cross)
            view["title"] = f"{one['title']}: {KIND_TITLE['cross']}"
            view["note"] = ("Not one-factor comparisons: the sides differ in the Keras flavour "
                            "too (from TF 2.16, tf.keras is Keras 3 and Keras 2 is the tf_keras "
                            "package). The answer above takes none of these rows: it comes from the "
                            "duets (or, without duets, from the like-for-like rows, tf_keras "
                            "standing in for tf.keras from TF 2.16).")
            _rename(view, f"{name}-cross")
            entry["extra"].append(view)
        if len(df) and (kinds == "micro").any():
            part = df[kinds == "micro"].assign(_table=BY_NAME[name].title if name in BY_NAME
                                               else name)
            micro.append(part)
        out.append(entry)
    if micro:
        df = pd.concat(micro, ignore_index=True)
        view = comparison_view("micro", df)
        view["title"] = "The matmul micro-case (seed 004), from every table"
        view["sign"] = "+ when the first-named side is faster"
        modes = set(col(df, "mode").map(text)) | set(col(df, "left_mode").map(text)) \
            | set(col(df, "right_mode").map(text))
        view["note"] = ("1000 x 1000 matmul, not training. " + (
            "Rows in mode numpy run NumPy alone, no TensorFlow (NumPy versions differ between "
            "envs): they say nothing about TensorFlow." if "numpy" in modes else ""))
        _rename(view, "micro")
        out.append({"name": "micro", "main": view, "extra": [], "n_all": len(df), "open": False})
    for entry in out:
        for view in (entry["main"], *entry["extra"]):
            view["digest"] = digest(view)
    return out


def _rename(view: dict, name: str) -> None:
    view["name"] = name
    if view.get("full"):
        view["full"]["id"] = f"t-{name}"


def _label(r: dict, side: str) -> str:
    parts = [value_label(c, text(r.get(f"{side}_{c}")))
             for c in ("env", "keras", "mode", "api", "input")]
    return " · ".join(p for p in parts if p and p != "none")


def who_wins(v: str, ratio: float, left: str, min_effect: float) -> str:
    """'<left>, 1.43x as fast', 'TensorFlow, ...', 'neither (within 10%)' or the verdict's word:
    a frameworks row's verdict (ratio left / TensorFlow) in the report's words."""
    if v == LEFT_FASTER:
        return f"{left}, {1 / ratio:.2f}x as fast"
    if v == RIGHT_FASTER:
        return f"TensorFlow, {ratio:.2f}x as fast"
    if v == EQUIVALENT:
        return f"neither (within {min_effect:.0%})"
    return words(v).word


def _interval_cell(r: dict) -> dict:
    ratio = num(r.get("ratio"))
    return cell(f"{fmt_ratio(ratio)} [{fmt_ratio(num(r.get('ratio_ci_low')))}, "
                f"{fmt_ratio(num(r.get('ratio_ci_high')))}]", "num", v=ratio)


PREDICT_APIS = ("call", "predict", "predict_on_batch")


def answering_duets(row: dict, duets: pd.DataFrame | None) -> list[dict]:
    """The duets_frameworks rows that answer a frameworks_best row: the same machine, the best
    cell's env as their other framework's side, the same model and data, and a training way for
    the task "train" (an inference way for "predict")."""
    if duets is None or duets.empty:
        return []
    out = []
    for d in records(duets):
        try:
            c = parse_cell_id(text(d.get("left_cell_id")))
        except (ValueError, KeyError, TypeError):
            continue
        task = "predict" if c.get("api") in PREDICT_APIS else "train"
        if (text(d.get("machine")) == text(row.get("machine"))
                and text(d.get("left_env")) == text(row.get("left_env"))
                and c.get("model") == text(row.get("model"))
                and c.get("data") == text(row.get("data")) and task == text(row.get("task"))):
            out.append(d)
    return out


def best_vs_best(table: pd.DataFrame, min_effect: float,
                 duets: pd.DataFrame | None = None) -> dict:
    """The `frameworks_best` table as the report shows it: who wins, by how much. Every figure
    and verdict comes from aggregation (driver/tables/comparisons.py); nothing is tested here.
    A row that duets of the same framework answer (`answering_duets`, config duets.frameworks)
    gives their verdict in its "who wins" cell, marked descriptive (the cells' own in the cell's
    title), and is counted apart (`descriptive`)."""
    columns = [{"label": c, "csv": csv, "num": n} for c, csv, n in (
        ("model · data · device · task", "model, data, device, task", False),
        ("framework", "left_family", False),
        ("its best cell", "left_env, left_keras, left_mode, left_api, left_input", False),
        ("ms", "left_median_s", True),
        ("TF's best cell", "right_env, right_keras, right_mode, right_api, right_input", False),
        ("TF ms", "right_median_s", True),
        ("ratio [tested interval]", "ratio, ratio_ci_low, ratio_ci_high", True),
        ("who wins", "verdict", False), ("p (adjusted)", "p_adjusted", True))]
    out, n_descriptive = [], 0
    for r in records(table):
        ratio, fam = num(r.get("ratio")), text(r.get("left_family"))
        v = norm_verdict(r.get("verdict"))
        cls, win = words(v).cls, who_wins(v, ratio, fam, min_effect)
        answers = answering_duets(r, duets)
        if answers:
            n_descriptive += 1
            said = "; ".join(
                f"{_way(d.get('left_env'), d.get('left_cell_id'))}: "
                + who_wins(norm_verdict(d.get("verdict")), num(d.get("ratio")), fam, min_effect)
                for d in answers)
            verdict = cell(f"descriptive (duets answer this: {said})", "",
                           title=f"the cells' own verdict: {win}")
        else:
            verdict = cell(win, cls)
        where = " · ".join(text(r.get(c)) for c in ("model", "data", "device", "task"))
        lm, rm = num(r.get("left_median_s")), num(r.get("right_median_s"))
        out.append([cell(where), cell(fam), cell(_label(r, "left")),
                    cell(fmt_ms(lm), "num", v=lm), cell(_label(r, "right")),
                    cell(fmt_ms(rm), "num", v=rm), _interval_cell(r),
                    verdict, cell(fmt_p(r.get("p_adjusted")), "num",
                                  v=num(r.get("p_adjusted")))])
    return {"id": "t-best", "columns": columns, "rows": out, "n": len(out),
            "descriptive": n_descriptive}


def _way(env, cell_id) -> str:
    """A duet side as the page names it: env · keras · mode · api · input (from its cell id)."""
    try:
        c = parse_cell_id(text(cell_id))
    except (ValueError, KeyError, TypeError):
        return text(env)
    parts = [text(env)] + [value_label(k, text(c.get(k))) for k in ("keras", "mode", "api",
                                                                      "input")]
    return " · ".join(p for p in parts if p and p != "none")


def frameworks_duets(table: pd.DataFrame, min_effect: float) -> dict:
    """The `duets_frameworks` table as the report shows it (config duets.frameworks): each other
    framework's way against TensorFlow's, decided by duets (replicated, looked at twice, in a
    family of their own). Every figure comes from aggregation (driver/tables/duets.py)."""
    columns = [{"label": c, "csv": csv, "num": n} for c, csv, n in (
        ("machine", "machine", False),
        ("other framework's way", "left_env, left_cell_id", False),
        ("ms", "left_median_s", True),
        ("TensorFlow's way", "right_env, right_cell_id", False),
        ("TF ms", "right_median_s", True),
        ("ratio [tested interval]", "ratio, ratio_ci_low, ratio_ci_high", True),
        ("duets", "n", True), ("who wins", "verdict", False))]
    out = []
    for r in records(table):
        ratio, v = num(r.get("ratio")), norm_verdict(r.get("verdict"))
        win = who_wins(v, ratio, text(r.get("left_env")), min_effect)
        lm, rm = num(r.get("left_median_s")), num(r.get("right_median_s"))
        out.append([cell(text(r.get("machine"))),
                    cell(_way(r.get("left_env"), r.get("left_cell_id"))),
                    cell(fmt_ms(lm), "num", v=lm),
                    cell(_way(r.get("right_env"), r.get("right_cell_id"))),
                    cell(fmt_ms(rm), "num", v=rm), _interval_cell(r),
                    cell(f"{int(num(r.get('n')))}", "num", v=num(r.get("n"))),
                    cell(win, words(v).cls)])
    return {"id": "t-best-duets", "columns": columns, "rows": out, "n": len(out)}
