"""Each cross-run check's verdict with its power at the sizes it judged: what compare-runs and
selfbench print (one place, so both print the same figures).

- duets: crossrun.check (shift + dispersion) on the matched rows of two duets tables; power
  from crossrun_power (patterns "row" and "shared", 1.5 and 2 times too narrow).
- cells: crossrun.check(centre=True) (the run's shift taken out and reported); power "row".
- comparisons: crossrun_structure (Mahalanobis over the shared-cell structure); power "cell" and
  "reference" (the cells shared by 5 or more rows).
- A/A pairs (selfbench): crossrun.check(centre=True) on the pairs' log ratios alone.
- several runs of duets: crossrun.pooled_shift (the runs' offsets together, tau with its CI).
"""
import numpy as np

from driver.stats import crossrun, crossrun_power, crossrun_structure

SIMS = 2000


def rows_check(est_a, se_a, df_a, est_b, se_b, df_b, centre: bool, sims: int = SIMS,
               seed: int = 0, design=None) -> dict:
    """crossrun.check plus {"power": crossrun_power.power_table} at these rows' sizes.

    design (a crossrun_power.Design of the same rows, in the same order, every row usable):
    where the runs had two looks, the shift and dispersion p-values are read from the
    statistics' distributions under that design (crossrun_power.reference: correct intervals,
    the design replayed) rather than from the normal and chi-square ones, which the second
    look's selection breaks, and the power is simulated under it (design_power_table)."""
    out = crossrun.check(est_a, se_a, df_a, est_b, se_b, df_b, centre=centre)
    if out["n"] < 3:
        return out
    if design is not None and design.two_looks and not centre and design.rows == out["n"]:
        ref = crossrun_power.reference(design, sims=2 * sims, seed=seed + 1)
        p_shift, p_disp, p_check = (float(x) for x in crossrun_power.design_p(
            ref, out["z"], out["S"]))
        alpha = out["alpha"]
        why = []
        if p_check < 2 * alpha:  # the pair of tests together at its stated size
            why.append(f"every row moved alike (shift p {p_shift:.2g} under the design)"
                       if p_shift <= p_disp else
                       f"rows spread {out['spread']:.2f}x what their intervals allow (p "
                       f"{p_disp:.2g} under the design)")
            why[-1] += f"; the pair of tests p {p_check:.2g}"
        out.update(p_shift_plain=out["p_shift"], p_dispersion_plain=out["p_dispersion"],
                   p_shift=p_shift, p_dispersion=p_disp, p_check=p_check, ok=not why,
                   why="; ".join(why) or "nothing beyond the intervals",
                   design="two looks, replayed")
        if float(design.round_sd.max()) > 0:  # rows of a group sharing each round's state
            out["round_sd"] = round(float(design.round_sd.max()), 4)  # a row's at most sigma
        patterns = ("row",) if design.derived else crossrun_power.PATTERNS
        out["power"] = crossrun_power.design_power_table(design, ref, sims=sims, seed=seed,
                                                         patterns=patterns)
        return out
    out["power"] = crossrun_power.power_table(se_a, df_a, se_b, df_b, centre=centre,
                                              sims=sims, seed=seed)
    return out


def comparisons_check(left, right, cell_se, cell_df, est_a, se_a, df_a, est_b, se_b, df_b,
                      sims: int = SIMS, seed: int = 0) -> dict:
    """crossrun_structure.check with its power: cell_se, cell_df are ({cell: se}, {cell: df}) of
    runs A and B; left, right the rows' cell names."""
    d = np.asarray(est_a, float) - np.asarray(est_b, float)
    ok = np.isfinite(d) & (np.asarray(se_a, float) > 0) & (np.asarray(se_b, float) > 0)
    if ok.sum() < 3:
        return {"n": int(ok.sum()), "ok": False, "why": "fewer than 3 rows with standard errors"}
    pick = [np.asarray(x)[ok] for x in (left, right, se_a, se_b, df_a, df_b)]
    structure = crossrun_structure.Structure(pick[0], pick[1], cell_se[0], cell_se[1], *pick[2:],
                                             cell_df_a=cell_df[0], cell_df_b=cell_df[1])
    out = crossrun_structure.check(structure, d[ok], draws=sims, seed=seed)
    out["n"] = int(ok.sum())
    out["why"] = (f"Mahalanobis distance {out['M']:.0f} over {out['rank']} independent "
                  f"directions; a calibrated method's {1 - out['alpha']:.0%} point "
                  f"{out['critical']:.0f} (p {out['p']:.2g})")
    out["power"] = crossrun_structure.power_table(structure, sims=max(sims // 2, 200),
                                                  seed=seed)
    return out


def pooled(est, se) -> dict:
    """crossrun.pooled_shift of rows x runs, or {"runs": R} with fewer than 3 runs."""
    est = np.asarray(est, float)
    if est.ndim != 2 or est.shape[1] < 3:
        return {"runs": int(est.shape[1]) if est.ndim == 2 else 0}
    out = crossrun.pooled_shift(est, se)
    row_se = np.nanmean(np.asarray(se, float), axis=1)
    out["power"] = {f"{f:g}x": crossrun_power.pooled_fail_rate(row_se, f, runs=out["runs"],
                                                               seed=int(10 * f))
                    for f in (1.0, 1.5, 2.0)}
    return out


def verdict_text(name: str, out: dict) -> list[str]:
    """The lines printed for one check: verdict, why, and its power and size."""
    if out.get("n", 0) < 3:
        return [f"{name}: cannot be judged ({out.get('why', 'no rows')})"]
    head = f"{name}: {'passes' if out['ok'] else 'FAILS'} ({out['n']} rows; {out['why']})"
    lines = [head]
    if "p_shift" in out and out.get("shift_ci"):
        lo, hi = out["shift_ci"]
        lines.append(f"  common shift run A / run B {out['shift']:.4f} (inverse-variance weighted, "
                     f"95 % CI {lo:.4f}-{hi:.4f}; the test, on the rows' normal scores: p "
                     f"{out['p_shift']:.2g}); spread about it {out['spread']:.2f} "
                     f"(95 % CI {out['spread_ci'][0]:.2f}-{out['spread_ci'][1]:.2f}; 1 when "
                     f"calibrated, p {out['p_dispersion']:.2g})")
    elif "p_dispersion" in out:
        lines.append(f"  spread of the standardised differences about the run's shift "
                     f"{out['spread']:.2f} (95 % CI {out['spread_ci'][0]:.2f}-"
                     f"{out['spread_ci'][1]:.2f}; 1 when calibrated, p {out['p_dispersion']:.2g})")
    if out.get("round_sd"):
        lines.append("  replayed with the rows of a mode sharing each replicate round's state "
                     f"(duet_rounds' sd_round, log, up to {out['round_sd']:.4f})")
    if "power" in out:
        lines.append("  " + crossrun_power.power_text(out["power"]))
    if out.get("design_note"):
        lines.append("  NOTE: " + out["design_note"])
    return lines


def pooled_text(out: dict, what: str = "duets") -> list[str]:
    if out.get("runs", 0) < 3 or "tau_ci" not in out:  # fewer runs, or runs without such rows
        return []
    lo, hi = out["tau_ci"]
    offs = ", ".join(f"{x:.4f}" for x in out["offsets"])
    return [f"{what} pooled over {out['runs']} runs ({out['rows']} rows in all): run offsets "
            f"{offs}; tested together p {out['p']:.2g} (chi-square, {out['df']} df); run-level "
            f"sd tau {out['tau']:.4f} (95 % CI {lo:.4f}-{hi:.4f})",
            f"  power of that test at these sizes (one offset per run, shared by all rows): "
            f"1.5x fails {out['power']['1.5x']['rate']:.0%}, 2x "
            f"{out['power']['2x']['rate']:.0%}; correct intervals pass "
            f"{1 - out['power']['1x']['rate']:.0%}"]
