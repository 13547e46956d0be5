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
  (driver/stats/crossrun_judge.py; docs/calibration.md): duets, pairs, releases from duets,
  graph vs eager from duets and machines compared (the common shift and the spread about it;
  where the runs had two looks, read against the design replayed, and its power simulated
  under it), cells (the spread about the run's shift), comparisons (their differences
  whitened by the shared-cell structure); with a third run or more (`compare_runs.py A B C
  ...`), the duets' run offsets tested together and tau, the run-level sd, with its interval;
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

from driver.stats import crossrun_cells, crossrun_judge, crossrun_looks, verdicts  # noqa: E402
from driver.stats.crossrun_cells import se_from_ci  # noqa: E402
from driver.stats.crossrun_looks import MACHINE, agreement  # noqa: E402
from driver.study import fingerprint, layout  # noqa: E402
from driver.tables.aa_rows import AA_TABLES, aa_figures  # noqa: E402
from driver.tables.results import ENV_KEY, Results, row_key  # noqa: E402

CELL_KEYS = ["env", "cell_id", "twin", "machine_key"]
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
    cell_cal, cell_raw = crossrun_cells.cells_calibration(cells, level, sims)
    comp_cal = crossrun_cells.comparisons_calibration(both, cells_a, cells_b, level, sims)
    beyond_cells = crossrun_cells.moved_cells(cells, math.log(cell_cal["shift"]), level)
    # agreement by effect size, beside what a calibrated method would show
    bands = crossrun_cells.agreement_by_effect(both, agree, level, q, margin, alpha_eq, draws)
    envs_a, envs_b = set(cells_a["env"]), set(cells_b["env"])
    return {
        "duets_calibration": duets_calibration(fa, fb, level, sims, pairing=pairing),
        "pairs_calibration": duets_calibration(fa, fb, level, sims, table="pairs",
                                               pairing=pairing),
        "releases_calibration": duets_calibration(fa, fb, level, sims, table="duets_releases",
                                                  pairing=pairing),
        "graph_vs_eager_calibration": duets_calibration(
            fa, fb, level, sims, table="duets_graph_vs_eager", pairing=pairing),
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


def duets_calibration(fa, fb, level: float = 0.95, sims: int = crossrun_judge.SIMS,
                      table: str = "duets", pairing: dict | None = None) -> dict:
    """The headline's duets (duets.csv) across two runs: the check of the common shift and of
    the spread about it (the rows of a mode sharing each round's state as the runs' duet_rounds
    measured it) (driver/stats/crossrun.py; `check`, with its power at these rows'
    sizes, decides `ok`); the share beyond their combined CIs with its binomial CI (rows share
    no process), kept as a figure; and each run's decided rows per mode. table="pairs": the
    same for the pairs in one process (pairs.csv: rows share no process either);
    table="duets_releases": for each release against the one before, from the duets;
    table="duets_graph_vs_eager": graph vs eager per version, from the duets and the
    reference's graph-vs-eager row (crossrun_looks.with_modes_rows);
    table="machines_compared": the machines' interaction per duets row. Rows are matched on
    the machine key too (pairing: machine_pairing). Where the runs had two looks, the check
    is judged and its power simulated under that design (crossrun_judge.rows_check; a derived
    row's two duets rows are replayed, so neighbours that share one stay correlated).
    same_verdict: how many matched rows got the same verdict in both runs, and how many
    flipped (faster in one, slower in the other)."""
    maps = (pairing or machine_pairing(machines_in(fa), machines_in(fb)))["maps"]
    base = "pairs" if table == "pairs" else "duets"
    tabs, base_tabs, rounds = ([keyed(_results(f).table(t), m) if _results(f).has(t)
                                else pd.DataFrame() for f, m in zip((fa, fb), maps)]
                               for t in (table, base, "duet_rounds"))
    if table == "duets_graph_vs_eager":  # its rows also sum the reference's duets_modes row
        base_tabs = [crossrun_looks.with_modes_rows(b, t) for b, t in zip(base_tabs, tabs)]
    # the duets' rows of a mode share each round's state (duet_rounds' sd_round)
    return crossrun_looks.rows_calibration(tabs, base_tabs, table, level, sims,
                                           rounds=None if base == "pairs" else rounds)


def duets_pooled(folders, table: str = "duets") -> dict:
    """The duets of three or more runs: their run offsets tested together, with tau and its CI
    (driver/stats/crossrun.py: pooled_shift); rows matched by env and cell over all runs.
    table="pairs": the same for the pairs in one process."""
    results = [_results(f) for f in folders]
    maps = machine_pairing(*(machines_in(r) for r in results))["maps"]
    tabs = [keyed(r.table(table), m) if r.has(table) else pd.DataFrame()
            for r, m in zip(results, maps)]
    return crossrun_looks.pooled_rows(tabs, table)


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
    for name, what in (("duets", "duets (the headline)"), ("releases", "releases from duets"),
                       ("graph_vs_eager", "graph vs eager from duets"),
                       ("machines_compared", "machines compared (interaction)"),
                       ("pairs", "pairs in one process")):
        cal = out[f"{name}_calibration"] if name == "duets" else \
            out.get(f"{name}_calibration") or {}
        if cal.get("matched"):
            lines += crossrun_judge.verdict_text(f"cross-run check, {what}", cal["check"])
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
