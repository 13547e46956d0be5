"""The bottom line: the sentences under the answer ("More from this run"), each computed from the
tables (never typed): per mode the range of TF 2.x / TF 1 ratios and the worst upper bound at the
CI's level, what today's default tf.keras (Keras 3) gives beside the legacy tf_keras, where the
slowdown starts (the other TF 1 releases against the reference), fit() over an epoch and in
one-step calls against train_on_batch, each other framework's best against TensorFlow's best,
the smallest difference the run resolves, and, when the tables of a
previous run are at hand, whether the two runs agree.

Every sentence degrades to saying what is missing when a table or column is absent."""
import math
from pathlib import Path

import numpy as np
import pandas as pd

from driver.report.answer import API_TEXT, MODE_TEXT, headline_rows, like_for_like, norm_verdict
from driver.report.fmt import (
    col,
    machine_names,
    machines_of,
    ncol,
    num,
    of_machine,
    records,
    text,
    version_key,
)
from driver.report.frameworks_line import frameworks_line
from driver.stats.verdicts import EQUIVALENT, INCONCLUSIVE, LEFT_FASTER, RIGHT_FASTER, verdict_word
from driver.tables.results import Results

HEADLINE_API = "train_on_batch"
PREVIOUS_KEY = "previous_results"
AGREEMENT_TABLE = "tf2_vs_tf1"


def previous_tables(results, root=".") -> list[str] | None:
    """The table files of an earlier run (config `previous_results`): its results directory
    (tables under tables/<name>.csv, as driver/study/layout.py writes them) or that tables folder
    itself; a relative path is taken from `root` (the workflow's directory). None when not
    given. Refused with a ValueError naming the key when the folder is not there or holds no
    tf2_vs_tf1.csv (the table the agreement line compares)."""
    if results is None:
        return None
    path = Path(root) / Path(str(results)).expanduser()
    if not path.is_dir():
        raise ValueError(f"config error at {PREVIOUS_KEY!r}: {str(results)!r} is not a folder "
                         f"(looked for {path}); give an earlier run's results directory or "
                         "null")
    found = Results(path, marker=AGREEMENT_TABLE)
    if found.has(AGREEMENT_TABLE):
        return [str(p) for p in found.paths(cells=True)]
    raise ValueError(f"config error at {PREVIOUS_KEY!r}: {str(results)!r} holds no "
                     f"tables/{AGREEMENT_TABLE}.csv (nor {AGREEMENT_TABLE}.csv): not the results "
                     "directory of a run")


def _pct_slower(ratio: float) -> str:
    return f"{(ratio - 1) * 100:,.0f} %"


def mode_line(head: pd.DataFrame, mode: str, api: str, reference: str, level: float) -> dict:
    """One mode: the ratios' range, their median and the worst upper bound (ratio_ci_high)."""
    ratio = ncol(head, "ratio").to_numpy(dtype=float)
    high = ncol(head, "ratio_ci_high").to_numpy(dtype=float)
    versions = [text(r.get("left_framework_version")) or text(r.get("left_env"))
                for r in records(head)]
    verdicts = [norm_verdict(v) for v in col(head, "verdict")]
    ok = ~np.isnan(ratio)
    what = f"{MODE_TEXT.get(mode, mode)}, {API_TEXT.get(api, api)}"
    if not ok.any():
        return {"what": what, "text": f"no TF 2.x version compared with {reference}",
                "cls": "nodata"}
    lo, hi, typical = float(np.nanmin(ratio)), float(np.nanmax(ratio)), float(np.nanmedian(ratio))
    n = int(ok.sum())
    n_slow = verdicts.count(RIGHT_FASTER)
    n_fast = verdicts.count(LEFT_FASTER)
    n_eq = verdicts.count(EQUIVALENT)
    span = f"{lo:.2f}–{hi:.2f}x" if f"{lo:.2f}" != f"{hi:.2f}" else f"{lo:.2f}x"
    first = f"{versions[0]}–{versions[-1]}" if n > 1 else versions[0]
    word = (f"typically {(1 - typical) * 100:.0f} % faster" if typical < 1
            else f"typically {(typical - 1) * 100:.0f} % slower")
    parts = [f"TF {first} take {span} {reference}'s step time, {word}"]
    slow = [(v, r) for v, r, d in zip(versions, ratio, verdicts) if d == RIGHT_FASTER]
    # a sentence about every version at once needs a bound that holds for all at once: the
    # duets table's simultaneous bound; the cells' tables have only each row's own
    joint = "simultaneous_high" in head.columns and ncol(head, "simultaneous_high").notna().any()
    bound = ncol(head, "simultaneous_high") if joint else ncol(head, "ratio_ci_high")
    rest = np.array([h for h, d in zip(bound.to_numpy(dtype=float), verdicts)
                     if d != RIGHT_FASTER], dtype=float)
    rest = rest[np.isfinite(rest)]
    at = (f"at {level * 100:.0f} % for all versions at once" if joint
          else f"at {level * 100:.0f} % each")
    if len(slow) > 3:
        parts.append(f"significantly slower in {len(slow)} of {n} versions")
    elif slow:
        parts.append("significantly slower: " + ", ".join(f"TF {v} ({r:.2f}x)" for v, r in slow))
    if rest.size:
        worst = float(rest.max())
        who = "no other version" if slow else "no version"
        if worst <= 1.0:
            parts.append(f"{'the others are' if slow else 'every version is'} faster {at}")
        else:
            parts.append(f"{who} is more than {_pct_slower(worst)} slower {at}")
    tally = [f"{k} {verdict_word(v)}" for k, v in ((n_slow, RIGHT_FASTER),
                                                  (n_fast, LEFT_FASTER), (n_eq, EQUIVALENT))
             if k]
    n_und = n - n_slow - n_fast - n_eq
    if n_und:
        tally.append(f"{n_und} {verdict_word(INCONCLUSIVE)}")
    cls = "slower" if n_slow > n / 2 else "faster" if n_fast > n / 2 else "mixed"
    if np.isfinite(high).any() and float(np.nanmax(high)) <= 1.0:
        cls = "faster"
    return {"what": what, "text": "; ".join(parts) + ".", "tally": f"{', '.join(tally)} of {n}",
            "cls": cls, "typical": typical, "worst": float(np.nanmax(high))
            if np.isfinite(high).any() else math.nan}


def duet_rows(duets: pd.DataFrame, mode: str, legacy: bool = False) -> pd.DataFrame:
    """The duets table's rows of one mode, in version order: the Keras each version's users get
    by default (tf.keras; from TF 2.16 Keras 3 in eager mode, tf_keras in graph mode, where
    Keras 3 has none), or with legacy=True the eager rows of the legacy tf_keras beside Keras 3.
    The answer's claims (statements.py) and the duets section read their rows here."""
    if duets.empty or "mode" not in duets.columns:
        return pd.DataFrame()
    # an A/A row (the reference against itself; its own table, duets_aa) is never a version
    duets = duets[col(duets, "env").map(text) != col(duets, "right_env").map(text)] \
        if {"env", "right_env"} <= set(duets.columns) else duets
    part = duets[(col(duets, "mode").map(text) == mode)
                 & (col(duets, "api").map(text) == HEADLINE_API)]
    keras = col(part, "keras").map(text)
    has_k3 = set(col(part[keras == "keras3"], "env").map(text))
    legacy_rows = (keras == "tf_keras") & col(part, "env").map(text).isin(has_k3)
    part = part[legacy_rows] if legacy else part[~legacy_rows]
    order = sorted(part.index, key=lambda i: version_key(text(part.at[i, "left_framework_version"])))
    return part.loc[order]


def legacy_text(rows: pd.DataFrame) -> str:
    """The legacy tf_keras beside Keras 3, in the versions that have both."""
    ratio = ncol(rows, "ratio").dropna()
    vers = [text(v) for v in col(rows, "left_framework_version")]
    span = f"{ratio.min():.2f}–{ratio.max():.2f}x" if len(ratio) > 1 else f"{ratio.iloc[0]:.2f}x"
    which = f"{vers[0]}–{vers[-1]}" if len(vers) > 1 else vers[0]
    return f"with the legacy tf_keras package TF {which} take {span}"


def keras3_line(tf2: pd.DataFrame, reference: str) -> dict | None:
    """Keras 3 (tf.keras from TF 2.16 on) beside the legacy tf_keras, eager train_on_batch, both
    against TF 1's tf.keras."""
    if tf2.empty:
        return None
    df = tf2[(col(tf2, "api").map(text) == HEADLINE_API) & (col(tf2, "input").map(text) == "numpy")
             & (col(tf2, "right_keras").map(text) == "tf.keras")]
    out = []
    for mode in ("eager", "graph"):
        part = df[col(df, "mode").map(text) == mode]
        k3 = ncol(part[col(part, "left_keras").map(text) == "keras3"], "ratio").dropna()
        tk = ncol(part[col(part, "left_keras").map(text) == "tf_keras"], "ratio").dropna()
        if len(k3):
            vers = sorted(col(part[col(part, "left_keras").map(text) == "keras3"],
                              "left_framework_version").map(text), key=version_key)
            s = (f"{mode}: Keras 3 (TF {vers[0]}–{vers[-1]}) {k3.min():.2f}–{k3.max():.2f}x "
                 f"{reference}'s tf.keras")
            if len(tk):
                s += f", the legacy tf_keras {tk.min():.2f}–{tk.max():.2f}x"
            out.append(s)
    if not out:
        return None
    return {"what": "Today's default tf.keras (Keras 3)",
            "text": "; ".join(out) + ".", "cls": "mixed",
            "note": "from TF 2.16 on tf.keras is Keras 3; the Keras 2 it was ships as the "
                    "tf_keras package, which the per-mode lines above use"}


def tf1_line(cells: pd.DataFrame, reference_env: str, mode: str = "eager",
             tf2: bool = True) -> dict | None:
    """The other TF 1 releases against the reference, in the configuration of the headline
    (tf.keras, train_on_batch, numpy, the smallest model and data): where a slowdown starts,
    from the cells' medians; with tf2=False (the duets answer TF 2.x) the first TF 2 is left to
    the answer, so no version gets two ratios on one page. The cells of one machine: every
    ratio is a time over the same machine's reference (bottom_line calls it per machine)."""
    if cells.empty or "median_s" not in cells.columns:
        return None
    if len(machines_of(cells)) > 1:
        raise ValueError("tf1_line reads one machine's cells; bottom_line splits them")
    if "machine" in cells.columns:  # the A/A twin key's copies of the same cells
        cells = cells[~cells["machine"].map(text).str.endswith(".twin")]
    ok = cells[(col(cells, "status").map(text) == "ok") & (col(cells, "framework").map(text)
                                                           == "tensorflow")]
    conf = ok[(col(ok, "keras").map(text) == "tf.keras") & (col(ok, "api").map(text)
              == HEADLINE_API) & (col(ok, "input").map(text) == "numpy")
              & (col(ok, "model").map(text) == "small") & (col(ok, "data").map(text) == "small")]
    ver = col(conf, "framework_version").map(text)
    major = ver.map(lambda v: version_key(v)[0] if v else None)
    out = []
    for m in (mode,):
        part = conf[col(conf, "mode").map(text) == m]
        ref = part[col(part, "env").map(text) == reference_env]
        if ref.empty:
            continue
        ref_ms = float(ncol(ref, "median_s").iloc[0]) * 1e3
        others = part[(major[part.index] == 1) & (col(part, "env").map(text) != reference_env)]
        first2 = part[major[part.index] == 2]
        if others.empty:
            continue
        bits = []
        for r in sorted(records(others), key=lambda r: version_key(r.get("framework_version"))):
            ms = num(r.get("median_s")) * 1e3
            bits.append(f"TF {text(r.get('framework_version'))} {ms:,.1f} ms "
                        f"({ms / ref_ms:.2f}x)")
        if tf2 and not first2.empty:
            r = sorted(records(first2), key=lambda r: version_key(r.get("framework_version")))[0]
            ms = num(r.get("median_s")) * 1e3
            bits.append(f"TF {text(r.get('framework_version'))} {ms:,.1f} ms ({ms / ref_ms:.2f}x)")
        ref_ver = text(ref["framework_version"].iloc[0])
        r1 = sorted(records(others), key=lambda r: version_key(r.get("framework_version")))[-1]
        ratio1 = num(r1.get("median_s")) * 1e3 / ref_ms
        lead = (f"The {m} slowdown is already in TF {text(r1.get('framework_version'))}"
                if ratio1 >= 1.5 else f"{MODE_TEXT.get(m, m)}")
        out.append(f"{lead} (tf.keras train_on_batch per step, the cells' medians): TF {ref_ver} "
                   f"{ref_ms:,.1f} ms, "
                   + ", ".join(bits))
    if not out:
        return None
    return {"what": "Where it starts", "text": "; ".join(out) + ".", "cls": "mixed"}


def _ratio_summary(df: pd.DataFrame) -> tuple[str, int, int, int] | None:
    """(range and median of the rows' ratios, rows, rows decided slower, rows decided faster)
    of a fit table."""
    rows = [r for r in records(df) if text(r.get("left_keras")) == text(r.get("right_keras"))]
    ratios = np.array([num(r.get("ratio")) for r in rows], dtype=float)
    ratios = ratios[np.isfinite(ratios)]
    if not ratios.size:
        return None
    slower = sum(norm_verdict(r.get("verdict")) == RIGHT_FASTER for r in rows)
    faster = sum(norm_verdict(r.get("verdict")) == LEFT_FASTER for r in rows)
    lo, hi, mid = ratios.min(), ratios.max(), float(np.median(ratios))
    span = f"{lo:.2f}x" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}–{hi:.2f}x (median {mid:.2f}x)"
    return span, int(ratios.size), int(slower), int(faster)


def fit_line(tabs: dict, cells: pd.DataFrame) -> dict | None:
    """fit() as users call it: over an epoch (fit_epoch: one call of steps_per_call steps)
    against train_on_batch, beside the one-step fit() call, whose set-up is in every step."""
    epoch = _ratio_summary(tabs.get("fit_epoch_vs_train_on_batch", pd.DataFrame()))
    one = _ratio_summary(tabs.get("fit_vs_train_on_batch", pd.DataFrame()))
    if epoch is None and one is None:
        return None
    steps = sorted({int(v) for v in ncol(cells[col(cells, "api").map(text) == "fit_epoch"],
                                          "steps_per_call").dropna()}) if not cells.empty else []
    per = f"{'/'.join(str(s) for s in steps)} steps per call" if steps else "an epoch per call"
    bits = []
    if epoch is not None:
        bits.append(f"fit() over an epoch ({per}) takes {epoch[0]} train_on_batch()'s step "
                    f"time in {epoch[1]} configurations: significantly slower in {epoch[2]}, "
                    f"faster in {epoch[3]}")
    else:
        bits.append("fit() over an epoch was not measured")
    if one is not None:
        bits.append(f"a one-step fit() call, which pays fit's set-up in every step, takes "
                    f"{one[0]} (slower in {one[2]}, faster in {one[3]} of {one[1]})")
    return {"what": "fit() as you call it", "text": "; ".join(bits) + ".", "cls": "mixed",
            "note": "fit() 1 step/call pays fit's set-up (data adapter, callbacks, train "
                    "function) in every step; fit() epoch/call pays it once per epoch"}


def resolution_line(head: pd.DataFrame, level: float) -> dict | None:
    """The smallest difference one machine's duets tell apart: the median half-width of a
    version's tested interval, in % (bottom_line calls it per machine: machines resolve
    differently)."""
    lo, hi = ncol(head, "ratio_ci_low"), ncol(head, "ratio_ci_high")
    half = (np.sqrt(hi / lo) - 1).dropna()
    if half.empty:
        return None
    lo, hi = f"{half.min() * 100:.0f}", f"{half.max() * 100:.0f}"
    return {"what": "Resolution", "text": f"the duets tell apart differences of about ±"
            f"{half.median() * 100:.0f} % (half a version's tested interval, typically; "
            f"{lo if lo == hi else f'{lo}–{hi}'} %).", "cls": "mixed"}


def agreement_line(tabs: dict, previous: dict | None) -> dict:
    if not previous:
        return {"what": "Another run", "text": "no previous run's tables were given to compare "
                "with (make compare-runs A=... B=... lines two runs up).", "cls": "nodata"}
    here = like_for_like(tabs.get("tf2_vs_tf1", pd.DataFrame()))
    there = like_for_like(previous.get("tf2_vs_tf1", pd.DataFrame()))
    keys = ["left_env", "left_cell_id", "right_env", "right_cell_id"]
    if here.empty or there.empty or not set(keys) <= set(here.columns) & set(there.columns):
        return {"what": "Another run", "text": "the previous run has no comparable rows.",
                "cls": "nodata"}
    merged = here.merge(there, on=keys, suffixes=("", "_prev"))
    same = (merged["verdict_n"] == merged["verdict_n_prev"]).sum()
    flips = ((merged["verdict_n"] == LEFT_FASTER) & (merged["verdict_n_prev"] == RIGHT_FASTER)
             | (merged["verdict_n"] == RIGHT_FASTER) & (merged["verdict_n_prev"] == LEFT_FASTER)
             ).sum()
    return {"what": "Another run", "text": f"the verdicts of {same} of {len(merged)} TF 2.x vs "
            f"TF 1 rows agree with the previous run's; {flips} flip from faster to slower or "
            "back.", "cls": "mixed" if flips else "equivalent"}


# The lines that the questions (driver/report/questions.py) answer first on the page: the rest
# follow them as "More from this run", in the report and in docs/RESULTS.md alike.
SAID_BY_QUESTIONS = (MODE_TEXT["graph"], MODE_TEXT["eager"], "Today's default tf.keras (Keras 3)")


def more_lines(bottom: dict) -> list[dict]:
    """The bottom line's lines beyond what the questions say."""
    return [line for line in bottom["lines"] if not line["what"].startswith(SAID_BY_QUESTIONS)]


def duets_count_text(rows: pd.DataFrame) -> str:
    """How many duets stand behind each version, from the rows: "4 duets per version", or, where
    the second look extended some rows, "4 to 10 duets per version (3 rows extended by the
    second look)"."""
    n = ncol(rows, "n").dropna()
    if n.empty:
        return "an unknown number of duets per version"
    lo, hi = int(n.min()), int(n.max())
    if lo == hi:
        return f"{lo} duets per version"
    first = ncol(rows, "n_look1")
    extended = int((ncol(rows, "n") > first).sum()) if first.notna().any() else 0
    more = (f" ({extended} row{'s' * (extended != 1)} extended by the second look)"
            if extended else "")
    return f"{lo} to {hi} duets per version{more}"


def _machine_tabs(tabs: dict, key: str) -> dict:
    """Every table's rows of one machine (a table without a machine column whole)."""
    return {name: of_machine(df, key) if isinstance(df, pd.DataFrame) else df
            for name, df in tabs.items()}


def _machine_lines(tabs: dict, cells: pd.DataFrame, reference_env: str, reference: str,
                   level: float) -> list[dict]:
    """The bottom line's lines of one machine's tables and cells."""
    tf2 = tabs.get("tf2_vs_tf1", pd.DataFrame())
    df = like_for_like(tf2)
    lines = []
    heads = []
    duets = tabs.get("duets", pd.DataFrame())
    for mode in ("graph", "eager"):
        head = duet_rows(duets, mode)
        if head.empty:
            part = df[(col(df, "mode").map(text) == mode)
                      & (col(df, "api").map(text) == HEADLINE_API)]
            if part.empty:
                continue
            head = headline_rows(part)
            line = mode_line(head, mode, HEADLINE_API, reference, level)
        else:
            line = mode_line(head, mode, HEADLINE_API, reference, level)
            line["note"] = ("from duets: each version and " + reference + " timed in turns "
                            "in two live workers, " + duets_count_text(head)
                            + " (docs/design.md)")
            legacy = duet_rows(duets, mode, legacy=True)
            if not legacy.empty:
                line["text"] = line["text"].rstrip(".") + "; " + legacy_text(legacy) + "."
        heads.append(head)
        lines.append(line)
    for line in (keras3_line(tf2, reference), tf1_line(cells, reference_env, tf2=duets.empty),
                 fit_line(tabs, cells),
                 frameworks_line(tabs.get("frameworks_best", pd.DataFrame()),
                                 tabs.get("duets_frameworks", pd.DataFrame())),
                 resolution_line(pd.concat(heads) if heads else pd.DataFrame(), level)):
        if line:
            lines.append(line)
    return lines


def bottom_line(tabs: dict, cells: pd.DataFrame, reference_env: str, level: float = 0.95,
                previous: dict | None = None, facts: dict | None = None) -> dict:
    """{"lines": the bottom line, "reference": "TF 1.14.0"}: per mode first, then the rest.
    With several machines every line is one machine's, computed from its rows only (a ratio
    never sets one machine's time against another's), and its `what` ends with the machine in
    plain words (machine_names: `facts` are the machine facts, key -> facts)."""
    tf2 = tabs.get("tf2_vs_tf1", pd.DataFrame())
    refs = sorted({text(r) for r in col(like_for_like(tf2), "right_framework_version").dropna()})
    reference = "TF " + ", ".join(refs) if refs else reference_env
    keys = sorted(set().union(*(machines_of(df) for df in [*tabs.values(), cells]
                                if isinstance(df, pd.DataFrame))) - {""})
    if len(keys) < 2:
        lines = _machine_lines(tabs, cells, reference_env, reference, level)
    else:
        names = machine_names(keys, facts, cells)
        lines = []
        for key in keys:
            for line in _machine_lines(_machine_tabs(tabs, key), of_machine(cells, key),
                                       reference_env, reference, level):
                line["kind"], line["machine"] = line["what"], key
                line["what"] = f"{line['what']} ({names[key]})"
                lines.append(line)
        # one machine's lines after the other's would split each question: keep a line's
        # kind together, the machines in turn
        kinds = list(dict.fromkeys(line["kind"] for line in lines))
        lines.sort(key=lambda line: kinds.index(line["kind"]))
    if previous is not None:
        lines.append(agreement_line(tabs, previous))
    for line in lines:
        line.setdefault("tally", "")
        line.setdefault("note", "")
    return {"lines": lines, "reference": reference}
