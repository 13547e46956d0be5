"""`make settle-check R="<results dir> [...]"`: would more untimed calls at the start of each
duet window change the duets' ratios? (driver/stats/settle.py; config `duets.settle_calls`)

For each results folder, and for all of them pooled: per mode and over all duets, the mean shift
of a duet's log ratio when each window's first `--extra` timed calls are left out, with its
intervals and the verdict at `--margin`. No timing. Prints a JSON line last.
"""
import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from driver.stats import settle  # noqa: E402
from driver.study.replicate_cost import load  # noqa: E402


def line(name: str, mode: str, res: dict, extra: int) -> str:
    if math.isnan(res["mean"]):
        return f"{name} {mode}: {res['n']} duets: {res['verdict']}"
    lo, hi = res["ci_tost"]
    return (f"{name} {mode}: {res['n']} duets, log ratio shift without each window's first "
            f"{extra} timed calls {res['mean']:+.4f} ({100 * (1 - 2 * res['alpha']):.0f} % CI "
            f"{lo:+.4f} to {hi:+.4f}), sd {res['sd']:.4f}: {res['verdict']} at "
            f"+-{res['margin']:.3f}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="+", help="results folders (each with duets/)")
    parser.add_argument("--extra", type=int, default=2,
                        help="timed calls left out at the start of every window (default 2)")
    parser.add_argument("--margin", type=float, default=0.01,
                        help="the largest shift of a log ratio that does not matter (0.01)")
    parser.add_argument("--alpha", type=float, default=0.05)
    args = parser.parse_args(argv)
    if args.extra < 1:
        parser.error("--extra must be 1 or more (timed calls left out a window), not %d"
                     % args.extra)
    if not args.margin > 0:
        parser.error("--margin must be above 0, not %g" % args.margin)
    if not 0 < args.alpha < 0.5:
        parser.error("--alpha must lie between 0 and 0.5, not %g" % args.alpha)
    out, pooled = {}, []
    for folder in map(Path, args.results):
        if not (folder / "duets").is_dir():
            print(f"{folder}: not a results folder (no duets/)", file=sys.stderr)
            return 2
        records = load(folder)
        pooled.extend(records)
        out[str(folder)] = settle.check(records, args.extra, args.margin, args.alpha)
    if len(args.results) > 1:
        out["pooled"] = settle.check(pooled, args.extra, args.margin, args.alpha)
    for name, res in out.items():
        print(f"{name}: settle calls {res['settle']}")
        for mode in [k for k in res if k not in ("extra", "settle")]:
            print(line(name, mode, res[mode], args.extra))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
