#!/usr/bin/env python
"""The second look's plan replayed on a finished run's first look: what it chooses, and what more
replicates would decide among the releases.

`make replan R=<results folder> ARGS="--available-s 445"` (docs/design.md "One budget": releases
compete for the second look) reads the run's duet files (results/duets/<machine>/...), keeps each
row's first look (replicates numbered below the design's `replicates`), and with the study's own
code (driver/tables/second_look.py, duets.py, duets_releases.py):

- plans the second look as the checkpoint plan_duets does, within `--available-s` seconds (the
  plan's `available_s`, results/duet_plans/<machine>.json, when not given), once with the open
  rows alone and once with the open releases as items too, and prints per family (releases per
  mode) how many items each plan takes and the sum of their chances (the expected decisions);
- for the releases of each mode, prints how many the first look decided and the expected count
  decided if every row of an open release had `n` replicates in all, for each `--n` (each row's
  second look at that size: second_look.decide_chance).

Usage: python scripts/replan.py results --available-s 445 --n 10 16 24
"""
import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

from driver.stats import verdicts  # noqa: E402
from driver.study import budget  # noqa: E402
from driver.tables import second_look  # noqa: E402
from driver.tables.duets import duets_table, load  # noqa: E402
from driver.tables.duets_releases import duets_releases_table  # noqa: E402


def plans(records: list[dict], available_s: float, gap_s: float, q: float, margin: float,
          alpha_eq: float) -> dict:
    """{"rows": ..., "releases": ...}: each plan's chosen items per family (count, chance sum)."""
    rows, releases, costs = second_look.plan_items(records, gap_s, q=q, min_effect=margin,
                                                   alpha_equivalence=alpha_eq)
    out = {}
    for name, items in (("rows", []), ("releases", releases)):
        chosen, not_reached, keys = second_look.plan_second_look(rows, items, costs,
                                                                 available_s)
        fam: dict[str, list] = {}
        for it in chosen:
            label = it["family"] + (f" ({it['mode']})" if it["family"] == "duets_releases"
                                    else "")
            fam.setdefault(label, []).append(it["chance"])
        out[name] = {"rows_extended": len(keys), "seconds": sum(i["cost_s"] for i in chosen),
                     "not_reached": len(not_reached),
                     "families": {k: {"items": len(v), "expected": float(sum(v))}
                                  for k, v in sorted(fam.items())}}
    return out


def at_sizes(records: list[dict], sizes: list[int], q: float, margin: float,
             alpha_eq: float) -> dict:
    """Per mode: releases, decided at the first look, and the expected count decided at each n."""
    table = duets_releases_table(duets_table(records, q=q, min_effect=margin,
                                             alpha_equivalence=alpha_eq),
                                 q=q, min_effect=margin, alpha_equivalence=alpha_eq)
    out = {}
    for mode, part in table.groupby("mode"):
        codes = [verdicts.norm_code(v) for v in part["verdict"]]
        called = sum(c in (verdicts.LEFT_FASTER, verdicts.RIGHT_FASTER) for c in codes)
        decided = sum(c != verdicts.UNDECIDED for c in codes)
        alpha = q * (called + 1) / max(1, int(part["p"].notna().sum()))
        open_ = [r for r, c in zip(part.itertuples(index=False), codes)
                 if c == verdicts.UNDECIDED and r.se_log == r.se_log]
        row = {"releases": len(part), "decided_first_look": decided, "open": len(open_)}
        for n in sizes:
            chance = 0.0
            for r in open_:
                n1 = int(min(r.left_n, r.right_n))
                c = second_look.decide_chance(float(r.log_ratio), float(r.se_log) * n1 ** 0.5,
                                              n1, max(n, n1 + 1), alpha, margin, alpha_eq)
                chance += c if c == c else 0.0
            row[f"expected_decided_at_{n}"] = decided + chance
        out[mode] = row
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a run's results folder")
    parser.add_argument("--available-s", type=float, default=None,
                        help="seconds for the second look (default: the run's own plan's)")
    parser.add_argument("--gap-s", type=float, default=None,
                        help="the job gap per replicate (default: the run's own plan's, else 0)")
    parser.add_argument("--n", type=int, nargs="+", default=[10, 16, 24])
    parser.add_argument("--q", type=float, default=0.05)
    parser.add_argument("--margin", type=float, default=0.10)
    parser.add_argument("--alpha-equivalence", type=float, default=0.05)
    args = parser.parse_args(argv)
    results = Path(args.results)
    files = sorted((results / "duets").rglob("*.json"))
    if not files:
        sys.exit(f"replan: no duet files under {results / 'duets'}")
    plan_files = sorted((results / "duet_plans").glob("*.json"))
    own_plan = json.loads(plan_files[0].read_text()).get("budget") or {} if plan_files else {}
    available = (args.available_s if args.available_s is not None
                 else own_plan.get("available_s"))
    if available is None:
        sys.exit("replan: the run has no budgeted plan; give --available-s")
    gap = (args.gap_s if args.gap_s is not None
           else (own_plan.get("cell_process") or {}).get("job_gap_s", 0.0))
    records = budget.first_look(load(files))
    out = {"available_s": float(available), "job_gap_s": float(gap),
           "plans": plans(records, float(available), float(gap), args.q, args.margin,
                          args.alpha_equivalence),
           "releases_at_sizes": at_sizes(records, args.n, args.q, args.margin,
                                         args.alpha_equivalence)}
    for name, plan in out["plans"].items():
        print(f"plan with {'open rows alone' if name == 'rows' else 'open releases as items'}: "
              f"{plan['rows_extended']} rows extended, {plan['seconds']:.0f} s of "
              f"{available:.0f} s; not reached {plan['not_reached']}")
        for fam, f in plan["families"].items():
            print(f"  {fam}: {f['items']} items, expected decided {f['expected']:.1f}")
    for mode, row in out["releases_at_sizes"].items():
        sizes = ", ".join(f"n {n}: {row[f'expected_decided_at_{n}']:.1f}" for n in args.n)
        print(f"releases, {mode}: {row['releases']}; decided at the first look "
              f"{row['decided_first_look']}; expected decided if every open release's rows had "
              f"n replicates: {sizes}")
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
