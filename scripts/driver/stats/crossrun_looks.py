"""The cross-run check of paired rows (duets, pairs, releases from duets, machines compared)
across two runs, under the duets' two-look design where the runs had one.

compare-runs reads each run's table (rows keyed on the matched machine key, MACHINE) and hands
both here: `rows_calibration` matches the rows, counts each run's decided rows per mode, and
judges the common shift and the spread about it (crossrun_judge.rows_check) with its power.
Where the runs took a second look at some duets, the check is read against that design replayed
(`row_design`: a crossrun_power.Design of the matched rows, built from the duets rows both runs
hold, `base_rows`); a derived row (duets_releases, machines_compared) names its two duets rows,
and a duets_graph_vs_eager row its three (the version's graph and eager rows and the reference's
graph-vs-eager row, which every row of that table shares), so neighbours that share one stay
correlated in the replay. With three runs or more,
`pooled_rows` tests the runs' offsets together.
"""
import numpy as np
import pandas as pd

from driver.stats import calibration, crossrun_judge, crossrun_power, verdicts

MACHINE = "machine_key"  # the machine a row belongs to, as both sides are matched
# what names a row of the tables rows_calibration reads, beside duets' and pairs' (env, cell_id)
ROW_KEYS = {"duets_releases": ["mode", "api", "input", "left_env", "right_env", "left_keras",
                               "right_keras"],
            "duets_graph_vs_eager": ["api", "input", "env", "keras"]}
# a table's estimate, its se, df and verdict columns, where they are not the duets' own
EST_COLS = {"machines_compared": ("interaction", "interaction_se_log", "interaction_df",
                                  "machine_effect")}
# the tables built from duets rows: how each row names its two duets rows (machine, env, keys)
DERIVED = ("duets_releases", "machines_compared", "duets_graph_vs_eager")
# the column compare-runs marks the duets_modes rows with among the base rows of
# duets_graph_vs_eager (the reference's graph against its eager cell)
MODES_ROW = "modes_row"


def agreement(va: pd.Series, vb: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Two runs' verdicts of the same rows (read through verdicts.norm_code): (agree, flipped),
    flipped = a direction called in both runs, not the same one."""
    a, b = va.map(verdicts.norm_code), vb.map(verdicts.norm_code)
    agree = a == b
    return agree, a.isin(verdicts.DECIDED) & b.isin(verdicts.DECIDED) & ~agree


def estimates(tab: pd.DataFrame, table: str) -> pd.DataFrame:
    """tab with log_ratio, se_log, df and verdict as the check reads them."""
    if table not in EST_COLS:
        return tab
    est, se, dof, verdict = EST_COLS[table]
    return tab.assign(log_ratio=np.log(tab[est].astype(float)), se_log=tab[se], df=tab[dof],
                      verdict=tab[verdict])


def round_sd(rounds, both: pd.DataFrame) -> np.ndarray:
    """Per row of `both` (the matched duets rows, with MACHINE and mode): the sd of the rounds'
    common effect (duet_rounds' sd_round, the root mean square of the two runs' figures, each
    run's where only one has it; 0 where neither does: rows independent)."""
    figures = {}
    for tab in rounds or ():
        if tab is None or tab.empty or not {"sd_round", "mode", MACHINE} <= set(tab.columns):
            continue
        for (m, mode), part in tab.groupby([MACHINE, "mode"]):
            sd = float(part["sd_round"].astype(float).iloc[0])
            if np.isfinite(sd):
                figures.setdefault((m, mode), []).append(sd ** 2)
    mode = both["mode_a"] if "mode_a" in both.columns else both.get("mode", [""] * len(both))
    return np.sqrt(np.array([np.mean(figures.get((m, mo), [0.0]))
                             for m, mo in zip(both[MACHINE], mode)], float))


def base_rows(tabs, rounds=None) -> pd.DataFrame | None:
    """The duets rows both runs hold, as the design replays them: mean, sd of one duet, n1, n2,
    and the group (machine and mode) whose rows share a round's state with its sd (round_sd,
    from the runs' duet_rounds tables `rounds`; 0 without them) (None where a table lacks the
    design's columns: tables from before two looks)."""
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
    both = both.reset_index(drop=True)
    groups = list(zip(both[MACHINE], both["mode_a"] if "mode_a" in both.columns else ""))
    order = {g: i for i, g in enumerate(dict.fromkeys(groups))}
    return both.assign(group=[order[g] for g in groups], round_sd=round_sd(rounds, both))


def row_design(both: pd.DataFrame, table: str, base: pd.DataFrame | None, q: float = 0.05,
               margin: float = 0.10, alpha_eq: float = 0.05):
    """The two-look design of the matched rows `both` (crossrun_power.Design), or None where
    the runs had one look or the rows cannot all be traced to their duets rows."""
    if base is None or not len(base) or not (base["n2"] > base["n1"]).any():
        return None
    kw = dict(q=q, margin=margin, alpha_eq=alpha_eq)
    if "round_sd" in base.columns:
        kw.update(group=base["group"].to_numpy(), round_sd=base["round_sd"].to_numpy())
    index = {k: i for i, k in enumerate(zip(base[MACHINE], base["env"], base["cell_id"]))}
    cols = (base["mu"], base["sigma"], base["n1"], base["n2"])
    if table not in DERIVED:
        rows = [index.get(k) for k in zip(both[MACHINE], both["env"], both["cell_id"])]
        if any(r is None for r in rows):
            return None
        if "group" in kw:
            kw.update(group=kw["group"][rows], round_sd=kw["round_sd"][rows])
        return crossrun_power.Design(*(np.asarray(c)[rows] for c in cols), **kw)
    if table == "duets_graph_vs_eager":
        return _graph_vs_eager_design(both, base, cols, kw)
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


def modes_rows(gve: pd.DataFrame, duets: pd.DataFrame) -> pd.DataFrame:
    """The reference's graph-vs-eager duets rows (family duets_modes, not a table of their own)
    as base rows, from duets_graph_vs_eager's own rows (source `duet`): its estimate, se, df and
    duets (`reference_n`); its looks are duets.graph_vs_eager times the headline's (k, read
    from its duets: a multiple of the headline's n_max when it was extended, else of n_look1),
    its spread of one duet se * sqrt(n). Marked MODES_ROW; keyed as `duets` (MACHINE)."""
    if gve is None or gve.empty or duets is None or duets.empty or "source" not in gve.columns:
        return pd.DataFrame()
    out = []
    for r in gve[gve["source"].astype(str) == "duet"].to_dict("records"):
        mine = duets[duets[MACHINE] == r[MACHINE]]
        if mine.empty or not np.isfinite(float(r.get("se_log", np.nan))):
            continue
        n1h, n2h, n = int(mine["n_look1"].max()), int(mine["n_max"].max()), int(r["reference_n"])
        k = n // n2h if n >= n2h and n % n2h == 0 else max(1, round(n / max(1, n1h)))
        out.append({MACHINE: r[MACHINE], "env": r["env"], "cell_id": f"{r['env']}~modes",
                    "mode": "graph", "api": r["api"], "input": r["input"], "keras": r["keras"],
                    "log_ratio": r["log_ratio"], "se_log": r["se_log"], "df": r["df"],
                    "sd_log": float(r["se_log"]) * np.sqrt(n), "n": n, "n_look1": k * n1h,
                    "n_max": k * n2h, MODES_ROW: True})
    return pd.DataFrame(out)


def with_modes_rows(duets: pd.DataFrame, gve: pd.DataFrame) -> pd.DataFrame:
    """One run's duets rows (keyed on MACHINE) and the reference's graph-vs-eager row read from
    its duets_graph_vs_eager table (`modes_rows`), marked MODES_ROW: the base rows that table's
    rows sum. The duets rows alone where the run has no such row."""
    modes = modes_rows(gve, duets)
    if modes.empty:
        return duets
    return pd.concat([duets.assign(**{MODES_ROW: False}), modes], ignore_index=True)


def _graph_vs_eager_design(both: pd.DataFrame, base: pd.DataFrame, cols, kw):
    """duets_graph_vs_eager's design: each derived row the version's graph duets row minus its
    eager row plus the reference's graph-vs-eager row (a duets_modes row, marked MODES_ROW in
    `base`), df the smallest of the three; the reference's own row its duets_modes row alone.
    None where a row's parts are not all among the base rows."""
    flag = f"{MODES_ROW}_a" if f"{MODES_ROW}_a" in base.columns else MODES_ROW
    if flag not in base.columns:
        return None
    marked = base[flag].fillna(False).astype(bool).to_numpy()
    refs, by = {}, {}
    for n, (m, e, mo, a, i, k) in enumerate(zip(base[MACHINE], base["env"], base["mode_a"],
                                               base["api_a"], base["input_a"], base["keras_a"])):
        if marked[n]:
            refs[(m, e, a, i)] = n
        else:
            by[(m, e, mo, a, i, k)] = n
    parts = []
    side = "_a" if "source_a" in both.columns else ""  # the matched table, or one run's
    for r in both.to_dict("records"):
        m = r[MACHINE]
        ref = refs.get((m, r[f"reference_env{side}"], r["api"], r["input"]))
        if str(r[f"source{side}"]) != "derived":
            parts.append(None if ref is None else [(ref, 1.0)])
            continue
        graph = by.get((m, r["env"], "graph", r["api"], r["input"], r["keras"]))
        eager = by.get((m, r["env"], "eager", r["api"], r["input"], r["keras"]))
        parts.append(None if None in (ref, graph, eager) else
                     [(graph, 1.0), (eager, -1.0), (ref, 1.0)])
    if not parts or any(p is None for p in parts):
        return None
    return crossrun_power.Design(*cols, parts=parts, **kw)


def decided_by_mode(tabs) -> dict:
    """{mode: {"a"|"b": {"decided", "rows"}}}: each run's rows with a verdict, per mode."""
    decided = {}
    for name, tab in zip("ab", tabs):
        if tab.empty or "mode" not in tab.columns:
            continue
        for mode, part in tab.groupby("mode"):
            decided.setdefault(mode, {})[name] = {
                "decided": int(part["verdict"].isin([*verdicts.DECIDED, verdicts.EQUIVALENT,
                                                     "differs", "same"]).sum()),
                "rows": int(len(part))}
    return decided


def rows_calibration(tabs, base_tabs, table: str, level: float = 0.95,
                     sims: int = crossrun_judge.SIMS, rounds=None) -> dict:
    """Two runs' rows of `table` (tabs: the two tables, keyed on MACHINE; base_tabs: the two
    duets tables, or pairs for table="pairs", the rows the design replays; a run without the
    table: an empty DataFrame) matched and judged: see compare_runs.duets_calibration, which
    reads them. rounds: the two runs' duet_rounds tables (keyed on MACHINE), whose sd_round the
    replay gives the rows of a mode as a state they share each round (base_rows)."""
    tabs = [estimates(t, table) if len(t.columns) else t for t in tabs]
    decided = decided_by_mode(tabs)
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
    base = base_rows(base_tabs, rounds)
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


def pooled_rows(tabs, table: str) -> dict:
    """The rows of three or more runs' `table` (tabs, keyed on MACHINE; a run without it: an
    empty DataFrame) matched by machine, env and cell: their run offsets tested together, with
    tau and its CI (crossrun_judge.pooled); {"runs"} alone with fewer runs or an empty one."""
    if len(tabs) < 3 or any(t.empty for t in tabs):
        return {"runs": len(tabs)}
    keys = [MACHINE, "env", "cell_id"]
    both = tabs[0][keys + ["log_ratio", "se_log"]]
    for i, tab in enumerate(tabs[1:], 1):
        both = both.merge(tab[keys + ["log_ratio", "se_log"]], on=keys, suffixes=("", f"_{i}"))
    est = both[[c for c in both.columns if c.startswith("log_ratio")]].to_numpy(float)
    se = both[[c for c in both.columns if c.startswith("se_log")]].to_numpy(float)
    return dict(crossrun_judge.pooled(est, se), table=table)
