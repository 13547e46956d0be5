"""`make compare-runs A=<results> B=<results>`: do two runs of the study say the same?

Lines up two results folders (two runs on one machine, or two machines; a published docs/ folder
works too) from their tables alone (<folder>/tables/*.csv, or <folder>/*.csv), and prints:
- the share of comparisons whose verdict agrees, and how many rows each run has that the other
  lacks;
- flips: comparisons called faster one way in one run and the other way in the other;
- cells whose estimates moved beyond their confidence intervals (the two intervals are disjoint);
- one JSON line with those figures, for scripts.
"""
import argparse
import json
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))

from driver.study import fingerprint  # noqa: E402
from driver.tables import bundle  # noqa: E402
from driver.tables.registry import COMPARISONS  # noqa: E402

# What identifies a comparison row across runs (whichever of these a table has): the envs and
# the cells on each side. Machine keys are left out, so that two machines can be lined up.
ROW_KEYS = ["env", "left_env", "right_env", "left_cell_id", "right_cell_id"]
CELL_KEYS = ["env", "cell_id"]
DECIDED = {"left_faster", "right_faster"}


def tables_folder(path) -> Path:
    path = Path(path)
    return path / "tables" if (path / "tables" / "cells.csv").exists() else path


def load_comparisons(folder: Path) -> pd.DataFrame:
    parts = []
    for name in COMPARISONS:
        if name == "machines":
            continue
        path = folder / f"{name}.csv"
        if not path.exists():
            continue
        df = bundle.read_table(path)
        if df.empty or "verdict" not in df.columns:
            continue
        keys = [k for k in ROW_KEYS if k in df.columns]
        df = df.assign(table=name, key=df[keys].astype(str).agg("|".join, axis=1))
        parts.append(df[["table", "key", "verdict", "ratio"]])
    if not parts:
        return pd.DataFrame(columns=["table", "key", "verdict", "ratio"])
    return pd.concat(parts, ignore_index=True)


def compare_runs(a, b) -> dict:
    fa, fb = tables_folder(a), tables_folder(b)
    for folder in (fa, fb):
        if not (folder / "cells.csv").exists():
            raise FileNotFoundError(f"{folder}: no cells.csv (not a results or tables folder)")
    ca, cb = load_comparisons(fa), load_comparisons(fb)
    both = ca.merge(cb, on=["table", "key"], suffixes=("_a", "_b"))
    agree = both["verdict_a"] == both["verdict_b"]
    flips = both[both["verdict_a"].isin(DECIDED) & both["verdict_b"].isin(DECIDED)
                 & ~agree]
    cells_a = bundle.read_table(fa / "cells.csv")
    cells_b = bundle.read_table(fb / "cells.csv")
    cells = cells_a.merge(cells_b, on=CELL_KEYS, suffixes=("_a", "_b"))
    cells = cells[(cells["status_a"] == "ok") & (cells["status_b"] == "ok")]
    moved = cells[(cells["ci_high_s_a"] < cells["ci_low_s_b"])
                  | (cells["ci_high_s_b"] < cells["ci_low_s_a"])]
    return {
        "comparisons_matched": int(len(both)),
        "only_in_a": int(len(ca) - len(both)),
        "only_in_b": int(len(cb) - len(both)),
        "agreement": float(agree.mean()) if len(both) else None,
        "flips": int(len(flips)),
        "flip_rows": flips[["table", "key", "verdict_a", "verdict_b", "ratio_a", "ratio_b"]]
        .to_dict("records"),
        "cells_matched": int(len(cells)),
        "cells_moved_beyond_ci": int(len(moved)),
        "moved_cells": moved[CELL_KEYS + ["median_s_a", "median_s_b"]].to_dict("records"),
        "median_ratio_change": (float((both["ratio_b"] / both["ratio_a"]).median())
                                if len(both) else None),
        # one machine or two (driver/study/fingerprint.py, from each side's facts.json)
        "machines": fingerprint.compare_folders(fa, fb),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", help="results folder of run A (or its tables/, or docs/)")
    parser.add_argument("b", help="results folder of run B")
    args = parser.parse_args(argv)
    try:
        out = compare_runs(args.a, args.b)
    except (FileNotFoundError, ValueError) as exc:
        print(f"compare-runs: {exc}", file=sys.stderr)
        return 2
    agreement = out["agreement"]
    print(f"machines: {out['machines']['note']}")
    print(f"{out['comparisons_matched']} comparisons in both runs "
          f"({out['only_in_a']} only in A, {out['only_in_b']} only in B); verdicts agree: "
          + ("n/a" if agreement is None else f"{agreement:.1%}"))
    print(f"flips (faster in one run, slower in the other): {out['flips']}")
    for row in out["flip_rows"]:
        print(f"  {row['table']}: {row['key']}: {row['verdict_a']} -> {row['verdict_b']} "
              f"(ratio {row['ratio_a']:.3g} -> {row['ratio_b']:.3g})")
    print(f"cells whose estimates moved beyond their CIs: {out['cells_moved_beyond_ci']} of "
          f"{out['cells_matched']}")
    for row in out["moved_cells"]:
        print(f"  {row['env']} {row['cell_id']}: {row['median_s_a'] * 1e3:.2f} ms -> "
              f"{row['median_s_b'] * 1e3:.2f} ms")
    summary = {k: v for k, v in out.items() if k not in ("flip_rows", "moved_cells")}
    print(json.dumps(summary, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
