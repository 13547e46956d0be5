"""Failed and skipped cells: reasons and log tails as aggregation wrote them, and cells.csv rows
that no process explains; and the cells of a user's model whose build does not compute the same
function as the NumPy pass (cells.csv `same_function`: mismatch or error)."""
from driver.report.fmt import records, text
from driver.study import layout
from driver.tables.labels import env_label, value_label
from tfspeed.cells import parse_cell_id

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
    groups = group_by_cell(items)
    cell_counts = {}
    for g in groups:
        cell_counts[g["status"]] = cell_counts.get(g["status"], 0) + 1
    machines = {layout.base_machine(text(it["machine"])) for it in items} | {
        layout.base_machine(text(m)) for m in (cells["machine"] if "machine" in cells else [])}
    return {"entries": items, "groups": groups, "counts": counts, "cell_counts": cell_counts,
            "several_machines": len(machines - {""}) > 1,
            "not_reached": any(it.get("not_reached") for it in items),
            "problems": [], "same_function": same_function_view(cells)}


def same_function_view(cells) -> list[dict]:
    """Cells whose same-function check did not match (mismatch, or error: the check could not
    run), with the largest difference and the tolerance; [] when every checked cell matched or
    the study has no user model (no column)."""
    out = []
    for r in records(cells):
        verdict = text(r.get("same_function"))
        if not verdict or verdict == "match":
            continue
        out.append({"machine": text(r.get("machine")), "env": text(r.get("env")),
                    "cell": text(r.get("cell_id")), "model": text(r.get("model")),
                    "words": cell_words(r.get("env"), r.get("cell_id")),
                    "verdict": verdict, "max_diff": _number(r.get("same_function_max_diff")),
                    "tolerance": _number(r.get("same_function_tolerance"))})
    return out


def _number(value) -> str:
    try:
        value = float(value)
    except (TypeError, ValueError):
        return ""
    return "" if value != value else "%.3g" % value


def cell_words(env, cell_id) -> str:
    """A cell as a reader names it: 'TF 2.0: tf.python.keras, Eager, train_on_batch(), NumPy
    input (small model, small data, CPU)'; an id that is not a cell's comes back as it is."""
    try:
        c = parse_cell_id(text(cell_id))
    except ValueError:
        return f"{env_label(env)}: {text(cell_id)}" if text(env) else text(cell_id)
    what = ", ".join(x for x in (c["keras"] if c["keras"] != "none" else "",
                                 value_label("mode", c["mode"]), value_label("api", c["api"]),
                                 f"{value_label('input', c['input'])} input") if x)
    return (f"{env_label(env)}: {what} ({c['model']} model, {c['data']} data, "
            f"{c['device'].upper()})")


def group_by_cell(items: list[dict]) -> list[dict]:
    """One entry per (status, machine, env, cell) and first line of the reason: its processes
    counted, the log of the first shown once (four copies of one traceback say nothing more)."""
    groups = {}
    for it in items:
        reason = text(it.get("reason"))
        first = reason.splitlines()[0] if reason else "no reason recorded"
        key = (it["status"], it["machine"], it["env"], it["cell"], first)
        g = groups.get(key)
        if g is None:
            g = groups[key] = {"status": it["status"], "machine": it["machine"],
                               "env": it["env"], "cell": it["cell"], "first_line": first,
                               "words": cell_words(it["env"], it["cell"]),
                               "reason": reason, "reason_lines": len(reason.splitlines()),
                               "log_tail": text(it.get("log_tail")), "path": text(it.get("path")),
                               "n": 0, "repeat_list": []}
            g["log"] = bool(g["log_tail"] or g["path"] or g["reason_lines"] > 1)
        g["n"] += 1
        if text(it.get("repeat")) != "":
            g["repeat_list"].append(text(it.get("repeat")))
    for g in groups.values():
        g["repeats"] = ", ".join(g.pop("repeat_list"))
    return list(groups.values())


def build(data) -> dict:
    return failures_view(data.cells, data.study.get("failures") or [])
