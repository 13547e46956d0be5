"""The answer for a user's own model (config `models`, docs/own-model.md), in one sentence per
model and task: the fastest way to train it (and to predict with it) on this machine, the ways as
fast within the margin, the ways to avoid, each with its ratio to the fastest and its interval, and
what the run did not decide.

Built from the `frameworks` table (driver/tables/comparisons.py: frameworks_table): per model,
data, device and task, the fastest cell of each env and mode against the fastest TensorFlow cell,
each row simultaneous over the cells it could have picked. An OPTIONAL section: a study without a
user's model has no data for it, and the page leaves it out.
"""
import math

import pandas as pd

from driver.stats.verdicts import EQUIVALENT, INCONCLUSIVE, LEFT_FASTER, RIGHT_FASTER
from tfspeed.cells import task as task_of

ID, TITLE, ORDER = "own_answer", "Your model", 10.5  # right after the answer (verdict, 10)
OPTIONAL = True

TASKS = {"train": "train", "infer": "predict with"}


def way(row: dict, side: str) -> str:
    """'tf_keras, graph, train_on_batch, numpy in tf2.21': one way of running the model."""
    parts = [row.get(f"{side}_{k}") for k in ("keras", "mode", "api", "input")]
    return "%s in %s" % (", ".join(str(p) for p in parts if isinstance(p, str) and p != "none"),
                         row.get(f"{side}_env"))


def _ratio(row: dict) -> str:
    low, high = row.get("ratio_ci_low"), row.get("ratio_ci_high")
    interval = ("%.2f–%.2f" % (low, high)
                if isinstance(low, float) and not math.isnan(low) and not math.isnan(high)
                else "no interval")
    return "%.2fx [%s]" % (row["ratio"], interval)


def lead(rows: pd.DataFrame, model: str, task: str, margin_pct: float) -> str | None:
    """One sentence for `model` and `task` ("train", "infer") from its frameworks rows (left: the
    fastest cell of an env and mode; right: the fastest TensorFlow cell); None without rows."""
    if rows is None or rows.empty:
        return None
    mine = rows[(rows["model"] == model)
                & (rows["left_api"].map(task_of) == task)].to_dict("records")
    if not mine:
        return None
    mine.sort(key=lambda r: r["ratio"])
    by = {v: [r for r in mine if r["verdict"] == v]
          for v in (LEFT_FASTER, EQUIVALENT, RIGHT_FASTER, INCONCLUSIVE)}
    fastest = way(mine[0], "right")
    text = "The fastest way to %s %s here is %s" % (TASKS[task], model, fastest)
    if by[LEFT_FASTER]:  # a way outside TensorFlow beat TensorFlow's fastest
        text += ", bettered by %s" % "; ".join(
            "%s (%s)" % (way(r, "left"), _ratio(r)) for r in by[LEFT_FASTER])
    text += "."
    if by[EQUIVALENT]:
        text += " As fast within ±%g %%: %s." % (margin_pct, "; ".join(
            "%s (%s)" % (way(r, "left"), _ratio(r)) for r in by[EQUIVALENT]))
    if by[RIGHT_FASTER]:
        text += " Avoid: %s." % "; ".join(
            "%s (%s)" % (way(r, "left"), _ratio(r)) for r in reversed(by[RIGHT_FASTER]))
    if by[INCONCLUSIVE]:
        text += " Not decided by this run: %s." % "; ".join(
            "%s (%s)" % (way(r, "left"), _ratio(r)) for r in by[INCONCLUSIVE])
    return text


def build(data) -> dict:
    """{"leads": [{"model", "task", "text"}]} for each of the config's own models; {} for a study
    of the seed's models alone."""
    own = list((data.config or {}).get("models") or {})
    if not own:
        return {}
    rows = data.table("frameworks")
    margin = 100 * float((data.config or {}).get("min_effect") or 0.1)
    leads = [{"model": m, "task": t, "text": lead(rows, m, t, margin)}
             for m in own for t in TASKS]
    return {"leads": [x for x in leads if x["text"]]}
