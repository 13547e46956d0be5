"""The report's figures (matplotlib, rendered to inline SVG or PNG data URIs): the performance
history, where the time goes, and the stem plots of every cell's samples."""
import html
import io
import logging
import math
import re

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, MaxNLocator, NullFormatter  # noqa: E402

from driver.report.fmt import col, ncol, num, text  # noqa: E402

log = logging.getLogger("tfspeed.report")

MODE_COLOURS = {"eager": "#1f77b4", "graph": "#ff7f0e", "run_eagerly": "#2ca02c",
                "function": "#d62728", "xla": "#9467bd", "compile": "#8c564b",
                "torchscript": "#e377c2"}

KERAS_STYLES = {"tf.keras": "-", "keras": "--", "keras3": ":", "tf_keras": "-.",
                "tf.python.keras": (0, (1, 1)), "none": "-"}

# Plotting at most this many points per cell keeps the stability grid light (block medians beyond).
MAX_PLOT_POINTS = 300
# Achieved FLOP/s over the measured peak: at or above COMPUTE_BOUND the step is mostly arithmetic;
# below OVERHEAD_BOUND it is mostly something else (Python, dispatch, copies).
COMPUTE_BOUND, OVERHEAD_BOUND = 0.5, 0.1


def _attr(value: str) -> str:
    return html.escape(value, quote=True)


def clean_svg(svg: str, label: str = "") -> str:
    """Matplotlib's SVG as an inline element: no prologue, doctype, comments or metadata, scaled
    to the page's width, and named for assistive technology (role="img", aria-label and a
    <title> first child, as WAI's SVG guidance asks)."""
    svg = re.sub(r"<\?xml[^>]*\?>", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>", "", svg)
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    label = label or "figure"
    svg = svg.replace("<svg ", f'<svg class="fig" role="img" aria-label="{_attr(label)}" ', 1)
    svg = re.sub(r"(<svg\b[^>]*>)", lambda m: m.group(1) + f"<title>{html.escape(label)}</title>",
                 svg, count=1)
    return svg.strip()


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
                h = ax.scatter(x, sub[ycol] * scale, s=9, color=MODE_COLOURS.get(mode, "#555"),
                               alpha=0.8, linewidths=0)
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
            ax.grid(True, which="both", alpha=0.25, linewidth=0.5)
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


def stability_grid(panels: list[dict], ncols=3) -> str:
    """Stem plots of per-iteration times, small multiples, as one inline SVG (vector, 9 pt
    text). Each panel's stems are one path. A drifting cell is titled by its direction (slower
    or faster over time, coloured so) with its tinted background; a noisy one has an orange
    frame: the seed's throttling symptom ("a rising stem plot of iteration times") shows at a
    glance."""
    ncols = max(1, min(ncols, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(3.6 * ncols, 2.55 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    findings = []
    for ax, p in zip(axes.flat, panels):
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
            findings.append(words)
        if p["noisy"]:
            for spine in ax.spines.values():
                spine.set_edgecolor("#e67e22")
                spine.set_linewidth(1.6)
            title = "noisy · " + title
        if clipped:
            ax.text(0.99, 0.97, f"{clipped} off scale", transform=ax.transAxes, ha="right",
                    va="top", fontsize=9, color="#555")
        ax.set_title(title, fontsize=9, color=colour if p["drift"] else "#222", pad=3,
                     linespacing=1.1)
        ax.tick_params(labelsize=9, length=2, pad=1)
        ax.set_ylabel("ms per step", fontsize=9, labelpad=1)
        ax.set_xlabel("step", fontsize=9, labelpad=1)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout(pad=0.3, h_pad=0.6, w_pad=0.4)
    n_drift = sum(1 for p in panels if p["drift"])
    label = (f"Stem plots of every timed step of {len(panels)} cells: "
             + (f"{n_drift} drift ({'; '.join(findings)})" if n_drift else "none drifts")
             + f", {sum(1 for p in panels if p['noisy'])} noisy")
    return fig_svg(fig, label)
