"""An independent reader of the answer: it parses the answer's sentences (README block,
docs/RESULTS.md, the report's first screen, or the Markdown lines of results_page.answer_lines)
and recomputes every count, range, median, version list and verdict word from the CSVs with plain
pandas, without the report's code. check() returns the contradictions it finds ([] when every
word is true of the rows)."""
import html
import re

import numpy as np
import pandas as pd

BULLET = re.compile(r"^- \*\*(?P<label>[^*]+)\*\*(?: \((?P<who>.*?)\))?:(?: (?P<text>.*))?$")
SUB = re.compile(r"^  - (?P<who>[^:]+): (?P<text>.*)$")
GROUP = re.compile(r"^(?P<word>.+?) in (?P<k>\d+)(?: of (?P<n>\d+))? versions? "
                   r"\((?P<lo>\d+\.\d\d)(?:–(?P<hi>\d+\.\d\d))?x(?:, median (?P<med>\d+\.\d\d)x)?"
                   r"(?:: (?P<vers>[^)]*))?\)$")
# the README block's compact form (driver/report/readme_block.py): "<k>[ of <n>] <word> (<range>)"
COMPACT = re.compile(r"^(?P<k>\d+)(?: of (?P<n>\d+))? (?P<word>.+?) "
                     r"\((?P<lo>\d+\.\d\d)(?:–(?P<hi>\d+\.\d\d))?x(?:: (?P<vers>TF [^)]*))?\)$")
QUESTION = {"Training, TF 1-style graph": "graph", "Training, eager, Keras 3": "keras3",
            "Training, eager, Keras 2": "keras2",
            "Inference, one small batch, predict() against model(x)": "inference"}
ORDER = ("graph", "keras3", "keras2", "inference")
# the inference parts' mode words, as TF users know the modes (page, RESULTS.md and README alike)
MODE_OF_WORD = {"eager": "eager", "TF 1-style graph": "graph"}


def markdown_entries(lines) -> list[dict]:
    """[{"label", "who", "text"}] from Markdown answer lines (one bullet per question, or a
    bullet with one sub-bullet per machine)."""
    out, label = [], None
    for line in lines:
        m = BULLET.match(line)
        if m:
            label = m["label"]
            if m["text"]:
                out.append({"label": label, "who": m["who"] or "", "text": m["text"]})
            continue
        m = SUB.match(line)
        if m and label:
            out.append({"label": label, "who": m["who"], "text": m["text"]})
    return out


def compact_entries(lines, machines: list[str]) -> list[dict]:
    """Entries from the README's compact block: one bullet per question, its text one part per
    machine ("key: groups", parts joined by ". "), or the groups alone with one machine."""
    out = []
    for line in lines:
        m = BULLET.match(line)
        if not m or not m["text"]:
            continue
        body = m["text"].rstrip(".")
        if len(machines) > 1:
            pat = r"(?:^|\. )(%s)(?: \(([^)]*)\))?: " % "|".join(map(re.escape, machines))
            bits = re.split(pat, body)
            if bits[0]:
                out.append({"label": m["label"], "who": "?", "text": bits[0], "compact": True})
            for key, scope, text in zip(bits[1::3], bits[2::3], bits[3::3]):
                scope = scope or m["who"] or ""
                out.append({"label": m["label"], "who": f"{key} ({scope})" if scope else key,
                            "text": text, "compact": True})
        else:
            out.append({"label": m["label"], "who": m["who"] or "", "text": body,
                        "compact": True})
    return out


def section(markdown: str, start: str, end: str) -> list[str]:
    """The lines between a line starting with `start` and the next starting with `end`."""
    lines = markdown.splitlines()
    i = next(i for i, ln in enumerate(lines) if ln.startswith(start))
    j = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(end)), len(lines))
    return lines[i + 1:j]


def html_entries(page: str) -> list[dict]:
    """The report's answer as entries: the first screen (<ul class="bottom-line">), one line per
    question, its text the claim's sentence or, with several machines, each machine's counts
    alone ("tally": True); and with several machines the full sentences below the plots
    (<details id="answer-full">)."""
    ul = re.search(r'<ul class="bottom-line"[^>]*>(.*?)</ul>\s*(?:{%|<p class="legend|<div|<h2)',
                   page, re.S)
    assert ul, "the report has no answer list"
    body = ul.group(1)
    out = []
    top = r'<li class="bl[^"]*" id="q-[^"]+">'
    for m in re.finditer(top + r"<b>(.*?)</b>(.*?)</li>\s*(?=" + top + "|$)", body, re.S):
        head, rest = html.unescape(re.sub("<[^>]+>", "", m.group(1))), m.group(2)
        head = head.rstrip(":")
        tallies = re.findall(r'<span class="tally[^"]*"><b>(.*?)</b> (.*?)</span>', rest, re.S)
        if tallies:
            out += [{"label": head, "who": html.unescape(w), "tally": True,
                     "text": html.unescape(re.sub("<[^>]+>", "", t)).strip()}
                    for w, t in tallies]
            continue
        subs = re.findall(r'<li class="bl[^"]*"><b>(.*?):</b> (.*?)</li>', rest, re.S)
        if subs:
            out += [{"label": head, "who": html.unescape(w),
                     "text": html.unescape(re.sub("<[^>]+>", "", t)).strip()} for w, t in subs]
            continue
        label, _, who = head.partition(" (")
        out.append({"label": label, "who": who.rstrip(")"),
                    "text": html.unescape(re.sub("<[^>]+>", "", rest)).strip()})
    full = re.search(r'<details[^>]* id="answer-full"[^>]*>(.*?)</details>', page, re.S)
    if full:
        for m in re.finditer(r'<li class="bl"><b>(.*?):</b><ul>(.*?)</ul></li>', full.group(1),
                             re.S):
            head = html.unescape(re.sub("<[^>]+>", "", m.group(1)))
            out += [{"label": head, "who": html.unescape(w), "full": True,
                     "text": html.unescape(re.sub("<[^>]+>", "", t)).strip()}
                    for w, t in re.findall(r'<li class="bl[^"]*"><b>(.*?):</b> (.*?)</li>',
                                           m.group(2), re.S)]
    return out


TALLY = re.compile(r"^(?P<k>\d+)(?: of (?P<n>\d+))? (?P<word>.+)$")


def tally_kind(word: str, margin: float, prefix: str = "") -> str:
    """The kind a tally's word names ('?' when it is no word the tally may use)."""
    w = word.removeprefix(prefix)
    if (w in ("faster", "slower") and word == prefix + w) or w in ("undecided", "as fast"):
        return w
    m = re.fullmatch(r"within ±(\d+) % but (slower|faster)", w)
    if m and m[1] == f"{margin * 100:.0f}":
        return f"within, {m[2]}"
    return "?"


def check_tally(text: str, rows: pd.DataFrame, margin: float, where: str,
                prefix: str = "") -> list[str]:
    """A claim in counts alone ('11 of 22 as fast, 9 undecided, 1 slower') against its rows:
    every count, the total, and no kind of row left out."""
    problems = []
    kinds = pd.Series([kind(v, lo, hi) for v, lo, hi in zip(
        rows["verdict"], rows["ratio_ci_low"], rows["ratio_ci_high"])], dtype=object)
    seen = set()
    for i, g in enumerate(text.split(", ")):
        m = TALLY.match(g)
        k = tally_kind(m["word"], margin, prefix) if m else "?"
        if k == "?":
            problems.append(f"{where}: cannot read {g!r}")
            continue
        seen.add(k)
        if int(m["k"]) != int((kinds == k).sum()):
            problems.append(f"{where}: {g!r} counts {m['k']}, the CSV has {(kinds == k).sum()}")
        if i == 0 and int(m["n"] or m["k"]) != len(rows):
            problems.append(f"{where}: {m['n'] or m['k']} versions stated, the CSV has "
                            f"{len(rows)}")
    if set(kinds) - seen:
        problems.append(f"{where}: no count for the CSV's {sorted(set(kinds) - seen)} rows")
    return problems


def kind(verdict: str, lo: float, hi: float) -> str:
    if verdict == "right_faster":
        return "slower"
    if verdict == "left_faster":
        return "faster"
    if verdict == "equivalent":
        return "within, slower" if lo > 1 else "within, faster" if hi < 1 else "as fast"
    return "undecided"


def word_kind(word: str, margin: float, prefix: str = "",
              compact: bool = False) -> tuple[str, str]:
    """(kind, the % range it states or '') of a group's word, or ('?', '') when it is no word
    the answer may use (the compact form states the margin without commas)."""
    within = f" within ±{margin * 100:.0f} %" if compact else f", within ±{margin * 100:.0f} %,"
    w = word.removeprefix(prefix)
    if w in ("faster", "slower") and word == prefix + w or w == "undecided":
        return w, ""
    if w == ("as fast" if compact else "as fast" + within):
        return "as fast", ""
    m = re.fullmatch(r"(slower|faster) by (\d+(?:–\d+)?) %" + re.escape(within), w)
    if m:
        return f"within, {m[1]}", m[2]
    return "?", ""


def training_rows(duets: pd.DataFrame, question: str, machine: str) -> pd.DataFrame:
    d = duets[duets["api"] == "train_on_batch"]
    if machine:
        d = d[d["machine"] == machine]
    if question == "graph":
        return d[d["mode"] == "graph"]
    eager = d[d["mode"] == "eager"]
    return eager[eager["keras"] == "keras3"] if question == "keras3" else \
        eager[eager["keras"] != "keras3"]


def inference_rows(cvp: pd.DataFrame, mode: str, machine: str) -> pd.DataFrame:
    """call_vs_predict rows of a mode, turned to predict() over model(x)."""
    c = cvp[cvp["mode"] == mode]
    if machine:
        c = c[c["machine"] == machine]
    flip = {"left_faster": "right_faster", "right_faster": "left_faster"}
    return pd.DataFrame({"left_framework_version": c["framework_version"].astype(str),
                         "ratio": 1 / c["ratio"], "ratio_ci_low": 1 / c["ratio_ci_high"],
                         "ratio_ci_high": 1 / c["ratio_ci_low"],
                         "verdict": c["verdict"].map(lambda v: flip.get(v, v))})


def check_groups(text: str, rows: pd.DataFrame, margin: float, where: str,
                 prefix: str = "", compact: bool = False) -> list[str]:
    """Every group of one claim's text against the rows it must cover."""
    pattern = COMPACT if compact else GROUP
    problems = []
    rows = rows.assign(kind=[kind(v, lo, hi) for v, lo, hi in zip(
        rows["verdict"], rows["ratio_ci_low"], rows["ratio_ci_high"])])
    groups = [g for g in text.rstrip(".").split("; ")]
    seen, total = set(), None
    for i, g in enumerate(groups):
        m = pattern.match(g)
        if not m:
            problems.append(f"{where}: cannot read {g!r}")
            continue
        k, pct = word_kind(m["word"], margin, prefix, compact)
        if k == "?":
            problems.append(f"{where}: {m['word']!r} is no verdict word")
            continue
        mine = rows[rows["kind"] == k]
        seen.add(k)
        if i == 0:
            total = int(m["n"] or m["k"])
        if int(m["k"]) != len(mine):
            problems.append(f"{where}: {g!r} counts {m['k']}, the CSV has {len(mine)} {k}")
            continue
        lo, hi = f"{mine['ratio'].min():.2f}", f"{mine['ratio'].max():.2f}"
        if (m["lo"], m["hi"] or m["lo"]) != (lo, hi) or (lo == hi) != (m["hi"] is None):
            problems.append(f"{where}: {g!r}: its {k} rows span {lo}–{hi}x")
        if m.groupdict().get("med") and m["med"] != f"{float(np.median(mine['ratio'])):.2f}":
            problems.append(f"{where}: {g!r}: median of its rows "
                            f"{float(np.median(mine['ratio'])):.2f}")
        if m["vers"]:
            want = ", ".join(f"TF {v}" for v in sorted(
                mine["left_framework_version"].astype(str),
                key=lambda v: tuple(int(x) for x in v.split("."))))
            if m["vers"] != want:
                problems.append(f"{where}: {g!r} names {m['vers']}, the rows are {want}")
        if pct:
            a = sorted(abs(r - 1) * 100 for r in mine["ratio"])
            p = f"{round(a[0])}–{round(a[-1])}" if round(a[0]) != round(a[-1]) \
                else f"{round(a[-1])}"
            if pct != p:
                problems.append(f"{where}: {g!r} says {pct} %, its rows {p} %")
    if total is not None and total != len(rows):
        problems.append(f"{where}: {total} versions stated, the CSV has {len(rows)}")
    missing = set(rows["kind"]) - seen
    if missing:
        problems.append(f"{where}: no group for the CSV's {sorted(missing)} rows")
    return problems


def check(entries: list[dict], duets: pd.DataFrame, cvp: pd.DataFrame | None,
          margin: float, machines: list[str]) -> list[str]:
    """Every entry's claim against the CSV rows its label and machine name."""
    problems = []
    several = len(machines) > 1
    got = set()
    for e in entries:
        q = QUESTION.get(e["label"])
        if q is None:
            problems.append(f"unknown question label {e['label']!r}")
            continue
        machine = e["who"].partition(" (")[0] if several else ""
        if several and machine not in machines:
            problems.append(f"{e['label']}: {machine!r} is no machine of the tables")
            continue
        got.add((q, machine))
        where = f"{q}{' on ' + machine if machine else ''}"
        if e.get("tally"):
            where += " (first screen)"
            if q != "inference":
                problems += check_tally(e["text"], training_rows(duets, q, machine), margin,
                                        where)
                continue
            for part in e["text"].split("; "):
                mode_word, _, body = part.partition(": ")
                mode = MODE_OF_WORD.get(mode_word)
                if mode is None or cvp is None:
                    problems.append(f"{where}: cannot read {part!r}")
                    continue
                problems += check_tally(body, inference_rows(cvp, mode, machine), margin,
                                        f"{where} {mode}", prefix="predict() ")
            continue
        if q != "inference":
            rows = training_rows(duets, q, machine)
            problems += check_groups(e["text"], rows, margin, where,
                                     compact=e.get("compact", False))
            scope = e["who"].partition(" (")[2].rstrip(")") if several else e["who"]
            if q != "keras3" and "tf_keras from TF " in scope:
                first = scope.split("tf_keras from TF ")[1].split(",")[0]
                tk = rows[rows["keras"] == "tf_keras"]["left_framework_version"].astype(str)
                if first not in set(tk) or any(
                        tuple(map(int, v.split("."))) < tuple(map(int, first.split(".")))
                        for v in tk):
                    problems.append(f"{where}: says tf_keras from TF {first}; rows {sorted(tk)}")
            continue
        if e.get("compact"):
            parts = re.split(r"(?:^|; )(eager|TF 1-style graph), ", e["text"])
            if parts[0]:
                problems.append(f"{where}: cannot read {parts[0]!r}")
            for word, body in zip(parts[1::2], parts[2::2]):
                mode = MODE_OF_WORD[word]
                problems += check_groups(body, inference_rows(cvp, mode, machine), margin,
                                         f"{where} {mode}", prefix="predict() ", compact=True)
            continue
        for part in e["text"].rstrip(".").split(". "):
            mode_word, _, body = part.partition(": ")
            mode = MODE_OF_WORD.get(mode_word)
            if mode is None or cvp is None:
                problems.append(f"{where}: cannot read {part!r}")
                continue
            body = body.split("; the ratio is")[0]
            problems += check_groups(body, inference_rows(cvp, mode, machine), margin,
                                     f"{where} {mode}", prefix="predict() ")
    want = {(q, m) for q in ORDER for m in (machines if several else [""])
            if q != "keras3" or not training_rows(duets, "keras3", m).empty}
    if want - got:
        problems.append(f"claims missing: {sorted(want - got)}")
    return problems
