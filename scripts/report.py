"""Render the study's report: tables, cell files and env facts -> one self-contained HTML file.

Run by Snakemake's `script:` (rules/report.smk); every piece of logic is a plain function, and
`render()` does the whole job without Snakemake, so tests call it directly.

What the page promises, and how this file keeps the promise:
- Self-contained: figures are inline SVG (matplotlib, text as <text>) or PNG data URIs, the one
  script and the style sheet are inline, and a Content-Security-Policy meta tag forbids every fetch
  (`default-src 'none'`, images from data: only) and every script but ours (by its sha256). A
  stray external reference could not load even if one slipped in.
- Nothing from the data is trusted as markup: the Jinja2 environment autoescapes everything, and
  only SVG/PNG that this file generated is inserted unescaped. Matplotlib escapes the text it
  writes into SVG; `clean_svg` also drops comments, metadata and the XML prologue.
- Missing inputs degrade, they do not crash: a missing table or column shows "no rows", and a
  section whose builder fails anyway shows the error instead of taking the whole report down.
"""


import sys

if "snakemake" in globals():  # Snakemake's script: stderr goes to the rule's log before anything
    sys.stderr = open(snakemake.log[0], "w", buffering=1)  # noqa: F821, SIM115

import base64  # noqa: E402
import datetime  # noqa: E402
import hashlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import logging  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import tempfile  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Iterable, Mapping  # noqa: E402
from pathlib import Path  # noqa: E402

import jinja2  # noqa: E402
import matplotlib  # noqa: E402

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
try:  # the shared comparison module (scripts/compare.py); the report works without it
    import compare  # noqa: E402
except ImportError:  # pragma: no cover - scripts/ is always beside this file
    compare = None

log = logging.getLogger("tfspeed.report")

SECTIONS = [
    ("verdict", "Verdict"),
    ("tables", "The study's tables"),
    ("history", "Performance history"),
    ("time", "Where the time goes"),
    ("stability", "Stability"),
    ("failures", "Failed and skipped cells"),
    ("environments", "Environments"),
    ("method", "Method"),
]

AXES = ["model", "data", "keras", "mode", "api", "input", "device"]
# Columns that identify a cell or a side of a comparison (never numbers to format).
ID_COLS = ["machine", "env", "framework", "framework_version", "python", "keras_version"] + AXES
# Comparison tables in the order the report shows them: (title, what `+` means).
COMPARISONS = {
    "tf2_vs_tf1": ("TF2 vs TF1", "+ when the TF 2.x env (left) is faster than the TF 1.x "
                   "reference env (right)"),
    "graph_vs_eager": ("Graph vs Eager (GvE)", "+ when graph mode is faster than eager"),
    "keras_vs_tfkeras": ("keras vs tf.keras", "+ when the first-named Keras is faster"),
    "numpy_vs_tfdata": ("NumPy vs tf.data", "+ when NumPy input is faster than tf.data"),
    "fit_vs_train_on_batch": ("fit vs train_on_batch", "+ when fit() is faster"),
    "gpu_vs_cpu": ("GPU vs CPU", "+ when the GPU is faster"),
    "frameworks": ("Frameworks", "+ when the first-named framework is faster"),
}
# The "at a glance" matrix of each comparison: these axes become its columns, the rest its rows.
GLANCE_COLUMNS = {"tf2_vs_tf1": ["mode", "left_env"]}
GLANCE_DEFAULT = ["env"]

MODE_COLOURS = {"eager": "#1f77b4", "graph": "#ff7f0e", "run_eagerly": "#2ca02c",
                "function": "#d62728", "xla": "#9467bd", "compile": "#8c564b",
                "torchscript": "#e377c2"}
KERAS_STYLES = {"tf.keras": "-", "keras": "--", "keras3": ":", "tf_keras": "-.",
                "tf.python.keras": (0, (1, 1)), "none": "-"}
API_SHORT = {"train_on_batch": "tob", "fit": "fit", "custom_loop": "loop"}
# Plotting at most this many points per cell keeps the stability grid light (block medians beyond).
MAX_PLOT_POINTS = 300
# Achieved FLOP/s over the measured peak: at or above COMPUTE_BOUND the step is mostly arithmetic;
# below OVERHEAD_BOUND it is mostly something else (Python, dispatch, copies).
COMPUTE_BOUND, OVERHEAD_BOUND = 0.5, 0.1
SELFBENCH_GOALS = {
    "overhead_rel": ("harness overhead per sample, as a share of the small cell's median step",
                     "<= 1e-4"),
    "ci_rel_median": ("median CI half-width / median over the quick preset's cells", "<= 0.02"),
    "spread_ours": ("relative spread of our pooled median over 5 fresh processes",
                    "<= 1/3 of spread_seed"),
    "spread_seed": ("relative spread of the seed's time() mean of 200 calls, same processes", ""),
    "timed_share": ("share of the quick study's wall time inside timed loops", ""),
}
REPORT_SIZE_LIMIT = 10 * 1024 * 1024

SCRIPT_JS = r"""
(function () {
  function key(cell) {
    var v = cell.getAttribute('data-v');
    if (v === null) { v = cell.textContent.trim(); }
    var n = parseFloat(v);
    return (v !== '' && isFinite(n) && String(n) !== 'NaN' && /^[-+]?[0-9.eE+-]+$/.test(v))
      ? [0, n] : [1, v.toLowerCase()];
  }
  function sortBy(table, index, th) {
    var body = table.tBodies[0];
    if (!body) { return; }
    var dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (h) {
      h.removeAttribute('aria-sort');
    });
    th.setAttribute('aria-sort', dir === 1 ? 'ascending' : 'descending');
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[index]), y = key(b.cells[index]);
      if (x[0] !== y[0]) { return x[0] - y[0]; }
      return (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0) * dir;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll('table.sortable').forEach(function (table) {
    if (!table.tHead) { return; }
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (th, i) {
      th.title = 'click to sort';
      th.addEventListener('click', function () { sortBy(table, i, th); });
    });
  });
  document.querySelectorAll('input.filter').forEach(function (input) {
    var table = document.getElementById(input.getAttribute('data-table'));
    if (!table || !table.tBodies[0]) { return; }
    input.addEventListener('input', function () {
      var words = input.value.toLowerCase().split(/\s+/).filter(Boolean);
      var shown = 0;
      Array.prototype.forEach.call(table.tBodies[0].rows, function (row) {
        var text = row.textContent.toLowerCase();
        var keep = words.every(function (w) { return text.indexOf(w) >= 0; });
        row.hidden = !keep;
        if (keep) { shown += 1; }
      });
      var counter = document.getElementById(input.getAttribute('data-table') + '-count');
      if (counter) { counter.textContent = shown + ' rows'; }
    });
  });
})();
"""


# ----------------------------------------------------------------------------- small helpers


def version_key(text) -> tuple:
    """'2.15.1' -> (2, 15, 1); names such as 'tf1.14' or 'torch2.3' sort by their numbers."""
    nums = tuple(int(n) for n in re.findall(r"\d+", str(text or "")))
    return nums or (math.inf,)


def num(value) -> float:
    """A float, or NaN for anything that is not a finite-looking number."""
    try:
        out = float(value)
    except (TypeError, ValueError):
        return math.nan
    return out


def is_true(value) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return False
    return str(value).strip().lower() in ("true", "1", "yes", "y", "t")


def text(value, empty="") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return empty
    try:
        if pd.isna(value):
            return empty
    except (TypeError, ValueError):
        pass
    return str(value)


def fmt_ms(seconds, digits=2) -> str:
    s = num(seconds)
    return "–" if math.isnan(s) else f"{s * 1e3:,.{digits}f}"


def fmt_s(seconds) -> str:
    s = num(seconds)
    if math.isnan(s):
        return "–"
    return f"{s * 1e3:,.1f} ms" if s < 1 else f"{s:,.2f} s"


def fmt_pct(p) -> str:
    p = num(p)
    return "–" if math.isnan(p) else f"{p:+,.1f}"


def fmt_ratio(r) -> str:
    r = num(r)
    return "–" if math.isnan(r) else f"{r:.3g}"


def fmt_p(p) -> str:
    p = num(p)
    if math.isnan(p):
        return "–"
    return "<0.001" if p < 1e-3 else f"{p:.3f}"


def fmt_num(x, spec=".3g") -> str:
    x = num(x)
    return "–" if math.isnan(x) else format(x, spec)


def col(df: pd.DataFrame, name, default=None) -> pd.Series:
    if name in df.columns:
        return df[name]
    return pd.Series([default] * len(df), index=df.index, dtype=object)


def ncol(df: pd.DataFrame, name) -> pd.Series:
    return pd.to_numeric(col(df, name), errors="coerce")


def cell(text_="", cls="", v=None, title=None) -> dict:
    """One table cell for the template: display text, CSS class, sort value, tooltip."""
    return {"text": text_, "cls": cls, "v": None if v is None else str(v), "title": title}


def pct_cell(row) -> dict:
    """The seed's % for one comparison row, coloured by sign, marked when not significant."""
    p = num(row.get("pct"))
    if math.isnan(p):
        return cell("–", "na")
    sig = is_true(row.get("significant"))
    cls = ("pos" if p > 0 else "neg" if p < 0 else "zero") + ("" if sig else " ns")
    tip = (f"left {fmt_ms(row.get('left_median_s'))} ms, right {fmt_ms(row.get('right_median_s'))}"
           f" ms; ratio {fmt_ratio(row.get('ratio'))} [{fmt_ratio(row.get('ratio_ci_low'))}, "
           f"{fmt_ratio(row.get('ratio_ci_high'))}]; Mann-Whitney p {fmt_p(row.get('mw_p'))}; "
           + ("significant" if sig else "not significant"))
    return cell(fmt_pct(p) + ("" if sig else " n.s."), cls, v=p, title=tip)


def read_table(path) -> pd.DataFrame:
    """A CSV as strings (versions such as '2.10' must not become 2.1), or an empty frame."""
    if path is None:
        return pd.DataFrame()
    if isinstance(path, pd.DataFrame):
        return path.copy()
    try:
        return pd.read_csv(path, dtype=str, keep_default_na=True)
    except pd.errors.EmptyDataError:
        log.info("table %s is empty", path)
        return pd.DataFrame()
    except (FileNotFoundError, pd.errors.ParserError, OSError, UnicodeDecodeError) as exc:
        log.warning("table %s unreadable, shown as empty: %s", path, exc)
        return pd.DataFrame()


def records(df: pd.DataFrame) -> list[dict]:
    return df.to_dict("records") if len(df) else []


def env_order(cells: pd.DataFrame, versions: pd.DataFrame) -> list[str]:
    """Envs in version order: the versions table's column order where it has one, else by
    framework and framework version (then name)."""
    known = [text(e) for e in col(cells, "env").dropna().unique()]
    from_versions = [c for c in versions.columns if c in known] if len(versions.columns) else []
    rest = [e for e in known if e not in from_versions]
    facts = {}
    for row in records(cells):
        env = text(row.get("env"))
        if env and env not in facts:
            facts[env] = (text(row.get("framework")),
                          version_key(row.get("framework_version") or env), env)
    rest.sort(key=lambda e: facts.get(e, ("", version_key(e), e)))
    return from_versions + rest


def config_label(row, axes=("keras", "mode", "api", "input", "device"), sep=" · ") -> str:
    return sep.join(text(row.get(a)) for a in axes if text(row.get(a)))


# ----------------------------------------------------------------------------- figures


def clean_svg(svg: str) -> str:
    """Matplotlib's SVG as an inline element: no prologue, doctype, comments or metadata, and
    scaled to the page's width."""
    svg = re.sub(r"<\?xml[^>]*\?>", "", svg)
    svg = re.sub(r"<!DOCTYPE[^>]*>", "", svg)
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = svg.replace("<svg ", '<svg class="fig" role="img" ', 1)
    return svg.strip()


def fig_svg(fig: Figure) -> str:
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "tfspeed"}):
        fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    return clean_svg(buf.getvalue())


def fig_png_uri(fig: Figure, dpi=80, colours=64) -> str:
    """A PNG data URI; reduced to a palette of `colours` (a third of the bytes for these line
    drawings, no visible loss) where Pillow, which matplotlib depends on, is importable."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight",
                metadata={"Software": None})
    data = buf.getvalue()
    try:
        from PIL import Image

        small = io.BytesIO()
        Image.open(io.BytesIO(data)).convert("RGB").quantize(
            colors=colours, method=Image.Quantize.MEDIANCUT).save(small, format="PNG",
                                                                  optimize=True)
        if small.tell() < len(data):
            data = small.getvalue()
    except (ImportError, OSError, ValueError) as exc:
        log.info("PNG kept at full colour: %s", exc)
    return "data:image/png;base64," + base64.b64encode(data).decode("ascii")


def _small_font(fig: Figure):
    for ax in fig.axes:
        ax.tick_params(labelsize=7)
        ax.title.set_fontsize(8)
        ax.xaxis.label.set_fontsize(7)
        ax.yaxis.label.set_fontsize(7)


def plain_log_axis(ax):
    """Log-scale ticks as plain numbers (20, 50, 100), not 2 x 10^1."""
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if str(f"{v:g}")[0] in "25" else ""))


def history_figures(ok: pd.DataFrame, order: list[str]) -> list[dict]:
    """Median step time against TF version with CI bands: one figure per machine and model/data
    pair, one panel per api x input, one line per keras x mode x device."""
    if ok.empty or "env" not in ok.columns:
        return []
    out = []
    groups = ["machine", "model", "data"]
    df = ok.copy()
    for g in groups + ["api", "input", "keras", "mode", "device"]:
        df[g] = col(df, g, "").map(text)
    df["median_s"] = ncol(df, "median_s")
    df["ci_low_s"] = ncol(df, "ci_low_s")
    df["ci_high_s"] = ncol(df, "ci_high_s")
    several_machines = df["machine"].nunique() > 1
    for (machine, model, data), part in df.groupby(groups, sort=True):
        envs = [e for e in order if e in set(part["env"])]
        if not envs:
            continue
        xpos = {e: i for i, e in enumerate(envs)}
        panels = sorted(part.groupby(["api", "input"]).groups)
        ncols = min(len(panels), 4)
        nrows = math.ceil(len(panels) / ncols)
        fig = Figure(figsize=(0.9 + 3.1 * ncols, 0.6 + 2.5 * nrows))
        axes = fig.subplots(nrows, ncols, squeeze=False)
        handles = {}
        for ax, (api, inp) in zip(axes.flat, panels):
            sub = part[(part["api"] == api) & (part["input"] == inp)]
            for (keras, mode, device), line in sub.groupby(["keras", "mode", "device"]):
                y = np.full(len(envs), np.nan)
                lo, hi = y.copy(), y.copy()
                for row in records(line):
                    i = xpos.get(row["env"])
                    if i is not None:
                        y[i], lo[i], hi[i] = row["median_s"], row["ci_low_s"], row["ci_high_s"]
                colour = MODE_COLOURS.get(mode, "#555555")
                (h,) = ax.plot(range(len(envs)), y * 1e3, color=colour,
                               linestyle=KERAS_STYLES.get(keras, "-"),
                               marker="s" if device == "gpu" else "o", markersize=3, linewidth=1.2)
                band = ~(np.isnan(lo) | np.isnan(hi))
                if band.any():
                    ax.fill_between(np.arange(len(envs)), np.where(band, lo, np.nan) * 1e3,
                                    np.where(band, hi, np.nan) * 1e3, color=colour, alpha=0.18,
                                    linewidth=0)
                handles.setdefault(f"{keras} · {mode} · {device}", h)
            ax.set_title(f"{api} · {inp}")
            ax.set_xticks(range(len(envs)))
            ax.set_xticklabels(envs, rotation=45, ha="right")
            ax.set_yscale("log")
            plain_log_axis(ax)
            ax.set_ylabel("median ms / step")
            ax.grid(True, which="both", alpha=0.25, linewidth=0.5)
        for ax in list(axes.flat)[len(panels):]:
            ax.set_visible(False)
        if handles:
            fig.legend(list(handles.values()), list(handles.keys()), loc="center left",
                       bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False,
                       title="keras · mode · device", title_fontsize=7)
        _small_font(fig)
        fig.tight_layout()
        title = f"{model} model, {data} data" + (f" — {machine}" if several_machines else "")
        out.append({"title": title, "svg": fig_svg(fig)})
    return out


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
        fig = Figure(figsize=(0.8 + 3.6 * ncols, 0.6 + 2.6 * nrows))
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
            ax.set_xticklabels(list(xpos.keys()), rotation=45, ha="right")
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
        out.append({"title": what, "svg": fig_svg(fig)})
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


def stability_grid(panels: list[dict], ncols=6) -> str:
    """Stem plots of per-iteration times, small multiples, as one PNG data URI. Drifting cells
    get a red panel and a DRIFT title, noisy ones an orange frame: the seed's throttling symptom
    ("a rising stem plot of iteration times") is then visible at a glance."""
    ncols = max(1, min(ncols, len(panels)))
    nrows = math.ceil(len(panels) / ncols)
    fig = Figure(figsize=(1.95 * ncols, 1.3 * nrows))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, p in zip(axes.flat, panels):
        y_all = np.asarray(p["samples"], dtype=float) * 1e3
        x, y, _ = plot_points(y_all)
        colour = "#c0392b" if p["drift"] else "#34495e"
        ax.vlines(x, 0, y, color=colour, linewidth=0.5, alpha=0.8)
        ax.plot(x, y, ".", color=colour, markersize=1.2)
        n = y_all.size
        med = float(np.median(y_all))
        ax.axhline(med, color="k", linewidth=0.5, linestyle=":")
        if n >= 8:  # first- and last-quarter medians: the size of a trend, drawn
            q = n // 4
            ax.hlines([np.median(y_all[:q]), np.median(y_all[-q:])], [0, n - q], [q, n],
                      color="#8e44ad", linewidth=1.4)
        for b in p.get("bounds", []):
            ax.axvline(b, color="#7f8c8d", linewidth=0.6, linestyle="--")
        top = max(float(np.percentile(y_all, 99)) * 1.15, med * 1.3)
        clipped = int((y_all > top).sum())
        ax.set_ylim(0, top)
        ax.set_xlim(-0.5, n)
        title = p["title"]
        if p["drift"]:
            ax.set_facecolor("#fdecea")
            title = f"DRIFT x{num(p.get('drift_ratio')):.2f}\n" + title
        if p["noisy"]:
            for spine in ax.spines.values():
                spine.set_edgecolor("#e67e22")
                spine.set_linewidth(1.6)
            title = "noisy · " + title
        if clipped:
            ax.text(0.99, 0.98, f"{clipped} above", transform=ax.transAxes, ha="right",
                    va="top", fontsize=4.5, color="#7f8c8d")
        ax.set_title(title, fontsize=5.6, color="#c0392b" if p["drift"] else "#222",
                     pad=2, linespacing=1.0)
        ax.tick_params(labelsize=4.5, length=1.5, pad=1)
    for ax in list(axes.flat)[len(panels):]:
        ax.set_visible(False)
    fig.tight_layout(pad=0.3, h_pad=0.5, w_pad=0.3)
    return fig_png_uri(fig, dpi=100)


# ----------------------------------------------------------------------------- cell files


def load_cell_files(paths: Iterable) -> tuple[list[dict], list[dict]]:
    """(records, problems): each readable cell file as a dict (with `_path`), and the files that
    could not be read, with why."""
    out, problems = [], []
    for path in paths or []:
        try:
            with open(path, encoding="utf-8") as handle:
                rec = json.load(handle)
            if not isinstance(rec, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            problems.append({"path": str(path), "error": f"{type(exc).__name__}: {exc}"})
            continue
        rec["_path"] = str(path)
        out.append(rec)
    return out, problems


def cell_key(rec) -> tuple:
    cid = rec.get("cell_id")
    if not cid:
        cid = ".".join(text(rec.get(a)) for a in AXES)
    return (text(rec.get("machine")), text(rec.get("env")), text(cid))


def samples_by_cell(recs: list[dict]) -> dict:
    """(machine, env, cell_id) -> (pooled samples in repeat order, repeat boundaries, summary)."""
    grouped = {}
    for rec in recs:
        if rec.get("status") != "ok" or not rec.get("samples_s"):
            continue
        grouped.setdefault(cell_key(rec), []).append(rec)
    out = {}
    for key, reps in grouped.items():
        reps.sort(key=lambda r: num(r.get("repeat")) if not math.isnan(num(r.get("repeat")))
                  else 0)
        arrays, bounds, total = [], [], 0
        for rec in reps:
            x = np.asarray([num(v) for v in rec["samples_s"]], dtype=float)
            x = x[np.isfinite(x)]
            if total:
                bounds.append(total - 0.5)
            arrays.append(x)
            total += x.size
        if total:
            out[key] = {"samples": np.concatenate(arrays), "bounds": bounds,
                        "summary": reps[0].get("summary") or {}, "record": reps[0]}
    return out


# ----------------------------------------------------------------------------- sections


def machine_facts(recs: list[dict]) -> dict:
    """machine key -> the provenance of its most recent cell file."""
    out = {}
    for rec in sorted(recs, key=lambda r: text(r.get("started_utc"))):
        facts = (rec.get("provenance") or {}).get("machine")
        if isinstance(facts, dict):
            out[text(rec.get("machine"))] = facts
    return out


def describe_machine(facts: dict) -> str:
    if not facts:
        return "unknown machine (no cell file carried its provenance)"
    parts = [text(facts.get("cpu_model"), "unknown CPU")]
    if facts.get("cpu_count"):
        parts[0] += f" ({facts['cpu_count']} logical cores)"
    gpus = facts.get("gpus")
    if gpus:
        names = [text(g.get("name")) if isinstance(g, dict) else text(g) for g in gpus]
        parts.append("GPU: " + ", ".join(n for n in names if n))
    else:
        parts.append("no GPU")
    if facts.get("mem_total_gb"):
        parts.append(f"{facts['mem_total_gb']} GB RAM")
    return "; ".join(parts)


def measurement_dates(recs: list[dict]) -> str:
    dates = sorted(text(r.get("started_utc"))[:10] for r in recs if r.get("started_utc"))
    if not dates:
        return "unknown"
    return dates[0] if dates[0] == dates[-1] else f"{dates[0]} to {dates[-1]}"


def versions_covered(cells: pd.DataFrame) -> list[str]:
    """'tensorflow 1.14.0, 2.21.0' per framework, from every cell (ok or not)."""
    pairs = set()
    for row in records(cells):
        fw, ver = text(row.get("framework")), text(row.get("framework_version"))
        if ver:
            pairs.add((fw or "tensorflow", ver))
    out = []
    for fw in sorted({p[0] for p in pairs}):
        vers = sorted((v for f, v in pairs if f == fw), key=version_key)
        out.append(f"{fw} " + ", ".join(vers))
    return out


def oriented(df: pd.DataFrame, fast_side: str) -> pd.DataFrame:
    """Rows with `speedup` (how many times faster the side claimed to be faster is) and
    `sig` (the table's significance verdict). fast_side: 'left' or 'right'."""
    if df.empty or "ratio" not in df.columns:
        return pd.DataFrame(columns=["speedup", "sig"])
    ratio = ncol(df, "ratio")
    if ratio.isna().all() and {"left_median_s", "right_median_s"} <= set(df.columns):
        ratio = ncol(df, "left_median_s") / ncol(df, "right_median_s")
    out = pd.DataFrame({"speedup": 1.0 / ratio if fast_side == "left" else ratio,
                        "sig": col(df, "significant", False).map(is_true)}, index=df.index)
    return out[out["speedup"].notna()]


def oriented_by_axis(df: pd.DataFrame, axis: str, fast: str, slow: str) -> pd.DataFrame:
    """As `oriented`, for tables whose sides are named by left_<axis>/right_<axis> values."""
    lcol, rcol = f"left_{axis}", f"right_{axis}"
    if df.empty or lcol not in df.columns or rcol not in df.columns:
        return pd.DataFrame(columns=["speedup", "sig"])
    left, right = col(df, lcol).map(text), col(df, rcol).map(text)
    a = oriented(df[(left == fast) & (right == slow)], "left")
    b = oriented(df[(left == slow) & (right == fast)], "right")
    return pd.concat([a, b])


def pairs_from_cells(cells: pd.DataFrame, samples: dict, axis: str, fast: str,
                     slow: str) -> pd.DataFrame:
    """Compare cells that differ in `axis` alone (fast vs slow value), from their samples."""
    if compare is None or cells.empty or axis not in cells.columns:
        return pd.DataFrame(columns=["speedup", "sig"])
    ok = cells[col(cells, "status").map(text) == "ok"]
    others = [c for c in ["machine", "env"] + AXES if c != axis and c in ok.columns]
    rows = []
    by_key = {}
    for row in records(ok):
        by_key.setdefault(tuple(text(row.get(c)) for c in others), {})[text(row[axis])] = row
    for group in by_key.values():
        if fast in group and slow in group:
            sf = samples.get(cell_key(group[fast]))
            ss = samples.get(cell_key(group[slow]))
            if sf is None or ss is None:
                continue
            try:
                res = compare.compare(ss["samples"], sf["samples"])
            except ValueError:
                continue
            rows.append({"speedup": res["ratio"], "sig": res["significant"]})
    return pd.DataFrame(rows, columns=["speedup", "sig"])


def judge(rows: pd.DataFrame, min_factor=1.0) -> dict:
    """A claim "X is faster than Y (by at least min_factor)" against comparison rows."""
    n = len(rows)
    if n == 0:
        return {"status": "no data", "cls": "nodata", "n": 0,
                "evidence": "no comparison in this study's tables"}
    sig = rows["sig"].astype(bool)
    faster = rows["speedup"] > 1.0
    n_for = int((sig & faster & (rows["speedup"] >= min_factor)).sum())
    n_weak = int((sig & faster & (rows["speedup"] < min_factor)).sum())
    n_against = int((sig & ~faster).sum())
    n_ns = int((~sig).sum())
    top = float(rows["speedup"].max())
    if n_for > n / 2:
        status, cls = "holds", "holds"
    elif n_against > n / 2:
        status, cls = "does not hold", "fails"
    elif min_factor > 1 and n_for + n_weak > n / 2:
        status, cls = f"does not hold: faster, but less than {min_factor:g}x", "fails"
    elif min_factor > 1 and top < min_factor:
        # Not even a point estimate reaches the claimed factor: the claim fails whatever the
        # noise, even where single pairs are not significant.
        status, cls = f"does not hold: at most {top:.2f}x, never {min_factor:g}x", "fails"
    elif n_for + n_weak + n_against == 0:
        status, cls = "not significant", "ns"
    else:
        status, cls = "mixed", "mixed"
    med = float(rows["speedup"].median())
    lo, hi = float(rows["speedup"].min()), float(rows["speedup"].max())
    parts = [f"{n} pair{'s' if n != 1 else ''}: {n_for} significant in favour"]
    if min_factor > 1:
        parts.append(f"{n_weak} significant but under {min_factor:g}x")
    parts += [f"{n_against} significant against", f"{n_ns} not significant"]
    evidence = (", ".join(parts) + f"; claimed-faster side's speed-up: median {med:.2f}x "
                f"(range {lo:.2f}x to {hi:.2f}x)")
    return {"status": status, "cls": cls, "n": n, "evidence": evidence}


def claims(tables: dict, cells: pd.DataFrame, samples: dict) -> list[dict]:
    """The seed's claims, judged on this study's comparison tables."""
    t = {name: tables.get(name, pd.DataFrame()) for name in COMPARISONS}

    def where(df, **values):
        for key, allowed in values.items():
            if df.empty:
                return df
            if key not in df.columns:
                return df.iloc[0:0]
            allowed = allowed if isinstance(allowed, (list, tuple, set)) else [allowed]
            df = df[col(df, key).map(text).isin(allowed)]
        return df

    tfpy = oriented_by_axis(t["keras_vs_tfkeras"], "keras", "tf.keras", "tf.python.keras")
    tfpy_source = "keras_vs_tfkeras"
    if tfpy.empty:
        tfpy = pairs_from_cells(cells, samples, "keras", "tf.keras", "tf.python.keras")
        tfpy_source = "cells (tf.python.keras vs tf.keras, same env and axes)"
    specs = [
        ("TF2 is slower than TF1", "the question; TF1 ran 47 % to 276 % faster",
         "tf2_vs_tf1", oriented(t["tf2_vs_tf1"], "right"), 1.0),
        ("TF2 eager is slower than TF1 eager", "answer 2: \"TF2 Eager is slower than TF1 "
         "Eager\"", "tf2_vs_tf1, mode eager",
         oriented(where(t["tf2_vs_tf1"], mode="eager"), "right"), 1.0),
        ("Graph is faster than eager", "answer 2's Eager vs Graph section",
         "graph_vs_eager", oriented(t["graph_vs_eager"], "left"), 1.0),
        ("fit() + numpy is slower than train_on_batch() for small models",
         "DON'T: fit() + numpy ... for small & medium models and data",
         "fit_vs_train_on_batch, numpy input, small and medium models",
         oriented(where(t["fit_vs_train_on_batch"], input="numpy", model=["small", "medium"]),
                  "right"), 1.0),
        ("standalone keras is slower than tf.keras with fit() + numpy",
         "DON'T: fit() + numpy + keras for small & medium models and data",
         "keras_vs_tfkeras, fit, numpy, small and medium models",
         oriented_by_axis(where(t["keras_vs_tfkeras"], api="fit", input="numpy",
                                model=["small", "medium"]), "keras", "tf.keras", "keras"), 1.0),
        ("tf.python.keras is 10-100x slower than tf.keras",
         "[Major] tf.python.keras; it can run 10-100x slower", tfpy_source, tfpy, 10.0),
    ]
    out = []
    for claim, seed, source, rows, factor in specs:
        verdict = judge(rows, factor)
        out.append({"claim": claim, "seed": seed, "source": source, **verdict})
    return out


def guidance_view(guidance: pd.DataFrame) -> list[dict]:
    """Per machine and model/data pair: DO and DON'T lists, fastest first / slowest last."""
    if guidance.empty:
        return []
    df = guidance.copy()
    df["_list"] = col(df, "list", "").map(lambda v: re.sub(r"[^A-Z]", "", text(v).upper()))
    df["_ratio"] = ncol(df, "ratio_to_fastest")
    out = []
    keys = [k for k in ("machine", "model", "data") if k in df.columns]
    grouped = df.groupby(keys, sort=True) if keys else [((), df)]
    for key, part in grouped:
        key = key if isinstance(key, tuple) else (key,)
        label = dict(zip(keys, (text(k) for k in key)))

        def items(kind, ascending, part=part):
            sub = part[part["_list"] == kind].sort_values("_ratio", ascending=ascending)
            return [{"configuration": text(r.get("configuration"), "?"),
                     "ratio": "–" if math.isnan(num(r.get("_ratio"))) else
                     f"{num(r.get('_ratio')):.2f}x"} for r in records(sub)]

        out.append({"machine": label.get("machine", ""), "model": label.get("model", ""),
                    "data": label.get("data", ""), "do": items("DO", True),
                    "dont": items("DONT", False)})
    return out


def identifier_columns(df: pd.DataFrame) -> tuple[list[str], list[str], list[str]]:
    """(shared axes, left_* identifiers, right_* identifiers) of a comparison table."""
    shared = [c for c in ID_COLS if c in df.columns]
    # left_/right_cell_id are for tracing a row back to its files, not for reading
    left = [c for c in df.columns if c.startswith("left_") and c[5:] in ID_COLS]
    right = [c for c in df.columns if c.startswith("right_") and c[6:] in ID_COLS]
    return shared, left, right


def side_label(row, cols) -> str:
    return " ".join(text(row.get(c)) for c in cols if text(row.get(c)) and
                    not c.endswith("cell_id"))


def comparison_view(name: str, df: pd.DataFrame) -> dict:
    """One comparison table for the template: the seed-shaped glance matrix and the full rows."""
    title, sign = COMPARISONS.get(name, (name, "+ when the left side is faster"))
    view = {"name": name, "title": title, "sign": sign, "rows": 0, "glance": None,
            "full": None, "constants": [], "n_sig": 0}
    if df.empty:
        return view
    shared, left, right = identifier_columns(df)
    idcols = shared + left + right
    constants = [c for c in idcols if col(df, c).map(text).nunique() <= 1]
    view["constants"] = [(c, text(df[c].iloc[0])) for c in constants if text(df[c].iloc[0])]
    varying = [c for c in idcols if c not in constants]
    view["rows"] = len(df)
    view["n_sig"] = int(col(df, "significant", False).map(is_true).sum())

    # The glance matrix: the seed's tables put the % of each configuration side by side.
    colkeys = [c for c in GLANCE_COLUMNS.get(name, GLANCE_DEFAULT) if c in varying]
    rowkeys = [c for c in varying if c not in colkeys]
    if colkeys:  # a column that follows the column keys (an env's version) would split rows
        keyed = df[colkeys].map(text)
        rowkeys = [c for c in rowkeys if keyed.assign(_v=col(df, c).map(text))
                   .groupby(colkeys)["_v"].nunique().max() > 1]
    recs = records(df)
    if colkeys and rowkeys:
        col_values = []
        for r in recs:
            k = tuple(text(r.get(c)) for c in colkeys)
            if k not in col_values:
                col_values.append(k)
        col_values.sort(key=lambda k: tuple(version_key(v) if "env" in c else (v,)
                                            for c, v in zip(colkeys, k)))
        matrix = {}
        for r in recs:
            rk = tuple(text(r.get(c)) for c in rowkeys)
            ck = tuple(text(r.get(c)) for c in colkeys)
            matrix.setdefault(rk, {}).setdefault(ck, r)
        view["glance"] = {
            "row_headers": rowkeys,
            "col_headers": [" · ".join(k) for k in col_values],
            "col_axes": " · ".join(colkeys),
            "rows": [{"key_values": list(rk),
                      "cells": [pct_cell(matrix[rk][ck]) if ck in matrix[rk] else cell("", "na")
                                for ck in col_values]}
                     for rk in sorted(matrix)],
        }
    # The full rows.
    shared_v = [c for c in shared if c in varying]
    columns = ([{"label": c, "num": False} for c in shared_v]
               + [{"label": "left", "num": False}, {"label": "right", "num": False},
                  {"label": "left ms", "num": True}, {"label": "right ms", "num": True},
                  {"label": "%", "num": True}, {"label": "ratio [CI]", "num": True},
                  {"label": "verdict", "num": False}, {"label": "MW p", "num": True}])
    rows = []
    for r in recs:
        lname, rname = side_label(r, left) or "left", side_label(r, right) or "right"
        verdict = text(r.get("verdict"))
        if verdict.startswith("left"):
            verdict = f"{lname} faster"
        elif verdict.startswith("right"):
            verdict = f"{rname} faster"
        elif not verdict:
            verdict = "significant" if is_true(r.get("significant")) else "not significant"
        rows.append([cell(text(r.get(c))) for c in shared_v] + [
            cell(lname), cell(rname),
            cell(fmt_ms(r.get("left_median_s")), "num", v=num(r.get("left_median_s"))),
            cell(fmt_ms(r.get("right_median_s")), "num", v=num(r.get("right_median_s"))),
            pct_cell(r),
            cell(f"{fmt_ratio(r.get('ratio'))} [{fmt_ratio(r.get('ratio_ci_low'))}, "
                 f"{fmt_ratio(r.get('ratio_ci_high'))}]", "num", v=num(r.get("ratio"))),
            cell(verdict, "" if is_true(r.get("significant")) else "ns"),
            cell(fmt_p(r.get("mw_p")), "num", v=num(r.get("mw_p"))),
        ])
    view["full"] = {"id": f"t-{name}", "columns": columns, "rows": rows}
    return view


def versions_view(versions: pd.DataFrame, order: list[str]) -> dict | None:
    """The performance history as a table: median ms per configuration and env, the fastest
    env of each row in bold."""
    if versions.empty:
        return None
    envs = [c for c in versions.columns if c in order]
    if not envs:  # an unknown layout: every column that holds numbers is an env
        envs = [c for c in versions.columns
                if pd.to_numeric(versions[c], errors="coerce").notna().any()]
    labels = [c for c in versions.columns if c not in envs and c != "fastest_env"]
    tail = ["fastest_env"] if "fastest_env" in versions.columns else []
    columns = ([{"label": c, "num": False} for c in labels]
               + [{"label": e, "num": True} for e in envs]
               + [{"label": "fastest", "num": False} for _ in tail])
    rows = []
    for r in records(versions):
        values = [num(r.get(e)) for e in envs]
        finite = [v for v in values if not math.isnan(v)]
        best = min(finite) if finite else None
        rows.append([cell(text(r.get(c))) for c in labels]
                    + [cell(fmt_ms(v), "num best" if best is not None and v == best else "num",
                            v=v) for v in values]
                    + [cell(text(r.get(c))) for c in tail])
    return {"id": "t-versions", "columns": columns, "rows": rows}


def achieved_flops(df: pd.DataFrame) -> pd.Series:
    ach = ncol(df, "achieved_flops")
    fallback = ncol(df, "flops_per_step") / ncol(df, "median_s")
    return ach.where(ach.notna(), fallback)


def measured_peaks(cells: pd.DataFrame) -> dict:
    """machine -> attainable FLOP/s: the `peak_flops` that aggregation put on every cell of a
    machine (its fastest matmul cell); NaN for a machine without a matmul cell."""
    if not len(cells):
        return {}
    peaks = ncol(cells, "peak_flops").groupby(col(cells, "machine").map(text)).max()
    return {machine: float(peak) for machine, peak in peaks.items()}


def time_table(ok: pd.DataFrame, peaks: dict) -> dict:
    """Per cell: first call, median, their ratio, achieved FLOP/s, efficiency, retraces."""
    df = ok.copy()
    df["_ach"] = achieved_flops(df)
    eff = ncol(df, "efficiency")
    peak_of = col(df, "machine").map(lambda m: peaks.get(text(m), math.nan))
    df["_eff"] = eff.where(eff.notna(), df["_ach"] / pd.to_numeric(peak_of, errors="coerce"))
    columns = [{"label": c, "num": n} for c, n in (
        ("env", False), ("model-data", False), ("configuration", False),
        ("first call ms", True), ("median ms", True), ("first / median", True),
        ("GFLOP/s", True), ("of peak", True), ("bound", False), ("retraces", True))]
    rows = []
    for r in records(df):
        first, med = num(r.get("first_call_s")), num(r.get("median_s"))
        e = num(r.get("_eff"))
        bound = ("–" if math.isnan(e) else "compute" if e >= COMPUTE_BOUND
                 else "overhead" if e < OVERHEAD_BOUND else "mixed")
        rows.append([
            cell(text(r.get("env"))),
            cell(f"{text(r.get('model'))}-{text(r.get('data'))}"),
            cell(config_label(r)),
            cell(fmt_ms(first), "num", v=first),
            cell(fmt_ms(med), "num", v=med),
            cell(fmt_num(first / med if med > 0 else math.nan, ",.0f"), "num",
                 v=first / med if med > 0 else None),
            cell(fmt_num(num(r.get("_ach")) * 1e-9, ",.2f"), "num", v=num(r.get("_ach"))),
            cell("–" if math.isnan(e) else f"{e:.1%}", "num", v=e),
            cell(bound, {"overhead": "neg", "compute": "pos"}.get(bound, "")),
            cell(text(r.get("retraces"), "–"), "num", v=num(r.get("retraces"))),
        ])
    counts = {}
    for row in rows:
        counts[row[8]["text"]] = counts.get(row[8]["text"], 0) + 1
    return {"table": {"id": "t-time", "columns": columns, "rows": rows}, "bounds": counts,
            "retraced": int((ncol(df, "retraces") > 0).sum())}


def stability_view(ok: pd.DataFrame, samples: dict, order: list[str]) -> dict:
    """Small multiples per machine and env, and the table of flagged cells."""
    flags = {}
    for r in records(ok):
        flags[cell_key(r)] = r
    groups = {}
    for key, s in samples.items():
        groups.setdefault((key[0], key[1]), []).append((key, s))
    env_rank = {e: i for i, e in enumerate(order)}
    figures = []
    flagged = []
    for (machine, env), items in sorted(groups.items(),
                                        key=lambda kv: (kv[0][0], env_rank.get(kv[0][1], 1e9),
                                                        kv[0][1])):
        panels = []
        for key, s in sorted(items, key=lambda kv: kv[0][2]):
            row = flags.get(key, {})
            summ = s["summary"]
            drift = is_true(row.get("drift")) if "drift" in row else is_true(summ.get("drift"))
            noisy = is_true(row.get("noisy")) if "noisy" in row else is_true(summ.get("noisy"))
            ratio = num(row.get("drift_ratio")) if "drift_ratio" in row else num(
                summ.get("drift_ratio"))
            rec = s["record"]
            axes = {a: text(row.get(a), text(rec.get(a))) for a in AXES}
            title = (f"{axes['model']}-{axes['data']} · {axes['keras']}\n{axes['mode']} · "
                     f"{API_SHORT.get(axes['api'], axes['api'])} · {axes['input']} · "
                     f"{axes['device']}")
            panels.append({"title": title, "samples": s["samples"], "bounds": s["bounds"],
                           "drift": drift, "noisy": noisy, "drift_ratio": ratio})
            med = float(np.median(s["samples"]))
            q75, q25 = np.percentile(s["samples"], [75, 25])
            if drift or noisy:
                flagged.append([
                    cell(env), cell(config_label(axes, AXES)),
                    cell(str(s["samples"].size), "num", v=s["samples"].size),
                    cell(fmt_ms(med), "num", v=med),
                    cell("drift" if drift else "", "neg" if drift else ""),
                    cell(fmt_num(ratio, ".2f"), "num", v=ratio),
                    cell("noisy" if noisy else "", "warn" if noisy else ""),
                    cell(f"{(q75 - q25) / med:.1%}" if med > 0 else "–", "num",
                         v=(q75 - q25) / med if med > 0 else None),
                    cell(fmt_num(num(row.get("between_rel_spread")), ".1%"), "num",
                         v=num(row.get("between_rel_spread"))),
                ])
        n_big = sum(1 for p in panels if np.asarray(p["samples"]).size > MAX_PLOT_POINTS)
        figures.append({"machine": machine, "env": env, "n": len(panels),
                        "n_drift": sum(p["drift"] for p in panels),
                        "n_noisy": sum(p["noisy"] for p in panels), "downsampled": n_big,
                        "uri": stability_grid(panels)})
    columns = [{"label": c, "num": n} for c, n in (
        ("env", False), ("cell", False), ("samples", True), ("median ms", True),
        ("drift", False), ("last / first quarter", True), ("noisy", False),
        ("IQR / median", True), ("between processes", True))]
    return {"figures": figures, "several_machines": len({f["machine"] for f in figures}) > 1,
            "flagged": {"id": "t-flagged", "columns": columns, "rows": flagged}}


def failures_view(cells: pd.DataFrame, recs: list[dict], problems: list[dict]) -> dict:
    """Failed and skipped cells with reasons and log tails (from the cell files where there are
    any; cells.csv rows that no file explains are listed too)."""
    items, seen = [], set()
    for rec in sorted(recs, key=lambda r: (text(r.get("env")), cell_key(r)[2],
                                           num(r.get("repeat")) if r.get("repeat") is not None
                                           else 0)):
        status = text(rec.get("status"), "unknown")
        if status == "ok":
            continue
        seen.add(cell_key(rec))
        items.append({"status": status, "machine": text(rec.get("machine")),
                      "env": text(rec.get("env")), "cell": cell_key(rec)[2],
                      "repeat": text(rec.get("repeat")), "reason": text(rec.get("reason")),
                      "log_tail": text(rec.get("log_tail")), "path": rec.get("_path", "")})
    for r in records(cells):
        status = text(r.get("status"), "unknown")
        if status == "ok" or cell_key(r) in seen:
            continue
        items.append({"status": status, "machine": text(r.get("machine")),
                      "env": text(r.get("env")), "cell": cell_key(r)[2], "repeat": "",
                      "reason": text(r.get("reason")), "log_tail": "", "path": ""})
    counts = {}
    for it in items:
        counts[it["status"]] = counts.get(it["status"], 0) + 1
    return {"entries": items, "counts": counts, "problems": problems}


def environments_view(recs: list[dict]) -> dict:
    envs = {}
    for rec in sorted(recs, key=lambda r: text(r.get("started_utc"))):
        prov = rec.get("provenance") or {}
        manifest = prov.get("env") if isinstance(prov.get("env"), dict) else {}
        key = (text(rec.get("machine")), text(rec.get("env")))
        e = envs.setdefault(key, {"machine": key[0], "env": key[1], "hashes": set(),
                                  "cells": 0, "manifest": {}})
        e["cells"] += 1
        if manifest.get("spec_hash"):
            e["hashes"].add(text(manifest["spec_hash"]))
        if manifest.get("packages") or not e["manifest"]:
            e["manifest"] = manifest
        e.setdefault("python", text(rec.get("python")))
        e.setdefault("framework", f"{text(rec.get('framework'))} "
                                  f"{text(rec.get('framework_version'))}".strip())
    out = []
    for (_machine, _env), e in sorted(envs.items(), key=lambda kv: (kv[0][0],
                                                                    version_key(kv[0][1]))):
        m = e["manifest"]
        pk = m.get("packages") or {}
        packages = (sorted((text(k), text(v)) for k, v in pk.items()) if isinstance(pk, dict)
                    else [(text(p), "") for p in pk] if isinstance(pk, list) else [])
        facts = [("framework", e["framework"] or text(m.get("framework_version"))),
                 ("python", text(m.get("python")) or e["python"]),
                 ("interpreter", text(m.get("python_executable"))),
                 ("spec file", text(m.get("spec_file"))),
                 ("spec hash", ", ".join(sorted(e["hashes"])) or text(m.get("spec_hash"))),
                 ("installer", text(m.get("installer"))),
                 ("install time", f"{num(m.get('install_s')):.0f} s"
                  if not math.isnan(num(m.get("install_s"))) else ""),
                 ("built", text(m.get("built_utc"))),
                 ("variables", ", ".join(f"{k}={v}" for k, v in (m.get("variables") or {})
                                         .items()) if isinstance(m.get("variables"), dict)
                  else ""),
                 ("cell files", str(e["cells"]))]
        out.append({"machine": e["machine"], "env": e["env"],
                    "facts": [(k, v) for k, v in facts if v], "packages": packages})
    machines = []
    for machine, facts in sorted(machine_facts(recs).items()):
        loads_before = [num((r.get("provenance") or {}).get("load_before", [None])[0])
                        for r in recs if text(r.get("machine")) == machine
                        and isinstance((r.get("provenance") or {}).get("load_before"), list)]
        loads = [v for v in loads_before if not math.isnan(v)]
        rows = []
        for k, v in facts.items():
            if isinstance(v, (list, dict)):
                v = json.dumps(v, sort_keys=True)
            rows.append((text(k), text(v, "none")))
        if loads:
            rows.append(("1-min load before cells", f"min {min(loads):.2f}, median "
                         f"{float(np.median(loads)):.2f}, max {max(loads):.2f}"))
        machines.append({"machine": machine, "facts": rows})
    return {"envs": out, "machines": machines}


def read_selfbench(path) -> dict | None:
    """The harness figures of `make selfbench` (a JSON object, or its last JSON line)."""
    if not path or not os.path.exists(path):
        return None
    try:
        raw = Path(path).read_text(encoding="utf-8")
        try:
            data = json.loads(raw)
        except ValueError:
            lines = [ln for ln in raw.splitlines() if ln.strip().startswith("{")]
            data = json.loads(lines[-1]) if lines else None
    except (OSError, ValueError) as exc:
        return {"error": f"{path} unreadable: {exc}", "rows": []}
    if not isinstance(data, dict):
        return {"error": f"{path} holds no JSON object", "rows": []}
    rows = []
    for key, (meaning, goal) in SELFBENCH_GOALS.items():
        value = num(data.get(key))
        rows.append({"key": key, "meaning": meaning, "goal": goal,
                     "value": "not measured" if math.isnan(value) else f"{value:.3g}"})
    extra = [(k, text(v) if not isinstance(v, (dict, list)) else json.dumps(v, sort_keys=True))
             for k, v in sorted(data.items()) if k not in SELFBENCH_GOALS]
    return {"error": None, "rows": rows, "extra": extra}


def cells_table(cells: pd.DataFrame) -> dict:
    """Every cell, sortable and filterable."""
    cols = [c for c in ["machine", "env", "framework_version"] + AXES if c in cells.columns]
    columns = ([{"label": c, "num": False} for c in cols]
               + [{"label": c, "num": n} for c, n in (
                   ("status", False), ("n", True), ("median ms", True), ("CI ms", True),
                   ("first call ms", True), ("flags", False))])
    rows = []
    for r in records(cells):
        status = text(r.get("status"), "?")
        flags = [f for f in ("noisy", "drift") if is_true(r.get(f))]
        if is_true(r.get("foreign_cpu_flag")):
            flags.append(f"busy machine ({num(r.get('foreign_cpu_share')):.2f} cores foreign)")
        if is_true(r.get("too_few_samples")):
            flags.append("too few samples")
        rows.append([cell(text(r.get(c))) for c in cols] + [
            cell(status, "" if status == "ok" else "neg"),
            cell(text(r.get("n_samples")), "num", v=num(r.get("n_samples"))),
            cell(fmt_ms(r.get("median_s")), "num", v=num(r.get("median_s"))),
            cell(f"{fmt_ms(r.get('ci_low_s'))} – {fmt_ms(r.get('ci_high_s'))}", "num",
                 v=num(r.get("ci_low_s"))),
            cell(fmt_ms(r.get("first_call_s")), "num", v=num(r.get("first_call_s"))),
            cell(" ".join(flags), "warn" if flags else ""),
        ])
    return {"id": "t-cells", "columns": columns, "rows": rows}


def method_view(config: Mapping, selfbench_path) -> dict:
    config = dict(config or {})
    stop = dict(config.get("stop") or {})
    rule = text(stop.get("rule"), "unknown")
    if rule == "fixed":
        iters = stop.get("iterations", "seed")
        rule_text = ("fixed: the seed's counts (200 / 100 / 50 steps for the small / medium / "
                     "large model)" if iters == "seed" else f"fixed: {iters} timed steps per cell")
    elif rule == "adaptive":
        rule_text = (f"adaptive: sample until the {num(stop.get('level', 0.95)):.0%} CI of the "
                     f"median is within ±{num(stop.get('target_rel', 0.01)):.1%} of it, with at "
                     f"least {text(stop.get('min_samples'), '?')} and at most "
                     f"{text(stop.get('max_samples'), '?')} samples and at most "
                     f"{text(stop.get('budget_s'), '?')} s of sampling per process")
    else:
        rule_text = rule
    return {
        "rule": rule_text,
        "level": num(stop.get("level", 0.95)),
        "repeats": text(config.get("repeats"), "1"),
        "noisy_threshold": num(config.get("noisy_threshold", 0.10)),
        "timeout": text(config.get("cell_timeout_s"), "?"),
        "memory": text(config.get("cell_memory_mb"), "?"),
        "reference_env": text(config.get("reference_env"), "?"),
        "sig_p": getattr(compare, "SIGNIFICANCE_P", 0.01),
        "min_samples": getattr(compare, "MIN_SAMPLES", 3),
        "selfbench": read_selfbench(selfbench_path),
        "selfbench_path": str(selfbench_path or "results/selfbench.json"),
        "config_json": json.dumps(config, indent=2, sort_keys=True, default=str),
    }


# ----------------------------------------------------------------------------- render


def _tables_dict(tables) -> dict:
    if tables is None:
        return {}
    if isinstance(tables, Mapping):
        return {str(k): read_table(v) for k, v in tables.items()}
    return {Path(p).stem: read_table(p) for p in tables}


def _guard(name, errors, fn, *args):
    """Build one section; a failure becomes a message in that section, not a broken report."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - any failure must leave the rest of the report
        log.error("section %s failed:\n%s", name, traceback.format_exc())
        errors[name] = f"{type(exc).__name__}: {exc}"
        return None


def build_context(cells_csv, tables, cell_files, machine, config, selfbench_path=None,
                  now=None) -> dict:
    """Everything the template needs, as plain data."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    errors: dict = {}
    cells = read_table(cells_csv)
    tabs = _tables_dict(tables)
    recs, problems = load_cell_files(cell_files)
    samples = samples_by_cell(recs)
    versions = tabs.get("versions", pd.DataFrame())
    order = env_order(cells, versions)
    status = col(cells, "status").map(text)
    ok = cells[status == "ok"] if len(cells) else cells
    peaks = measured_peaks(cells)
    facts = machine_facts(recs)

    def verdict():
        machines = sorted(set(facts) | {text(m) for m in col(cells, "machine").dropna()}
                          | {text(machine)} - {""})
        return {
            "machines": [{"key": m, "text": describe_machine(facts.get(m, {}))}
                         for m in machines],
            "dates": measurement_dates(recs),
            "versions": versions_covered(cells),
            "envs": order,
            "counts": {s: int((status == s).sum()) for s in ("ok", "failed", "skipped")},
            "n_cells": len(cells),
            "claims": claims(tabs, cells, samples),
            "guidance": guidance_view(tabs.get("guidance", pd.DataFrame())),
            "n_drift": int(col(ok, "drift", False).map(is_true).sum()),
            "n_noisy": int(col(ok, "noisy", False).map(is_true).sum()),
            "n_busy": int(col(ok, "foreign_cpu_flag", False).map(is_true).sum()),
            "foreign_max": num(config.get("foreign_cpu_max_share")),
        }

    def tables_section():
        return {"comparisons": [comparison_view(n, tabs.get(n, pd.DataFrame()))
                                for n in COMPARISONS],
                "cells": cells_table(cells)}

    def history():
        return {"figures": history_figures(ok, order), "versions": versions_view(versions, order)}

    def time_section():
        tt = time_table(ok, peaks)
        return {"figures": time_figures(ok, order, peaks), **tt,
                "peaks": [(m, "not measured" if math.isnan(p) else f"{p * 1e-9:,.1f} GFLOP/s")
                          for m, p in sorted(peaks.items())]}

    ctx = {
        "sections": SECTIONS,
        "machine": text(machine),
        "generated": now.strftime("%Y-%m-%d %H:%M UTC"),
        "verdict": _guard("verdict", errors, verdict),
        "tables": _guard("tables", errors, tables_section),
        "history": _guard("history", errors, history),
        "time": _guard("time", errors, time_section),
        "stability": _guard("stability", errors, stability_view, ok, samples, order),
        "failures": _guard("failures", errors, failures_view, cells, recs, problems),
        "environments": _guard("environments", errors, environments_view, recs),
        "method": _guard("method", errors, method_view, config, selfbench_path),
        "compute_bound": COMPUTE_BOUND,
        "overhead_bound": OVERHEAD_BOUND,
        "max_points": MAX_PLOT_POINTS,
        "table_links": [f"tables/{n}.csv" for n in ["cells", *COMPARISONS, "versions",
                                                      "guidance"]],
    }
    ctx["errors"] = errors
    return ctx


def render_html(ctx: dict, template) -> str:
    template = Path(template)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template.parent)),
                             autoescape=True, undefined=jinja2.StrictUndefined,
                             trim_blocks=True, lstrip_blocks=True)
    digest = base64.b64encode(hashlib.sha256(SCRIPT_JS.encode("utf-8")).digest()).decode()
    csp = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
           f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'")
    return env.get_template(template.name).render(**ctx, script_js=SCRIPT_JS, csp=csp)


def write_atomic(path, content: str):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="." + path.name + ".", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(content)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a report is for reading
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def render(cells_csv, tables, cell_files, template, out_html, machine, config,
           selfbench_path=None, now=None) -> dict:
    """Render the report to `out_html`; returns {"bytes", "section_errors", "cells"}.

    tables: {name: path or DataFrame} (or a list of paths named <name>.csv); cell_files: paths of
    the cell JSON files; config: the study's config dict; selfbench_path: results/selfbench.json,
    shown in Method when it exists.
    """
    ctx = build_context(cells_csv, tables, cell_files, machine, config, selfbench_path, now)
    html = render_html(ctx, template)
    write_atomic(out_html, html)
    size = len(html.encode("utf-8"))
    if size > REPORT_SIZE_LIMIT:
        log.warning("the report is %.1f MB, over the 10 MB goal", size / 2**20)
    for name, err in ctx["errors"].items():
        log.warning("section %s shows an error: %s", name, err)
    log.info("wrote %s (%.2f MB)", out_html, size / 2**20)
    return {"bytes": size, "section_errors": dict(ctx["errors"]),
            "cells": ctx["verdict"]["n_cells"] if ctx["verdict"] else None}


def main(smk):
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s")
    config = dict(smk.params.config)
    # other machines' cell files are inputs too (rules/common.smk: other_machine_cells)
    cells = list(smk.input.cells) + list(smk.input.others)
    render(cells_csv=smk.input.cells_csv,
           tables=list(smk.input.tables),
           cell_files=cells,
           template=smk.input.template,
           out_html=smk.output.html,
           machine=smk.params.machine,
           config=config,
           selfbench_path=smk.params.selfbench)


if "snakemake" in globals():
    main(snakemake)  # noqa: F821
