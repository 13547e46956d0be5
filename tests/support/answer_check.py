"""An independent reader of the answer: it parses the answer's sentences (README block,
docs/RESULTS.md, the report's first screen, or the Markdown lines of results_page.answer_lines)
and recomputes every answer word, count, range, median, version list and verdict word from the
CSVs with plain pandas, without the report's code, and the machines' plain names from
facts.json. check() returns the contradictions it finds ([] when every word is true of the rows).

An answer line uses four verdict words and no others: faster, as fast, slower, not decided
(WORDS). Each claim says its answer first ("slower", "mostly as fast", "it depends"), then an
em dash, then its counts (the README's first count without its word where the answer says it:
"mostly slower—<k> of <n> (<lo>–<hi>x)")."""
import html
import re

import numpy as np
import pandas as pd

WORDS = ("faster", "as fast", "slower", "not decided")
DASH = "—"
BULLET = re.compile(r"^- \*\*(?P<label>[^*]+)\*\*(?: \((?P<who>.*?)\))?:(?: (?P<text>.*))?$")
SUB = re.compile(r"^  - (?P<who>[^:]+): (?P<text>.*)$")
GROUP = re.compile(r"^(?:(?P<word>.+?) )?in (?P<k>\d+)(?: of (?P<n>\d+))? versions? "
                   r"\((?P<lo>\d+\.\d\d)(?:–(?P<hi>\d+\.\d\d))?x(?:, median (?P<med>\d+\.\d\d)x)?"
                   r"(?:: (?P<vers>[^)]*))?\)$")
# the README block's compact form (driver/report/readme_block.py): "<k>[ of <n>] <word> (<range>)"
COMPACT = re.compile(r"^(?P<k>\d+)(?: of (?P<n>\d+))?(?: (?P<word>.+?))? "
                     r"\((?P<lo>\d+\.\d\d)(?:–(?P<hi>\d+\.\d\d))?x(?:: (?P<vers>TF [^)]*))?\)$")
QUESTION = {"Training in the TF 1-style graph": "graph", "Training with Keras 3, eager": "keras3",
            "Training with Keras 2, eager": "keras2",
            "Inference on one small batch: is predict() slower than calling model(x)?": "inference"}
ORDER = ("graph", "keras3", "keras2", "inference")
# the inference parts' mode words, as TF users know the modes (page, RESULTS.md and README alike)
MODE_OF_WORD = {"eager": "eager", "TF 1-style graph": "graph", "graph": "graph"}
# what the answer did not measure: fit() over an epoch with Keras 3 (claim_lines.fit_note)
NOTE = "Not in this answer"
NOTE_PART = re.compile(r"^(?P<word>.+?), (?P<lo>\d+\.\d\d)(?:–(?P<hi>\d+\.\d\d))?x "
                       r"\(TF (?P<vers>[^)]*)\)$")


# ------------------------------------------------------------------------------------------
# machines in plain words

def plain_names(facts_machines: dict, keys) -> dict:
    """{key: plain name} as a reader would name each machine from facts.json: '<cores>-core
    <CPU model without (R), (TM), CPU, Processor, clock>' ('no. <i>' where two share one)."""
    out = {}
    for key in sorted(keys):
        f = (facts_machines or {}).get(key) or {}
        model = re.sub(r"\((R|TM)\)|\bCPU\b|\bProcessor\b|@.*$|\d+-Core", " ",
                       f.get("cpu_model") or "", flags=re.I)
        model = " ".join(model.split())
        cores = f.get("cpu_count") or (re.search(r"-(\d+)c(?:-|$)", key) or [None, None])[1]
        out[key] = (f"{cores}-core {model}" if cores else model) if model else key
    for name in set(out.values()):
        same = sorted(k for k, v in out.items() if v == name)
        if len(same) > 1:
            for i, k in enumerate(same, 1):
                out[k] = f"{name} no. {i}"
    return out


def _keys_of(machines) -> dict:
    """{shown name: key} from a list of keys (each its own name) or a {key: name} dict."""
    if isinstance(machines, dict):
        return {v: k for k, v in machines.items()}
    return {m: m for m in machines}


# ------------------------------------------------------------------------------------------
# reading the answer

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


def compact_entries(lines, machines) -> list[dict]:
    """Entries from the README's compact block: one bullet per question, its text one part per
    machine ("name: groups", parts joined by ". "), or the groups alone with one machine.
    `machines`: the names the block uses (a list, or {key: name})."""
    shown = list(_keys_of(machines))
    out = []
    for line in lines:
        m = BULLET.match(line)
        if not m or not m["text"]:
            continue
        if m["label"].startswith(NOTE):
            out.append({"label": m["label"], "who": "", "text": m["text"]})
            continue
        body = m["text"].rstrip(".")
        if len(shown) > 1:
            pat = r"(?:^|\. )(%s)(?: \(([^)]*)\))?: " % "|".join(map(re.escape, shown))
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


def _plain(fragment: str) -> str:
    return html.unescape(re.sub("<[^>]+>", "", fragment)).strip()


def html_entries(page: str) -> list[dict]:
    """The report's answer as entries: the first screen (<ul class="bottom-line">), one line per
    question, its text the claim's sentence or, with several machines, each machine's answer
    and counts alone ("tally": True); and with several machines the full sentences below the
    plots (<details id="answer-full">)."""
    ul = re.search(r'<ul class="bottom-line"[^>]*>(.*?)</ul>\s*(?:{%|<p class="legend|<div|<h2)',
                   page, re.S)
    assert ul, "the report has no answer list"
    body = ul.group(1)
    out = []
    top = r'<li class="bl[^"]*" id="q-[^"]+">'
    for m in re.finditer(top + r"<b>(.*?)</b>(.*?)</li>\s*(?=" + top + "|$)", body, re.S):
        head, rest = _plain(m.group(1)).rstrip(":"), m.group(2)
        tallies = re.findall(r'<span class="tally[^"]*"><b>(.*?)</b> (.*?)</span>', rest, re.S)
        if tallies:
            out += [{"label": head, "who": html.unescape(w), "tally": True, "text": _plain(t)}
                    for w, t in tallies]
            continue
        subs = re.findall(r'<li class="bl[^"]*"><b>(.*?):</b> (.*?)</li>', rest, re.S)
        if subs:
            out += [{"label": head, "who": html.unescape(w), "text": _plain(t)}
                    for w, t in subs]
            continue
        label, _, who = head.partition(" (") if not head.startswith(NOTE) else (head, "", "")
        out.append({"label": label, "who": who.rstrip(")"), "text": _plain(rest)})
    full = re.search(r'<details[^>]* id="answer-full"[^>]*>(.*?)</details>', page, re.S)
    if full:
        for m in re.finditer(r'<li class="bl"><b>(.*?):</b><ul>(.*?)</ul></li>', full.group(1),
                             re.S):
            head = _plain(m.group(1))
            out += [{"label": head, "who": html.unescape(w), "full": True, "text": _plain(t)}
                    for w, t in re.findall(r'<li class="bl[^"]*"><b>(.*?):</b> (.*?)</li>',
                                           m.group(2), re.S)]
    return out


# ------------------------------------------------------------------------------------------
# the rows and their words

def kind(verdict: str, lo: float = np.nan, hi: float = np.nan) -> str:
    """The verdict word of a row: the verdict alone (an equivalent row is as fast on either
    side of 1)."""
    return {"right_faster": "slower", "left_faster": "faster",
            "equivalent": "as fast"}.get(verdict, "not decided")


def word_kind(word: str, prefix: str = "") -> str:
    """The verdict a group's word names, or '?' when it is none of the four."""
    w = word.removeprefix(prefix)
    if w in ("faster", "slower"):
        return w if word == prefix + w else "?"
    return w if w in ("as fast", "not decided") and w == word else "?"


def answer_of(kinds: list[str], prefix: str = "") -> str:
    """The answer a reader gives from the rows' words: the one word, 'mostly <word>' (> half),
    else 'depends on the version'."""
    counts = pd.Series(kinds).value_counts()
    top_n = int(counts.iloc[0])
    tops = sorted(counts[counts == top_n].index, key=WORDS.index)
    top = tops[0]
    w = prefix + top if top in ("faster", "slower") else top
    if top_n == len(kinds):
        return w
    if 2 * top_n > len(kinds):
        return f"{prefix}mostly {top}" if top in ("faster", "slower") else f"mostly {top}"
    return "it depends"


def check_answer(stated: str, rows: pd.DataFrame, where: str, prefix: str = "") -> list[str]:
    kinds = [kind(v) for v in rows["verdict"]]
    if not kinds:
        return [f"{where}: an answer without rows"]
    want = answer_of(kinds, prefix)
    return [] if stated == want else [f"{where}: answers {stated!r}, the rows say {want!r}"]


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


def fit_rows(tf2: pd.DataFrame, machine: str) -> pd.DataFrame:
    """tf2_vs_tf1's Keras 3 fit() over an epoch against TF 1's tf.keras, numpy input."""
    t = tf2[(tf2["api"] == "fit_epoch") & (tf2["left_keras"] == "keras3")
            & (tf2["right_keras"] == "tf.keras")]
    if machine:
        t = t[t["machine"] == machine]
    if (t["input"] == "numpy").any():
        t = t[t["input"] == "numpy"]
    return t


def _split_answer(text: str, where: str, problems: list) -> tuple[str, str]:
    stated, dash, body = text.partition(DASH)
    if not dash:
        problems.append(f"{where}: no answer before the counts in {text!r}")
        return "", text
    return stated, body


def _said(word: str | None, i: int, stated: str, prefix: str) -> str:
    """A group's word; the first group's, when it has none, is the one its answer says."""
    if word is not None or i or stated == "it depends":
        return word or ""
    said = stated.removeprefix(prefix).removeprefix("mostly ")
    return prefix + said if said in ("faster", "slower") else said


def check_tally(text: str, rows: pd.DataFrame, margin: float, where: str,
                prefix: str = "") -> list[str]:
    """A claim's answer and counts alone ('mostly as fast — 11 of 22 as fast, 9 not decided,
    1 slower') against its rows: the answer, every count, the total, no kind left out."""
    problems = []
    stated, body = _split_answer(text, where, problems)
    if stated:
        problems += check_answer(stated, rows, where, prefix)
    kinds = pd.Series([kind(v) for v in rows["verdict"]], dtype=object)
    seen = set()
    for i, g in enumerate(body.split(", ")):
        m = re.match(r"^(?P<k>\d+)(?: of (?P<n>\d+))?(?: (?P<word>.+))?$", g)
        k = word_kind(_said(m["word"], i, stated, prefix), prefix) if m else "?"
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


def check_groups(text: str, rows: pd.DataFrame, margin: float, where: str,
                 prefix: str = "", compact: bool = False) -> list[str]:
    """A claim's answer and every group of its text against the rows it must cover."""
    pattern = COMPACT if compact else GROUP
    problems = []
    stated, body = _split_answer(text.rstrip("."), where, problems)
    if stated:
        problems += check_answer(stated, rows, where, prefix)
    rows = rows.assign(kind=[kind(v) for v in rows["verdict"]])
    seen, total = set(), None
    for i, g in enumerate(body.split("; ")):
        m = pattern.match(g)
        if not m:
            problems.append(f"{where}: cannot read {g!r}")
            continue
        said = _said(m["word"], i, stated, prefix)
        k = word_kind(said, prefix)
        if k == "?":
            problems.append(f"{where}: {said!r} is no verdict word")
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
    if total is not None and total != len(rows):
        problems.append(f"{where}: {total} versions stated, the CSV has {len(rows)}")
    missing = set(rows["kind"]) - seen
    if missing:
        problems.append(f"{where}: no group for the CSV's {sorted(missing)} rows")
    return problems


def check_note(e: dict, tf2: pd.DataFrame | None, machines, cores=None) -> list[str]:
    """What the answer did not measure: per machine its answer word, the range of its Keras 3
    fit() over an epoch rows' ratios and their versions; the CPUs' cores its label names."""
    where = "fit() note"
    if tf2 is None:
        return [f"{where}: no tf2_vs_tf1 table to check it against"]
    problems = []
    keys = _keys_of(machines)
    several = len(keys) > 1
    if cores and f"{cores}-core CPU" not in e["label"]:
        problems.append(f"{where}: the label does not say {cores}-core CPUs: {e['label']!r}")
    text = re.sub(r" \(\[?the rows\]?(\([^)]*\))?\)\.?$", "", e["text"]).rstrip(".")
    if e.get("who"):
        parts = [(e["who"], text)]
    elif several:
        pat = r"(?:^|; )(%s):? " % "|".join(map(re.escape, keys))
        bits = re.split(pat, text)
        parts = list(zip(bits[1::2], bits[2::2]))
        if bits[0]:
            problems.append(f"{where}: cannot read {bits[0]!r}")
    else:
        parts = [(next(iter(keys), ""), text)]
    seen = set()
    for who, part in parts:
        machine = keys.get(who, "") if several else ""
        seen.add(machine)
        m = NOTE_PART.match(part.rstrip(";"))
        rows = fit_rows(tf2, machine)
        if not m:
            problems.append(f"{where}: cannot read {part!r}")
            continue
        problems += check_answer(m["word"], rows, f"{where} on {who}")
        lo, hi = f"{rows['ratio'].min():.2f}", f"{rows['ratio'].max():.2f}"
        if (m["lo"], m["hi"] or m["lo"]) != (lo, hi):
            problems.append(f"{where} on {who}: {part!r}: its rows span {lo}–{hi}x")
        vers = sorted(rows["left_framework_version"].astype(str),
                      key=lambda v: tuple(int(x) for x in v.split(".")))
        want = vers[0] if len(vers) == 1 else f"{vers[0]}–{vers[-1]}"
        if m["vers"] != want:
            problems.append(f"{where} on {who}: names TF {m['vers']}, the rows are TF {want}")
    if several and not e.get("who") and \
            seen != {k for k in keys.values() if not fit_rows(tf2, k).empty}:
        problems.append(f"{where}: machines {sorted(seen)}; rows on "
                        f"{sorted(set(keys.values()))}")
    return problems


def check(entries: list[dict], duets: pd.DataFrame, cvp: pd.DataFrame | None,
          margin: float, machines, tf2: pd.DataFrame | None = None,
          cores: int | None = None) -> list[str]:
    """Every entry's claim against the CSV rows its label and machine name. `machines`: the
    keys (each shown as itself) or {key: plain name}; `tf2`: tf2_vs_tf1, for what the answer did
    not measure."""
    problems = []
    keys = _keys_of(machines)
    several = len(keys) > 1
    got = set()
    for e in entries:
        if e["label"].startswith(NOTE):
            problems += check_note(e, tf2, machines, cores)
            continue
        q = QUESTION.get(e["label"])
        if q is None:
            problems.append(f"unknown question label {e['label']!r}")
            continue
        shown = e["who"].partition(" (")[0] if several else ""
        if several and shown not in keys:
            problems.append(f"{e['label']}: {shown!r} is no machine of the tables")
            continue
        machine = keys.get(shown, "")
        got.add((q, machine))
        where = f"{q}{' on ' + shown if shown else ''}"
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
        if e["text"].startswith("not measured"):  # a study without model(x) against predict()
            if cvp is not None and not cvp.empty and (
                    not machine or (cvp["machine"] == machine).any()):
                problems.append(f"{where}: says not measured; call_vs_predict has its rows")
            continue
        if e.get("compact"):
            parts = re.split(r"(?:^|; )(eager|graph), ", e["text"])
            if parts[0]:
                problems.append(f"{where}: cannot read {parts[0]!r}")
            for word, body in zip(parts[1::2], parts[2::2]):
                mode = MODE_OF_WORD[word]
                # the compact form's label asks "is predict() slower": no prefix
                problems += check_groups(body, inference_rows(cvp, mode, machine), margin,
                                         f"{where} {mode}", compact=True)
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
    want = {(q, m) for q in ORDER for m in (keys.values() if several else [""])
            if q != "keras3" or not training_rows(duets, "keras3", m).empty}
    if want - got:
        problems.append(f"claims missing: {sorted(want - got)}")
    return problems


def verdict_words(text: str) -> set[str]:
    """The verdict words of an answer text outside the four (what a reader would have to learn):
    'undecided', 'equivalent', 'within ±' and the like."""
    banned = ("undecided", "equivalent", "within ±", "inconclusive", "no change")
    return {b for b in banned if b in text}
