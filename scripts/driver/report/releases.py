"""What each release changed, as the report shows it: the `adjacent_releases` rows grouped per
release (the configurations it made faster or slower, by how much, and how many it left alone
or undecided), the `changepoints` rows, the marks for the history panels, and which envs are new
in this study. Every figure and verdict comes from aggregation (driver/tables/releases.py);
nothing is tested here.

A new env is one whose cells all started more than NEW_ENV_GAP_S after the last cell of every
other env: an env file added to a finished study and run on its own (Snakemake reuses the other
envs' cell files). Its release comes first on the page. Without one, the newest release of each
line leads."""
import datetime
import math

import pandas as pd

from driver.report.fmt import cell, col, fmt_ms, fmt_p, fmt_ratio, num, records, text
from driver.stats import verdicts
from driver.tables.ordering import env_sort_key

NEW_ENV_GAP_S = 1800.0
LINE_ORDER = {"TensorFlow": 0, "PyTorch": 1}
MODE_ORDER = {"graph": 0, "eager": 1, "function": 2, "xla": 3, "run_eagerly": 4}
PANEL_KEYS = ["machine", "model", "data", "keras", "mode", "api", "input", "device"]


def _time(value):
    try:
        return datetime.datetime.fromisoformat(text(value))
    except ValueError:
        return None


def new_envs(cells: pd.DataFrame, gap_s: float = NEW_ENV_GAP_S) -> list[str]:
    """Envs whose every cell started more than gap_s after the last start of every other env."""
    if cells.empty or "started_utc" not in cells.columns or cells["env"].nunique() < 2:
        return []
    starts = pd.DataFrame({"env": col(cells, "env").map(text),
                           "t": [_time(v) for v in col(cells, "started_utc")]}).dropna()
    if starts.empty:
        return []
    first, last = starts.groupby("env")["t"].min(), starts.groupby("env")["t"].max()
    out = []
    for env in first.index:
        others = last.drop(env)
        if len(others) and (first[env] - others.max()).total_seconds() > gap_s:
            out.append(env)
    return out


def keras_label(r: dict) -> str:
    """The Keras a row's two sides use: one name when both use the same (tf_keras on both sides
    is tf_keras, whatever the `keras` axis says), 'earlier → later' when they differ."""
    keras, left, right = (text(r.get(k)) for k in ("keras", "left_keras", "right_keras"))
    if left and right:
        return left if left == right else f"{right} → {left}"
    return left or keras


# the configuration the duets time (driver/tables/duets.py): train_on_batch on the small model
# and data, numpy input, on the CPU; a cells' row of another configuration is not theirs
DUET_CONFIG = {"model": "small", "data": "small", "device": "cpu"}
DUET_KEYS = ("machine", "mode", "api", "input", "left_env", "right_env", "left_keras",
             "right_keras")


def duet_answers(duets_releases: pd.DataFrame, subject: str = "later") -> dict:
    """{(machine, mode, api, input, later env, earlier env, later Keras, earlier Keras): the
    duets' words for that release step}: where the duets answer a question that a cells' row
    (adjacent_releases, changepoints) also answers, the cells' row is descriptive only. Any
    table derived from duets rows with these key columns works the same way (`subject` names
    its left side: duets_graph_vs_eager's "graph")."""
    out = {}
    for r in records(duets_releases):
        v = text(r.get("verdict"))
        ratio, lo, hi = (num(r.get(k)) for k in ("ratio", "ratio_ci_low", "ratio_ci_high"))
        out[tuple(text(r.get(k)) for k in DUET_KEYS)] = {
            "verdict": v, "cls": verdicts.words(v).cls, "ratio": ratio,
            "text": f"{verdicts.verdict_word(v, subject)}, {fmt_ratio(ratio)} "
                    f"[{fmt_ratio(lo)}, {fmt_ratio(hi)}]"}
    return out


def duet_answer(r: dict, answers: dict, later: str = "left_env", earlier: str = "right_env",
                later_keras: str = "left_keras", earlier_keras: str = "right_keras") -> dict | None:
    """The duets' answer (duet_answers) to the release step a cells' row measures, or None."""
    if not answers or any(text(r.get(k)) not in ("", v) for k, v in DUET_CONFIG.items()):
        return None
    key = (text(r.get("machine")), text(r.get("mode")), text(r.get("api")), text(r.get("input")),
           text(r.get(later)), text(r.get(earlier)), text(r.get(later_keras)),
           text(r.get(earlier_keras)))
    return answers.get(key)


def descriptive(answer: dict) -> str:
    return f"descriptive (the duets answer this: {answer['text']})"


def _config(r: dict) -> str:
    parts = [text(r.get(a)) for a in ("model", "data")]
    label = f"{parts[0]} model, {parts[1]} data · " if all(parts) else ""
    keras = keras_label(r)
    axes = [keras, text(r.get("mode")), text(r.get("api")), text(r.get("input")),
            text(r.get("device"))]
    return label + " · ".join(a for a in axes if a and a != "none")


def _change_row(r: dict, answer: dict | None = None) -> list[dict]:
    ratio = num(r.get("ratio"))  # later / earlier
    v = text(r.get("verdict"))
    cls = verdicts.words(v).cls
    if answer is not None:  # the cells' verdict is left out where the duets give one
        what, cls = descriptive(answer), ""
    elif v == verdicts.LEFT_FASTER:
        what = f"{1 / ratio:.2f}x as fast"
    elif v == verdicts.RIGHT_FASTER:
        what = f"{ratio:.2f}x the time"
    elif v == verdicts.EQUIVALENT:
        what = f"no change ({verdicts.verdict_word(v)})"
    else:
        what = verdicts.verdict_word(v)
    skipped = int(num(r.get("releases_skipped")) or 0)
    since = text(r.get("right_env")) + (f" ({skipped} version{'s' if skipped != 1 else ''} "
                                        "without it between)" if skipped else "")
    lm, rm = num(r.get("left_median_s")), num(r.get("right_median_s"))
    return [cell(_config(r)), cell(since), cell(fmt_ms(rm), "num", v=rm),
            cell(fmt_ms(lm), "num", v=lm),
            cell(f"{fmt_ratio(ratio)} [{fmt_ratio(num(r.get('ratio_ci_low')))}, "
                 f"{fmt_ratio(num(r.get('ratio_ci_high')))}]", "num", v=ratio),
            cell(what, cls), cell(fmt_p(r.get("p_adjusted")), "num", v=num(r.get("p_adjusted")))]


# "earlier ms" is the median of the version compared against (the `vs` column), "this ms" this
# release's own: the two versions' own times, not a segment's level (the change points' table)
CHANGE_COLUMNS = [{"label": c, "num": n} for c, n in (
    ("configuration", False), ("vs", False), ("earlier ms", True), ("this ms", True),
    ("after / before [CI]", True), ("change", False), ("p, adjusted", True))]


def release_groups(adjacent: pd.DataFrame, order: list[str], new: list[str],
                   duets_releases: pd.DataFrame | None = None) -> list[dict]:
    """One entry per (machine, line, release): its rows against the version before, the
    significant changes first (slower before faster, biggest first). New envs first, then each
    line's releases newest first. A row whose step the duets answer (duets_releases) is
    descriptive: its cells' verdict is left out of the row and of the counts, the duets' shown."""
    answers = duet_answers(duets_releases if duets_releases is not None else pd.DataFrame())
    rows = [r for r in records(adjacent) if text(r.get("api")) != "matmul"]
    groups: dict = {}
    for r in rows:
        key = (text(r.get("machine")), text(r.get("line")), text(r.get("left_env")))
        groups.setdefault(key, []).append(r)
    several = len({k[0] for k in groups}) > 1
    rank = {e: i for i, e in enumerate(order)}
    out = []
    for (machine, line, env), part in groups.items():
        answered = [duet_answer(r, answers) is not None for r in part]
        v = [text(r.get("verdict")) if not a else "duets" for r, a in zip(part, answered)]

        def size(r):
            ratio = num(r.get("ratio"))
            return -abs(math.log(ratio)) if ratio > 0 else 0.0

        # grouped by mode and API (then Keras and input), the significant changes first in each
        part = sorted(part, key=lambda r: (MODE_ORDER.get(text(r.get("mode")), 9),
                                           text(r.get("mode")), text(r.get("api")),
                                           {verdicts.RIGHT_FASTER: 0, verdicts.LEFT_FASTER: 1,
                                            verdicts.INCONCLUSIVE: 2}.get(text(r.get("verdict")),
                                                                          3), size(r)))
        first = part[0]
        out.append({
            "id": f"rel-{machine}-{env}" if several else f"rel-{env}",
            "machine": machine if several else "", "line": line, "env": env,
            "version": text(first.get("left_framework_version")),
            "previous": sorted({text(r.get("right_env")) for r in part},
                               key=lambda e: rank.get(e, len(rank))),
            "skipped": max(int(num(r.get("releases_skipped")) or 0) for r in part),
            "new": env in new, "n": len(part),
            "n_slower": v.count(verdicts.RIGHT_FASTER), "n_faster": v.count(verdicts.LEFT_FASTER),
            "n_equivalent": v.count(verdicts.EQUIVALENT),
            "n_undecided": v.count(verdicts.INCONCLUSIVE), "n_duets": v.count("duets"),
            "table": {"id": f"t-rel-{machine}-{env}".replace(".", "_"),
                      "columns": CHANGE_COLUMNS,
                      "rows": [_change_row(r, duet_answer(r, answers)) for r in part]},
            "_sort": (env not in new, LINE_ORDER.get(line, 2), line, machine,
                      -rank.get(env, -1)),
        })
    out.sort(key=lambda g: g.pop("_sort"))
    return out


# a change point's sides are segments: "level before ms" is the typical step time of the versions
# before it (process-weighted mean of their log medians, driver/stats/changepoints.py), not the
# version right before's own median
CP_COLUMNS = [{"label": c, "num": n} for c, n in (
    ("configuration", False), ("line", False), ("between", False), ("level before ms", True),
    ("level after ms", True), ("after / before [CI]", True), ("step", False))]


def reaches_one(r: dict) -> bool:
    """A change point whose interval (simultaneous over every step the segmentation could
    report) holds 1: the series stepped by the segmentation's test, not by its interval."""
    lo, hi = num(r.get("ratio_ci_low")), num(r.get("ratio_ci_high"))
    return math.isfinite(lo) and math.isfinite(hi) and lo <= 1 <= hi


def changepoint_view(cps: pd.DataFrame, order: list[str],
                     duets_releases: pd.DataFrame | None = None) -> dict:
    """The change points found (one row each, newest release first; a machine column first
    where the rows hold several machines) and the count of series tested without any. A change
    point whose step the duets answer (duets_releases: the same machine, configuration and pair
    of versions) is descriptive: the duets' verdict is shown, not the cells' step."""
    rows = records(cps)
    answers = duet_answers(duets_releases if duets_releases is not None else pd.DataFrame())
    found = [r for r in rows if text(r.get("direction")) in ("slower", "faster")]
    machines = sorted({text(r.get("machine")) for r in found} - {""})
    several = len(machines) > 1
    rank = {e: i for i, e in enumerate(order)}
    found.sort(key=lambda r: (text(r.get("machine")), -rank.get(text(r.get("after_env")), -1),
                              _config(r)))
    out = []
    n_duets = 0
    for r in found:
        ratio = num(r.get("ratio"))
        slower = text(r.get("direction")) == "slower"
        step = f"{ratio:.2f}x the time" if slower else f"{1 / ratio:.2f}x as fast"
        if reaches_one(r):  # placed by the segmentation, not confirmed by its interval
            step += ", not sure: its interval reaches 1"
        cls = "" if reaches_one(r) else "neg" if slower else "pos"
        answer = duet_answer(r, answers, later="after_env", earlier="before_env",
                             later_keras="after_keras", earlier_keras="keras")
        if answer is not None:
            step, cls, n_duets = f"{step}: {descriptive(answer)}", "", n_duets + 1
        bl, al = num(r.get("before_level_s")), num(r.get("after_level_s"))
        out.append([cell(text(r.get("machine")))] * several + [
                    cell(_config(r)), cell(text(r.get("line"))),
                    cell(f"{text(r.get('before_env'))} → {text(r.get('after_env'))}"),
                    cell(fmt_ms(bl), "num", v=bl), cell(fmt_ms(al), "num", v=al),
                    cell(f"{fmt_ratio(ratio)} [{fmt_ratio(num(r.get('ratio_ci_low')))}, "
                         f"{fmt_ratio(num(r.get('ratio_ci_high')))}]", "num", v=ratio),
                    cell(step, cls)])
    tested = [r for r in rows if text(r.get("direction")) != "not segmented"]
    series = {tuple(text(r.get(k)) for k in ("machine", "line", *PANEL_KEYS[1:]))
              for r in tested}
    alphas = {num(r.get("alpha")) for r in tested if not math.isnan(num(r.get("alpha")))}
    columns = [{"label": "machine", "num": False}] * several + CP_COLUMNS
    return {"table": {"id": "t-changepoints", "columns": columns, "rows": out},
            "n_found": len(out), "n_series": len(series), "n_duets": n_duets,
            "machines": len(machines),
            "n_unsure": sum(1 for r in found if reaches_one(r)),
            "n_flat": sum(1 for r in tested if text(r.get("direction")) == "none"),
            "n_short": sum(1 for r in rows if text(r.get("direction")) == "not segmented"),
            "alpha": min(alphas) if alphas else math.nan}


def changepoint_marks(cps: pd.DataFrame) -> dict:
    """{history panel key (machine, model, data, keras, mode, api, input, device): [(env,
    'slower' | 'faster')]}: where the history panels mark a change point (at the first version
    of the new level, on the panel of that version's Keras flavour)."""
    marks: dict = {}
    for r in records(cps):
        direction = text(r.get("direction"))
        if direction not in ("slower", "faster"):
            continue
        key = tuple(text(r.get("after_keras") if k == "keras" else r.get(k)) for k in PANEL_KEYS)
        marks.setdefault(key, []).append((text(r.get("after_env")), direction))
    return marks


def lines_summary(adjacent: pd.DataFrame) -> list[str]:
    """'TensorFlow 1.14.0 → 2.21.0 (23 versions)' per line, from the table's envs."""
    versions: dict = {}
    for r in records(adjacent):
        for side in ("left", "right"):
            versions.setdefault(text(r.get("line")), set()).add(
                (text(r.get(f"{side}_env")), text(r.get(f"{side}_framework_version"))))
    out = []
    for line, pairs in versions.items():
        ordered = sorted(pairs, key=lambda p: env_sort_key(None, p[1], p[0]))
        out.append(f"{line} {ordered[0][1]} → {ordered[-1][1]} ({len(ordered)} versions)")
    return out
