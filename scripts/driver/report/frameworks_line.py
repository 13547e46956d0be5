"""The answer's frameworks line, of one machine (driver/report/bottom_line.py calls it per
machine): from the duets_frameworks table where the study timed other frameworks in duets
(config duets.frameworks: paired rows decide), else each framework's best cell against
TensorFlow's best (frameworks_best, the cells)."""
import math

import pandas as pd

from driver.report.answer import norm_verdict
from driver.report.fmt import machines_of, num, records, text
from driver.stats.verdicts import verdict_word


def frameworks_line(best: pd.DataFrame, duets: pd.DataFrame | None = None) -> dict | None:
    """Each other framework's fastest training step against TensorFlow's fastest, of one
    machine (bottom_line calls it per machine): each row's interval is adjusted for its own
    candidates, which differ between frameworks (torch has fewer configurations). Where the
    study timed other frameworks in duets (`duets`: the duets_frameworks table, config
    duets.frameworks), the line is theirs: paired rows decide, the cells' picks do not."""
    if duets is not None and not duets.empty:
        return frameworks_duets_line(duets)
    if best.empty:
        return None
    if len(machines_of(best)) > 1:
        raise ValueError("frameworks_line reads one machine's rows; bottom_line splits them")
    rows = [r for r in records(best) if text(r.get("task"), "train") == "train"]
    if not rows:
        return None
    bits = []
    for r in rows:
        ratio = num(r.get("ratio"))
        said = verdict_word(norm_verdict(r.get("verdict")))
        level, cands = num(r.get("ci_level")), num(r.get("candidates"))
        basis = (f", {level * 100:.2f} % interval adjusted for its {int(cands)} candidates"
                 if math.isfinite(level) and math.isfinite(cands) else "")
        bits.append(f"{text(r.get('left_family'), text(r.get('left_framework')))} "
                    f"{num(r.get('left_median_s')) * 1e3:,.1f} ms, {ratio:.2f}x ({said}{basis})")
    tfs = list(dict.fromkeys(
        f"TensorFlow's best {num(r.get('right_median_s')) * 1e3:,.1f} ms "
        f"(TF {text(r.get('right_framework_version'))} {text(r.get('right_mode'))} "
        f"{text(r.get('right_api'))}, {text(r.get('right_keras'))})" for r in rows))
    # C9: these intervals are adjusted for every candidate; the guidance compares each
    # configuration with the fastest alone, so a pair can be undecided here and told apart there
    adjusted = any(math.isfinite(num(r.get("candidates"))) for r in rows)
    basis = (" (the guidance's lists test each configuration against the fastest alone, so "
             "they can tell apart what is undecided here)" if adjusted else "")
    return {"what": "Best against best (training)",
            "text": "; ".join(bits) + f" against {' / '.join(tfs)}{basis}.",
            "cls": "mixed"}


def frameworks_duets_line(duets: pd.DataFrame) -> dict:
    """The frameworks line from the duets_frameworks rows of one machine: each way, its ratio
    to TensorFlow's way, the verdict and its interval, and how many duets."""
    if len(machines_of(duets)) > 1:
        raise ValueError("frameworks_line reads one machine's rows; bottom_line splits them")
    bits = []
    for r in records(duets):
        ratio, level = num(r.get("ratio")), num(r.get("ci_level"))
        said = verdict_word(norm_verdict(r.get("verdict")))
        interval = (f", {level * 100:.1f} % interval {num(r.get('ratio_ci_low')):.2f}-"
                    f"{num(r.get('ratio_ci_high')):.2f}" if math.isfinite(level) else "")
        bits.append(f"{text(r.get('left_env'))} ({text(r.get('mode'))} "
                    f"{text(r.get('api'))}) {num(r.get('left_median_s')) * 1e3:,.1f} ms, "
                    f"{ratio:.2f}x ({said}{interval}; {int(num(r.get('n')))} duets)")
    tfs = list(dict.fromkeys(
        f"TensorFlow's {text(r.get('right_env'))} way {num(r.get('right_median_s')) * 1e3:,.1f} ms"
        f" ({text(r.get('right_cell_id'))})" for r in records(duets)))
    return {"what": "Other frameworks against TensorFlow (training, in duets)",
            "text": "; ".join(bits) + f" against {' / '.join(tfs)}.", "cls": "mixed"}
