"""The answer in one claim per question and machine (driver/report/questions.py and
statements.py): each claim says its answer first, in four verdict words (faster, as fast, slower,
not decided); its counts are the table's verdicts (never the point estimates), each range covers
exactly the rows its count covers, a row within the margin is as fast on either side of 1,
Keras 3 is answered apart from Keras 2, inference says predict() against model(x) for every
version measured, a study without duets answers from the cells' tf2_vs_tf1 rows, and two
machines give a line each. Also the
run's facts (driver/tables/facts.py: run_facts) and the page's embedded downloads and A/A check
(sections/method.py)."""
import base64
import io

import pandas as pd
import pytest

from driver.report.questions import questions
from driver.report.sections import method
from driver.report.sections.verdict import run_line
from driver.tables.facts import run_facts, runs_by_machine


def duet(env, version, mode, keras, ratio, lo, hi, verdict):
    return {"machine": "m", "env": env, "mode": mode, "keras": keras, "api": "train_on_batch",
            "left_env": env, "right_env": "tf1.14", "left_framework_version": version,
            "right_framework_version": "1.14.0", "n": 4, "ratio": ratio, "ratio_ci_low": lo,
            "ratio_ci_high": hi, "verdict": verdict}


def duets_table():
    rows = [
        duet("tf2.0", "2.0.4", "graph", "tf.keras", 1.10, 1.08, 1.12, "right_faster"),
        duet("tf2.1", "2.1.4", "graph", "tf.keras", 1.01, 0.99, 1.03, "equivalent"),
        # a point estimate inside ±10 %, but an interval too wide to tell: undecided, never
        # counted as within the margin
        duet("tf2.11", "2.11.1", "graph", "tf.keras", 0.95, 0.80, 1.12, "inconclusive"),
        duet("tf2.12", "2.12.1", "graph", "tf.keras", 0.87, 0.84, 0.90, "left_faster"),
        duet("tf2.0", "2.0.4", "eager", "tf.keras", 4.18, 4.07, 4.29, "right_faster"),
        duet("tf2.12", "2.12.1", "eager", "tf.keras", 1.55, 1.47, 1.64, "right_faster"),
        duet("tf2.16", "2.16.2", "eager", "keras3", 1.03, 1.00, 1.05, "equivalent"),
        duet("tf2.21", "2.21.0", "eager", "keras3", 0.99, 0.97, 1.01, "equivalent"),
        duet("tf2.16", "2.16.2", "eager", "tf_keras", 1.66, 1.59, 1.73, "right_faster"),
        duet("tf2.21", "2.21.0", "eager", "tf_keras", 1.67, 1.63, 1.70, "right_faster"),
        duet("tf2.16", "2.16.2", "graph", "tf_keras", 0.88, 0.86, 0.89, "left_faster"),
    ]
    return pd.DataFrame(rows)


def cvp(env, version, mode, ratio, lo, hi, verdict):
    return {"env": env, "framework_version": version, "mode": mode, "keras": "tf.keras",
            "left_api": "call", "right_api": "predict", "ratio": ratio, "ratio_ci_low": lo,
            "ratio_ci_high": hi, "verdict": verdict}


CVP = pd.DataFrame([
    cvp("tf1.14", "1.14.0", "eager", 1.13, 1.05, 1.21, "right_faster"),  # TF 1: not counted
    cvp("tf2.0", "2.0.4", "eager", 0.15, 0.14, 0.16, "left_faster"),
    cvp("tf2.15", "2.15.1", "eager", 0.092, 0.086, 0.098, "left_faster"),
    cvp("tf2.0", "2.0.4", "graph", 0.77, 0.72, 0.83, "left_faster"),
    cvp("tf2.15", "2.15.1", "graph", 0.94, 0.88, 1.00, "inconclusive"),
])


def by_id(out):
    """{question id: {"label", "scope", "text", "cls"}} of a one-machine answer."""
    return {q["id"]: {"label": q["label"], "scope": q["lines"][0]["who"],
                      "text": q["lines"][0]["text"], "cls": q["lines"][0]["cls"]}
            for q in out["items"]}


def test_counts_are_the_verdicts_and_each_range_covers_its_count():
    out = by_id(questions({"duets": duets_table()}, 0.10, "TF 1.14.0"))
    graph = out["graph"]
    assert graph["label"] == "Training in the TF 1-style graph"
    assert "tf.function" not in graph["label"]
    assert graph["scope"] == "tf.keras to TF 2.12.1, tf_keras from TF 2.16.2"
    # 2 faster (0.87, 0.88), 1 as fast (2.1.4, its interval holds 1), 1 slower, 1 undecided:
    # every range is over its own group's rows only
    # no word has more than half the rows: the answer is that it depends
    assert graph["text"].startswith("it depends—faster in 2 of 5 versions (0.87–0.88x: "
                                    "TF 2.12.1, TF 2.16.2)"), graph["text"]
    assert "as fast in 1 version (1.01x: TF 2.1.4)" in graph["text"]
    assert "slower in 1 version (1.10x: TF 2.0.4)" in graph["text"]
    assert "not decided in 1 version (0.95x: TF 2.11.1)" in graph["text"]
    s = summary_counts(duets_table().query("mode == 'graph'"))
    assert s == {"faster": 2, "as fast": 1, "slower": 1, "not decided": 1}


def summary_counts(df):
    from driver.report.statements import groups_of, rows_of

    return {g.kind: len(g.rows) for g in groups_of(rows_of(df))}


def test_within_the_margin_is_as_fast_on_either_side():
    """An equivalent row is 'as fast' whichever side of 1 its tested interval lies (four words;
    its exact ratio and interval are in the tables), and the answer says it first."""
    out = by_id(questions({"duets": duets_table()}, 0.10, "TF 1.14.0"))
    assert out["keras3"]["label"] == "Training with Keras 3, eager"
    assert out["keras3"]["scope"] == "TF 2.16.2–2.21.0"
    text = out["keras3"]["text"]
    assert text == "as fast—in 2 of 2 versions (0.99–1.03x: TF 2.16.2, TF 2.21.0).", text
    table = duets_table()
    table.loc[table["keras"] == "keras3", "ratio_ci_low"] = [1.01, 0.97]
    assert by_id(questions({"duets": table}, 0.10, "TF 1.14.0"))["keras3"]["text"] == text
    # Keras 2: tf.keras up to 2.15 and the legacy tf_keras of the Keras 3 versions, eager only
    k2 = out["keras2"]
    assert k2["text"].startswith("slower—in 4 of 4 versions (1.55–4.18x, median "), k2
    assert k2["scope"] == "tf.keras to TF 2.12.1, tf_keras from TF 2.16.2"
    assert k2["cls"] == "slower" and out["graph"]["cls"] == "mixed"


def test_a_study_without_keras3_has_no_keras3_question():
    table = duets_table()
    table = table[~table["env"].isin(["tf2.16", "tf2.21"])]
    ids = [q["id"] for q in questions({"duets": table}, 0.10, "TF 1.14.0")["items"]]
    assert ids == ["graph", "keras2", "inference"]


def test_two_machines_one_line_each():
    table = pd.concat([duets_table(), duets_table().assign(machine="n")])
    table = pd.concat([table, duets_table().assign(machine="m.twin")])  # A/A copy: no machine
    out = questions({"duets": table}, 0.10, "TF 1.14.0")
    assert out["machines"] == ["m", "n"]
    graph = out["items"][0]
    assert [ln["machine"] for ln in graph["lines"]] == ["m", "n"]
    assert graph["lines"][0]["who"].startswith("m (tf.keras to TF 2.12.1")  # no CPU: the key


def test_inference_from_call_vs_predict():
    out = by_id(questions({"duets": duets_table(), "call_vs_predict": CVP}, 0.10, "TF 1.14.0"))
    text = out["inference"]["text"]
    # every version measured, TF 1 included and named: nothing is silently left out
    assert text.startswith("eager: predict() mostly slower—in 2 of 3 versions (6.67–10.87x: "
                           "TF 2.0.4, TF 2.15.1); predict() faster in 1 version (0.88x: "
                           "TF 1.14.0)"), text
    assert "TF 1-style graph: it depends—predict() slower in 1 of 2 versions (1.30x: TF 2.0.4); " \
           "not decided in 1 version (1.06x: TF 2.15.1)" in text
    assert "call model(x), not predict()" not in text  # no advice the guidance may contradict
    missing = by_id(questions({}, 0.10, "TF 1"))["inference"]
    assert missing["cls"] == "nodata" and "not measured" in missing["text"]


def test_without_duets_the_cells_answer():
    tf2 = pd.DataFrame([
        {"machine": "m", "mode": m, "api": "train_on_batch", "input": "numpy",
         "left_env": env, "left_framework_version": v, "left_keras": k, "right_keras": "tf.keras",
         "right_framework_version": "1.14.0", "model": "small", "data": "small", "device": "cpu",
         "left_cell_id": f"{k}.{m}", "right_cell_id": f"tf.keras.{m}", "ratio": r,
         "ratio_ci_low": r * 0.9, "ratio_ci_high": r * 1.1, "verdict": verdict}
        for m, env, v, k, r, verdict in [
            ("graph", "tf2.0", "2.0.4", "tf.keras", 1.3, "right_faster"),
            ("eager", "tf2.0", "2.0.4", "tf.keras", 4.0, "right_faster"),
            ("eager", "tf2.21", "2.21.0", "keras3", 1.0, "equivalent"),
            ("eager", "tf2.21", "2.21.0", "tf_keras", 1.7, "right_faster")]])
    out = questions({"tf2_vs_tf1": tf2}, 0.10, "TF 1.14.0")
    assert out["source"] == "cells"
    q = by_id(out)
    assert q["graph"]["text"].startswith("slower—in 1 version (1.30x: TF 2.0.4)")
    assert q["keras3"]["text"].startswith("as fast—in 1 version (1.00x")
    assert "slower—in 2 of 2 versions" in q["keras2"]["text"]


def test_run_facts_and_line():
    code = {"code": {"commit": "a" * 40, "dirty": False}}
    recs = [{"started_utc": "2026-11-26T10:00:00+00:00", "provenance": {**code,
                                                                       "cell_wall_s": 60}},
            {"started_utc": "2026-11-26T10:30:00+00:00", "provenance": {**code,
                                                                       "cell_wall_s": 120}},
            {"started_utc": "2026-11-26T10:10:00+00:00",
             "provenance": {"code": {"commit": "b" * 40, "dirty": True}}, "timed_wall_s": 5}]
    duets = [{"started_utc": "2026-11-26T09:50:00+00:00", "wall_s": 8.0}]
    run = run_facts(recs, duets)
    assert run["commit"] == "a" * 40 and run["dirty"] is True
    assert run["first_utc"].startswith("2026-11-26T09:50") and run["wall_s"] == 42 * 60.0
    assert run_line(run) == "over 42 min at commit aaaaaaa (with local changes)"
    assert run_line({"wall_s": 3 * 3600 + 60}) == "over 3 h 1 min"
    assert run_facts([], []) == {"commit": "", "dirty": False}


def test_each_machine_has_its_own_run():
    """Two machines measured hours apart at different commits: each machine's run is its own
    commit and span (its twin key's cells with it), never the pooled gap from first to last."""
    def rec(machine, start, commit, wall):
        return {"machine": machine, "started_utc": start,
                "provenance": {"code": {"commit": commit * 40, "dirty": False},
                               "cell_wall_s": wall}}
    recs = [rec("amd", "2026-11-26T18:00:00+00:00", "a", 60),
            rec("amd.twin", "2026-11-26T19:00:00+00:00", "a", 60),
            rec("intel", "2026-11-26T12:00:00+00:00", "b", 60),
            rec("intel", "2026-11-26T12:50:00+00:00", "b", 60)]
    duets = [{"machine": "amd", "started_utc": "2026-11-26T17:50:00+00:00", "wall_s": 8.0}]
    runs = runs_by_machine(recs, duets)
    assert sorted(runs) == ["amd", "intel"]
    assert runs["amd"]["commit"] == "a" * 40 and runs["intel"]["commit"] == "b" * 40
    assert runs["amd"]["wall_s"] == 71 * 60.0 and runs["intel"]["wall_s"] == 51 * 60.0
    assert run_facts(recs, duets)["wall_s"] == 7 * 3600 + 60.0  # the pooled gap


def test_downloads_carry_the_table_and_aa_in_words():
    df = pd.DataFrame({"env": ["tf2.0", "tf2.1"], "ratio": [1.5, 0.25], "note": ["a,b", "c#d"]})
    link = method.data_link("duets", df)
    assert link["href"].startswith("data:application/gzip;base64,")
    assert link["name"] == "duets.csv.gz"
    packed = base64.b64decode(link["href"].split(",", 1)[1])
    assert pd.read_csv(io.BytesIO(packed), compression="gzip").equals(df)
    assert "#" not in link["href"]  # a raw '#' would end the URL there
    assert method.data_link("duets", df)["href"] == link["href"]  # no time stamp inside
    twins = pd.DataFrame({"verdict": ["equivalent"] * 20 + ["inconclusive"] * 3 + ["left_faster"]})
    rate = pd.DataFrame([{"ci_low": 0.001, "ci_high": 0.21, "threshold": 0.03}])
    aa = method.aa_view(twins, rate)
    assert (aa["n"], aa["called"], aa["equivalent"], aa["undecided"]) == (24, 1, 20, 3)
    assert aa["ci"] == "0–21 %"
    assert method.aa_view(pd.DataFrame(), rate) is None


@pytest.mark.parametrize("bad", ["", "not a date"])
def test_run_facts_ignore_unreadable_times(bad):
    run = run_facts([{"started_utc": bad, "provenance": {}}])
    assert "wall_s" not in run and run["commit"] == ""


def test_machines_in_plain_words():
    """A machine is named by its CPU and cores ('2-core AMD EPYC'), from facts.json, else from
    cells.csv's cpu_model and the key's cores; two of one name are told apart; the key stays
    where there is no CPU model."""
    from driver.report.claim_lines import cpus_text
    from driver.report.statements import machine_names

    facts = {"amd-epyc-2c-a59bbdd3": {"cpu_model": "AMD EPYC", "cpu_count": 2}}
    cells = pd.DataFrame({"machine": ["intel-xeon-4c-1", "intel-xeon-4c-2", "x"],
                          "cpu_model": ["Intel(R) Xeon(R) CPU @ 2.20GHz"] * 2 + [None]})
    names = machine_names(cells, facts, ["amd-epyc-2c-a59bbdd3", "intel-xeon-4c-1",
                                         "intel-xeon-4c-2", "x"])
    assert names == {"amd-epyc-2c-a59bbdd3": "2-core AMD EPYC",
                     "intel-xeon-4c-1": "4-core Intel Xeon no. 1",
                     "intel-xeon-4c-2": "4-core Intel Xeon no. 2", "x": "x"}
    assert cpus_text(["a-2c-1", "b-2c-2"]) == "2-core CPUs"
    assert cpus_text(["a-2c-1"]) == "a 2-core CPU"
    assert cpus_text(["a-2c-1", "b-4c-2"]) == "CPUs with 2 and 4 cores"


def test_each_machine_with_its_own_run():
    """The header names each machine with its own run's commit and duration (facts.json's
    `runs`), never the pooled run of several machines (one machine's commit, the gap from the
    first start to the last end)."""
    from types import SimpleNamespace

    from driver.report.sections.verdict import machine_runs

    names = {"a": "2-core AMD EPYC", "i": "2-core Intel Xeon"}
    pooled = {"commit": "e" * 40, "wall_s": 26206.8}
    runs = {"a": {"commit": "f" * 40, "wall_s": 3960.0}, "i": {"commit": "e" * 40,
                                                             "wall_s": 3180.0}}
    got = machine_runs(SimpleNamespace(study={"run": pooled, "runs": runs}), names)
    assert [(r["name"], r["line"]) for r in got] == [
        ("2-core AMD EPYC", "over 1 h 6 min at commit fffffff"),
        ("2-core Intel Xeon", "over 53 min at commit eeeeeee")]
    got = machine_runs(SimpleNamespace(study={"run": pooled}), names)
    assert all(r["line"] == "" for r in got)  # not the pooled 7 h 17 min
    one = machine_runs(SimpleNamespace(study={"run": pooled}), {"a": "2-core AMD EPYC"})
    assert one[0]["line"] == "over 7 h 17 min at commit eeeeeee"


def test_inference_counts_tensorflows_call_against_predict_only():
    """A Keras 3 env on JAX (its framework version is JAX's) and another API pair in the table
    are not TF versions of the inference answer (a quick run once read 'TF 0.10.2–2.21.0')."""
    jax = dict(cvp("keras3-jax", "0.10.2", "eager", 0.5, 0.45, 0.55, "left_faster"))
    other = dict(cvp("tf2.0", "2.0.4", "eager", 0.9, 0.85, 0.95, "left_faster"),
                 right_api="predict_on_batch")
    cells = pd.DataFrame({"env": ["tf1.14", "tf2.0", "tf2.15", "keras3-jax"],
                          "framework": ["tensorflow"] * 3 + ["jax"]})
    table = pd.concat([CVP, pd.DataFrame([jax, other])], ignore_index=True)
    out = by_id(questions({"duets": duets_table(), "call_vs_predict": table, "cells": cells},
                          0.10, "TF 1.14.0"))
    plain = by_id(questions({"duets": duets_table(), "call_vs_predict": CVP}, 0.10,
                            "TF 1.14.0"))
    assert out["inference"]["text"] == plain["inference"]["text"]
    assert "0.10.2" not in out["inference"]["text"]


def test_inference_takes_the_pair_in_one_process_where_one_answers():
    """A pairs row (table call_vs_predict: model(x) left, predict() right, one process) of the
    same env, mode and Keras replaces the cells' row in the answer; the other rows stay."""
    def pair(env, version, mode, ratio, lo, hi, verdict, right_api="predict"):
        cid = "small-small.tfkeras.%s.%%s.numpy.cpu" % mode
        return {"machine": "m", "env": env, "mode": mode, "keras": "tf.keras",
                "left_keras": "tf.keras", "table": "call_vs_predict",
                "left_cell_id": cid % "call", "right_cell_id": cid % right_api,
                "left_framework_version": version, "ratio": ratio, "ratio_ci_low": lo,
                "ratio_ci_high": hi, "verdict": verdict}
    cells = CVP.assign(machine="m")
    pairs = pd.DataFrame([
        pair("tf2.15", "2.15.1", "graph", 0.70, 0.68, 0.72, "left_faster"),  # cells: undecided
        # model(x) against predict_on_batch: not the answer's question, so no effect
        pair("tf2.0", "2.0.4", "graph", 2.0, 1.9, 2.1, "right_faster", "predict_on_batch"),
    ])
    tabs = {"duets": duets_table(), "call_vs_predict": cells}
    plain = by_id(questions(tabs, 0.10, "TF 1.14.0"))["inference"]["text"]
    paired = by_id(questions(dict(tabs, pairs=pairs), 0.10, "TF 1.14.0"))["inference"]["text"]
    assert "not decided in 1 version (1.06x: TF 2.15.1)" in plain, plain
    assert "TF 1-style graph: predict() slower—in 2 of 2 versions (1.30–1.43x: TF 2.0.4, " \
           "TF 2.15.1)" in paired, paired
    assert "not decided" not in paired.split("TF 1-style graph")[1], paired
