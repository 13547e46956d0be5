"""What a paired replicate cost in a run, from its duet files (results/duets/<machine>/...): the
figures `make decisions` prints beside the verdicts (docs/design.md "One budget").

Per machine and kind (duet: two workers; pair: one worker, both cells):
- cost: a replicate's wall time (supervise_duet.py's `wall_s`: its workers' start, build,
  warm-up, timed windows and close) over its timed seconds (2 x windows x window_s, both sides);
  `with_gap` adds the orchestrator's gap after it (the next timing job's start, when it came
  within budget.MAX_GAP_S), so that it is what the run paid per replicate;
- forked: how many replicates had both workers forked from fork helpers (duets.workers);
- flagged: replicates the meters flagged for other processes' CPU, and the processes named
  beside the flagged ones (`foreign_processes`, the command of each), counted.
"""
import datetime
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from statistics import median

from driver.study.budget import MAX_GAP_S


def load(root: Path | str) -> list[dict]:
    """Every duet file under `root` (a results folder's duets/ or the folder holding it)."""
    root = Path(root)
    folder = root / "duets" if (root / "duets").is_dir() else root
    out = []
    for path in sorted(folder.rglob("*.json")):
        try:
            rec = json.loads(path.read_text())
        except ValueError:
            continue
        if isinstance(rec, dict) and "wall_s" in rec and "windows" in rec:
            out.append(rec)
    return out


def _quartiles(values: list[float]) -> dict:
    values = sorted(values)
    if not values:
        return {"n": 0}
    q = lambda f: values[min(len(values) - 1, int(f * (len(values) - 1) + 0.5))]  # noqa: E731
    return {"n": len(values), "median": median(values), "q1": q(0.25), "q3": q(0.75)}


def figures(records: Iterable[Mapping], cells: Iterable[Mapping] = ()) -> dict:
    """{machine: {kind: {"cost", "with_gap", "forked", "flagged", "flagged_by"}}}."""
    recs = [r for r in records if r.get("status") == "ok"]
    starts = sorted([(datetime.datetime.fromisoformat(r["started_utc"]), id(r))
                     for r in recs if r.get("started_utc")]
                    + [(datetime.datetime.fromisoformat(c["started_utc"]), id(c))
                       for c in cells if c.get("started_utc")])
    following = {a[1]: b[0] for a, b in zip(starts, starts[1:])}
    out: dict = {}
    for r in recs:
        kind = r.get("kind") or "duet"
        m = out.setdefault(r["machine"], {}).setdefault(
            kind, {"cost": [], "with_gap": [], "forked": 0, "n": 0, "flagged": 0,
                   "flagged_by": Counter()})
        timed = 2.0 * float(r["windows"]) * float(r["window_s"])
        m["n"] += 1
        m["cost"].append(float(r["wall_s"]) / timed)
        start = datetime.datetime.fromisoformat(r["started_utc"])
        nxt = following.get(id(r))
        if nxt is not None:
            gap = (nxt - start).total_seconds() - float(r["wall_s"])
            if 0 <= gap < MAX_GAP_S:
                m["with_gap"].append((float(r["wall_s"]) + gap) / timed)
        workers = r.get("workers") or {}
        m["forked"] += all((workers.get(s) or {}).get("forked") for s in ("left", "right")) \
            if workers else 0
        if r.get("foreign_cpu_flag"):
            m["flagged"] += 1
            for proc in r.get("foreign_processes") or []:
                m["flagged_by"][str(proc.get("command"))] += 1
    for kinds in out.values():
        for m in kinds.values():
            m["cost"], m["with_gap"] = _quartiles(m["cost"]), _quartiles(m["with_gap"])
            m["flagged_by"] = dict(m["flagged_by"].most_common(5))
    return out


def text(figs: Mapping) -> list[str]:
    lines = []
    for machine, kinds in sorted(figs.items()):
        for kind, m in sorted(kinds.items()):
            c, g = m["cost"], m["with_gap"]
            if not c.get("n"):
                continue
            gap = (f"; with the orchestrator's gap {g['median']:.2f}" if g.get("n") else "")
            lines.append(f"{machine}: a {kind} replicate cost {c['median']:.2f}x its timed "
                         f"seconds (median of {c['n']}, quartiles {c['q1']:.2f}-{c['q3']:.2f})"
                         f"{gap}; both workers forked in {m['forked']} of {m['n']}; flagged "
                         f"for other processes' CPU {m['flagged']}"
                         + (f" (beside them: {m['flagged_by']})" if m["flagged"] else ""))
    return lines
