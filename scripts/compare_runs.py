"""`make compare-runs A=<results> B=<results>`: is the study's uncertainty the uncertainty of a
rerun, and do two runs say the same?

Lines up two results folders (two runs on one machine, or two machines; a published docs/ folder
works too) from their tables alone (<folder>/tables/*.csv, or <folder>/*.csv), matching what both
hold (two studies may differ in their envs: what only one holds is listed, not an error), every
row on its machine key too (machine_pairing: the machines both hold, each with itself; one
machine a side, the one against the other; a folder of several machines with none in common is
refused, the keys named), and prints, calibration first:
- the cross-run checks, each with its verdict and, beside it, its power at these runs' sizes
  (P(fails) for intervals 1.5 and 2 times too narrow) and how often correct intervals pass
  (driver/stats/crossrun_judge.py; docs/calibration.md): duets, pairs, releases from duets and
  machines compared (the common shift and the spread about it; where the runs had two looks,
  read against the design replayed, and its power simulated under it), cells (the spread
  about the run's shift), comparisons (their differences whitened by the shared-cell
  structure); with a third run or more (`compare_runs.py A B C ...`), the
  duets' run offsets tested together and tau, the run-level sd, with its interval;
- beside them, figures that decide nothing (driver/stats/calibration.py):
  cells and comparisons: t = (log m_A - log m_B) / sqrt(se_A^2 +
  se_B^2) with Welch degrees of freedom (cells: after the whole run's shift, printed apart, and
  again with the shift left in), the
  share beyond the critical value against its nominal
  1 - level with a binomial CI (equivalently: the share of run B's estimates inside run A's
  prediction interval), and tau, the run-level spread the CIs leave out;
- agreement of verdicts split by effect size (< 5 %, 5-20 %, > 20 %), beside the agreement that a
  perfectly calibrated method would show (parametric bootstrap from the two runs' estimates);
- flips: comparisons called faster one way in one run and the other way in the other;
- one JSON line with those figures, for scripts.
Standard errors come from the tables (se_log, df; cells: the CI and ci_df); tables written before
those columns existed give them from the CI (at the row's ci_level where the table has one, else
at `level`) with the process counts' degrees of freedom. Verdicts are read through
verdicts.norm_code, so an older folder's "inconclusive" is today's "undecided".
"""
import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from driver.stats import calibration, crossrun_judge, crossrun_power, moderated, verdicts  # noqa: E402,E501
from driver.study import fingerprint, layout  # noqa: E402
from driver.tables.aa_rows import AA_TABLES, aa_figures  # noqa: E402
from driver.tables.results import ENV_KEY, Results, row_key  # noqa: E402

CELL_KEYS = ["env", "cell_id", "twin", "machine_key"]
MACHINE = "machine_key"  # the machine a row belongs to, as both sides are matched (machine_pairing)
DECIDED = set(verdicts.DECIDED)
COLUMNS = ["table", "key", MACHINE, "verdict", "ratio", "se_log", "df", "envs", "left_cell", "right_cell"]


def tables_folder(path) -> Path:
    return Results(path).folder


def _results(folder) -> Results:
    return folder if isinstance(folder, Results) else Results(folder)


def _col(df: pd.DataFrame, name: str, default=math.nan) -> pd.Series:
    return df[name].astype(float) if name in df.columns else pd.Series(default, index=df.index)


def machine_of(df: pd.DataFrame) -> pd.Series:
    """Each row's machine key (a twin's without its suffix; machines_compared's row: its two
    keys); "" where the table names none."""
    def base(col):
        m = df[col].astype(str)
        return m.where(~m.map(layout.is_twin), m.str[:-len(layout.TWIN_SUFFIX)])
    if "machine" in df.columns:
        return base("machine")
    if {"left_machine", "right_machine"} <= set(df.columns):
        return base("left_machine") + " vs " + base("right_machine")
    return pd.Series("", index=df.index, dtype=object)


def machines_in(res) -> set:
    """The machine keys a folder's cells and duets hold (twins under their machine's key)."""
    res = _results(res)
    found = set()
    frames = [res.table(t) for t in ("duets", "pairs") if res.has(t)]
    try:
        frames.append(res.cells())
    except FileNotFoundError:  # a folder of duets alone: its duets name the machine
        pass
    for df in frames:
        found |= set(machine_of(df)) - {"", "nan"}
    return found


def machine_pairing(*held: set) -> dict:
    """How the runs' rows are matched by machine: on the machines every run holds (rows of any
    other machine are left out and named), or, where each run holds one machine and they differ,
    that machine against the other's (two machines compared). A folder with several machines and
    none in common with the other runs is refused (ValueError naming the keys): matching its rows
    without the machine would pair one machine's row with another's.
    Returns {"maps": [{key: matched key}] per run, "common", "held", "note"}."""
    held = [set(h) for h in held]
    if not all(held):  # a folder whose tables name no machine: nothing to match on
        return {"maps": [{m: "" for m in h} | {"": ""} for h in held], "common": [],
                "held": [sorted(h) for h in held], "note": "the tables name no machine"}
    common = set.intersection(*held)
    if common:
        maps = [{m: m for m in h if m in common} for h in held]
        left_out = sorted(set.union(*held) - common)
        note = (f"rows matched on the machine key: {', '.join(sorted(common))}"
                + (f"; left out (not in every run): {', '.join(left_out)}" if left_out else ""))
    elif all(len(h) == 1 for h in held):
        label = " / ".join(next(iter(h)) for h in held)
        maps = [{next(iter(h)): label} for h in held]
        note = f"one machine per run, matched against each other: {label}"
    else:
        sides = "; ".join(f"run {chr(65 + i)} holds {', '.join(sorted(h))}"
                          for i, h in enumerate(held))
        raise ValueError(f"no machine key in common ({sides}): a folder of several machines "
                         "is matched machine by machine, so one of its machines must be in "
                         "the other run")
    return {"maps": maps, "common": sorted(common), "held": [sorted(h) for h in held],
            "note": note}


def keyed(df: pd.DataFrame, mapping: dict | None) -> pd.DataFrame:
    """df with MACHINE, the matched machine key of each row; rows of machines not matched are
    left out (mapping None: every row, under its own key)."""
    keys = machine_of(df)
    if mapping is None:
        return df.assign(**{MACHINE: keys})
    if "" in mapping:
        return df.assign(**{MACHINE: ""})
    if " vs " in "".join(keys):  # machines_compared: both of its keys mapped
        parts = keys.str.split(" vs ", n=1, expand=True) if len(keys) else None
        mapped = (parts[0].map(mapping) + " vs " + parts[1].map(mapping)) if parts is not None \
            else keys
    else:
        mapped = keys.map(mapping)
    out = df.assign(**{MACHINE: mapped})
    return out[out[MACHINE].notna()]


def se_from_ci(low, high, level, df) -> np.ndarray:
    """Standard error of the log estimate from a symmetric-in-log CI at `level` with df."""
    crit = np.array([moderated.t_quantile(0.5 + lv / 2, d) for lv, d in zip(level, df)])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(np.asarray(high, float) / np.asarray(low, float)) / (2 * crit)


def load_comparisons(folder, level: float = 0.95, mapping: dict | None = None) -> pd.DataFrame:
    parts = []
    for name, df in _results(folder).comparisons().items():
        df = keyed(df.copy(), mapping)
        if df.empty or "verdict" not in df.columns:
            continue
        twin = "True" if name == "twins" else "False"  # a twin row's left side is the twin cell
        envs_l = df["left_env"] if "left_env" in df.columns else df.get("env")
        envs_r = df["right_env"] if "right_env" in df.columns else df.get("env")
        if envs_l is not None and "left_cell_id" in df.columns:
            m = df[MACHINE].astype(str) + "|"  # a cell is one machine's
            df["left_cell"] = m + envs_l.astype(str) + "|" + df["left_cell_id"].astype(str) + "|" \
                + twin
            df["right_cell"] = m + envs_r.astype(str) + "|" + df["right_cell_id"].astype(str) \
                + "|False"
        else:
            df["left_cell"] = df["right_cell"] = None
        # the row's key across runs (driver/tables/results.py: ROW_KEY)
        df = df.assign(table=name, key=row_key(df), envs=row_key(df, ENV_KEY),
                       verdict=df["verdict"].map(verdicts.norm_code))
        dof = _col(df, "df")
        fallback = _col(df, "n_left", math.inf) + _col(df, "n_right", math.inf) - 2
        df["df"] = dof.where(dof.notna(), fallback)
        se = _col(df, "se_log")
        if "ratio_ci_low" in df.columns:
            levels = _col(df, "ci_level", level).fillna(level)
            derived = se_from_ci(df["ratio_ci_low"], df["ratio_ci_high"], levels, df["df"])
            se = se.where(se.notna(), pd.Series(derived, index=df.index))
        df["se_log"] = se
        parts.append(df[COLUMNS])
    if not parts:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(parts, ignore_index=True)


def load_cells(folder, mapping: dict | None = None) -> pd.DataFrame:
    cells = _results(folder).cells()
    cells = keyed(cells[cells["status"] == "ok"].copy(), mapping)
    # a twin cell (machine key <machine>.twin) is matched with its twin, never with its machine's
    machines = cells["machine"] if "machine" in cells.columns else pd.Series("", index=cells.index)
    cells["twin"] = machines.astype(str).str.endswith(layout.TWIN_SUFFIX).astype(str)
    level = _col(cells, "ci_level", 0.95).fillna(0.95)
    dof = _col(cells, "ci_df")
    cells["df"] = dof.where(dof.notna(), _col(cells, "n_repeats", math.inf) - 1)
    cells["se_log"] = se_from_ci(cells["ci_low_s"], cells["ci_high_s"], level, cells["df"])
    cells["log_m"] = np.log(cells["median_s"].astype(float))
    return cells


def _calibrate(both: pd.DataFrame, est_a, est_b, level: float, centre: bool) -> dict:
    out = calibration.cross_run(est_a, both["se_log_a"], both["df_a"], est_b, both["se_log_b"],
                                both["df_b"], level, centre=centre)
    return {"beyond": out["beyond"], "pi_coverage": out["pi_coverage"], "tau": out["tau"],
            "shift": out["shift"]}


def agreement(va: pd.Series, vb: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Two runs' verdicts of the same rows (read through verdicts.norm_code): (agree, flipped),
    flipped = a direction called in both runs, not the same one."""
    a, b = va.map(verdicts.norm_code), vb.map(verdicts.norm_code)
    agree = a == b
    return agree, a.isin(DECIDED) & b.isin(DECIDED) & ~agree


def compare_runs(a, b, level: float = 0.95, q: float = 0.05, margin: float = 0.10,
                 alpha_eq: float = 0.05, draws: int = 200,
                 sims: int = crossrun_judge.SIMS) -> dict:
    """Everything main prints, as a dict. sims: simulated pairs behind each check's power."""
    fa, fb = Results(a), Results(b)
    for res in (fa, fb):
        res.cells()  # FileNotFoundError: not a results or tables folder
    pairing = machine_pairing(machines_in(fa), machines_in(fb))
    ma, mb = pairing["maps"]
    ca, cb = load_comparisons(fa, level, ma), load_comparisons(fb, level, mb)
    both = ca.merge(cb, on=["table", "key", MACHINE], suffixes=("_a", "_b"))
    agree, flipped = agreement(both["verdict_a"], both["verdict_b"])
    flips = both[flipped]
    cells_a, cells_b = load_cells(fa, ma), load_cells(fb, mb)
    cells = cells_a.merge(cells_b, on=CELL_KEYS, suffixes=("_a", "_b"))
    cell_cal = _calibrate(cells, cells["log_m_a"], cells["log_m_b"], level, centre=True)
    # the verdict: the dispersion about the run's shift (driver/stats/crossrun.py), with power
    cell_cal["check"] = crossrun_judge.rows_check(
        cells["log_m_a"], cells["se_log_a"], cells["df_a"], cells["log_m_b"], cells["se_log_b"],
        cells["df_b"], centre=True, sims=sims)
    cell_cal["ok"] = bool(cell_cal["check"]["ok"])
    # the same test with the whole run's shift left in: what a user comparing two runs' cells sees
    cell_raw = _calibrate(cells, cells["log_m_a"], cells["log_m_b"], level, centre=False)
    comp_cal = _calibrate(both, np.log(both["ratio_a"].astype(float)),
                          np.log(both["ratio_b"].astype(float)), level, centre=False)
    # comparisons share cells: the range a calibrated method's share falls in, on this structure
    ses = [{f"{m}|{e}|{c}|{t}": s for m, e, c, t, s in zip(cs[MACHINE], cs["env"], cs["cell_id"],
                                                            cs["twin"], cs["se_log"]) if s > 0}
           for cs in (cells_a, cells_b)]
    usable_rows = both[(both["se_log_a"] > 0) & (both["se_log_b"] > 0)]
    comp_cal["shared_range"] = calibration.shared_cells_range(
        usable_rows["left_cell_a"], usable_rows["right_cell_a"], ses[0], ses[1],
        usable_rows["se_log_a"], usable_rows["se_log_b"], usable_rows["df_a"],
        usable_rows["df_b"], level)
    rng_ = comp_cal["shared_range"]
    in_range = bool(comp_cal["beyond"]["n"]) and \
        rng_["low"] <= comp_cal["beyond"]["rate"] <= rng_["high"]
    # the prediction-interval coverage of comparisons is 1 - that share: the same range
    comp_cal["pi_coverage"] = dict(comp_cal["pi_coverage"], ok=in_range,
                                   ci_low=1 - rng_["high"], ci_high=1 - rng_["low"])
    # the verdict: the rows' differences whitened by the shared-cell structure, with power
    cell_df = [{f"{m}|{e}|{c}|{t}": d for m, e, c, t, d in zip(
        cs[MACHINE], cs["env"], cs["cell_id"], cs["twin"], cs["df"])} for cs in (cells_a, cells_b)]
    comp_cal["check"] = crossrun_judge.comparisons_check(
        usable_rows["left_cell_a"], usable_rows["right_cell_a"], ses, cell_df,
        np.log(usable_rows["ratio_a"].astype(float)), usable_rows["se_log_a"],
        usable_rows["df_a"], np.log(usable_rows["ratio_b"].astype(float)),
        usable_rows["se_log_b"], usable_rows["df_b"], sims=sims)
    comp_cal["ok"] = bool(comp_cal["check"]["ok"])
    shift = math.log(cell_cal["shift"])
    beyond_cells = []
    for rec in cells.to_dict("records"):
        va, vb = rec["se_log_a"] ** 2, rec["se_log_b"] ** 2
        if not (va > 0 and vb > 0):
            continue
        t = (rec["log_m_a"] - rec["log_m_b"] - shift) / math.sqrt(va + vb)
        dof = moderated.welch_df(va, rec["df_a"], vb, rec["df_b"])
        if abs(t) > moderated.t_quantile(0.5 + level / 2, dof):
            beyond_cells.append({**rec, "t": t})
    # agreement by effect size, beside what a calibrated method would show
    mean_lr = (np.log(both["ratio_a"].astype(float)) + np.log(both["ratio_b"].astype(float))) / 2
    both = both.assign(band=[calibration.band(x) for x in mean_lr], agree=agree)
    usable = both["se_log_a"].notna() & both["se_log_b"].notna() & (both["se_log_a"] > 0) \
        & (both["se_log_b"] > 0)
    expected = calibration.expected_agreement(
        mean_lr[usable], both.loc[usable, "se_log_a"], both.loc[usable, "df_a"],
        both.loc[usable, "se_log_b"], both.loc[usable, "df_b"], level, q, margin, alpha_eq,
        draws=draws) if usable.any() else pd.DataFrame(columns=["band", "expected",
                                                                 "expected_sd"])
    bands = []
    for _, _, name in calibration.BANDS:
        part = both[both["band"] == name]
        exp = expected[expected["band"] == name]
        bands.append({"band": name, "rows": int(len(part)),
                      "agreement": float(part["agree"].mean()) if len(part) else None,
                      "expected": float(exp["expected"].iloc[0]) if len(exp) else None,
                      "expected_sd": float(exp["expected_sd"].iloc[0]) if len(exp) else None})
    envs_a, envs_b = set(cells_a["env"]), set(cells_b["env"])
    return {
        "duets_calibration": duets_calibration(fa, fb, level, sims, pairing=pairing),
        "pairs_calibration": duets_calibration(fa, fb, level, sims, table="pairs",
                                               pairing=pairing),
        "releases_calibration": duets_calibration(fa, fb, level, sims, table="duets_releases",
                                                  pairing=pairing),
        "machines_compared_calibration": duets_calibration(
            fa, fb, level, sims, table="machines_compared", pairing=pairing),
        "machine_pairing": pairing,
        "cells_matched": int(len(cells)),
        "cells_calibration": cell_cal,
        "cells_calibration_shift_kept": cell_raw,
        "comparisons_calibration": comp_cal,
        "comparisons_matched": int(len(both)),
        "only_in_a": int(len(ca) - len(both)),
        "only_in_b": int(len(cb) - len(both)),
        "envs_only_in_a": sorted(envs_a - envs_b),
        "envs_only_in_b": sorted(envs_b - envs_a),
        "cells_only_in_a": int(len(cells_a) - len(cells)),
        "cells_only_in_b": int(len(cells_b) - len(cells)),
        "agreement": float(agree.mean()) if len(both) else None,
        "agreement_by_effect": bands,
        "flips": int(len(flips)),
        "flip_rows": flips[["table", "key", "verdict_a", "verdict_b", "ratio_a", "ratio_b"]]
        .to_dict("records"),
        "cells_moved_beyond_ci": len(beyond_cells),
        "moved_cells": [{k: r[k] for k in CELL_KEYS + ["median_s_a", "median_s_b", "t"]}
                        for r in beyond_cells],
        # one machine or two (driver/study/fingerprint.py, from each side's facts.json)
        "machines": fingerprint.compare_machines(*(_machines(r) for r in (fa, fb))),
    }


def _machines(res: Results) -> dict:
    """facts.json's machines ({} where the folder has none or it cannot be read)."""
    try:
        return res.facts().get("machines") or {}
    except (OSError, ValueError):
        return {}


# what names a row of the tables duets_calibration reads, beside duets' and pairs' (env, cell_id)
ROW_KEYS = {"duets_releases": ["mode", "api", "input", "left_env", "right_env", "left_keras",
                               "right_keras"]}
# a table's estimate, its se, df and verdict columns, where they are not the duets' own
EST_COLS = {"machines_compared": ("interaction", "interaction_se_log", "interaction_df",
                                  "machine_effect")}
# the tables built from duets rows: how each row names its two duets rows (machine, env, keys)
DERIVED = ("duets_releases", "machines_compared")


def _estimates(tab: pd.DataFrame, table: str) -> pd.DataFrame:
    """tab with log_ratio, se_log, df and verdict as the check reads them."""
    if table not in EST_COLS:
        return tab
    est, se, dof, verdict = EST_COLS[table]
    return tab.assign(log_ratio=np.log(tab[est].astype(float)), se_log=tab[se], df=tab[dof],
                      verdict=tab[verdict])


def _base_rows(tabs) -> pd.DataFrame | None:
    """The duets rows both runs hold, as the design replays them: mean, sd of one duet, n1, n2
    (None where a table lacks the design's columns: tables from before two looks)."""
    need = {"n_look1", "n_max", "sd_log", "log_ratio", MACHINE}
    if any(t.empty or not need <= set(t.columns) for t in tabs):
        return None
    keys = [MACHINE, "env", "cell_id"]
    both = tabs[0].merge(tabs[1], on=keys, suffixes=("_a", "_b"))
    both = both[np.isfinite(both[["sd_log_a", "sd_log_b", "log_ratio_a", "log_ratio_b",
                                  "n_look1_a", "n_max_a"]].astype(float)).all(axis=1)]
    both = both.assign(mu=(both["log_ratio_a"] + both["log_ratio_b"]) / 2,
                       sigma=np.sqrt((both["sd_log_a"] ** 2 + both["sd_log_b"] ** 2) / 2),
                       n1=np.maximum(both["n_look1_a"], both["n_look1_b"].fillna(0)).astype(int),
                       n2=np.maximum(both["n_max_a"], both["n_max_b"].fillna(0)).astype(int))
    return both.reset_index(drop=True)


def row_design(both: pd.DataFrame, table: str, base: pd.DataFrame | None, q: float = 0.05,
               margin: float = 0.10, alpha_eq: float = 0.05):
    """The two-look design of the matched rows `both` (crossrun_power.Design), or None where
    the runs had one look or the rows cannot all be traced to their duets rows."""
    if base is None or not len(base) or not (base["n2"] > base["n1"]).any():
        return None
    kw = dict(q=q, margin=margin, alpha_eq=alpha_eq)
    index = {k: i for i, k in enumerate(zip(base[MACHINE], base["env"], base["cell_id"]))}
    cols = (base["mu"], base["sigma"], base["n1"], base["n2"])
    if table not in DERIVED:
        rows = [index.get(k) for k in zip(both[MACHINE], both["env"], both["cell_id"])]
        if any(r is None for r in rows):
            return None
        return crossrun_power.Design(*(np.asarray(c)[rows] for c in cols), **kw)
    if table == "machines_compared":
        pairs = [(index.get((f"{m.split(' vs ')[0]}", e, c)),
                  index.get((f"{m.split(' vs ')[-1]}", e, c)))
                 for m, e, c in zip(both[MACHINE], both["env"], both["cell_id"])]
    else:  # duets_releases: each side's duets row by machine, env, mode, api, input, keras
        by = {(m, e, mo, a, i, k): n for n, (m, e, mo, a, i, k) in enumerate(zip(
            base[MACHINE], base["env"], base["mode_a"], base["api_a"], base["input_a"],
            base["keras_a"]))}
        pairs = [(by.get((m, le, mo, a, i, lk)), by.get((m, re, mo, a, i, rk)))
                 for m, le, re, mo, a, i, lk, rk in zip(
                     both[MACHINE], both["left_env"], both["right_env"], both["mode"],
                     both["api"], both["input"], both["left_keras"], both["right_keras"])]
    if not pairs or any(a is None or b is None for a, b in pairs):
        return None
    left, right = zip(*pairs)
    return crossrun_power.Design(*cols, left=left, right=right, **kw)


def duets_calibration(fa, fb, level: float = 0.95, sims: int = crossrun_judge.SIMS,
                      table: str = "duets", pairing: dict | None = None) -> dict:
    """The headline's duets (duets.csv) across two runs: the check of the common shift and of
    the spread about it (driver/stats/crossrun.py; `check`, with its power at these rows'
    sizes, decides `ok`); the share beyond their combined CIs with its binomial CI (rows share
    no process), kept as a figure; and each run's decided rows per mode. table="pairs": the
    same for the pairs in one process (pairs.csv: rows share no process either);
    table="duets_releases": for each release against the one before, from the duets;
    table="machines_compared": the machines' interaction per duets row. Rows are matched on
    the machine key too (pairing: machine_pairing). Where the runs had two looks, the check
    is judged and its power simulated under that design (crossrun_judge.rows_check; a derived
    row's two duets rows are replayed, so neighbours that share one stay correlated).
    same_verdict: how many matched rows got the same verdict in both runs, and how many
    flipped (faster in one, slower in the other)."""
    maps = (pairing or machine_pairing(machines_in(fa), machines_in(fb)))["maps"]
    tabs = [_estimates(keyed(_results(f).table(table), m), table) if _results(f).has(table)
            else pd.DataFrame() for f, m in zip((fa, fb), maps)]
    decided = {}
    for name, tab in zip("ab", tabs):
        if tab.empty or "mode" not in tab.columns:
            continue
        for mode, part in tab.groupby("mode"):
            decided.setdefault(mode, {})[name] = {
                "decided": int(part["verdict"].isin([*verdicts.DECIDED, verdicts.EQUIVALENT,
                                                     "differs", "same"]).sum()),
                "rows": int(len(part))}
    if any(t.empty for t in tabs):
        return {"matched": 0, "beyond": calibration.rate(0, 0, 1 - level), "ok": False,
                "decided": decided}
    keys = [MACHINE] + ROW_KEYS.get(table, ["env", "cell_id"])
    both = tabs[0].merge(tabs[1], on=keys, suffixes=("_a", "_b"))
    good = np.isfinite(both[["log_ratio_a", "log_ratio_b", "se_log_a", "se_log_b"]]
                       .astype(float)).all(axis=1) & (both["se_log_a"] ** 2
                                                      + both["se_log_b"] ** 2 > 0)
    both = both[good].reset_index(drop=True)
    for side in ("a", "b"):  # the derived tables' axes, under their plain names
        for c in ("mode", "api", "input"):
            if f"{c}_{side}" in both.columns and c not in both.columns:
                both[c] = both[f"{c}_{side}"]
    cols = (both["log_ratio_a"], both["se_log_a"], both["df_a"], both["log_ratio_b"],
            both["se_log_b"], both["df_b"])
    out = calibration.cross_run(*cols, level)
    base_tabs = [keyed(_results(f).table("pairs" if table == "pairs" else "duets"), m)
                 if _results(f).has("pairs" if table == "pairs" else "duets") else pd.DataFrame()
                 for f, m in zip((fa, fb), maps)]
    base = _base_rows(base_tabs)
    design = row_design(both, table, base)
    check = crossrun_judge.rows_check(*cols, centre=False, sims=sims, design=design)
    if base is not None and (base["n2"] > base["n1"]).any() and check.get("design") is None:
        check["design_note"] = ("the runs had two looks but not every row could be traced to "
                                "its duets rows: the check and its power below are one look's, "
                                "whose size under two looks is larger than stated")
    agree, flipped = agreement(both["verdict_a"], both["verdict_b"])
    same = {"k": int(agree.sum()), "n": int(len(agree)), "flips": int(flipped.sum())}
    return {"matched": int(len(both)), "beyond": out["beyond"], "tau": out["tau"],
            "check": check, "ok": bool(check["ok"]), "decided": decided, "same_verdict": same,
            "design": "two looks" if design is not None else "one look"}


def duets_pooled(folders, table: str = "duets") -> dict:
    """The duets of three or more runs: their run offsets tested together, with tau and its CI
    (driver/stats/crossrun.py: pooled_shift); rows matched by env and cell over all runs.
    table="pairs": the same for the pairs in one process."""
    results = [_results(f) for f in folders]
    maps = machine_pairing(*(machines_in(r) for r in results))["maps"]
    tabs = [keyed(r.table(table), m) if r.has(table) else pd.DataFrame()
            for r, m in zip(results, maps)]
    if len(tabs) < 3 or any(t.empty for t in tabs):
        return {"runs": len(tabs)}
    keys = [MACHINE, "env", "cell_id"]
    both = tabs[0][keys + ["log_ratio", "se_log"]]
    for i, tab in enumerate(tabs[1:], 1):
        both = both.merge(tab[keys + ["log_ratio", "se_log"]], on=keys, suffixes=("", f"_{i}"))
    est = both[[c for c in both.columns if c.startswith("log_ratio")]].to_numpy(float)
    se = both[[c for c in both.columns if c.startswith("se_log")]].to_numpy(float)
    return dict(crossrun_judge.pooled(est, se), table=table)


def aa_rows(folders, q: float = 0.05, table: str = "duets_aa") -> dict:
    """The A/A rows of every run given, judged together (driver/tables/aa_rows.py). Runs made
    before A/A rows have none: counted as such."""
    results = [_results(f) for f in folders if _results(f).has(table)]
    head = table.removesuffix("_aa")
    return aa_figures([r.table(table) for r in results], q, table,
                      [r.table(head) if r.has(head) else None for r in results])


def aa_text(aa: dict) -> list[str]:
    what, key, bias_name = AA_TABLES[aa.get("table", "duets_aa")]
    if not aa.get("n"):
        return [f"{what}: none in these runs (made before {key}, or without it)"]
    b = aa["bias"]
    interval = (f" (95 % CI {math.exp(b['low']):.3f}-{math.exp(b['high']):.3f}"
                f"{'' if b['ok'] else ': BIASED, the interval leaves 1 out'})"
                if "low" in b else "")
    lines = [f"{what} over {aa['runs']} run(s): {bias_name}: {math.exp(b['mean']):.3f}"
             f"{interval}; called different (false positives) {_rate_text(aa['different'])}; "
             f"equivalent {aa['equivalent']} of {aa['n']}"]
    at = aa.get("at_threshold") or {}
    if at.get("n"):
        lines.append(
            f"  at the headline's own per-test threshold ({at['threshold']:.3g} = R q / m, "
            f"1 - ci_level): {at['k']} of {at['n']} at or below it ({at['rate']:.1%}, 95 % CI "
            f"{at['ci_low']:.1%}-{at['ci_high']:.1%}; a correct procedure under the design: "
            f"{at['expected']:.1%}; binomial p {at['p']:.2g}: "
            f"{'ok' if at['ok'] else 'MORE FALSE POSITIVES THAN THE HEADLINE ALLOWS'}); with "
            f"intervals {at['narrow']:g}x too narrow a row is there {at['rate_narrow']:.1%} of "
            f"the time and this test fails {at['power']:.0%}"
            + (": at these few rows a pass says little" if at["power"] < 0.8 else ""))
    return lines


def checks_text(out: dict) -> list[str]:
    """Each cross-run check's verdict with its power and size (driver/stats/crossrun_judge.py):
    the lines compare-runs and selfbench print."""
    lines = []
    if out.get("machine_pairing"):
        lines.append(f"machines: {out['machine_pairing']['note']}")
    duets = out["duets_calibration"]
    if duets.get("matched"):
        lines += crossrun_judge.verdict_text("cross-run check, duets (the headline)",
                                             duets["check"])
    releases = out.get("releases_calibration") or {}
    if releases.get("matched"):
        lines += crossrun_judge.verdict_text("cross-run check, releases from duets",
                                             releases["check"])
    compared = out.get("machines_compared_calibration") or {}
    if compared.get("matched"):
        lines += crossrun_judge.verdict_text("cross-run check, machines compared (interaction)",
                                             compared["check"])
    pairs = out.get("pairs_calibration") or {}
    if pairs.get("matched"):
        lines += crossrun_judge.verdict_text("cross-run check, pairs in one process",
                                             pairs["check"])
    cells = out["cells_calibration"]
    lines += crossrun_judge.verdict_text("cross-run check, cells (the run's shift taken out)",
                                         cells["check"])
    if cells["check"].get("n", 0) >= 3:
        lines.append(f"  the whole run B / run A (median over cells): {1 / cells['shift']:.4f}: "
                     "a shift common to every cell is taken out here, by design (it cancels in "
                     "every comparison), so this check cannot see it")
    lines += crossrun_judge.verdict_text("cross-run check, comparisons (shared cells)",
                                         out["comparisons_calibration"]["check"])
    lines += crossrun_judge.pooled_text(out.get("duets_pooled", {}))
    lines += crossrun_judge.pooled_text(out.get("pairs_pooled", {}), "pairs in one process")
    if "aa_duets" in out:
        lines += aa_text(out["aa_duets"])
    if out.get("aa_pairs", {}).get("n"):  # pairs are a stage few runs have: said where they are
        lines += aa_text(out["aa_pairs"])
    return lines


def _rate_text(r: dict) -> str:
    if not r["n"]:
        return "n/a"
    return (f"{r['k']} of {r['n']} ({r['rate']:.1%}, 95 % CI {r['ci_low']:.1%}-{r['ci_high']:.1%};"
            f" nominal {r['nominal']:.0%}: {'ok' if r['ok'] else 'MISCALIBRATED'})")


def _plain(value):
    """json.dumps' fallback for numpy numbers and arrays."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="results folder of run A (or its tables/, or docs/)")
    parser.add_argument("b", help="results folder of run B")
    parser.add_argument("more", nargs="*", help="further runs of the same machine: their duets "
                        "pooled with A's and B's (the run offsets tested together, tau)")
    args = parser.parse_args(argv)
    try:
        out = compare_runs(args.a, args.b)
        runs = [args.a, args.b, *args.more]
        pooled = {t: duets_pooled(runs, t) if args.more else {"runs": 2}
                  for t in ("duets", "pairs")}
    except (FileNotFoundError, ValueError) as exc:
        print(f"compare-runs: {exc}", file=sys.stderr)
        return 2
    out["duets_pooled"], out["pairs_pooled"] = pooled["duets"], pooled["pairs"]
    out["aa_duets"] = aa_rows(runs, table="duets_aa")
    out["aa_pairs"] = aa_rows(runs, table="pairs_aa")
    for line in checks_text(out):
        print(line)
    print("figures beside the checks (they decide nothing):")
    for what in ("cells", "comparisons"):
        cal = out[f"{what}_calibration"]
        print(f"  {what}: beyond their combined CIs (Welch df) {_rate_text(cal['beyond'])}; "
              f"run-level sd the CIs leave out (tau) {cal['tau']:.4f}")
        if what == "cells":
            raw = out["cells_calibration_shift_kept"]
            print(f"    with the run's shift left in: beyond {_rate_text(raw['beyond'])}; tau "
                  f"{raw['tau']:.4f}")
        if what == "comparisons" and cal["beyond"]["n"]:
            r = cal["shared_range"]
            print(f"    a calibrated method's share on this structure: {r['low']:.1%}-"
                  f"{r['high']:.1%} (95 %, {r['draws']} draws; counting absorbs a move of "
                  f"the shared cells)")
        print(f"    run B inside run A's prediction interval: {_rate_text(cal['pi_coverage'])}")
    for name in ("duets", "pairs"):  # the headline's duets, the pairs in one process
        cal = out[f"{name}_calibration"]
        if cal["matched"]:
            same = cal["same_verdict"]
            print(f"  {name}: beyond their combined CIs {_rate_text(cal['beyond'])}; tau "
                  f"{cal['tau']:.4f}; the same verdict in both runs {same['k']} of {same['n']}, "
                  f"flips {same['flips']}")
        for mode, runs in sorted(cal["decided"].items()):
            print(f"  {name} decided, {mode}: " + "; ".join(
                f"run {k.upper()} {v['decided']} of {v['rows']}"
                for k, v in sorted(runs.items())))
    for row in out["moved_cells"]:
        print(f"  {row['env']} {row['cell_id']}: {row['median_s_a'] * 1e3:.2f} ms -> "
              f"{row['median_s_b'] * 1e3:.2f} ms (t {row['t']:.2f})")
    agreement = out["agreement"]
    print(f"machines: {out['machines']['note']}")
    print(f"{out['comparisons_matched']} comparisons in both runs "
          f"({out['only_in_a']} only in A, {out['only_in_b']} only in B); verdicts agree: "
          + ("n/a" if agreement is None else f"{agreement:.1%}"))
    for env_side in ("a", "b"):
        if out[f"envs_only_in_{env_side}"]:
            print(f"  envs only in {env_side.upper()}: "
                  + ", ".join(out[f"envs_only_in_{env_side}"]))
    for row in out["agreement_by_effect"]:
        obs = "n/a" if row["agreement"] is None else f"{row['agreement']:.1%}"
        exp = "n/a" if row["expected"] is None else \
            f"{row['expected']:.1%} +- {row['expected_sd']:.1%}"
        print(f"  |effect| {row['band']}: {row['rows']} rows, agree {obs}; a calibrated "
              f"method: {exp}")
    print(f"flips (faster in one run, slower in the other): {out['flips']}")
    for row in out["flip_rows"]:
        print(f"  {row['table']}: {row['key']}: {row['verdict_a']} -> {row['verdict_b']} "
              f"(ratio {row['ratio_a']:.3g} -> {row['ratio_b']:.3g})")
    summary = {k: v for k, v in out.items() if k not in ("flip_rows", "moved_cells")}
    print(json.dumps(summary, sort_keys=True, default=_plain))
    return 0


if __name__ == "__main__":
    sys.exit(main())
