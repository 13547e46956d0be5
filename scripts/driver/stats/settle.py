"""Would more untimed calls at the start of a duet's windows change its ratios? (`make settle-check`)

A duet's sides take turns window by window (driver/study/duet.py); each window starts with
`settle` untimed calls (config `duets.settle_calls`; a design without the key: 3), because the
other side ran last and its caches and threads are this side's to win back. The calls that follow
are timed, and if the settle was too short they come out slower on one side than on the other.
A run's own windows tell how much that matters: per duet, the log ratio as the study computes it
(supervise_duet.py `summarize`: the median of each side's pooled samples) with the first `extra`
timed calls of every window left out, minus the log ratio from all of them. Over the run's duets
(each an independent pair of fresh workers), the mean of that shift with its t intervals; the
verdict at a margin `margin` (a shift of the log ratio):

- `settled`: the (1 - 2 alpha) interval of the mean lies inside +-margin (TOST): leaving out
  `extra` more calls a window would not move the ratios by the margin;
- `not settled`: the (1 - alpha) interval excludes 0 and the mean lies beyond the margin;
- `undecided`: neither (too few duets, or too much spread).

Per mode (graph, eager) and over all. Pairs in one process are left out (their calls interleave
in blocks, `pairs.mix_block`, each after one untimed call). The test plants first calls slower on
one side and sees `not settled` (tests/unit/stats/test_settle.py).
"""
import math
from collections.abc import Iterable, Mapping
from statistics import median

SETTLED, NOT_SETTLED, UNDECIDED = "settled", "not settled", "undecided"
OLD_SETTLE = 3  # run_cell.SETTLE: what a duet design without `settle` ran with


def log_ratio(left: list, right: list, drop: int = 0) -> float | None:
    """log(median of the left side's samples / the right side's), each side's windows pooled
    after leaving out each window's first `drop` samples; None when a side is left empty. The
    duet's own figure (supervise_duet.py `summarize`, drop 0): one formula for both, and this
    module imports nothing heavy at load for that reason (NumPy and SciPy in `verdict`)."""
    lefts = [s for w in left for s in w[drop:]]
    rights = [s for w in right for s in w[drop:]]
    if not lefts or not rights:
        return None
    return math.log(median(lefts) / median(rights))


def shifts(records: Iterable[Mapping], extra: int = 2) -> list[dict]:
    """Per ok duet (not a pair) whose every window holds more than `extra` samples: its mode,
    settle and the shift of its log ratio when each window's first `extra` timed calls go."""
    out = []
    for rec in records:
        if rec.get("status") != "ok" or (rec.get("kind") or "duet") != "duet":
            continue
        left, right = rec.get("left_windows_s") or [], rec.get("right_windows_s") or []
        if not left or not right or min(len(w) for w in left + right) <= extra:
            continue
        full, trimmed = log_ratio(left, right), log_ratio(left, right, extra)
        if full is None or trimmed is None:
            continue
        out.append({"mode": (rec.get("cell") or {}).get("mode"),
                    "settle": int((rec.get("design") or {}).get("settle", OLD_SETTLE)),
                    "shift": trimmed - full})
    return out


def verdict(values: list[float], margin: float, alpha: float) -> dict:
    """The mean shift with its (1 - 2 alpha) and (1 - alpha) t intervals and the verdict."""
    n = len(values)
    res = {"n": n, "margin": margin, "alpha": alpha, "mean": math.nan, "sd": math.nan,
           "ci_tost": [math.nan, math.nan], "ci": [math.nan, math.nan], "verdict": UNDECIDED}
    if n < 3:
        return res
    import numpy as np
    from scipy import stats as sps

    arr = np.asarray(values, dtype=float)
    mean, sd = float(arr.mean()), float(arr.std(ddof=1))
    se = sd / math.sqrt(n)
    t1, t2 = sps.t.ppf(1 - alpha, n - 1), sps.t.ppf(1 - alpha / 2, n - 1)
    res.update(mean=mean, sd=sd, ci_tost=[mean - t1 * se, mean + t1 * se],
               ci=[mean - t2 * se, mean + t2 * se])
    if -margin < res["ci_tost"][0] and res["ci_tost"][1] < margin:
        res["verdict"] = SETTLED
    elif (res["ci"][0] > 0 or res["ci"][1] < 0) and abs(mean) >= margin:
        res["verdict"] = NOT_SETTLED
    return res


def check(records: Iterable[Mapping], extra: int = 2, margin: float = 0.01,
          alpha: float = 0.05) -> dict:
    """{"all": verdict, "graph": ..., "eager": ..., "settle": [the settles seen], "extra": n}."""
    rows = shifts(records, extra)
    out = {"extra": extra, "settle": sorted({r["settle"] for r in rows}),
           "all": verdict([r["shift"] for r in rows], margin, alpha)}
    for mode in sorted({r["mode"] for r in rows if r["mode"]}):
        out[mode] = verdict([r["shift"] for r in rows if r["mode"] == mode], margin, alpha)
    return out
