"""Failed and skipped cells: reasons and log tails as aggregation wrote them, and cells.csv rows
that no process explains."""
from driver.report.fmt import records, text

ID, TITLE, ORDER = "failures", "Failed and skipped cells", 80


def failures_view(cells, failures: list[dict]) -> dict:
    items = list(failures)
    seen = {(f["machine"], f["env"], f["cell"]) for f in items}
    for r in records(cells):
        status = text(r.get("status"), "unknown")
        key = (text(r.get("machine")), text(r.get("env")), text(r.get("cell_id")))
        if status == "ok" or key in seen:
            continue
        items.append({"status": status, "machine": key[0], "env": key[1], "cell": key[2],
                      "repeat": "", "reason": text(r.get("reason")), "log_tail": "", "path": ""})
    counts = {}
    for it in items:
        counts[it["status"]] = counts.get(it["status"], 0) + 1
    return {"entries": items, "counts": counts, "problems": []}


def build(data) -> dict:
    return failures_view(data.cells, data.study.get("failures") or [])
