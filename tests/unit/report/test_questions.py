"""The answer in one sentence per question (driver/report/questions.py): each sentence's counts
are the table's verdicts (never the point estimates), the versions too close to call are named,
Keras 3 is answered apart from Keras 2, inference says model(x) against predict() from
call_vs_predict, and a study without duets answers from the cells' tf2_vs_tf1 rows. Also the
run's facts (driver/tables/facts.py: run_facts) and the page's embedded downloads and A/A check
(sections/method.py)."""
from urllib.parse import unquote

import pandas as pd
import pytest

from driver.report.questions import inference, questions, summary
from driver.report.sections import method
from driver.report.sections.verdict import run_line
from driver.tables.facts import run_facts


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
    return {q["id"]: q for q in out["items"]}


def test_counts_are_the_verdicts_not_the_point_estimates():
    out = by_id(questions({"duets": duets_table()}, 0.10, "TF 1.14.0"))
    graph = out["graph"]["text"]
    # graph: TF 2.0.4 slower, 2.1.4 and the tf_keras 2.16.2 row within / faster, 2.11.1 undecided
    assert "as fast as TF 1.14.0 or faster in 3 of 5 versions" in graph, graph
    assert "slower: TF 2.0.4 (1.10x)" in graph and "undecided: TF 2.11.1" in graph
    assert "(0.87–1.10x)" in graph
    s = summary(duets_table().query("mode == 'graph'"))
    assert [len(s[k]) for k in ("slower", "faster", "equivalent", "undecided")] == [1, 2, 1, 1]


def test_keras3_apart_from_keras2_with_the_legacy_rows():
    out = by_id(questions({"duets": duets_table()}, 0.10, "TF 1.14.0"))
    assert out["keras3"]["question"].endswith("(Keras 3, TF 2.16.2–2.21.0)")
    assert "within ±10 % in 2 of 2 versions (0.99–1.03x)" in out["keras3"]["text"]
    # Keras 2: tf.keras up to 2.15 and the legacy tf_keras of the Keras 3 versions, eager only
    k2 = out["keras2"]["text"]
    assert k2.startswith("slower, typically") and "slower in 4 of 4 versions" in k2, k2
    assert out["keras2"]["cls"] == "slower" and out["graph"]["cls"] == "faster"


def test_a_study_without_keras3_has_no_keras3_question():
    table = duets_table()
    table = table[~table["env"].isin(["tf2.16", "tf2.21"])]
    ids = [q["id"] for q in questions({"duets": table}, 0.10, "TF 1.14.0")["items"]]
    assert ids == ["graph", "keras2", "inference"]


def test_inference_from_call_vs_predict():
    inf = inference({"call_vs_predict": CVP})
    assert inf["eager"]["span"] == "6.67–10.87x" and inf["eager"]["call_faster"] == 2
    out = by_id(questions({"duets": duets_table(), "call_vs_predict": CVP}, 0.10, "TF 1.14.0"))
    text = out["inference"]["text"]
    assert text.startswith("call model(x), not predict(): predict() takes 6.67–10.87x as long "
                           "in eager mode (2 of 2 versions)"), text
    assert "1.30x as long in graph mode (1 of 2 versions)" in text  # 2.15 graph: undecided
    # predict() decided faster: no "call model(x)" rule
    flipped = CVP.assign(ratio=1 / CVP["ratio"], ratio_ci_low=1 / CVP["ratio_ci_high"],
                         ratio_ci_high=1 / CVP["ratio_ci_low"],
                         verdict=CVP["verdict"].replace({"left_faster": "right_faster"}))
    text = by_id(questions({"call_vs_predict": flipped}, 0.10, "TF 1"))["inference"]["text"]
    assert "call model(x)" not in text and "predict() is faster in eager mode" in text
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
    assert q["graph"]["text"].startswith("slower, typically 1.30x")
    assert "within ±10 % in 1 of 1" not in q["keras3"]["text"]  # one version: no "of 1"
    assert q["keras3"]["text"].startswith("as fast as TF 1.14.0, within ±10 % in 1 (1.00x)")
    assert "slower in 2 of 2 versions" in q["keras2"]["text"]


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


def test_downloads_carry_the_table_and_aa_in_words():
    df = pd.DataFrame({"env": ["tf2.0", "tf2.1"], "ratio": [1.5, 0.25], "note": ["a,b", "c#d"]})
    link = method.data_link("duets", df)
    assert link["href"].startswith("data:text/csv;charset=utf-8,")
    body = unquote(link["href"].split(",", 1)[1])
    assert pd.read_csv(pd.io.common.StringIO(body)).equals(df)
    assert "#" not in link["href"]  # a raw '#' would end the URL there
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
