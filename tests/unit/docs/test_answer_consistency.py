"""Every answer word, count, range, median, version list and verdict word of the answer is
recomputed from the CSVs by an independent reader (tests/support/answer_check.py), wherever the
answer is printed: README.md's block, docs/RESULTS.md and the report's first screen for the
published run, and the Markdown answer (results_page.answer_lines, which RESULTS.md prints) and
the README's compact form for planted tables: rows within the margin on either side of 1,
undecided rows, a version missing from a mode, two and three machines named in plain words, and
what the answer did not measure (Keras 3 fit() over an epoch, per machine). An answer line uses
four verdict words (faster, as fast, slower, not decided). A planted contradiction (a range over
the wrong rows, a mislabelled mode, "as fast" for a slower row, a wrong answer word, a machine's
line given another's numbers) fails it."""
import json
import re
from pathlib import Path

import pandas as pd
import pytest
from answer_check import (
    check,
    compact_entries,
    html_entries,
    markdown_entries,
    plain_names,
    section,
    verdict_words,
)

from driver.report import readme_block
from driver.report.claim_lines import line_markdown
from driver.report.questions import questions
from driver.report.results_page import answer_lines

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
MARGIN = 0.10


def paired_in(cvp: pd.DataFrame, pairs_csv: Path) -> pd.DataFrame:
    """The cells' model(x)-against-predict() rows with a pair in one process's ratio, interval
    and verdict where the pairs table has that env, mode and Keras (the answer counts the pair)."""
    if not pairs_csv.is_file():
        return cvp
    pairs = pd.read_csv(pairs_csv)
    pairs = pairs[(pairs["table"] == "call_vs_predict")
                  & pairs["left_cell_id"].str.contains(r"\.call\.")
                  & pairs["right_cell_id"].str.contains(r"\.predict\.")]
    cvp = cvp.copy()
    for _, p in pairs.iterrows():
        at = ((cvp["machine"] == p["machine"]) & (cvp["env"] == p["env"])
              & (cvp["mode"] == p["mode"]) & (cvp["keras"] == p["left_keras"])
              & (cvp["left_api"] == "call") & (cvp["right_api"] == "predict"))
        for c in ("ratio", "ratio_ci_low", "ratio_ci_high", "verdict"):
            cvp.loc[at, c] = p[c]
    return cvp


def published():
    tables = DOCS / "tables"
    if not (tables / "duets.csv").is_file():
        pytest.skip("no published duets table")
    duets = pd.read_csv(tables / "duets.csv")
    cvp = paired_in(pd.read_csv(tables / "call_vs_predict.csv"), tables / "pairs.csv")
    tf2 = pd.read_csv(tables / "tf2_vs_tf1.csv")
    keys = sorted(m for m in duets["machine"].unique() if not m.endswith(".twin"))
    facts = json.loads((tables / "facts.json").read_text(encoding="utf-8"))
    import readme_answer

    cores = {(facts.get("machines") or {}).get(k, {}).get("cpu_count") for k in keys}
    return {"duets": duets, "cvp": cvp, "tf2": tf2, "keys": keys,
            "names": plain_names(facts.get("machines") or {}, keys),
            "cores": cores.pop() if len(cores) == 1 else None,
            "margin": readme_answer.published_margin(DOCS)}


@pytest.fixture(scope="module")
def pub():
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    return published()


def _check(entries, p):
    return check(entries, p["duets"], p["cvp"], p["margin"], p["names"], tf2=p["tf2"],
                 cores=p["cores"])


def test_readme_block(pub):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme_block.current(readme).splitlines()
    entries = compact_entries(block, pub["names"])
    assert len(entries) >= 3 * len(pub["keys"]), block
    assert _check(entries, pub) == []
    assert "\n".join(block) == readme_block.block(DOCS / "tables", pub["margin"]), \
        "README's answer block is not what docs/tables give: run make republish"
    first = readme.splitlines().index(block[0])
    assert first < 30, "the answer must start within README's first 30 lines"
    assert not verdict_words("\n".join(ln for ln in block if ln.startswith("- ")))
    for key in pub["keys"]:
        assert key not in "\n".join(block), "a machine key in the README's answer"


def test_results_page(pub):
    lines = section((DOCS / "RESULTS.md").read_text(encoding="utf-8"), "## The answer", "## ")
    assert _check(markdown_entries(lines), pub) == []
    assert not verdict_words("\n".join(ln for ln in lines if ln.startswith(("- ", "  - "))))


def test_report_first_screen(pub):
    page = (DOCS / "index.html").read_text(encoding="utf-8")
    entries = html_entries(page)
    assert len(entries) >= 3
    if len(pub["keys"]) > 1:  # the counts on the first screen, the sentences below the plots
        first = [e for e in entries if e.get("tally")]
        full = [e for e in entries if e.get("full")]
        assert first and full
        assert _check(first, pub) == []
        assert _check(full, pub) == []
    else:
        assert _check(entries, pub) == []
    title = re.search(r"<title>(.*?)</title>", page).group(1)
    for key in pub["keys"]:
        assert key not in title and pub["names"][key] in title


def test_readme_size():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 120
    assert len(text.split()) <= 1200


def test_readme_fits_a_third_machine(pub):
    """The published tables with a third machine (a copy of the longest machine's rows, ratios
    shifted so that its groups differ) still give a README within 120 lines and 1,200 words."""
    tabs = {"duets": pub["duets"], "call_vs_predict": pub["cvp"], "tf2_vs_tf1": pub["tf2"]}
    machines = pub["keys"]
    longest = max(machines, key=lambda m: len(
        readme_block.compact_lines(_only(tabs, m), pub["margin"], "TF 1.14.0")[2]))
    third = {k: pd.concat([v, _only(tabs, longest)[k].assign(machine="third-machine-key-0000")
                           .pipe(_shift, 1.03)], ignore_index=True) for k, v in tabs.items()}
    lines = readme_block.compact_lines(third, pub["margin"], "TF 1.14.0")
    keys = machines + ["third-machine-key-0000"]
    entries = compact_entries(lines, keys)
    assert len({e["who"].partition(" (")[0] for e in entries if e["who"]}) == len(keys)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    new = readme_block.splice(readme, "\n".join([readme_block.BEGIN, *lines, readme_block.END]))
    assert len(new.splitlines()) <= 120
    assert len(new.split()) <= 1200, len(new.split())


def _only(tabs, machine):
    return {k: v[v["machine"] == machine] for k, v in tabs.items()}


def _shift(df, factor):
    return df.assign(**{c: df[c] * factor for c in ("ratio", "ratio_ci_low", "ratio_ci_high")})


# ------------------------------------------------------------------------------------------
# planted tables

def duet(machine, version, mode, keras, ratio, lo, hi, verdict):
    env = "tf" + ".".join(version.split(".")[:2])
    return {"machine": machine, "env": env, "mode": mode, "keras": keras, "api": "train_on_batch",
            "left_env": env, "right_env": "tf1.14", "left_framework_version": version,
            "right_framework_version": "1.14.0", "n": 4, "ratio": ratio, "ratio_ci_low": lo,
            "ratio_ci_high": hi, "verdict": verdict}


def planted_duets(machine="m1", shift=1.0):
    rows = [
        ("2.0.4", "graph", "tf.keras", 1.10, 1.08, 1.12, "right_faster"),
        ("2.1.4", "graph", "tf.keras", 1.02, 1.003, 1.03, "equivalent"),  # differs, within
        ("2.5.3", "graph", "tf.keras", 1.01, 1.001, 1.04, "equivalent"),  # differs, within
        ("2.9.3", "graph", "tf.keras", 0.99, 0.97, 1.01, "equivalent"),  # as fast
        ("2.11.1", "graph", "tf.keras", 0.90, 0.80, 1.01, "inconclusive"),  # undecided
        ("2.12.1", "graph", "tf.keras", 0.87, 0.84, 0.90, "left_faster"),
        ("2.13.1", "graph", "tf.keras", 0.96, 0.95, 0.97, "equivalent"),  # faster, within
        ("2.16.2", "graph", "tf_keras", 0.88, 0.86, 0.89, "left_faster"),
        ("2.0.4", "eager", "tf.keras", 4.18, 4.07, 4.29, "right_faster"),
        ("2.1.4", "eager", "tf.keras", 1.07, 1.03, 1.09, "equivalent"),
        # TF 2.5.3 has no eager row: a version missing from a mode
        ("2.12.1", "eager", "tf.keras", 1.55, 1.47, 1.64, "right_faster"),
        ("2.13.1", "eager", "tf.keras", 1.40, 0.90, 2.10, "inconclusive"),
        ("2.16.2", "eager", "keras3", 1.03, 1.01, 1.05, "equivalent"),
        ("2.21.0", "eager", "keras3", 0.99, 0.97, 1.01, "equivalent"),
        ("2.16.2", "eager", "tf_keras", 1.66, 1.59, 1.73, "right_faster"),
        ("2.21.0", "eager", "tf_keras", 1.67, 1.63, 1.70, "right_faster"),
    ]
    return pd.DataFrame([duet(machine, v, m, k, r * shift, lo * shift, hi * shift, verdict)
                         for v, m, k, r, lo, hi, verdict in rows])


def planted_cvp(machine="m1"):
    rows = [("1.14.0", "eager", 1.13, 1.05, 1.21, "right_faster"),
            ("2.0.4", "eager", 0.15, 0.14, 0.16, "left_faster"),
            ("2.15.1", "eager", 0.092, 0.086, 0.098, "left_faster"),
            ("2.0.4", "graph", 0.77, 0.72, 0.83, "left_faster"),
            ("2.15.1", "graph", 0.94, 0.88, 1.00, "inconclusive")]
    return pd.DataFrame([{"machine": machine, "env": "tf" + ".".join(v.split(".")[:2]),
                          "framework_version": v, "mode": m, "keras": "tf.keras",
                          "ratio": r, "ratio_ci_low": lo, "ratio_ci_high": hi, "verdict": d}
                         for v, m, r, lo, hi, d in rows])


def planted_tf2(machine="m1", ratio=1.55, verdict="right_faster"):
    """tf2_vs_tf1's Keras 3 fit() over an epoch rows (numpy and tf.data) of one machine."""
    return pd.DataFrame([{"machine": machine, "model": "small", "data": "small", "mode": "eager",
                          "api": "fit_epoch", "input": inp, "device": "cpu", "left_env": "tf2.21",
                          "right_env": "tf1.14", "left_framework_version": "2.21.0",
                          "right_framework_version": "1.14.0", "left_keras": "keras3",
                          "right_keras": "tf.keras", "ratio": r, "ratio_ci_low": r * 0.8,
                          "ratio_ci_high": r * 1.25, "verdict": v}
                         for inp, r, v in (("numpy", ratio, verdict),
                                           ("tfdata", 0.92, "inconclusive"))])


FACTS = {"amd-epyc-2c-a59bbdd3": {"cpu_model": "AMD EPYC", "cpu_count": 2},
         "intel-xeon-2c-4db20bbf": {"cpu_model": "Intel(R) Xeon(R) Processor", "cpu_count": 2},
         "m3-key": {"cpu_model": "Intel(R) Xeon(R) Processor", "cpu_count": 2}}


def tables(keys, shift=0.02):
    duets = pd.concat([planted_duets(k, shift=1 + shift * i) for i, k in enumerate(keys)],
                      ignore_index=True)
    cvp = pd.concat([planted_cvp(k) for k in keys], ignore_index=True)
    tf2 = pd.concat([planted_tf2(k, ratio=1.55 - 0.3 * i) for i, k in enumerate(keys)],
                    ignore_index=True)
    return {"duets": duets, "call_vs_predict": cvp, "tf2_vs_tf1": tf2}


def answer_of(duets, cvp, tf2=None, facts=None):
    tabs = {"duets": duets, "call_vs_predict": cvp}
    if tf2 is not None:
        tabs["tf2_vs_tf1"] = tf2
    return answer_lines(tabs, MARGIN, "TF 1.14.0", facts=facts)


def machines_of(duets):
    return sorted(duets["machine"].unique())


def test_planted_one_machine_reads_true():
    duets, cvp, tf2 = planted_duets(), planted_cvp(), planted_tf2()
    lines = answer_of(duets, cvp, tf2)
    assert check(markdown_entries(lines), duets, cvp, MARGIN, machines_of(duets), tf2=tf2) == []
    text = "\n".join(lines)
    # four words: rows within the margin are as fast whichever side of 1 they lie
    assert "it depends—as fast in 4 of 8 versions (0.96–1.02x, median 1.00x)" in text, text
    assert "not decided in 1 version (0.90x: TF 2.11.1)" in text
    assert "(tf.keras to TF 2.13.1, tf_keras from TF 2.16.2)" in text
    answers = "\n".join(ln for ln in lines if ln.startswith("- "))
    assert not verdict_words(answers), verdict_words(answers)
    assert "slower, 1.55x (TF 2.21.0)" in text  # what it did not measure


def test_the_four_words_and_the_answer_first():
    """Every answer line's verdict words are the four; each claim says its answer before its
    counts, and the answer is what its rows' words say."""
    tabs = tables(["amd-epyc-2c-a59bbdd3", "intel-xeon-2c-4db20bbf"])
    found = questions(tabs, MARGIN, "TF 1.14.0", FACTS)
    for q in found["items"]:
        for ln in q["lines"]:
            assert not verdict_words(ln["text"]) and not verdict_words(ln["tally"])
            assert "—" in ln["text"], ln["text"]
    graph = found["items"][0]["lines"][0]["text"]
    assert graph.startswith("it depends—"), graph
    k3 = next(q for q in found["items"] if q["id"] == "keras3")["lines"][0]["text"]
    assert k3.startswith("as fast—in 2 of 2 versions (0.99–1.03x"), k3


def test_planted_two_machines_named_in_plain_words():
    keys = ["amd-epyc-2c-a59bbdd3", "intel-xeon-2c-4db20bbf"]
    tabs = tables(keys)
    lines = answer_lines(tabs, MARGIN, "TF 1.14.0", facts=FACTS)
    names = plain_names(FACTS, keys)
    assert names == {keys[0]: "2-core AMD EPYC", keys[1]: "2-core Intel Xeon"}
    assert "On a " not in lines[0]
    assert not [k for k in keys if k in "\n".join(lines)], "a machine key in the answer"
    entries = markdown_entries(lines)
    assert len(entries) == 9  # 4 questions x 2 machines, and what the answer did not measure
    assert check(entries, tabs["duets"], tabs["call_vs_predict"], MARGIN, names,
                 tf2=tabs["tf2_vs_tf1"], cores=2) == []
    # a machine's line given the other's numbers is caught
    a, b = names[keys[0]], names[keys[1]]
    swapped = [dict(e, who=e["who"].replace(a, "X").replace(b, a).replace("X", b))
               for e in entries]
    assert check(swapped, tabs["duets"], tabs["call_vs_predict"], MARGIN, names,
                 tf2=tabs["tf2_vs_tf1"])
    note = entries[-1]
    assert "2-core CPUs" in note["label"] and "tells a different story" in note["label"]
    wrong = dict(note, text=note["text"].replace("1.55x", "1.25x"))
    assert check(entries[:-1] + [wrong], tabs["duets"], tabs["call_vs_predict"], MARGIN, names,
                 tf2=tabs["tf2_vs_tf1"])


def test_two_machines_of_one_name_are_told_apart():
    keys = ["intel-xeon-2c-4db20bbf", "m3-key"]
    tabs = tables(keys)
    lines = answer_lines(tabs, MARGIN, "TF 1.14.0", facts=FACTS)
    names = plain_names(FACTS, keys)
    assert set(names.values()) == {"2-core Intel Xeon no. 1", "2-core Intel Xeon no. 2"}
    assert check(markdown_entries(lines), tabs["duets"], tabs["call_vs_predict"], MARGIN, names,
                 tf2=tabs["tf2_vs_tf1"]) == []


def test_planted_contradictions_fail():
    duets, cvp = planted_duets(), planted_cvp()
    entries = markdown_entries(answer_of(duets, cvp))
    graph = next(e for e in entries if e["label"] == "Training in the TF 1-style graph")

    def planted(old, new):
        assert old in graph["text"], graph["text"]
        changed = [dict(e, text=e["text"].replace(old, new)) if e is graph else e
                   for e in entries]
        return check(changed, duets, cvp, MARGIN, ["m1"])

    # a range over the wrong rows: the faster group's range stretched to every row's
    assert any("span" in p for p in planted("faster in 2 versions (0.87–0.88x",
                                            "faster in 2 versions (0.87–1.10x"))
    # "as fast" for the slower row, a wrong answer, an old word
    assert planted("slower in 1 version (1.10x", "as fast in 1 version (1.10x")
    assert planted("it depends—", "mostly as fast—")
    assert planted("it depends—", "")
    assert planted("not decided in 1 version", "undecided in 1 version")
    # a mislabelled mode: the graph sentence under the eager Keras 2 label
    mislabelled = [dict(e, label="Training with Keras 2, eager") if e is graph else
                   dict(e, label="Training in the TF 1-style graph")
                   if e["label"] == "Training with Keras 2, eager" else e for e in entries]
    assert check(mislabelled, duets, cvp, MARGIN, ["m1"])


@pytest.mark.parametrize("n_machines", [1, 2, 3])
def test_compact_block_reads_true(n_machines):
    """The README's compact form (one line per question, one part per machine) states the same
    answers and groups as the long form, each recomputed from the planted rows."""
    keys = ["amd-epyc-2c-a59bbdd3", "intel-xeon-2c-4db20bbf", "m3-key"][:n_machines]
    tabs = tables(keys)
    lines = readme_block.compact_lines(tabs, MARGIN, "TF 1.14.0", FACTS)
    assert len([ln for ln in lines if ln.startswith("- ")]) == 5  # 4 questions, the fit note
    names = plain_names(FACTS, keys)
    entries = compact_entries(lines, names)
    assert len(entries) == 4 * n_machines + 1
    assert check(entries, tabs["duets"], tabs["call_vs_predict"], MARGIN, names,
                 tf2=tabs["tf2_vs_tf1"]) == []
    assert not verdict_words("\n".join(ln for ln in lines if ln.startswith("- ")))
    if n_machines == 1:
        text = "\n".join(lines)
        assert "it depends—4 of 8 as fast (0.96–1.02x); 2 faster (0.87–0.88x)" in text, text
        assert "1 not decided (0.90x)" in text and "1 slower (1.10x: TF 2.0.4)" in text


def test_compact_contradictions_fail():
    duets, cvp = planted_duets(), planted_cvp()
    lines = readme_block.compact_lines({"duets": duets, "call_vs_predict": cvp}, MARGIN,
                                       "TF 1.14.0")
    graph = next(i for i, ln in enumerate(lines) if "TF 1-style graph**" in ln)

    def planted(old, new):
        changed = list(lines)
        assert old in changed[graph], changed[graph]
        changed[graph] = changed[graph].replace(old, new)
        return check(compact_entries(changed, ["m1"]), duets, cvp, MARGIN, ["m1"])

    assert any("span" in p for p in planted("faster (0.87–0.88x)", "faster (0.87–1.10x)"))
    assert planted("1 slower (1.10x", "1 as fast (1.10x")
    assert planted("it depends—", "mostly as fast—")
    assert planted("1 not decided (0.90x)", "1 faster (0.90x)")


def test_without_keras3_no_keras3_question():
    duets = planted_duets()
    duets = duets[duets["keras"] != "keras3"]
    entries = markdown_entries(answer_of(duets, planted_cvp()))
    assert "Training with Keras 3, eager" not in {e["label"] for e in entries}
    assert check(entries, duets, planted_cvp(), MARGIN, ["m1"]) == []


def test_the_report_and_the_page_print_the_same_claims():
    """The HTML list and the Markdown lines come from one list of claims."""
    tabs = {"duets": planted_duets(), "call_vs_predict": planted_cvp()}
    found = questions(tabs, MARGIN, "TF 1.14.0")
    md = [ln for q in found["items"] for ln in line_markdown(q)]
    assert md == [ln for ln in answer_of(tabs["duets"], tabs["call_vs_predict"])
                  if ln.startswith(("- ", "  - "))]
    for claim in found["claims"]:
        assert claim.row_ids and all(i.startswith("m1:") for i in claim.row_ids)


def test_first_screen_tallies_read_true_and_planted_miscounts_fail():
    """The first screen of several machines says each claim's answer and counts alone
    (claim_lines.tally): every count recomputed from the planted rows; a moved count, a wrong
    total, a kind left out and another machine's counts are caught."""
    keys = ["amd-epyc-2c-a59bbdd3", "intel-xeon-2c-4db20bbf"]
    tabs = tables(keys)
    duets, cvp = tabs["duets"], tabs["call_vs_predict"]
    # the second machine calls one more graph version slower than the first
    i = duets.index[(duets["machine"] == keys[1]) & (duets["mode"] == "graph")
                    & (duets["verdict"] != "right_faster")][0]
    duets.loc[i, ["verdict", "ratio", "ratio_ci_low", "ratio_ci_high"]] = \
        ["right_faster", 1.3, 1.2, 1.4]
    found = questions({"duets": duets, "call_vs_predict": cvp}, MARGIN, "TF 1.14.0", FACTS)
    names = plain_names(FACTS, keys)
    entries = [{"label": q["label"], "who": ln["name"], "text": ln["tally"], "tally": True}
               for q in found["items"] for ln in q["lines"]]
    assert len(entries) == 8
    assert check(entries, duets, cvp, MARGIN, names) == []
    graph = entries[0]
    assert re.fullmatch(r"[a-z ]+—\d+ of 8 \w.*", graph["text"]), graph["text"]

    def planted(new_text, who=None):
        return [dict(e, text=new_text, who=who or e["who"]) if e is graph else e
                for e in entries]

    answer, _, counts = graph["text"].partition("—")
    first, _, rest = counts.partition(" of ")
    assert check(planted(f"{answer}—{int(first) + 1} of {rest}"), duets, cvp, MARGIN, names)
    assert check(planted(graph["text"].replace(" of 8 ", " of 9 ")), duets, cvp, MARGIN, names)
    assert check(planted(graph["text"].rsplit(", ", 1)[0]), duets, cvp, MARGIN, names)
    other = next(e for e in entries[1:] if e["label"] == graph["label"])
    assert other["text"] != graph["text"]
    assert check(planted(other["text"]), duets, cvp, MARGIN, names)  # the other's counts
