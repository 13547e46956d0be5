"""The duets table: the headline, TF 2.x against the reference env, from paired duets.

Each duet file (scripts/supervise_duet.py) holds one replicate: the log of the ratio of the TF 2.x
side's median step time to the reference side's, both taken in the same alternating windows of two
live workers. Per configuration (machine, env, cell) the n replicates are independent (fresh
workers each time), so the analysis is a one-sample t on their log ratios (scipy.stats.ttest_1samp,
n - 1 degrees of freedom): no shrinkage, no shared reference process between rows.

Columns, besides the axes and both sides' envs and cells:
- ratio: exp(mean log ratio); se_log, df, sd_log (between duets); p: the two-sided test of
  ratio 1 (with two looks, driver/stats/sequential.py, the sequential p-value of the last look's
  p_look, so that a row looked at twice is rejected at its stated size); n_look1, n_max: the
  design (duets at look 1, at most in all); p_adjusted, p_threshold: Benjamini-Hochberg at q
  over this table's rows;
- ratio_ci_low/high: the interval at `ci_level` = 1 - R q / m (R of m rows called different;
  Benjamini and Yekutieli's false-coverage-rate intervals), so a row is called faster or slower
  exactly when its drawn interval excludes 1: the interval drawn is the interval tested;
- p_equivalent: TOST against 1 +- min_effect (symmetric in log), the larger one-sided p, each
  row at alpha_equivalence, as the cells' tables and bioequivalence do (a per-row claim: the
  definition of "equivalent" the config and the glossary give); tost_ci_low/high: the
  (1 - 2 alpha) interval it amounts to, `tost_level` (inside the margin exactly when the row is
  equivalent); bound_pct: the two sides differ by at most this much;
- verdict (driver/stats/verdicts.py: equivalent first, then faster / slower, else undecided);
- simultaneous_high / simultaneous_low: one-sided bounds that hold for every row of the same
  machine, mode and API at once at `level` (Sidak: rows are independent here, as no two share a
  process), behind sentences like "no version is more than X % slower";
- window_sd: the spread of one window pair's log ratio inside a duet (the window component);
  wall_s: a duet's mean wall time (its cost).

Pairs in one process (a file's `kind` "pair", config `pairs`) are analysed the same way, in
tables of their own: `pairs` (a same-env comparison's rows, `table` naming the comparison table
they belong to) and `pairs_aa` (a cell against itself in one process); their `cell_id` is the
pair's key (both cells' ids, duetplan.PAIR_SEP). No table mixes duets and pairs.
"""
import json
import math
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from driver.stats import verdicts
from driver.stats.sequential import looks
from driver.study.duetplan import PAIR_SEP
from tfspeed.cells import cell_id

KEYS = ["machine", "env", "cell_id"]
# the families of duet files: each its own table, its own BH family (family())
# (duets_modes: the reference env's graph against its eager cell, duetplan `weight`; it enters
# duets_graph_vs_eager only; duets_own: a user's model across envs and modes, duetplan.plan_own,
# its graph-vs-eager row among them; duets_frameworks: other frameworks' ways against TF's,
# duetplan.plan_frameworks)
FAMILIES = ("duets", "duets_aa", "pairs", "pairs_aa", "duets_modes", "duets_own",
            "duets_frameworks")
COLUMNS = [
    "machine", "env", "cell_id", "mode", "keras", "api", "input", "table", "left_env",
    "right_env", "left_cell_id", "right_cell_id", "left_keras", "right_keras", "left_framework_version",
    "right_framework_version", "n", "n_look1", "n_max", "n_failed", "n_flagged", "ratio",
    "ratio_ci_low", "ratio_ci_high",
    "ci_level", "log_ratio", "se_log", "df", "sd_log", "look1_log_ratio", "look1_sd_log", "p",
    "p_look", "p_adjusted", "p_threshold",
    "p_equivalent", "tost_ci_low", "tost_ci_high", "tost_level",
    "bound_pct", "verdict", "simultaneous_low", "simultaneous_high", "left_median_s",
    "right_median_s", "window_sd", "wall_s", "reason",
]
REQUIRED = ("machine", "env", "cell", "reference_env", "reference_cell", "status", "replicate")


def load(files: Iterable[Path | str]) -> list[dict]:
    """Every duet file, checked: a file that cannot be read, or lacks a key, stops aggregation
    with an error naming it (a silently dropped duet would bias the headline)."""
    out = []
    for path in files:
        try:
            rec = json.loads(Path(path).read_text())
        except (OSError, ValueError) as exc:
            raise ValueError(f"{path}: not a readable duet file: {exc}") from exc
        missing = [k for k in REQUIRED if k not in rec]
        if rec.get("status") == "ok":
            missing += [k for k in ("log_ratio", "left_median_s", "right_median_s")
                        if k not in rec]
        if missing:
            raise ValueError(f"{path}: duet file without {', '.join(missing)}")
        rec["path"] = str(path)
        out.append(rec)
    return out


def one_row(recs: list[dict], min_effect: float) -> dict:
    """A configuration's replicates: the estimate and its unadjusted tests (the intervals come
    with the family's adjustment, in `adjust`)."""
    first = recs[0]
    cell, ref = first["cell"], first["reference_cell"]
    ok = [r for r in recs if r["status"] == "ok"]
    x = np.array([r["log_ratio"] for r in ok], dtype=float)
    n = int(x.size)
    nan = math.nan
    row = {"machine": first["machine"], "env": first["env"], "cell_id": row_id(first),
           "mode": cell["mode"], "keras": cell["keras"], "api": cell["api"],
           "input": cell["input"], "table": (first.get("design") or {}).get("table"),
           "left_env": first["env"], "right_env": first["reference_env"],
           "left_cell_id": cell_id(cell), "right_cell_id": cell_id(ref),
           "left_keras": cell["keras"], "right_keras": ref["keras"],
           "left_framework_version": first.get("left_framework_version"),
           "right_framework_version": first.get("right_framework_version"),
           "n": n, "n_failed": len(recs) - n,
           # the design of the row's duets (files before sequential duets: one look of n)
           "n_look1": max(int((r.get("design") or {}).get("replicates", len(recs)))
                          for r in recs),
           "n_max": max(int((r.get("design") or {}).get("max_replicates", len(recs)))
                        for r in recs),
           # ok duets during whose timed windows other processes used more CPU than
           # foreign_cpu_max_share (beyond the meter's resolution): kept, and counted here;
           # NaN where no duet of the row was metered (files made before the meter)
           "n_flagged": (sum(bool(r.get("foreign_cpu_flag")) for r in ok)
                         if any(r.get("cpu_window") for r in ok) else math.nan),
           "reason": "; ".join(sorted({r.get("reason", "") for r in recs
                                       if r["status"] != "ok"})) or None,
           "ratio": nan, "log_ratio": nan, "se_log": nan, "df": nan, "sd_log": nan, "p": nan,
           "look1_log_ratio": nan, "look1_sd_log": nan,
           "p_equivalent": nan, "left_median_s": nan, "right_median_s": nan, "window_sd": nan,
           "wall_s": nan}
    if n:
        mean = float(x.mean())
        row.update(ratio=math.exp(mean), log_ratio=mean,
                   left_median_s=math.exp(float(np.mean([math.log(r["left_median_s"])
                                                         for r in ok]))),
                   right_median_s=math.exp(float(np.mean([math.log(r["right_median_s"])
                                                          for r in ok]))),
                   wall_s=float(np.mean([r.get("wall_s", nan) for r in ok])))
        windows = [np.var(r["window_log_ratios"], ddof=1) for r in ok
                   if len(r.get("window_log_ratios") or []) > 1]
        if windows:
            row["window_sd"] = math.sqrt(float(np.mean(windows)))
    if n >= 2:
        sd = float(x.std(ddof=1))
        se, df, mean = sd / math.sqrt(n), n - 1, float(x.mean())
        if se > 0:
            p = float(sps.ttest_1samp(x, 0.0).pvalue)
            p_eq = tost_p(mean, se, df, min_effect)
        else:
            p, p_eq = (0.0 if mean else 1.0), (0.0 if abs(mean) < math.log1p(min_effect) else 1.0)
        row.update(se_log=se, df=float(df), sd_log=sd, p=p, p_equivalent=p_eq)
    # the first look's own mean and spread (replicates are numbered from 0 in run order), for
    # the health check's look 2 against look 1 (duet_checks.looks_check)
    first_look = np.array([r["log_ratio"] for r in ok
                           if int(r.get("replicate", 0)) < row["n_look1"]], dtype=float)
    if first_look.size >= 2:
        row.update(look1_log_ratio=float(first_look.mean()),
                   look1_sd_log=float(first_look.std(ddof=1)))
    return row


def tost_p(diff: float, se: float, df: float, min_effect: float) -> float:
    """The equivalence test's p (the larger one-sided t p against 1 +- min_effect, in log); NaN
    without an se."""
    if not math.isfinite(se):
        return math.nan
    m = math.log1p(min_effect)
    return max(float(sps.t.sf((diff + m) / se, df)), float(sps.t.cdf((diff - m) / se, df)))


def design_of(*rows) -> object:
    """The two-look maps (driver/stats/sequential.py) a row is judged under: its own design, or
    for a row derived from several duets rows (duets_releases, machines_compared) theirs (the
    study gives every row the same); one look where the design has one. A derived row cannot
    take plain t intervals when its rows had a second look: rows that stopped early did so
    partly because their spread came out small (tests/unit/tables/test_duets_releases.py
    measures the undercoverage)."""
    present = [r for r in rows if r is not None]
    n1 = max([int(r["n_look1"]) for r in present if r["n_look1"] == r["n_look1"]] or [2])
    n2 = max([int(r["n_max"]) for r in present if r["n_max"] == r["n_max"]] or [n1])
    return looks(max(n1, 2), max(n2, n1, 2))


def critical(design, df: float, alpha: float, sides: int = 2) -> float:
    """The t critical value of an interval at 1 - alpha (two-sided; sides=1: one-sided) under a
    two-look design: at the nominal level of one look (sequential.py); NaN without df."""
    if not df == df:
        return math.nan
    if sides == 2:
        return float(sps.t.ppf(1 - float(design.nominal_two_sided(alpha)) / 2, df))
    return float(sps.t.ppf(1 - float(design.nominal_one_sided(alpha)), df))


def sequential_p(df: pd.DataFrame, designs: list) -> pd.DataFrame:
    """p_look (the last look's t-test) -> p, the sequential p-value of each row's design; the
    equivalence test's p the same way (one-sided map)."""
    out = df.copy()
    out["p_look"] = out["p"]
    out["p"] = [float(d.two_sided(p)) for d, p in zip(designs, out["p_look"])]
    out["p_equivalent"] = [float(d.one_sided(p)) for d, p in zip(designs, out["p_equivalent"])]
    return out


def adjust(df: pd.DataFrame, level: float, q: float, min_effect: float,
           alpha_eq: float) -> pd.DataFrame:
    """BH over the family's difference tests, each row's equivalence test at its own size, the
    intervals at the levels that make each drawn interval the tested one, verdicts, simultaneous
    bounds. With two looks, every level becomes the nominal level of one look (sequential.py)."""
    designs = [design_of(r) for _, r in df.iterrows()]
    out = sequential_p(df, designs)
    p_adj = verdicts.bh_adjust(out["p"].to_numpy(float))
    a_diff, _ = verdicts.fcr_alpha(p_adj, q)  # the drawn interval is the tested one
    a_eq = alpha_eq  # each row's equivalence test at its own size, as in bioequivalence
    out["p_adjusted"] = p_adj
    out["p_threshold"] = verdicts.bh_threshold(out["p"].to_numpy(float), q)
    out["ci_level"] = 1 - a_diff
    out["tost_level"] = 1 - 2 * a_eq
    crit = [critical(g, d, a_diff) for g, d in zip(designs, out["df"])]
    crit_eq = [critical(g, d, a_eq, sides=1) for g, d in zip(designs, out["df"])]
    mean, se = out["log_ratio"].to_numpy(float), out["se_log"].to_numpy(float)
    half, half_eq = np.array(crit) * se, np.array(crit_eq) * se
    out["ratio_ci_low"], out["ratio_ci_high"] = np.exp(mean - half), np.exp(mean + half)
    out["tost_ci_low"], out["tost_ci_high"] = np.exp(mean - half_eq), np.exp(mean + half_eq)
    out["bound_pct"] = 100.0 * np.expm1(np.abs(mean) + half_eq)
    # equivalent: TOST p <= alpha (its (1 - 2 alpha) interval inside the margin); then
    # faster / slower: BH-adjusted p <= q (its drawn interval excludes 1)
    out["verdict"] = [verdicts.verdict(lo, hi, pa, q, min_effect, pe, alpha_eq)
                      for lo, hi, pa, pe in zip(out["ratio_ci_low"], out["ratio_ci_high"],
                                                p_adj, out["p_equivalent"])]
    return simultaneous(out, level)


def simultaneous(df: pd.DataFrame, level: float) -> pd.DataFrame:
    """One-sided bounds per row that hold for all rows of a (machine, mode, api) family at once:
    each at the Sidak level level ** (1 / k), exact for independent rows."""
    out = df.copy()
    out["simultaneous_low"] = math.nan
    out["simultaneous_high"] = math.nan
    for _, part in out.groupby(["machine", "mode", "api"]):
        have = part[part["se_log"].notna()]
        k = len(have)
        if not k:
            continue
        each = level ** (1.0 / k)
        for i, row in have.iterrows():
            crit = critical(design_of(row), row["df"], 1 - each, sides=1)
            out.at[i, "simultaneous_low"] = math.exp(row["log_ratio"] - crit * row["se_log"])
            out.at[i, "simultaneous_high"] = math.exp(row["log_ratio"] + crit * row["se_log"])
    return out


def is_aa(rec: dict) -> bool:
    """An A/A duet: the reference env's cell against itself (duetplan.py), the duets' own
    false-positive and order-bias check; never a row of the headline. (A pair's A/A too.)"""
    return rec["env"] == rec["reference_env"] and cell_id(rec["cell"]) == cell_id(
        rec["reference_cell"])


def is_pair(rec: dict) -> bool:
    """A pair in one process (config `pairs`), not a duet of two workers."""
    return rec.get("kind") == "pair"


def is_modes(rec: dict) -> bool:
    """A duet of one env's two cells (the reference across modes, duetplan.py), not an A/A."""
    return not is_pair(rec) and rec["env"] == rec["reference_env"] and not is_aa(rec)


def is_own(rec: dict) -> bool:
    """A duet of a user's model across envs and modes (config duets.models, duetplan.plan_own)."""
    return bool((rec.get("design") or {}).get("own"))


def is_frameworks(rec: dict) -> bool:
    """A duet of another framework's way against TensorFlow's (config duets.frameworks,
    duetplan.plan_frameworks)."""
    return bool((rec.get("design") or {}).get("frameworks"))


def family(rec: dict) -> str:
    """Which table a duet file's row belongs to (FAMILIES)."""
    if is_frameworks(rec):
        return "duets_frameworks"
    if is_own(rec):
        return "duets_own"
    if is_modes(rec):
        return "duets_modes"
    return ("pairs" if is_pair(rec) else "duets") + ("_aa" if is_aa(rec) else "")


def row_id(rec: dict) -> str:
    """A file's row key: its cell's id; a pair's and is_modes' join both cells' (Duet.cell_id)."""
    if is_pair(rec) or is_modes(rec) or is_frameworks(rec):
        return cell_id(rec["cell"]) + PAIR_SEP + cell_id(rec["reference_cell"])
    return cell_id(rec["cell"])


def duets_table(records: Iterable[dict], level: float = 0.95, q: float = 0.05,
                min_effect: float = 0.10, alpha_equivalence: float = 0.05,
                aa: bool = False, kind: str | None = None) -> pd.DataFrame:
    """One row per duet configuration (machine, env, cell): the headline's rows, or with aa=True
    the A/A rows (their own family: their verdicts are the duets' false positives); `kind` names
    any family of FAMILIES instead (the pairs' tables)."""
    kind = kind or ("duets_aa" if aa else "duets")
    if kind not in FAMILIES:
        raise ValueError(f"unknown duet family {kind!r}; families: {', '.join(FAMILIES)}")
    groups: dict[tuple, list[dict]] = {}
    for rec in records:
        if family(rec) != kind:
            continue
        groups.setdefault((rec["machine"], rec["env"], row_id(rec)), []).append(rec)
    if not groups:
        return pd.DataFrame(columns=COLUMNS)
    rows = [one_row(sorted(g, key=lambda r: r["replicate"]), min_effect)
            for g in groups.values()]
    df = adjust(pd.DataFrame(rows), level, q, min_effect, alpha_equivalence)
    return df[COLUMNS]


def open_table(records: Iterable[dict], level: float = 0.95, q: float = 0.05,
               min_effect: float = 0.10, alpha_equivalence: float = 0.05) -> list[dict]:
    """The rows (headline, A/A and pairs, each family on its own) whose verdict is still
    undecided, as dicts of the table's columns plus `family` and `alpha_next`: the per-test level
    of the family's difference test if the row were its next rejection (Benjamini-Hochberg's
    q (R + 1) / m with R rows called different of m), for the second look's plan
    (scripts/plan_duets.py, driver/tables/second_look.py)."""
    records = list(records)
    out = []
    for kind in FAMILIES:
        table = duets_table(records, level=level, q=q, min_effect=min_effect,
                            alpha_equivalence=alpha_equivalence, kind=kind)
        if table.empty:
            continue
        codes = [verdicts.norm_code(v) for v in table["verdict"]]
        called = sum(c in (verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER) for c in codes)
        tested = int(table["p"].notna().sum()) or 1
        for (_, row), code in zip(table.iterrows(), codes):
            if code == verdicts.UNDECIDED:
                out.append(dict(row, family=kind, alpha_next=q * (called + 1) / tested))
    return sorted(out, key=lambda r: (r["env"], r["cell_id"]))


def open_rows(records: Iterable[dict], level: float = 0.95, q: float = 0.05,
              min_effect: float = 0.10, alpha_equivalence: float = 0.05) -> list[list[str]]:
    """[[env, cell_id], ...] of the rows whose verdict is still undecided (open_table)."""
    return [[r["env"], r["cell_id"]] for r in open_table(
        records, level=level, q=q, min_effect=min_effect, alpha_equivalence=alpha_equivalence)]
