"""The report's figures (matplotlib, rendered to inline SVG or PNG data URIs): where the time
goes, every cell's trend and the stem plots of flagged cells; every SVG leaves through fig_svg,
made page-ready by driver/report/svgtext.py (clean_svg)."""
import io
import logging
import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter  # noqa: E402

from driver.report.fmt import col, ncol, num, text  # noqa: E402
from driver.report.svgtext import clean_svg  # noqa: E402

log = logging.getLogger("tfspeed.report")

MODE_COLOURS = {"eager": "#1f77b4", "graph": "#ff7f0e", "run_eagerly": "#2ca02c",
                "function": "#d62728", "xla": "#9467bd", "compile": "#8c564b",
                "torchscript": "#e377c2"}

# Shape as well as colour per mode, so that a reader who cannot tell the hues apart tells the modes.
MODE_MARKERS = {"eager": "o", "graph": "s", "run_eagerly": "^", "function": "D", "xla": "v",
                "compile": "P", "torchscript": "X", "numpy": "*"}

KERAS_STYLES = {"tf.keras": "-", "keras": "--", "keras3": ":", "tf_keras": "-.",
                "tf.python.keras": (0, (1, 1)), "none": "-"}

# Plotting at most this many points per cell keeps the stem plots light (block medians beyond).
MAX_PLOT_POINTS = 120
# Achieved FLOP/s over the measured peak: at or above COMPUTE_BOUND the step is mostly arithmetic;
# below OVERHEAD_BOUND it is mostly something else (Python, dispatch, copies).
COMPUTE_BOUND, OVERHEAD_BOUND = 0.5, 0.1


def fig_svg(fig: Figure, label: str = "") -> str:
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "tfspeed"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return clean_svg(buf.getvalue(), label)


def _small_font(fig: Figure):
    for ax in fig.axes:
        ax.tick_params(labelsize=7)
        ax.title.set_fontsize(8)
        ax.xaxis.label.set_fontsize(7)
        ax.yaxis.label.set_fontsize(7)


def log_ticks(low: float, high: float, min_ticks: int = 3) -> list[float]:
    """Tick values for a log axis from low to high, as plain numbers a reader can read: the
    1-2-5 series, then a finer 1-1.5-2-3-5-7 one, then evenly spaced values, whichever first
    gives at least `min_ticks` ticks inside the range (at most 8)."""
    if not (low > 0 and high > low and math.isfinite(high)):
        return []
    for subs in ((1, 2, 5), (1, 1.5, 2, 3, 5, 7)):
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(low)) - 1,
                                              math.ceil(math.log10(high)) + 1)
                 for m in subs if low <= m * 10.0 ** e <= high]
        if min_ticks <= len(ticks) <= 8:
            return ticks
        if len(ticks) > 8:
            return [t for t in ticks if any(math.isclose(t / 10.0 ** math.floor(math.log10(t)),
                                                         m) for m in (1, 2, 5))] or ticks
    return [float(t) for t in MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(
        low, high) if low <= t <= high]


def plain_log_axis(ax, axis: str = "y"):
    """A log axis whose ticks are plain numbers (20, 50, 100), at least three of them labelled
    whatever the range (the limits must be set, or the data drawn, before the call)."""
    target = ax.yaxis if axis == "y" else ax.xaxis
    low, high = ax.get_ylim() if axis == "y" else ax.get_xlim()
    ticks = log_ticks(low, high)
    if ticks:
        target.set_major_locator(FixedLocator(ticks))
    target.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.3g}"))
    target.set_minor_formatter(NullFormatter())


def achieved_flops(df: pd.DataFrame) -> pd.Series:
    ach = ncol(df, "achieved_flops")
    fallback = ncol(df, "flops_per_step") / ncol(df, "median_s")
    return ach.where(ach.notna(), fallback)


def strip_positions(values: list[str], order: list[str]) -> dict:
    return {e: i for i, e in enumerate(v for v in order if v in set(values))}


def time_figures(ok: pd.DataFrame, order: list[str], peaks: dict) -> list[dict]:
    """First-call time and achieved FLOP/s per cell against TF version, one panel per
    model/data pair; the measured peak as a line where there is one."""
    if ok.empty or "env" not in ok.columns:
        return []
    df = ok.copy()
    for g in ["model", "data", "mode", "env", "machine"]:
        df[g] = col(df, g, "").map(text)
    df["first_call_s"] = ncol(df, "first_call_s")
    df["achieved"] = achieved_flops(df)
    pairs = sorted(df.groupby(["model", "data"]).groups)
    out = []
    for what, ycol, ylabel, scale in (
            ("First call (build / trace) per cell", "first_call_s", "first call, s", 1.0),
            ("Achieved training FLOP/s per cell", "achieved", "GFLOP/s", 1e-9)):
        if not df[ycol].notna().any():
            continue
        ncols = min(len(pairs), 3)
        nrows = math.ceil(len(pairs) / ncols)
        fig = Figure(figsize=(0.8 + max(3.6, 0.2 * len(order)) * ncols, 0.9 + 2.8 * nrows))
        axes = fig.subplots(nrows, ncols, squeeze=False)
        seen = {}
        for ax, (model, data) in zip(axes.flat, pairs):
            part = df[(df["model"] == model) & (df["data"] == data) & df[ycol].notna()]
            xpos = strip_positions(list(part["env"]), order)
            modes = sorted(part["mode"].unique())
            for k, mode in enumerate(modes):
                sub = part[part["mode"] == mode]
                offset = (k - (len(modes) - 1) / 2) * 0.12
                x = [xpos[e] + offset for e in sub["env"]]
                h = ax.scatter(x, sub[ycol] * scale, s=11, color=MODE_COLOURS.get(mode, "#555"),
                               marker=MODE_MARKERS.get(mode, "o"), alpha=0.8, linewidths=0)
                seen.setdefault(mode, h)
            if ycol == "achieved":
                # A dash at the machine's attainable FLOP/s (its fastest matmul cell).
                for env, x in xpos.items():
                    sub = part[part["env"] == env]
                    known = [peaks.get(text(m), math.nan) for m in sub["machine"].unique()]
                    known = [p for p in known if not math.isnan(p)]
                    peak = max(known) if known else math.nan
                    if not math.isnan(peak):
                        ax.hlines(peak * scale, x - 0.4, x + 0.4, color="k", linestyle="--",
                                  linewidth=0.9)
                        ax.hlines(peak * scale * OVERHEAD_BOUND, x - 0.4, x + 0.4, color="#999",
                                  linestyle=":", linewidth=0.9)
            ax.set_xticks(list(xpos.values()))
            ax.set_xticklabels(list(xpos.keys()), rotation=90, fontsize=7)
            ax.set_yscale("log")
            plain_log_axis(ax)
            ax.set_ylabel(ylabel)
            ax.set_title(f"{model} model, {data} data")
            ax.grid(True, which="major", alpha=0.3, linewidth=0.5)  # the labelled ticks only
        for ax in list(axes.flat)[len(pairs):]:
            ax.set_visible(False)
        if seen:
            fig.legend(list(seen.values()), list(seen.keys()), loc="center left",
                       bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False, title="mode",
                       title_fontsize=7)
        _small_font(fig)
        fig.tight_layout()
        out.append({"title": what, "svg": fig_svg(fig, what + " against TF version")})
    return out


def plot_points(samples: np.ndarray, limit=MAX_PLOT_POINTS):
    """(x, y, block): at most `limit` points; beyond it, medians of consecutive blocks (a trend
    survives block medians; single spikes are smoothed, and the caption says so)."""
    n = samples.size
    if n <= limit:
        return np.arange(n), samples, 1
    block = math.ceil(n / limit)
    m = n // block
    y = np.median(samples[: m * block].reshape(m, block), axis=1)
    x = np.arange(m) * block + (block - 1) / 2
    return x, y, block


SLOWER_RED, FASTER_GREEN = "#a12622", "#1e7b34"


def drift_words(ratio: float) -> tuple[str, str]:
    """(words, colour) of a drift by its direction: last-quarter / first-quarter median > 1 is
    a cell that got slower over its run (red), < 1 one that got faster (green)."""
    r = num(ratio)
    if math.isnan(r):
        return "drift", SLOWER_RED
    if r >= 1:
        return f"slower over time ×{r:.2f}", SLOWER_RED
    return f"faster over time ×{r:.2f}", FASTER_GREEN


def _stems(ax, p: dict) -> str:
    """One cell's stem plot on `ax` (p: samples in s, bounds, drift, noisy, drift_ratio, title);
    returns the drift's words ("" when it does not drift)."""
    y_all = np.asarray(p["samples"], dtype=float) * 1e3
    x, y, _ = plot_points(y_all)
    words, colour = drift_words(p.get("drift_ratio")) if p["drift"] else ("", "#34495e")
    stems_x = np.repeat(np.asarray(x, dtype=float), 3)
    stems_y = np.column_stack([np.zeros(len(y)), y, np.full(len(y), np.nan)]).ravel()
    stems_x[2::3] = np.nan
    ax.plot(stems_x, stems_y, color=colour, linewidth=0.6, alpha=0.85)
    n = y_all.size
    med = float(np.median(y_all))
    ax.axhline(med, color="k", linewidth=0.6, linestyle=":")
    if n >= 8:  # first- and last-quarter medians: the size of a trend, drawn
        q = n // 4
        ax.hlines([np.median(y_all[:q]), np.median(y_all[-q:])], [0, n - q], [q, n],
                  color="#8e44ad", linewidth=1.6)
    for b in p.get("bounds", []):
        ax.axvline(b, color="#7f8c8d", linewidth=0.6, linestyle="--")
    top = max(float(np.percentile(y_all, 99)) * 1.15, med * 1.3)
    clipped = int((y_all > top).sum())
    ax.set_ylim(0, top)
    ax.set_xlim(-0.5, n)
    title = p["title"]
    if p["drift"]:
        ax.set_facecolor("#fdecea" if colour == SLOWER_RED else "#e8f5ec")
        title = f"{words}\n" + title
    if p["noisy"]:
        for spine in ax.spines.values():
            spine.set_edgecolor("#e67e22")
            spine.set_linewidth(1.6)
        title = "noisy · " + title
    if clipped:
        ax.text(0.99, 0.97, f"{clipped} off scale", transform=ax.transAxes, ha="right",
                va="top", fontsize=9, color="#555")
    ax.set_title(title, fontsize=9, color=colour if p["drift"] else "#222", pad=3,
                 linespacing=1.1, loc="left")
    ax.tick_params(labelsize=8, length=2, pad=1)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.xaxis.set_major_locator(MaxNLocator(nbins=4, integer=True))
    ax.set_ylabel("ms per step", fontsize=8, labelpad=1)
    ax.set_xlabel("step", fontsize=8, labelpad=1)
    return words


def stem_panel(p: dict) -> str:
    """One cell's stem plot of its timed steps as a small inline SVG (a page's grid reflows
    them). A drifting cell is titled by its direction (slower or faster over time, coloured so)
    with a tinted background; a noisy one has an orange frame: the seed's throttling symptom
    ("a rising stem plot of iteration times") shows at a glance."""
    fig = Figure(figsize=(3.6, 2.3))
    ax = fig.add_subplot()
    words = _stems(ax, p)
    fig.tight_layout(pad=0.3)
    n = np.asarray(p["samples"]).size
    label = (f"Stem plot of the {n} timed steps of {p['title'].replace(chr(10), ', ')}"
             + (f": {words}" if words else "") + ("; noisy" if p["noisy"] else ""))
    return fig_svg(fig, label)


# A figure's colour as page text where the figure's own is too light for text (WCAG 4.5:1).
TEXT_COLOURS = {"#8a93a3": "#575e6b", "#e67e22": "#b45309"}
DRIFT_MARKERS = {"slower": ("^", SLOWER_RED), "faster": ("v", FASTER_GREEN),
                 "steady": (".", "#8a93a3")}
# Each matplotlib marker the figures draw as the character a page's legend shows for it.
MARKER_SYMBOLS = {"<": "\u25c0", ">": "\u25b6", "D": "\u25c6", "s": "\u25a0", "o": "\u25cf",
                  "^": "\u25b2", "v": "\u25bc", ".": "\u00b7"}
OPEN_SYMBOLS = {"<": "\u25c1", ">": "\u25b7", "D": "\u25c7", "s": "\u25a1", "o": "\u25cb",
                "^": "\u25b3", "v": "\u25bd"}


def drift_key() -> list[dict]:
    """The overview's legend for a page, from DRIFT_MARKERS: [{symbol, colour, word}], the
    colour one that text can take (4.5:1 on white or more; the figure's grey is lighter)."""
    words = {"slower": "drifts slower over time", "faster": "drifts faster over time",
             "steady": "no drift"}
    return [{"symbol": MARKER_SYMBOLS[m], "colour": TEXT_COLOURS.get(c, c), "word": words[k]}
            for k, (m, c) in DRIFT_MARKERS.items()]


def drift_overview(cells: list[dict], order: list[str]) -> str:
    """Every cell's last-quarter / first-quarter median ratio against its env (x, in `order`):
    a drifting cell as a triangle (up and red: slower over time; down and green: faster), the
    others as small grey dots; a noisy cell ringed in orange. cells: [{env, ratio, drift,
    noisy}]."""
    envs = [e for e in order if e in {c["env"] for c in cells}]
    envs += sorted({c["env"] for c in cells} - set(envs))
    pos = {e: i for i, e in enumerate(envs)}
    fig = Figure(figsize=(max(5.0, 0.9 + 0.24 * len(envs)), 3.0))
    ax = fig.add_subplot()
    ax.axhline(1.0, color="#333", linewidth=0.7)
    points = {"slower": [], "faster": [], "steady": [], "noisy": []}
    for c in cells:
        r = c["ratio"]
        if not (r > 0 and math.isfinite(r)):
            continue
        points[("slower" if r >= 1 else "faster") if c["drift"] else "steady"].append(
            (pos[c["env"]], r))
        if c["noisy"]:
            points["noisy"].append((pos[c["env"]], r))
    shown = {}
    for kind in ("steady", "faster", "slower"):
        if points[kind]:
            marker, colour = DRIFT_MARKERS[kind]
            x, y = zip(*points[kind])
            shown[kind] = ax.plot(x, y, marker=marker, color=colour, linestyle="none",
                                  markersize=5 if kind == "steady" else 6, markeredgewidth=0)[0]
    if points["noisy"]:
        x, y = zip(*points["noisy"])
        shown["noisy"] = ax.plot(x, y, marker="o", markersize=9, markerfacecolor="none",
                                 markeredgecolor="#e67e22", markeredgewidth=1.1,
                                 linestyle="none")[0]
    ax.set_yscale("log")
    plain_log_axis(ax)
    ax.set_xticks(range(len(envs)))
    ax.set_xticklabels(envs, rotation=90, fontsize=7)
    ax.set_xlim(-0.6, len(envs) - 0.4)
    ax.set_ylabel("last / first quarter", fontsize=8)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(True, axis="y", which="both", alpha=0.25, linewidth=0.5)
    names = {"slower": "drifts, slower over time", "faster": "drifts, faster over time",
             "steady": "no drift", "noisy": "noisy"}
    keys = [k for k in ("slower", "faster", "steady", "noisy") if k in shown]
    if keys:
        ax.legend([shown[k] for k in keys], [names[k] for k in keys], fontsize=7, frameon=False,
                  loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout(pad=0.3)
    n_slow = sum(1 for c in cells if c["drift"] and c["ratio"] >= 1)
    n_fast = sum(1 for c in cells if c["drift"] and c["ratio"] < 1)
    label = (f"Last-quarter over first-quarter median step time of {len(cells)} cells by env: "
             f"{n_slow} drift slower over time, {n_fast} faster, "
             f"{sum(1 for c in cells if c['noisy'])} noisy")
    return fig_svg(fig, label)
