"""The headline in duets, after the answer: how duets are made and read, and per mode each TF 2.x
version's row of the duets table (driver/tables/duets.py): its ratio, its tested interval (each
row's false-coverage-rate interval: a row called faster or slower leaves 1 out; an equivalent
row may too, since equivalence is decided first), its equivalence interval, the bound that holds
for every version at once and the duets behind it; then the duets' own checks
(driver/report/duet_checks.py: the A/A rows and the health check of rounds), where the run's
tables have them; and graph vs eager in every version, derived from these rows and the
reference's own graph-vs-eager row (driver/tables/duets_graph_vs_eager.py), or a sentence saying
why there is none. The forest plots of these rows are the answer's (sections/verdict.py). A
study without duets (config `duets.modes: []`) shows none."""
import math

import pandas as pd

from driver.report.bottom_line import duet_rows, duets_count_text
from driver.report.duet_checks import duet_checks
from driver.report.fmt import cell, col, ncol, num, records, text
from driver.report.forest import SUBJECT
from driver.stats.verdicts import INCONCLUSIVE, WORDS, verdict_word, words

ID, TITLE, ORDER = "duets", "In duets", 11

MODE_TITLE = {"graph": "TF 1-style graph, train_on_batch()", "eager": "Eager, train_on_batch()"}


def _pct(x: float) -> str:
    return "" if not math.isfinite(x) else f"{x:.2f}x"


def machine_tags(keys) -> dict:
    """A short name per machine key that still tells them apart, for a plot's row labels: the
    vendor ('amd', 'intel') where that is unique, else the fingerprint's hash, else the key."""
    keys = sorted({text(k) for k in keys if text(k)})
    for pick in (lambda k: k.split("-")[0], lambda k: k.split("-")[-1]):
        tags = {k: pick(k) for k in keys}
        if len(set(tags.values())) == len(keys):
            return tags
    return {k: k for k in keys}


def panel(rows, title: str) -> dict:
    """A forest panel of duet rows; with several machines each row's label ends with its
    machine's tag (machine_tags)."""
    rows = list(rows)
    tags = machine_tags(r.get("machine") for r in rows)
    several = len(tags) > 1
    return {"title": title, "rows": [
        {"label": f"{text(r.get('left_framework_version'))} {text(r.get('keras'))}"
                  + (f" · {tags[text(r.get('machine'))]}" if several else ""),
         "ratio": num(r.get("ratio")), "lo": num(r.get("ratio_ci_low")),
         "hi": num(r.get("ratio_ci_high")), "eq_lo": num(r.get("tost_ci_low")),
        "eq_hi": num(r.get("tost_ci_high")), "verdict": text(r.get("verdict"), INCONCLUSIVE),
         "head": True, "standin": False} for r in rows]}


COLUMNS = (("TF version", False), ("Keras", False), ("TF 2 / TF 1", True),
           ("tested interval", True), ("equivalence interval", True),
           ("at most (all versions)", True), ("verdict", False), ("duets", True))


def ratio_cells(r) -> list:
    """A duet or pair row's ratio, tested interval and equivalence interval cells (the pairs
    section lays them out the same way)."""
    return [cell(_pct(num(r.get("ratio"))), v=num(r.get("ratio"))),
            cell(f"{_pct(num(r.get('ratio_ci_low')))}–{_pct(num(r.get('ratio_ci_high')))}"),
            cell(f"{_pct(num(r.get('tost_ci_low')))}–{_pct(num(r.get('tost_ci_high')))}")]


def count_cell(r) -> dict:
    """A row's replicates, with how many failed and how many ran beside a busy CPU."""
    failed = int(num(r.get("n_failed"))) if math.isfinite(num(r.get("n_failed"))) else 0
    flagged = int(num(r.get("n_flagged"))) if math.isfinite(num(r.get("n_flagged"))) else 0
    notes = [f"{failed} failed"] * bool(failed) + [f"{flagged} beside a busy CPU"] * bool(flagged)
    n = num(r.get("n"))
    return cell((f"{int(n)}" if math.isfinite(n) else "")
                + (f" ({', '.join(notes)})" if notes else ""))


def table_rows(rows, table_id: str) -> dict:
    """The macro table's shape: {"id", "columns": [{"label", "num"}], "rows": [[cell]]}; with
    rows of several machines a machine column first, each machine's rows together (a version
    appears once per machine)."""
    rows = list(rows)
    machines = sorted({text(r.get("machine")) for r in rows} - {""})
    several = len(machines) > 1
    if several:
        rows = sorted(rows, key=lambda r: machines.index(text(r.get("machine")))
                      if text(r.get("machine")) in machines else len(machines))
    out = []
    for r in rows:
        verdict = text(r.get("verdict"))
        out.append([cell(text(r.get("machine")))] * several + [
            cell(text(r.get("left_framework_version"))), cell(text(r.get("keras"))),
            *ratio_cells(r),
            cell(_pct(num(r.get("simultaneous_high"))), v=num(r.get("simultaneous_high"))),
            cell(verdict_word(verdict, SUBJECT), cls=words(verdict).cls) if verdict in WORDS
            else cell(verdict),
            count_cell(r),
        ])
    columns = [("machine", False)] * several + list(COLUMNS)
    return {"id": table_id, "columns": [{"label": c, "num": n} for c, n in columns],
            "rows": out}


GVE_COLUMNS = (("TF version", False), ("Keras", False), ("from", False), ("graph / eager", True),
               ("tested interval", True), ("equivalence interval", True), ("verdict", False),
               ("duets", True))
SOURCE_WORDS = {"duet": "its own duets (graph against eager)",
                "derived": "its two duets rows and the reference's"}


def graph_vs_eager_view(df: pd.DataFrame) -> dict | None:
    """The duets_graph_vs_eager rows as the macro table lays them out (a machine column first with
    rows of several machines), and the counts of their verdicts in words; None without rows."""
    rows = records(df)
    if not rows:
        return None
    machines = sorted({text(r.get("machine")) for r in rows} - {""})
    several = len(machines) > 1
    out, counts = [], {}
    for r in rows:
        verdict = text(r.get("verdict"))
        counts[words(verdict).word] = counts.get(words(verdict).word, 0) + 1
        n = [num(r.get(f"{k}_n")) for k in ("graph", "eager", "reference")]
        shown = " + ".join(f"{int(x)}" for x in n if math.isfinite(x))
        out.append([cell(text(r.get("machine")))] * several + [
            cell(text(r.get("framework_version"))), cell(text(r.get("keras"))),
            cell(SOURCE_WORDS.get(text(r.get("source")), text(r.get("source")))),
            *ratio_cells(r),
            cell(verdict_word(verdict, "graph"), cls=words(verdict).cls) if verdict in WORDS
            else cell(verdict),
            cell(shown, title="graph row + eager row + the reference's row" if "+" in shown
                 else None)])
    columns = [("machine", False)] * several + list(GVE_COLUMNS)
    said = [f"{w} in {counts[w]}" for w in ("faster", "slower", "equivalent", "undecided")
            if counts.get(w)]
    if said and said[0].split()[0] in ("faster", "slower"):
        said[0] = "graph " + said[0]
    levels = ncol(df, "ci_level").dropna()
    return {"table": {"id": "duets-graph-vs-eager",
                      "columns": [{"label": c, "num": k} for c, k in columns], "rows": out},
            "n": len(out), "summary": ", ".join(said),
            "ci_level": float(levels.iloc[0]) if len(levels) else math.nan,
            "reference": ", ".join(sorted({f"TF {text(r.get('framework_version'))}" for r in rows
                                           if text(r.get("source")) == "duet"}))}


def build(data) -> dict:
    duets = data.table("duets")
    if duets.empty:
        return {"modes": [], "reference": "TF 1"}
    reference = ", ".join(sorted({f"TF {text(v)}" for v in
                                  col(duets, "right_framework_version").dropna()})) or "TF 1"
    modes = []
    for mode in ("graph", "eager"):
        rows = records(duet_rows(duets, mode)) + records(duet_rows(duets, mode, legacy=True))
        if not rows:
            continue
        modes.append({"mode": mode, "title": MODE_TITLE.get(mode, mode),
                      "rows": table_rows(rows, f"duets-{mode}")})
    levels = ncol(duets, "ci_level").dropna()
    flagged = ncol(duets, "n_flagged")
    gve = graph_vs_eager_view(data.table("duets_graph_vs_eager"))
    return {"modes": modes, "reference": reference, "checks": duet_checks(data.tabs),
            "graph_vs_eager": gve,
            # both modes in duets, yet no row: the reference's graph-vs-eager row is missing
            "graph_vs_eager_missing": gve is None and len(modes) == 2,
            "metered": bool(flagged.notna().any()), "flagged": int(flagged.fillna(0).sum()),
            "duets_ok": int(ncol(duets, "n").fillna(0).sum()),
            "ci_level": float(levels.iloc[0]) if len(levels) else math.nan,
            "replicates": int(ncol(duets, "n").max()), "min_effect": data.min_effect,
            "count": duets_count_text(pd.concat([duet_rows(duets, m, legacy=lg)
                                                 for m in ("graph", "eager")
                                                 for lg in (False, True)]))}
