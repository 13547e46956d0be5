"""Two runs' cells and comparisons side by side: the checks and the figures compare-runs prints
beside the paired rows' (crossrun_looks).

- cells: the spread about the run's shift (crossrun_judge.rows_check, centre=True) with its
  power; the share beyond the combined CIs (Welch df) with the shift taken out and left in;
  the cells that moved beyond their CIs (`moved_cells`).
- comparisons: their differences whitened by the shared-cell structure (crossrun_judge.
  comparisons_check) with its power; the share beyond the combined CIs against the range a
  calibrated method's share falls in on this structure (calibration.shared_cells_range).
- agreement of the verdicts by effect size, beside a calibrated method's
  (calibration.expected_agreement).
Rows are keyed as compare-runs reads them: MACHINE, env, cell_id, twin (cells) and left_cell,
right_cell (comparisons: the two cells each row compares).
"""
import math

import numpy as np
import pandas as pd

from driver.stats import calibration, crossrun_judge, moderated
from driver.stats.crossrun_looks import MACHINE


def se_from_ci(low, high, level, df) -> np.ndarray:
    """Standard error of the log estimate from a symmetric-in-log CI at `level` with df."""
    crit = np.array([moderated.t_quantile(0.5 + lv / 2, d) for lv, d in zip(level, df)])
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.log(np.asarray(high, float) / np.asarray(low, float)) / (2 * crit)


def calibrate(both: pd.DataFrame, est_a, est_b, level: float, centre: bool) -> dict:
    out = calibration.cross_run(est_a, both["se_log_a"], both["df_a"], est_b, both["se_log_b"],
                                both["df_b"], level, centre=centre)
    return {"beyond": out["beyond"], "pi_coverage": out["pi_coverage"], "tau": out["tau"],
            "shift": out["shift"]}


def cells_calibration(cells: pd.DataFrame, level: float, sims: int) -> tuple[dict, dict]:
    """The matched cells (log_m, se_log, df with suffixes _a, _b): (the figures about the run's
    shift with the check that decides, the figures with the shift left in)."""
    cell_cal = calibrate(cells, cells["log_m_a"], cells["log_m_b"], level, centre=True)
    # the verdict: the dispersion about the run's shift (driver/stats/crossrun.py), with power
    cell_cal["check"] = crossrun_judge.rows_check(
        cells["log_m_a"], cells["se_log_a"], cells["df_a"], cells["log_m_b"], cells["se_log_b"],
        cells["df_b"], centre=True, sims=sims)
    cell_cal["ok"] = bool(cell_cal["check"]["ok"])
    # the same test with the whole run's shift left in: what a user comparing two runs' cells sees
    cell_raw = calibrate(cells, cells["log_m_a"], cells["log_m_b"], level, centre=False)
    return cell_cal, cell_raw


def _cell_keys(cs: pd.DataFrame) -> list[str]:
    """Each cell's machine|env|cell_id|twin, the key comparisons name cells by."""
    return [f"{m}|{e}|{c}|{t}" for m, e, c, t in zip(cs[MACHINE], cs["env"], cs["cell_id"],
                                                     cs["twin"])]


def comparisons_calibration(both: pd.DataFrame, cells_a: pd.DataFrame, cells_b: pd.DataFrame,
                            level: float, sims: int) -> dict:
    """The matched comparisons (ratio, se_log, df, left_cell, right_cell with suffixes _a, _b)
    on the structure of the cells they share (each run's cells: se_log, df)."""
    comp_cal = calibrate(both, np.log(both["ratio_a"].astype(float)),
                         np.log(both["ratio_b"].astype(float)), level, centre=False)
    # comparisons share cells: the range a calibrated method's share falls in, on this structure
    ses = [{k: s for k, s in zip(_cell_keys(cs), cs["se_log"]) if s > 0}
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
    cell_df = [dict(zip(_cell_keys(cs), cs["df"])) for cs in (cells_a, cells_b)]
    comp_cal["check"] = crossrun_judge.comparisons_check(
        usable_rows["left_cell_a"], usable_rows["right_cell_a"], ses, cell_df,
        np.log(usable_rows["ratio_a"].astype(float)), usable_rows["se_log_a"],
        usable_rows["df_a"], np.log(usable_rows["ratio_b"].astype(float)),
        usable_rows["se_log_b"], usable_rows["df_b"], sims=sims)
    comp_cal["ok"] = bool(comp_cal["check"]["ok"])
    return comp_cal


def moved_cells(cells: pd.DataFrame, shift: float, level: float) -> list[dict]:
    """The matched cells beyond their combined CI (Welch df) once the run's shift (log) is
    taken out: each cell's record with its t."""
    beyond = []
    for rec in cells.to_dict("records"):
        va, vb = rec["se_log_a"] ** 2, rec["se_log_b"] ** 2
        if not (va > 0 and vb > 0):
            continue
        t = (rec["log_m_a"] - rec["log_m_b"] - shift) / math.sqrt(va + vb)
        dof = moderated.welch_df(va, rec["df_a"], vb, rec["df_b"])
        if abs(t) > moderated.t_quantile(0.5 + level / 2, dof):
            beyond.append({**rec, "t": t})
    return beyond


def agreement_by_effect(both: pd.DataFrame, agree: pd.Series, level: float, q: float,
                        margin: float, alpha_eq: float, draws: int) -> list[dict]:
    """The matched comparisons' agreement of verdicts per effect-size band, beside what a
    calibrated method would show (a parametric bootstrap from the two runs' estimates)."""
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
    return bands
