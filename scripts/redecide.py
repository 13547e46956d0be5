#!/usr/bin/env python
"""What a cheaper design would have decided, from a finished run's own paired replicates.

`make redecide R=<results folder> ARGS="..."` (docs/design.md "One budget": the default's size)
re-decides the paired tables (duets, their A/A rows, pairs, pairs' A/A rows, the reference's
graph-vs-eager row, and the derived releases and graph-vs-eager tables) with the study's own table
code (driver/tables/duets.py, duets_releases.py, duets_graph_vs_eager.py) on edited copies of
the run's duet files (results/duets/<machine>/...), nothing written:

  --windows W       each replicate from its first W timed windows a side (a duet: its first W
                    windows, each side's median over their samples, as supervise_duet.summarize;
                    a pair in one process, whose two cells share one interleaved stream: the first
                    W / windows of each side's samples, in time order)
  --first-look      only the first look's replicates (the design's `replicates`, times a row's
                    weight), as if no row had a second look
  --replicates N    with --first-look: only the first N replicates of the rows of --of, as if
                    their first look had N (their two-look levels follow: design.replicates = N)
  --of FAMILY       which rows --replicates cuts: pairs, eager (the headline's eager duets and
                    their A/A row) or all

It first re-decides the run as it is and checks that this reproduces the verdicts of the run's
own tables (results/tables/<table>.csv): if it does not, it says which rows differ and exits 1,
for a comparison against code that does not decide as the run did would mean nothing. Then it
prints per table and mode the rows decided as the run has them and under the edit, the rows
whose verdict changes, and the median within-row sd of the replicates' log ratios both ways.

Usage: python scripts/redecide.py results --windows 6 --first-look
"""
import argparse
import copy
import math
import sys
from pathlib import Path
from statistics import median

import pandas as pd
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

import supervise_duet  # noqa: E402

from driver.tables import duets as duetstab  # noqa: E402
from driver.tables.duets_graph_vs_eager import duets_graph_vs_eager_table  # noqa: E402
from driver.tables.duets_releases import duets_releases_table  # noqa: E402
from driver.tables.results import Results  # noqa: E402

FAMILIES = ("duets", "duets_aa", "pairs", "pairs_aa", "duets_modes")
DERIVED = ("duets_releases", "duets_graph_vs_eager")
KEY = ("machine", "env", "cell_id", "left_env", "right_env", "mode")


def tables(records, level, q, min_effect, alpha_equivalence):
    """{table: DataFrame} of the paired tables, as aggregate.py builds them."""
    out = {k: duetstab.duets_table(records, level=level, q=q, min_effect=min_effect,
                                   alpha_equivalence=alpha_equivalence, kind=k)
           for k in FAMILIES}
    out["duets_releases"] = duets_releases_table(out["duets"], q=q, min_effect=min_effect,
                                                 alpha_equivalence=alpha_equivalence)
    out["duets_graph_vs_eager"] = duets_graph_vs_eager_table(
        out["duets"], out["duets_modes"], q=q, min_effect=min_effect,
        alpha_equivalence=alpha_equivalence)
    return out


def verdicts(table: pd.DataFrame) -> dict:
    """{row key: verdict} of a table (its identifying columns joined)."""
    if table.empty:
        return {}
    cols = [c for c in KEY if c in table.columns]
    return dict(zip(table[cols].astype(str).agg("|".join, axis=1), table["verdict"]))


def shorten(rec: dict, windows: int) -> dict:
    """A copy of an ok duet file as if it had timed only its first `windows` windows a side."""
    rec = copy.deepcopy(rec)
    if rec.get("status") != "ok" or windows >= int(rec["windows"]):
        return rec
    left, right = rec["left_windows_s"], rec["right_windows_s"]
    if duetstab.is_pair(rec):  # one interleaved stream a side: keep its first share
        share = windows / float(rec["windows"])
        left = [left[0][:max(1, round(len(left[0]) * share))]]
        right = [right[0][:max(1, round(len(right[0]) * share))]]
        lm, rm = median(left[0]), median(right[0])
        rec.update(left_median_s=lm, right_median_s=rm, log_ratio=math.log(lm / rm),
                   left_samples=len(left[0]), right_samples=len(right[0]))
    else:  # the supervisor's own figures of its first windows
        left, right = left[:windows], right[:windows]
        rec.update(supervise_duet.summarize({"a": right, "b": left}))
    rec.update(left_windows_s=left, right_windows_s=right, windows=windows)
    return rec


def in_first_look(rec: dict) -> bool:
    """The file is of its row's first look (the design's replicates already count a row's
    weight: plan.py's duet_params)."""
    return int(rec["replicate"]) < int(rec["design"]["replicates"])


def cut(rec: dict, of: str) -> bool:
    """Whether --replicates applies to this file's row."""
    if of == "all":
        return True
    if of == "pairs":
        return duetstab.is_pair(rec)
    return duetstab.family(rec) in ("duets", "duets_aa") and rec["cell"]["mode"] == "eager"


def edit(records, windows=None, first_look=False, replicates=None, of="all"):
    out = []
    for rec in records:
        if first_look and not in_first_look(rec):
            continue
        if replicates is not None and cut(rec, of):
            if int(rec["replicate"]) >= replicates:
                continue
            rec = dict(rec, design=dict(rec["design"], replicates=replicates))
        out.append(shorten(rec, windows) if windows else rec)
    return out


def counts(table: pd.DataFrame) -> dict:
    """{mode or "": (decided, rows)}."""
    if table.empty:
        return {}
    groups = table.groupby("mode") if "mode" in table.columns else [("", table)]
    return {str(m): (int((part["verdict"] != "undecided").sum()), len(part))
            for m, part in groups}


def compare(before: dict, after: dict) -> list[str]:
    lines = ["| table [mode] | decided as run | decided edited |", "| --- | --- | --- |"]
    for name in FAMILIES + DERIVED:
        a, b = counts(before[name]), counts(after[name])
        for mode in sorted(set(a) | set(b)):
            fa, fb = a.get(mode, (0, 0)), b.get(mode, (0, 0))
            label = "%s [%s]" % (name, mode) if mode else name
            lines.append("| %s | %d of %d | %d of %d |" % (label, fa[0], fa[1], fb[0], fb[1]))
    changed = []
    for name in FAMILIES + DERIVED:
        va, vb = verdicts(before[name]), verdicts(after[name])
        changed += ["  %s %s: %s -> %s" % (name, k, va.get(k), vb.get(k))
                    for k in sorted(set(va) | set(vb)) if va.get(k) != vb.get(k)]
    sds = []
    for name in ("duets", "pairs"):
        if not before[name].empty and not after[name].empty:
            sds.append("median row sd of the log ratios, %s: %.4f as run, %.4f edited"
                       % (name, before[name]["sd_log"].median(), after[name]["sd_log"].median()))
    return lines + ["", "rows whose verdict changes: %d" % len(changed)] + changed + [""] + sds


def reproduces(results: Path, mine: dict) -> list[str]:
    """The rows of the run's own tables whose verdict `mine` does not reproduce."""
    folder = Results(results, marker="duets")  # a run with paired rows has tables/duets.csv
    bad = []
    for name in FAMILIES + DERIVED:
        if not folder.has(name):
            continue
        theirs = verdicts(folder.raw_table(name))
        ours = verdicts(mine[name])
        bad += ["%s %s: the run says %s, re-decided %s" % (name, k, v, ours.get(k))
                for k, v in theirs.items() if ours.get(k) != v]
    return bad


def read_levels(configfile=None) -> dict:
    """The decision levels of config.yaml, with a run's config file laid over it."""
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    if configfile is not None:
        over = yaml.safe_load(Path(configfile).read_text()) or {}
        cfg.update({k: v for k, v in over.items() if k != "stop"})
        cfg["stop"] = dict(cfg["stop"], **(over.get("stop") or {}))
    return dict(level=cfg["stop"]["level"], q=cfg["fdr_q"], min_effect=cfg["min_effect"],
                alpha_equivalence=cfg["equivalence_alpha"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", type=Path, help="a finished run's results folder")
    parser.add_argument("--windows", type=int, help="timed windows a side to keep")
    parser.add_argument("--first-look", action="store_true", help="only the first look")
    parser.add_argument("--replicates", type=int, help="first-look replicates of --of's rows")
    parser.add_argument("--of", choices=("pairs", "eager", "all"), default="all")
    parser.add_argument("--configfile", type=Path,
                        help="the run's config laid over config.yaml (its levels)")
    args = parser.parse_args(argv)
    if args.windows is not None and args.windows < 1:
        parser.error("--windows must be at least 1, not %d" % args.windows)
    if args.replicates is not None and (args.replicates < 2 or not args.first_look):
        parser.error("--replicates needs --first-look and at least 2 replicates")
    folder = args.results / "duets"
    if not folder.is_dir():
        parser.error("%s has no duets/ folder: not a results folder with paired rows"
                     % args.results)
    levels = read_levels(args.configfile)
    records = duetstab.load(sorted(folder.rglob("*.json")))
    as_run = tables(records, **levels)
    bad = reproduces(args.results, as_run)
    if bad:
        print("re-deciding the run as it is does not reproduce its tables (%d rows):" % len(bad))
        print("\n".join("  " + b for b in bad[:20]))
        return 1
    edited = tables(edit(records, args.windows, args.first_look, args.replicates, args.of),
                    **levels)
    if args.first_look:  # compare like with like: the first look as run
        as_run = tables(edit(records, first_look=True), **levels)
    print("%s: %d paired replicates; the run's own verdicts reproduced" % (args.results,
                                                                           len(records)))
    print("\n".join(compare(as_run, edited)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
