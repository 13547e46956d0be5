"""Figures that must be read on any screen and on paper: the forest plot of TF2 vs TF1 (the first
screen) and the performance history as small multiples. One small SVG per panel, so that the
page's grid reflows them (side by side at 1400 px, stacked at 800 px) instead of shrinking one
wide figure; every SVG carries an accessible name."""
import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator

from driver.report.figures import MARKER_SYMBOLS, OPEN_SYMBOLS, fig_svg, plain_log_axis
from driver.report.fmt import col, ncol, num, records, text
from driver.stats.verdicts import (
    EQUIVALENT,
    INCONCLUSIVE,
    LEFT_FASTER,
    RIGHT_FASTER,
    verdict_word,
    words,
)
from driver.study import layout
from driver.tables.ordering import AXIS_ORDER

SUBJECT = "TF 2"  # the left side of every forest row: a verdict's words name it

LEGEND_CLASSES = {RIGHT_FASTER: "k-slow", LEFT_FASTER: "k-fast", EQUIVALENT: "k-eq",
                  INCONCLUSIVE: "k-inc"}
EQ_BAR_WIDTH, CI_LINE_WIDTH = 4.0, 1.1  # the equivalence test's interval inside the tested one


def legend_items(standin: str = "tf_keras standing in for tf.keras") -> list[dict]:
    """The forest's legend, from the markers it draws (verdicts.WORDS), so that shapes and
    legend cannot disagree: [{"symbol", "cls", "word"}] for slower, faster, equivalent and
    undecided, then the open marker of a stand-in row (`standin` names it; "" leaves it out)."""
    items = [{"symbol": MARKER_SYMBOLS[words(v).marker], "cls": LEGEND_CLASSES[v],
              "word": verdict_word(v, SUBJECT)}
             for v in (RIGHT_FASTER, LEFT_FASTER, EQUIVALENT, INCONCLUSIVE)]
    if standin:
        items.append({"symbol": OPEN_SYMBOLS[words(RIGHT_FASTER).marker], "cls": "k-open",
                      "word": f"open marker: {standin}"})
    return items


def forest_svg(panel: dict, min_effect: float, reference: str) -> str:
    """Ratio TF2 / TF1 per version (rows, oldest on top) with its tested interval (`lo`..`hi`, a
    thin line), the line at 1 and the band 1 / (1 + min_effect) .. 1 + min_effect. A row with
    `eq_lo`/`eq_hi` (the equivalence test's 90 % interval) draws it as a thick bar inside the thin
    line: "equivalent" reads as a thick bar inside the band, "slower"/"faster" as a thin line
    clear of 1. Markers come from verdicts.WORDS (shape as well as colour)."""
    rows = panel["rows"]
    n = max(len(rows), 1)
    fig = Figure(figsize=(4.3, 0.9 + 0.2 * n))
    ax = fig.add_subplot()
    lo_band, hi_band = 1 / (1 + min_effect), 1 + min_effect
    ax.axvspan(lo_band, hi_band, color="#1f4e99", alpha=0.10, linewidth=0)
    ax.axvline(1.0, color="#333", linewidth=0.8)
    xs = []
    for i, r in enumerate(rows):
        colour, marker = words(r["verdict"]).colour, words(r["verdict"]).marker
        if not (math.isnan(r["lo"]) or math.isnan(r["hi"])):
            ax.hlines(i, r["lo"], r["hi"], color=colour, linewidth=CI_LINE_WIDTH)
            xs += [r["lo"], r["hi"]]
        eq = (num(r.get("eq_lo")), num(r.get("eq_hi")))
        if not any(math.isnan(v) for v in eq):
            ax.hlines(i, eq[0], eq[1], color=colour, linewidth=EQ_BAR_WIDTH, alpha=0.55)
            xs += list(eq)
        if not math.isnan(r["ratio"]):
            ax.plot([r["ratio"]], [i], marker=marker, color=colour, markersize=5 if r["head"] else 3.5,
                    markerfacecolor="white" if r["standin"] else colour, markeredgewidth=1.2)
            xs.append(r["ratio"])
    xs = [x for x in xs if x > 0 and math.isfinite(x)] or [1.0]
    left, right = min(min(xs), lo_band) / 1.08, max(max(xs), hi_band) * 1.08
    ax.set_xscale("log")
    ax.set_xlim(left, right)
    ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 1.5, 2.0, 3.0, 5.0, 7.0)))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
    if right / left < 2.5:  # a narrow range: evenly spaced ticks, at most 6 of them
        for step in (0.05, 0.1, 0.2, 0.25, 0.5):
            ticks = [round(k * step, 2) for k in range(1, 400) if left <= k * step <= right]
            if len(ticks) <= 6:
                break
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:g}x" for t in ticks])
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels([r["label"] for r in rows], fontsize=8)
    for label, r in zip(ax.get_yticklabels(), rows):
        if r["head"]:
            label.set_fontweight("bold")
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlabel(f"step time TF 2 / {reference}  (> 1: TF 2 slower)", fontsize=8)
    ax.set_title(panel["title"], fontsize=9, loc="left")
    ax.tick_params(labelsize=8)
    ax.grid(True, axis="x", alpha=0.3, linewidth=0.5)
    fig.tight_layout()
    heads = [r for r in rows if r["head"] and not math.isnan(r["ratio"])]
    counts = {}
    for r in heads:
        said = verdict_word(r["verdict"], SUBJECT)
        counts[said] = counts.get(said, 0) + 1
    finding = ""
    if heads:
        ratios = [r["ratio"] for r in heads]
        # rows, not versions: a version may have a row per Keras (Keras 3 and tf_keras)
        n_versions = len({r.get("version") or r["label"].split(" ")[0] for r in heads})
        finding = (f": {', '.join(f'{w} in {n}' for w, n in counts.items())} of {len(heads)} "
                   f"rows ({n_versions} versions), ratios {min(ratios):.2f}–{max(ratios):.2f}x")
    has_eq = any(not (math.isnan(num(r.get("eq_lo"))) or math.isnan(num(r.get("eq_hi"))))
                 for r in rows)
    label = (f"Forest plot, {panel['title']}, TF 2 step time divided by {reference}'s"
             f"{finding}; thin lines: the tested intervals"
             + ("; thick bars: the equivalence intervals" if has_eq else "")
             + f"; shaded band 1 ± {min_effect:.0%}")
    return fig_svg(fig, label)


def _short(version: str) -> str:
    parts = text(version).split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 else text(version)


HISTORY_KEYS = ["machine", "model", "data", "keras", "mode", "api", "input", "device"]
CONFIG_KEYS = HISTORY_KEYS[1:]  # a panel's configuration; its machines share the panel
# each machine's line, band and markers (colour and shape: a reader need not tell hues apart)
MACHINE_STYLE = [("#1f4e99", "o"), ("#b45309", "s"), ("#2f7d32", "^"), ("#6b3fa0", "D")]


def _finding(part: pd.DataFrame, y: np.ndarray, version: dict) -> str:
    """'from <a> ms (TF x) to <b> ms (TF y), fastest TF v (<ms> ms), slowest TF w (<ms> ms)'."""
    ok_ = ~np.isnan(y)
    if not ok_.any():
        return ""
    ver = [_short(version.get(e, e)) for e in part["env"]]
    i_min, i_max = int(np.nanargmin(y)), int(np.nanargmax(y))
    return (f"from {y[ok_][0]:,.1f} ms (TF {ver[int(np.argmax(ok_))]}) to "
            f"{y[ok_][-1]:,.1f} ms (TF {ver[len(ok_) - 1 - int(np.argmax(ok_[::-1]))]})"
            f", fastest TF {ver[i_min]} ({y[i_min]:,.1f} ms), slowest TF "
            f"{ver[i_max]} ({y[i_max]:,.1f} ms)")


def history_panels(ok: pd.DataFrame, order: list[str], reference_env: str,
                   min_versions: int = 3, marks: dict | None = None) -> dict:
    """One panel per configuration measured in at least `min_versions` TF versions on some
    machine: median ms per step against version with the CI band, and the reference env's
    median as a dashed line (for keras3 / tf_keras its tf.keras cell, the one TF2 vs TF1
    compares them with). Every machine of the study is a line of its own in the same panel
    (colour and marker shape per machine, MACHINE_STYLE), so a reader sees two machines side by
    side; the twin keys (the A/A copies) draw none. marks: {key (HISTORY_KEYS' values, the
    machine first): [(env, 'slower' | 'faster')]}, the change points
    (driver/report/releases.py: changepoint_marks), drawn before the env's point in the
    machine's colour."""
    if ok.empty or "env" not in ok.columns:
        return {"panels": [], "fewer": 0, "min_versions": min_versions, "machines": []}
    df = ok[col(ok, "framework").map(text) == "tensorflow"].copy()
    for g in HISTORY_KEYS + ["env", "framework_version"]:
        df[g] = col(df, g, "").map(text)
    for c in ("median_s", "ci_low_s", "ci_high_s"):
        df[c] = ncol(df, c)
    df = df[~df["machine"].map(layout.is_twin)]
    envs = [e for e in order if e in set(df["env"])]
    version = {r["env"]: r["framework_version"] for r in records(df)}
    ref = df[df["env"] == reference_env]
    machines = sorted(set(df["machine"]))
    several = len(machines) > 1
    style = {m: MACHINE_STYLE[i % len(MACHINE_STYLE)] for i, m in enumerate(machines)}
    drawn = most_versions(df) >= min_versions
    groups = [(key, part) for key, part in df.groupby(CONFIG_KEYS, sort=False) if drawn[key]]

    def rank(key):
        return tuple(AXIS_ORDER.get(a, {}).get(v, 99) for a, v in zip(CONFIG_KEYS, key))

    groups.sort(key=lambda kv: (-kv[1]["env"].nunique(), rank(kv[0])))
    # One y scale for every panel of a model and data pair, so panels compare.
    limits = {}
    for key, part in groups:
        k = dict(zip(CONFIG_KEYS, key))
        vals = pd.concat([part["median_s"], part["ci_low_s"], part["ci_high_s"]]).dropna() * 1e3
        vals = vals[vals > 0]
        if len(vals):
            share = (k["model"], k["data"])
            lo_, hi_ = limits.get(share, (math.inf, 0.0))
            limits[share] = (min(lo_, float(vals.min())), max(hi_, float(vals.max())))
    panels = []
    for key, whole in groups:
        k = dict(zip(CONFIG_KEYS, key))
        fig = Figure(figsize=(4.3, 2.5))
        ax = fig.add_subplot()
        low, high = limits.get((k["model"], k["data"]), (math.nan, math.nan))
        findings, refs, n_mark = [], [], 0
        rk = "tf.keras" if k["keras"] in ("keras3", "tf_keras") else k["keras"]
        for machine in machines:
            part = whole[whole["machine"] == machine]
            if part.empty:
                continue
            colour, marker = style[machine]
            xs = [e for e in envs if e in set(part["env"])]
            pos = {e: envs.index(e) for e in xs}
            part = part.assign(_x=part["env"].map(pos)).sort_values("_x")
            x, y = part["_x"].to_numpy(dtype=float), part["median_s"].to_numpy() * 1e3
            lo, hi = part["ci_low_s"].to_numpy() * 1e3, part["ci_high_s"].to_numpy() * 1e3
            # no line or band across a version that was not measured: NaN breaks them there
            gap = np.concatenate([[False], np.diff(x) > 1])
            xl, yl, lol, hil = (np.insert(a, np.nonzero(gap)[0], np.nan) for a in (x, y, lo, hi))
            band = ~(np.isnan(lol) | np.isnan(hil))
            if band.any():
                ax.fill_between(xl, lol, hil, where=band, color=colour, alpha=0.2, linewidth=0,
                                label=None if several else "95 % CI")
            ax.plot(xl, yl, "-", color=colour, linewidth=1.3)
            ax.plot(x, y, marker, color=colour, markersize=3.5,
                    label=machine if several else "median")
            for env, direction in (marks or {}).get((machine, *key), []):
                if env in pos:  # a change point: the level moved between the previous point
                    # and env
                    ax.axvline(pos[env] - 0.5, color=colour if several else
                               "#a12622" if direction == "slower" else "#1e7b34",
                               linestyle=":", linewidth=1.2,
                               label="change point" if n_mark == 0 else None)
                    ax.annotate("▲" if direction == "slower" else "▼", (pos[env] - 0.5, 1.0),
                                xycoords=("data", "axes fraction"), ha="center", va="bottom",
                                fontsize=7, color="#a12622" if direction == "slower"
                                else "#1e7b34")
                    n_mark += 1
            same = ref[(ref["keras"] == rk) & (ref["machine"] == machine)]
            for a in ("model", "data", "mode", "api", "input", "device"):
                same = same[same[a] == k[a]]
            if len(same) and reference_env in envs:
                m = float(same["median_s"].iloc[0]) * 1e3
                ax.axhline(m, color=colour if several else "#a12622", linestyle="--",
                           linewidth=1.0, label=None if several else f"{reference_env} ({rk})")
                refs.append(machine)
                low, high = min(low, m), max(high, m)
            found = _finding(part, y, version)
            if found:
                findings.append(f"{machine}: {found}" if several else found)
        ax.set_xticks(range(len(envs)))
        ax.set_xticklabels([_short(version.get(e, e)) for e in envs], rotation=90, fontsize=7)
        ax.set_xlim(-0.6, len(envs) - 0.4)
        ax.set_yscale("log")
        if math.isfinite(low) and math.isfinite(high) and high > 0:
            ax.set_ylim(low / 1.08, high * 1.08)
        plain_log_axis(ax)
        ax.set_ylabel("ms per step", fontsize=8)
        ax.tick_params(axis="y", labelsize=7)
        title = (f"{k['keras']} · {k['mode']} · {k['api']} · {k['input']} · {k['device']}"
                 f"\n{k['model']} model, {k['data']} data")
        ax.set_title(title, fontsize=8, loc="left")
        ax.grid(True, which="major", alpha=0.3, linewidth=0.5)  # the labelled ticks only
        ax.legend(fontsize=6.5, frameon=False, loc="best")
        fig.tight_layout()
        refline = ""
        if refs:
            refline = (f", dashed line: {reference_env}" if not several else
                       f", dashed lines: {reference_env} ({rk}) in each machine's colour")
        finding = "; ".join(findings)
        label = (f"Performance history of {title.replace(chr(10), ', ')}: median ms per step "
                 f"per TF version" + (f" on {', '.join(machines)}" if several else "")
                 + (f"; {finding}" if finding else "") + refline)
        caption = ("Median ms per step by TF version" + (f": {finding}" if finding else "")
                   + (f"; dashed: {reference_env}" if refs and not several else
                      f"; dashed: {reference_env} on each machine" if refs else "") + ".")
        panels.append({"title": title.replace("\n", ", "), "caption": caption,
                       "svg": fig_svg(fig, label)})
    return {"panels": panels, "fewer": fewer_versions(df, min_versions),
            "min_versions": min_versions, "machines": machines}


def most_versions(df: pd.DataFrame) -> pd.Series:
    """Per configuration (CONFIG_KEYS), the most TF versions any one machine measured it in: a
    configuration has a history panel where that reaches min_versions."""
    return df.groupby(CONFIG_KEYS + ["machine"])["env"].nunique().groupby(CONFIG_KEYS).max()


def fewer_versions(df: pd.DataFrame, min_versions: int) -> int:
    """How many TensorFlow configurations (not counting the twin keys, whose few cells are
    copies of the A/A check) no machine measured in `min_versions` TF versions, so have no
    panel: the versions table holds them."""
    if df.empty:
        return 0
    main = df[~col(df, "machine").map(layout.is_twin)]
    return int((most_versions(main) < min_versions).sum())
