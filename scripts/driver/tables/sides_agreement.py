"""Do a paired row's sides give a cell the absolute time its own fresh processes give?

Config `duets.sides_as_cells` pools a cell's row of the cells table from a duet row's sides
(driver/study/sides.py) instead of processes of its own, and the cells table then compares such
cells with cells of their own processes (TF 2.x against TF 1.14 in `tf2_vs_tf1`, the history
plot). That is only sound if a side times its cell as a fresh cell process does. A run that holds
both for the same cells (any run with `sides_as_cells: false`, or made before it) measures it:
per cell, d = log(side estimate / own estimate), each the mean log of its processes' medians
(no block model: the check must not lean on the model it is meant to back); over the cells, the
mean of d with its t interval. The verdict, at the study's margin m (`min_effect`):

- `agree`: the (1 - 2 alpha) interval of the mean lies inside +-log(1 + m) (TOST);
- `differ`: the (1 - alpha) interval excludes 0;
- `undecided`: neither (too few cells, or too much spread).

Checked for the duets' sides (what the study takes) and, apart, for the pairs' sides (which it
does not take: one worker times both of a pair's cells in turns). A side that is a side of more
than one row of its kind is left out, as the study leaves it out. The test plants a bias of the
size the margin names in the sides and sees `differ` (tests/unit/tables/test_sides_agreement.py).
"""
import math
from collections.abc import Iterable, Mapping

import numpy as np
from scipy import stats as sps

from driver.study import sides

AGREE, DIFFER, UNDECIDED = "agree", "differ", "undecided"


def _log_means(records: Iterable[Mapping]) -> dict[tuple, float]:
    """(machine, env, cell_id) -> mean log median of its ok processes (records with samples)."""
    logs: dict[tuple, list[float]] = {}
    for rec in records:
        samples = rec.get("samples_s") or []
        if rec.get("status") == "ok" and samples:
            key = (rec["machine"], rec["env"], rec["cell_id"])
            logs.setdefault(key, []).append(math.log(float(np.median(samples))))
    return {k: float(np.mean(v)) for k, v in logs.items()}


def agreement(cell_records: Iterable[Mapping], duet_records: list[Mapping], pairs: bool = False,
              margin: float = 0.10, alpha: float = 0.05) -> dict:
    """{"sides", "cells", "mean_log", "sd_log", "ci_tost" ((1 - 2 alpha) interval), "ci_test"
    ((1 - alpha)), "ratio", "verdict", "per_cell"} for the duets' sides (pairs=False) or the
    pairs' sides (pairs=True) that have cell processes of their own in `cell_records` (cell
    files, driver/study/record.py)."""
    rows = sides.record_rows(duet_records)
    single = sides.single_sides(rows, pairs=pairs)
    side_logs = _log_means(sides.side_records(duet_records, single, pairs=pairs))
    own_logs = _log_means(cell_records)
    per_cell = {k: side_logs[k] - own_logs[k] for k in sorted(side_logs) if k in own_logs}
    d = np.array(list(per_cell.values()), dtype=float)
    out = {"sides": "pair sides" if pairs else sides.DUET, "cells": int(d.size),
           "margin": margin, "per_cell": per_cell}
    if d.size < 3:
        return dict(out, mean_log=math.nan, sd_log=math.nan, ci_tost=(math.nan, math.nan),
                    ci_test=(math.nan, math.nan), ratio=math.nan, verdict=UNDECIDED,
                    off_one=False)
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    se, df = sd / math.sqrt(d.size), d.size - 1

    def ci(level):
        t = float(sps.t.ppf(1 - (1 - level) / 2, df))
        return (mean - t * se, mean + t * se)

    ci_tost, ci_test = ci(1 - 2 * alpha), ci(1 - alpha)
    bound = math.log1p(margin)
    if -bound < ci_tost[0] and ci_tost[1] < bound:
        verdict = AGREE
    elif ci_test[0] > 0 or ci_test[1] < 0:
        verdict = DIFFER
    else:
        verdict = UNDECIDED
    # `agree` says the offset is inside the margin, not that there is none: an offset below the
    # margin that the test still sees is reported beside it
    return dict(out, mean_log=mean, sd_log=sd, ci_tost=ci_tost, ci_test=ci_test,
                ratio=math.exp(mean), verdict=verdict,
                off_one=bool(ci_test[0] > 0 or ci_test[1] < 0))
