"""`make decisions R=<results dir>`: what one run decided, machine by machine, as the goals count it.

From the run's tables (no timing; any finished study or published run):
- headline (duets): per mode, the TF 2.x versions decided (faster, slower or equivalent) of those
  measured; the duets' design (first look, at most) and how many rows the second look extended;
- the cells' comparisons (every comparison table): of the rows whose estimated effect is 10 % or
  more (ratio outside 1 / 1.1 .. 1.1), the share decided; of the rows within 5 % of equal, the
  share equivalent;
- twins (A/A cells): the share equivalent and the share called different;
- what each release changed, from the duets (duets_releases): per mode, the rows decided and
  how many of them equivalent;
- A/A duets: the rows called different (false positives) and the order bias;
- the health check (duet_rounds): rounds that moved every row;
- pairs in one process (config `pairs`): the same two shares over the pairs table's rows, the A/A
  pairs called different, and the rows that a pair and the cells' comparison table both hold,
  with what each decided (decided by both, by the pair only, by the cells only, by neither).
Every share is printed with its Clopper-Pearson 95 % CI. Given a results folder (with duets/), also
what a paired replicate cost over its timed seconds, and what the meters flagged
(driver/study/replicate_cost.py). Prints a JSON line last.
"""
import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from driver.stats import verdicts  # noqa: E402
from driver.stats.calibration import clopper_pearson  # noqa: E402
from driver.study import replicate_cost  # noqa: E402
from driver.tables.results import Results  # noqa: E402

DECIDED = set(verdicts.DECIDED) | {verdicts.EQUIVALENT}


def _headline_level(res, machine: str) -> float:
    """1 - ci_level of the machine's duets rows (the level BH called them at), NaN without."""
    if not res.has("duets"):
        return math.nan
    duets = res.table("duets")
    if "ci_level" not in duets.columns:
        return math.nan
    mine = duets[duets["machine"].astype(str) == str(machine)] if "machine" in duets.columns \
        else duets
    levels = mine["ci_level"].astype(float).dropna()
    return 1 - float(levels.iloc[0]) if len(levels) else math.nan


def share(k: int, n: int) -> dict:
    lo, hi = clopper_pearson(k, n)
    return {"k": int(k), "n": int(n), "share": k / n if n else math.nan, "ci": [lo, hi]}


def _codes(table: pd.DataFrame) -> pd.Series:
    return table["verdict"].map(verdicts.norm_code)


def figures(results) -> dict:
    """{machine: {...}} of one results folder (or its tables/, or docs/)."""
    if not Path(results).is_dir():
        raise FileNotFoundError(f"{results}: no such folder")
    res = Results(results)
    out: dict = {}

    def per_machine(table: pd.DataFrame):
        if "machine" not in table.columns:
            return [("all", table)]
        return list(table.groupby("machine"))

    if res.has("duets"):
        for machine, part in per_machine(res.duets()):
            m = out.setdefault(machine, {})
            for mode, rows in part.groupby("mode"):
                codes = _codes(rows)
                m.setdefault("headline", {})[mode] = {
                    "decided": int(codes.isin(DECIDED).sum()), "rows": int(len(rows)),
                    "second_look": int((rows["n"] > rows.get("n_look1", rows["n"])).sum())}
    for name, table in res.comparisons().items():
        if name in ("duets", "duets_aa", "twins", "pairs", "pairs_aa") or \
                "ratio" not in table.columns:
            continue
        for machine, part in per_machine(table):
            acc = out.setdefault(machine, {}).setdefault(
                "cells", {"effect_10": [0, 0], "within_5": [0, 0]})
            for key, (k, n) in zip(("effect_10", "within_5"), effect_shares(part)):
                acc[key][0] += k
                acc[key][1] += n
    for m in out.values():
        if "cells" in m:
            m["cells"] = {k: share(*v) for k, v in m["cells"].items()}
    if res.has("twins"):
        for machine, part in per_machine(res.table("twins")):
            codes = _codes(part)
            out.setdefault(machine, {})["twins"] = {
                "equivalent": share(int((codes == verdicts.EQUIVALENT).sum()), len(part)),
                "different": share(int(codes.isin(verdicts.DECIDED).sum()), len(part))}
    if res.has("duets_aa"):
        for machine, part in per_machine(res.table("duets_aa")):
            codes = _codes(part)
            out.setdefault(machine, {})["aa_duets"] = {
                "different": share(int(codes.isin(verdicts.DECIDED).sum()), len(part)),
                "ratios": [round(float(x), 4) for x in part["ratio"]]}
            level = _headline_level(res, machine)
            if level == level and "p" in part.columns:  # the headline rows' own level
                out[machine]["aa_duets"]["at_headline_level"] = dict(
                    share(int((part["p"].astype(float) <= level).sum()), len(part)),
                    level=level)
    if res.has("duet_rounds"):
        for machine, part in per_machine(res.table("duet_rounds")):
            moved = part[part["moved"].astype(str).str.lower() == "true"]
            out.setdefault(machine, {})["rounds_moved"] = [
                f"{r['mode']} round {int(r['round'])}: {math.exp(r['shift']):.3f}"
                for _, r in moved.iterrows()]
            if "sd_round" in part.columns:  # the rounds' common effect per mode, and its test
                out[machine]["rounds_sd"] = {
                    mode: {"sd_round": round(float(rows["sd_round"].iloc[0]), 4),
                           "p_round": round(float(rows["p_round"].iloc[0]), 4)}
                    for mode, rows in part.groupby("mode")}
    if res.has("duets_releases"):
        for machine, part in per_machine(res.table("duets_releases")):
            for mode, rows in part.groupby("mode"):
                codes = _codes(rows)
                out.setdefault(machine, {}).setdefault("releases", {})[mode] = {
                    "decided": share(int(codes.isin(DECIDED).sum()), len(rows)),
                    "equivalent": int((codes == verdicts.EQUIVALENT).sum())}
    if res.has("pairs"):
        pairs_figures(res, out, per_machine)
    if not out:
        raise ValueError(f"{results}: no duets or comparison tables in it")
    return out


def effect_shares(part: pd.DataFrame) -> tuple[list, list]:
    """[decided, rows] of the rows with an effect of 10 % or more, [equivalent, rows] of those
    within 5 % of equal (the goals' two counts)."""
    ratio = pd.to_numeric(part["ratio"], errors="coerce")
    codes = _codes(part)
    big = (ratio >= 1.1) | (ratio <= 1 / 1.1)
    near = (ratio >= 1 / 1.05) & (ratio <= 1.05)
    return ([int(codes[big].isin(DECIDED).sum()), int(big.sum())],
            [int((codes[near] == verdicts.EQUIVALENT).sum()), int(near.sum())])


def pairs_figures(res, out: dict, per_machine) -> None:
    """The pairs' shares, their A/A rows, and the rows they share with the cells' tables."""
    tables = res.comparisons()
    for machine, part in per_machine(res.table("pairs")):
        big, near = effect_shares(part)
        both = {"both": 0, "pair_only": 0, "cells_only": 0, "neither": 0}
        for _, row in part.iterrows():
            cells = tables.get(str(row.get("table")))
            if cells is None or cells.empty:
                continue
            env_col = "env" if "env" in cells.columns else "left_env"
            hit = cells[(cells["left_cell_id"] == row["left_cell_id"])
                        & (cells["right_cell_id"] == row["right_cell_id"])
                        & (cells[env_col] == row["env"])
                        & (cells.get("machine", machine) == machine)]
            if hit.empty:
                continue
            pair_done = verdicts.norm_code(row["verdict"]) in DECIDED
            cells_done = verdicts.norm_code(hit.iloc[0]["verdict"]) in DECIDED
            both[{(True, True): "both", (True, False): "pair_only", (False, True): "cells_only",
                  (False, False): "neither"}[(pair_done, cells_done)]] += 1
        out.setdefault(machine, {})["pairs"] = {
            "effect_10": share(*big), "within_5": share(*near),
            "decided": share(int(_codes(part).isin(DECIDED).sum()), len(part)),
            "against_cells": both}
    if res.has("pairs_aa"):
        for machine, part in per_machine(res.table("pairs_aa")):
            codes = _codes(part)
            out.setdefault(machine, {}).setdefault("pairs", {})["aa_different"] = share(
                int(codes.isin(verdicts.DECIDED).sum()), len(part))


def text(figs: dict) -> list[str]:
    def s(d):
        return (f"{d['k']} of {d['n']} ({d['share']:.0%}, CI {d['ci'][0]:.0%}-{d['ci'][1]:.0%})"
                if d["n"] else "none")

    lines = []
    for machine, m in sorted(figs.items()):
        lines.append(f"machine {machine}:")
        for mode, h in sorted(m.get("headline", {}).items()):
            lines.append(f"  headline, {mode}: {h['decided']} of {h['rows']} rows decided "
                         f"({h['second_look']} extended by the second look)")
        for mode, r in sorted(m.get("releases", {}).items()):
            lines.append(f"  releases from duets, {mode}: decided {s(r['decided'])}, "
                         f"{r['equivalent']} of them equivalent")
        if "cells" in m:
            lines.append(f"  cells' comparisons with an effect of 10 % or more, decided: "
                         f"{s(m['cells']['effect_10'])}")
            lines.append(f"  cells' comparisons within 5 % of equal, equivalent: "
                         f"{s(m['cells']['within_5'])}")
        if "twins" in m:
            lines.append(f"  twins equivalent: {s(m['twins']['equivalent'])}; called different: "
                         f"{s(m['twins']['different'])}")
        if "aa_duets" in m:
            lines.append(f"  A/A duets called different: {s(m['aa_duets']['different'])}; "
                         f"ratios {m['aa_duets']['ratios']}")
            at = m["aa_duets"].get("at_headline_level")
            if at:
                lines.append(f"  A/A duets at the headline's own level ({at['level']:.3g}, "
                             f"compare-runs judges it): {s(at)}")
        if "pairs" in m:
            p = m["pairs"]
            if "decided" in p:
                lines.append(f"  pairs in one process, rows decided: {s(p['decided'])}")
                lines.append(f"  pairs with an effect of 10 % or more, decided: "
                             f"{s(p['effect_10'])}")
                lines.append(f"  pairs within 5 % of equal, equivalent: {s(p['within_5'])}")
                c = p["against_cells"]
                lines.append(f"  rows held by pairs and cells alike: decided by both "
                             f"{c['both']}, by the pair only {c['pair_only']}, by the cells "
                             f"only {c['cells_only']}, by neither {c['neither']}")
            if "aa_different" in p:
                lines.append(f"  A/A pairs called different: {s(p['aa_different'])}")
        if "rounds_moved" in m:
            lines.append("  health check, rounds that moved every row: "
                         + ("; ".join(m["rounds_moved"]) or "none"))
        if "rounds_sd" in m:
            lines.append("  the rounds' common effect (sd, log; F test p): " + "; ".join(
                f"{mode} {v['sd_round']:.4f} (p {v['p_round']:.2g})"
                for mode, v in m["rounds_sd"].items()))
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a results folder (or its tables/, or docs/)")
    args = parser.parse_args(argv)
    try:
        figs = figures(args.results)
    except (FileNotFoundError, ValueError) as exc:
        print(f"decisions: {exc}", file=sys.stderr)
        return 2
    for line in text(figs):
        print(line)
    root = Path(args.results)
    if (root / "duets").is_dir():  # a results folder: what its replicates cost (not in tables)
        cells = [json.loads(p.read_text()) for p in sorted((root / "cells").rglob("*.json"))]
        cost = replicate_cost.figures(replicate_cost.load(root), cells)
        for line in replicate_cost.text(cost):
            print(line)
        for machine, kinds in cost.items():
            figs.setdefault(machine, {})["replicate_cost"] = kinds
    print(json.dumps(figs, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
