"""Every count, range, median, version list and verdict word of the answer is recomputed from the
CSVs by an independent reader (tests/support/answer_check.py), wherever the answer is printed:
README.md's block, docs/RESULTS.md and the report's first screen for the published run, and the
Markdown answer (results_page.answer_lines, which RESULTS.md and the README print) for planted
tables: rows that differ but lie within the margin, undecided rows, a version missing from a mode,
two machines. A planted contradiction (a range over the wrong rows, a mislabelled mode, "as fast"
for a row the interval puts above 1, a machine's line given another's numbers) fails it."""
import re
from pathlib import Path

import pandas as pd
import pytest
from answer_check import check, compact_entries, html_entries, markdown_entries, section

from driver.report import readme_block
from driver.report.questions import questions
from driver.report.results_page import answer_lines
from driver.report.statements import line_markdown

REPO = Path(__file__).resolve().parents[3]
DOCS = REPO / "docs"
MARGIN = 0.10


def published():
    tables = DOCS / "tables"
    if not (tables / "duets.csv").is_file():
        pytest.skip("no published duets table")
    duets = pd.read_csv(tables / "duets.csv")
    cvp = pd.read_csv(tables / "call_vs_predict.csv")
    machines = sorted(m for m in duets["machine"].unique() if not m.endswith(".twin"))
    import readme_answer

    return duets, cvp, machines, readme_answer.published_margin(DOCS)


@pytest.fixture(scope="module")
def pub():
    import sys

    sys.path.insert(0, str(REPO / "scripts"))
    return published()


def test_readme_block(pub):
    duets, cvp, machines, margin = pub
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = readme_block.current(readme).splitlines()
    entries = compact_entries(block, machines)
    assert len(entries) >= 3 * len(machines), block
    assert check(entries, duets, cvp, margin, machines) == []
    assert "\n".join(block) == readme_block.block(DOCS / "tables", margin), \
        "README's answer block is not what docs/tables give: run make republish"
    first = readme.splitlines().index(block[0])
    assert first < 30, "the answer must start within README's first 30 lines"


def test_results_page(pub):
    duets, cvp, machines, margin = pub
    lines = section((DOCS / "RESULTS.md").read_text(encoding="utf-8"), "## The answer", "## ")
    assert check(markdown_entries(lines), duets, cvp, margin, machines) == []


def test_report_first_screen(pub):
    duets, cvp, machines, margin = pub
    entries = html_entries((DOCS / "index.html").read_text(encoding="utf-8"))
    assert len(entries) >= 3
    if len(machines) > 1:  # the counts on the first screen, the sentences below the plots
        first = [e for e in entries if e.get("tally")]
        full = [e for e in entries if e.get("full")]
        assert len(first) + len(full) == len(entries) and first and full
        assert check(first, duets, cvp, margin, machines) == []
        assert check(full, duets, cvp, margin, machines) == []
    else:
        assert check(entries, duets, cvp, margin, machines) == []


def test_readme_size():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 120
    assert len(text.split()) <= 1200


def test_readme_fits_a_third_machine(pub, tmp_path):
    """The published tables with a third machine (a copy of the longest machine's rows, ratios
    shifted so that its groups differ) still give a README within 120 lines and 1,200 words."""
    duets, cvp, machines, margin = pub
    tabs = {"duets": duets, "call_vs_predict": cvp}
    longest = max(machines, key=lambda m: len(
        readme_block.compact_lines(_only(tabs, m), margin, "TF 1.14.0")[2]))
    third = {k: pd.concat([v, _only(tabs, longest)[k].assign(machine="third-machine-key-0000")
                           .pipe(_shift, 1.03)], ignore_index=True) for k, v in tabs.items()}
    lines = readme_block.compact_lines(third, margin, "TF 1.14.0")
    entries = compact_entries(lines, machines + ["third-machine-key-0000"])
    assert len({e["who"].partition(" (")[0] for e in entries}) == len(machines) + 1
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


def answer_of(duets, cvp):
    return answer_lines({"duets": duets, "call_vs_predict": cvp}, MARGIN, "TF 1.14.0")


def machines_of(duets):
    return sorted(duets["machine"].unique())


def test_planted_one_machine_reads_true():
    duets, cvp = planted_duets(), planted_cvp()
    lines = answer_of(duets, cvp)
    assert check(markdown_entries(lines), duets, cvp, MARGIN, machines_of(duets)) == []
    text = "\n".join(lines)
    # the words say what the intervals say
    assert "slower by 1–2 %, within ±10 %, in 2 versions" in text, text
    assert "faster by 4 %, within ±10 %, in 1 version (0.96x: TF 2.13.1)" in text
    assert "undecided in 1 version (0.90x: TF 2.11.1)" in text
    assert "(tf.keras to TF 2.13.1, tf_keras from TF 2.16.2)" in text


def test_planted_two_machines_one_line_each():
    duets = pd.concat([planted_duets("intel-xeon-2c-4db20bbf"),
                       planted_duets("amd-epyc-2c-a59bbdd3", shift=1.02)], ignore_index=True)
    cvp = pd.concat([planted_cvp("intel-xeon-2c-4db20bbf"), planted_cvp("amd-epyc-2c-a59bbdd3")],
                    ignore_index=True)
    lines = answer_of(duets, cvp)
    assert "On 2 machines (amd-epyc-2c-a59bbdd3, intel-xeon-2c-4db20bbf)" in lines[0]
    entries = markdown_entries(lines)
    assert len(entries) == 8  # 4 questions x 2 machines
    assert check(entries, duets, cvp, MARGIN, machines_of(duets)) == []
    # a machine's line given the other's numbers is caught
    swapped = [dict(e, who=e["who"].replace("amd-epyc-2c-a59bbdd3", "X").replace(
        "intel-xeon-2c-4db20bbf", "amd-epyc-2c-a59bbdd3").replace("X", "intel-xeon-2c-4db20bbf"))
        for e in entries]
    assert check(swapped, duets, cvp, MARGIN, machines_of(duets))


def test_planted_contradictions_fail():
    duets, cvp = planted_duets(), planted_cvp()
    entries = markdown_entries(answer_of(duets, cvp))
    graph = next(e for e in entries if e["label"] == "Training, TF 1-style graph")
    # a range over the wrong rows: the faster group's range stretched to every row's
    wrong_range = [dict(e, text=e["text"].replace("faster in 2 of 8 versions (0.87–0.88x",
                                                  "faster in 2 of 8 versions (0.87–1.10x"))
                   if e is graph else e for e in entries]
    assert wrong_range != entries
    assert any("span" in p for p in check(wrong_range, duets, cvp, MARGIN, ["m1"]))
    # a mislabelled mode: the graph sentence under the eager Keras 2 label
    mislabelled = [dict(e, label="Training, eager, Keras 2") if e is graph else
                   dict(e, label="Training, TF 1-style graph")
                   if e["label"] == "Training, eager, Keras 2" else e for e in entries]
    assert check(mislabelled, duets, cvp, MARGIN, ["m1"])
    # "as fast" for rows whose interval lies above 1
    as_fast = [dict(e, text=e["text"].replace("slower by 1–2 %, within ±10 %,",
                                              "as fast, within ±10 %,")) if e is graph else e
               for e in entries]
    assert check(as_fast, duets, cvp, MARGIN, ["m1"])
    # the false rule's reading: equivalent rows that leave 1 out counted as slower
    as_slower = [dict(e, text=e["text"].replace("slower by 1–2 %, within ±10 %,", "slower"))
                 if e is graph else e for e in entries]
    assert check(as_slower, duets, cvp, MARGIN, ["m1"])


def compact_of(duets, cvp):
    return readme_block.compact_lines({"duets": duets, "call_vs_predict": cvp}, MARGIN,
                                      "TF 1.14.0")


@pytest.mark.parametrize("n_machines", [1, 2, 3])
def test_compact_block_reads_true(n_machines):
    """The README's compact form (one line per question, one part per machine) states the same
    groups as the long form, each recomputed from the planted rows."""
    keys = ["amd-epyc-2c-a59bbdd3", "intel-xeon-2c-4db20bbf", "m3-key"][:n_machines]
    duets = pd.concat([planted_duets(k, shift=1 + 0.02 * i) for i, k in enumerate(keys)],
                      ignore_index=True)
    cvp = pd.concat([planted_cvp(k) for k in keys], ignore_index=True)
    lines = compact_of(duets, cvp)
    assert len([ln for ln in lines if ln.startswith("- ")]) == 4  # one line per question
    entries = compact_entries(lines, keys)
    assert len(entries) == 4 * n_machines
    assert check(entries, duets, cvp, MARGIN, keys) == []
    if n_machines == 1:
        text = "\n".join(lines)
        assert "2 slower by 1–2 % within ±10 % (1.02–1.01x)" not in text
        assert "; 2 slower by 1–2 % within ±10 % (1.01–1.02x)" in text, text
        assert "1 undecided (0.90x: TF 2.11.1)" in text


def test_compact_contradictions_fail():
    duets, cvp = planted_duets(), planted_cvp()
    lines = compact_of(duets, cvp)
    graph = next(i for i, ln in enumerate(lines) if "TF 1-style graph" in ln)

    def planted(old, new):
        changed = list(lines)
        assert old in changed[graph], changed[graph]
        changed[graph] = changed[graph].replace(old, new)
        return check(compact_entries(changed, ["m1"]), duets, cvp, MARGIN, ["m1"])

    assert any("span" in p for p in planted("faster (0.87–0.88x)", "faster (0.87–1.10x)"))
    assert planted("slower by 1–2 % within ±10 %", "as fast")
    assert planted("slower by 1–2 % within ±10 %", "slower")
    assert planted("1 undecided (0.90x: TF 2.11.1)", "1 faster (0.90x: TF 2.11.1)")


def test_without_keras3_no_keras3_question():
    duets = planted_duets()
    duets = duets[duets["keras"] != "keras3"]
    entries = markdown_entries(answer_of(duets, planted_cvp()))
    assert "Training, eager, Keras 3" not in {e["label"] for e in entries}
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
    """The first screen of several machines says each claim in counts alone (statements.tally):
    every count recomputed from the planted rows; a moved count, a wrong total, a kind left out
    and another machine's counts are caught."""
    from driver.report.questions import questions

    keys = ["amd-epyc-2c-a59bbdd3", "intel-xeon-2c-4db20bbf"]
    duets = pd.concat([planted_duets(k, shift=1 + 0.02 * i) for i, k in enumerate(keys)],
                      ignore_index=True)
    cvp = pd.concat([planted_cvp(k) for k in keys], ignore_index=True)
    # the second machine calls one more graph version slower than the first
    i = duets.index[(duets["machine"] == keys[1]) & (duets["mode"] == "graph")
                    & (duets["verdict"] != "right_faster")][0]
    duets.loc[i, ["verdict", "ratio", "ratio_ci_low", "ratio_ci_high"]] = \
        ["right_faster", 1.3, 1.2, 1.4]
    found = questions({"duets": duets, "call_vs_predict": cvp}, MARGIN, "TF 1.14.0")
    entries = [{"label": q["label"], "who": ln["machine"], "text": ln["tally"], "tally": True}
               for q in found["items"] for ln in q["lines"]]
    assert len(entries) == 8
    assert check(entries, duets, cvp, MARGIN, keys) == []
    graph = entries[0]
    assert re.fullmatch(r"\d+ of 8 \w.*", graph["text"]), graph["text"]

    def planted(new_text, who=None):
        return [dict(e, text=new_text, who=who or e["who"]) if e is graph else e
                for e in entries]

    first, _, rest = graph["text"].partition(" of ")
    assert check(planted(f"{int(first) + 1} of {rest}"), duets, cvp, MARGIN, keys)  # a count
    assert check(planted(graph["text"].replace(" of 8 ", " of 9 ")), duets, cvp, MARGIN, keys)
    assert check(planted(graph["text"].rsplit(", ", 1)[0]), duets, cvp, MARGIN, keys)  # a kind
    other = next(e for e in entries[1:] if e["label"] == graph["label"])
    assert other["text"] != graph["text"]
    assert check(planted(other["text"]), duets, cvp, MARGIN, keys)  # the other machine's counts
