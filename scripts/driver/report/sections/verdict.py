"""The answer, first on the page: one sentence per question a TF user asks (driver/report/
questions.py) under a one-line machine and run line, with what the answer did not measure beside
it, the headline's forest plots (the duets', or the cells' where a study has no duets), then the
rest of the bottom line, the machine and run in full, and every API's forest plot from the cells,
folded. Machines are named in plain words ("2-core AMD EPYC"); their keys stay in the tables and
the folded details. The page's header names each machine with its run's commit and duration."""
from pathlib import Path

import pandas as pd
import tomllib
from markupsafe import Markup, escape

from driver.report import answer, forest
from driver.report.bottom_line import bottom_line, duet_rows, duets_count_text, more_lines
from driver.report.fmt import col, is_true, num, records, text, version_key
from driver.report.forest import forest_svg
from driver.report.questions import questions
from driver.report.sections.duets import MODE_TITLE, panel
from driver.report.statements import MODES, WORKLOAD, machine_names
from driver.study import fingerprint, layout

REPO = Path(__file__).resolve().parents[4]

ID, TITLE, ORDER = "verdict", "Answer", 10


def describe_machine(facts: dict) -> str:
    """The machine in full: its one line, then its fingerprint and probe (docs/machines.md)."""
    if not facts:
        return "unknown machine (no cell file carried its provenance)"
    return "; ".join([short_machine(facts), *fingerprint.describe(facts)])


def short_machine(facts: dict) -> str:
    """The machine in one line: CPU, cores, GPU, memory (the rest is folded below)."""
    if not facts:
        return "unknown machine"
    parts = [text(facts.get("cpu_model"), "unknown CPU")]
    if facts.get("cpu_count"):
        parts.append(f"{facts['cpu_count']} cores")
    gpus = facts.get("gpus")
    parts.append(("GPU: " + ", ".join(text(g.get("name")) if isinstance(g, dict) else text(g)
                                      for g in gpus)) if gpus else "no GPU")
    if facts.get("mem_total_gb"):
        parts.append(f"{facts['mem_total_gb']} GB RAM")
    return ", ".join(parts)


def tfspeed_version(root: Path = REPO) -> str:
    """This code's version, pyproject.toml's `version` ("" when it cannot be read)."""
    try:
        with open(root / "pyproject.toml", "rb") as f:
            return str(tomllib.load(f).get("project", {}).get("version", ""))
    except (OSError, tomllib.TOMLDecodeError):
        return ""


def run_line(run: dict) -> str:
    """When and with which code the study was measured, from facts.json's `run` (or one
    machine's)."""
    bits = []
    if run.get("wall_s"):
        minutes = round(float(run["wall_s"]) / 60)
        bits.append(f"over {minutes // 60} h {minutes % 60} min" if minutes >= 60
                    else f"over {minutes} min")
    if run.get("commit"):
        bits.append(f"at commit {text(run['commit'])[:7]}"
                    + (" (with local changes)" if run.get("dirty") else ""))
    return " ".join(bits)


def machine_runs(data, names: dict) -> list[dict]:
    """[{"key", "name", "line"}]: each machine in plain words with its run's commit and
    duration, from facts.json's per-machine `runs` ({key: run}) where it has them; a study of
    one machine reads its `run`. The pooled `run` of several machines is never shown for one of
    them (its commit is one machine's, its span from the first start to the last end over all)."""
    per = data.study.get("runs") or {}
    if len(names) <= 1 and not per:
        return [{"key": k, "name": n, "line": run_line(data.study.get("run") or {})}
                for k, n in names.items()]
    return [{"key": k, "name": n, "line": run_line(per.get(k) or {})} for k, n in names.items()]


def display_questions(found: dict) -> dict:
    """The questions as the page shows them: each line's `machine` the machine's plain name (the
    first screen names it), and what the answer did not measure as a last item, its rows
    linked."""
    items = [{**q, "lines": [{**ln, "machine": ln["name"]} for ln in q["lines"]]}
             for q in found["items"]]
    note = found.get("fit")
    if note:
        lines = [{"who": ln["name"] if len(note["lines"]) > 1 else "", "machine": ln["name"],
                  "name": ln["name"], "text": ln["text"], "tally": ln["text"], "cls": ln["cls"]}
                 for ln in note["lines"]]
        link = Markup(' (<a href="#%s">the rows</a>)') % note["anchor"]
        lines[-1] = {**lines[-1], "text": escape(lines[-1]["text"]) + link,
                     "tally": escape(lines[-1]["tally"]) + link}
        items.append({"id": note["id"], "label": md_code(note["label"]), "lines": lines,
                      "claims": []})
    return {**found, "items": items,
            "machines": [found["names"].get(m, m) for m in found["machines"]]}


def md_code(s: str) -> Markup:
    """Markdown's `code` as HTML <code>, the rest escaped."""
    parts = str(escape(s)).split("`")
    return Markup("".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts)))


def duet_panels(data, reference: str) -> list[dict]:
    """The headline's forest panels from the duets, per mode, with their captions."""
    duets = data.table("duets")
    if duets.empty:
        return []
    out = []
    for mode in ("graph", "eager"):
        rows = records(duet_rows(duets, mode)) + records(duet_rows(duets, mode, legacy=True))
        if not rows:
            continue
        p = panel(rows, MODE_TITLE.get(mode, mode))
        count = duets_count_text(pd.concat([duet_rows(duets, mode),
                                            duet_rows(duets, mode, legacy=True)]))
        out.append({"title": p["title"], "svg": forest_svg(p, data.min_effect, reference),
                    "caption": f"{p['title']}: each TF 2.x version's step time over "
                               f"{reference}'s, from {count} (in turns, beside each other); "
                               "the tested interval drawn."})
    return out


def versions_covered(cells: pd.DataFrame) -> list[str]:
    """'tensorflow 1.14.0, 2.21.0' per framework, from every cell (ok or not)."""
    pairs = set()
    for row in records(cells):
        fw, ver = text(row.get("framework")), text(row.get("framework_version"))
        if ver:
            pairs.add((fw or "tensorflow", ver))
    out = []
    for fw in sorted({p[0] for p in pairs}):
        vers = sorted((v for f, v in pairs if f == fw), key=version_key)
        out.append(f"{fw} " + ", ".join(vers))
    return out


def build(data) -> dict:
    ans = answer.cells_answer(data.tabs, data.min_effect)
    for p in ans["panels"]:
        p["svg"] = forest_svg(p, data.min_effect, ans["reference"])
        p["caption"] = (f"{p['title']}: each TF 2.x version's step time over "
                        f"{ans['reference']}'s, from the cells' rounds.")
    # a twin key (<machine>.twin) is the A/A check's copy of its machine, not a machine
    machines = sorted(m for m in set(data.machine_facts)
                      | {text(m) for m in col(data.cells, "machine").dropna()}
                      | {text(data.machine)} - {""} if not layout.is_twin(m))
    twins = data.table("twins")
    ok = data.ok
    bottom = bottom_line(data.tabs, data.cells, data.reference_env, previous=data.previous,
                         facts=data.machine_facts)
    reference = bottom["reference"]
    run = data.study.get("run") or {}
    headline = duet_panels(data, reference)
    found = questions({**data.tabs, "cells": data.cells}, data.min_effect, reference,
                      data.machine_facts)
    names = machine_names(data.cells, data.machine_facts, machines)
    several = len(machines) > 1
    return {
        "answer": {**ans, "min_effect": data.min_effect},
        "questions": display_questions(found),
        "intro": md_code(found["intro"]),  # how to read the answer (its four words, the ratio)
        "names": [names[m] for m in machines],
        "runs": machine_runs(data, names),
        "modes": [{"name": k, "text": md_code(v)} for k, v in MODES.items()],
        "workload": md_code(WORKLOAD.format(reference=reference.removeprefix("TF "))),
        "headline": headline,
        "legend": forest.legend_items("" if headline else "tf_keras standing in for tf.keras"),
        "more": more_lines(bottom),
        "reference": reference,
        # with several machines the run line names each in plain words, the key in its details
        "machines": [{"key": names[m] if several else m, "name": names[m],
                      "short": short_machine(data.machine_facts.get(m, {})),
                      "text": (f"key {m}; " if several else "")
                      + describe_machine(data.machine_facts.get(m, {}))}
                     for m in machines],
        "dates": data.study.get("dates") or "unknown",
        # the pooled run of several machines names one machine's commit and the gap from the
        # first start to the last end: each machine's own run instead (machine_runs)
        "run": run_line(run) if not several else "; ".join(
            f"{r['name']} {r['line']}" for r in machine_runs(data, names) if r["line"]),
        "version": tfspeed_version(),
        "versions": versions_covered(data.cells),
        "envs": data.order,
        "counts": {s: int((data.status == s).sum()) for s in ("ok", "failed", "skipped")},
        "n_cells": len(data.cells),
        "n_drift": int(col(ok, "drift", False).map(is_true).sum()),
        "n_noisy": int(col(ok, "noisy", False).map(is_true).sum()),
        "n_busy": int(col(ok, "foreign_cpu_flag", False).map(is_true).sum()),
        "twins": len(twins),
        "twins_different": int(col(twins, "significant", False).map(is_true).sum()),
        "foreign_max": num(data.config.get("foreign_cpu_max_share")),
    }
