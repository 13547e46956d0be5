"""A study of two machines whose figures differ: every sentence, caption and count the report
builds over the machines' rows is one machine's, recomputed here from that machine's rows only
(issue 52: a ratio of one machine's TF 1.15 time over the other's TF 1.14 time, Intel's rows
against AMD's TensorFlow best, resolutions and counts pooled over machines, tables that list a
version twice with no machine named, cells' release verdicts beside the duets' opposite ones).

Two sources: tables planted here (two machines, a twin key, figures chosen so that any
cross-machine ratio is a different number), and the published two-machine tables under
docs/tables (the republished runs of docs/data), checked against their own rows."""
import glob
import re

import numpy as np
import pandas as pd
import pytest
from helpers import REPO

from driver.report import guidance as guidance_rules
from driver.report import releases, source_claims
from driver.report.bottom_line import bottom_line, duets_count_text
from driver.report.data import ReportData
from driver.report.fmt import machine_names
from driver.report.sections import changes, duets, failures, stability, timing
from driver.stats import verdicts
from driver.tables import bundle

AMD, INTEL = "amd-epyc-2c-aaaa1111", "intel-xeon-2c-bbbb2222"
FACTS = {AMD: {"cpu_model": "AMD EPYC", "cpu_count": 2},
         INTEL: {"cpu_model": "Intel(R) Xeon(R) Processor", "cpu_count": 4}}
NAMES = {AMD: "2-core AMD EPYC", INTEL: "4-core Intel Xeon"}
# eager tf.keras train_on_batch per machine (ms): TF 1.14, TF 1.15, TF 2.0. A cross-machine ratio
# (the old code's: the first TF 1.14 row against every machine's TF 1.15) is a different number.
STEP_MS = {AMD: (7.0, 24.5, 30.0), INTEL: (5.0, 6.0, 9.0)}
VERSIONS = (("tf1.14", "1.14.0"), ("tf1.15", "1.15.5"), ("tf2.0", "2.0.4"))


def _cells() -> pd.DataFrame:
    rows = []
    for machine, steps in STEP_MS.items():
        for key in (machine, machine + ".twin"):  # the A/A twin: its machine's copy, slower
            for (env, version), ms in zip(VERSIONS, steps):
                rows.append({"machine": key, "env": env, "framework": "tensorflow",
                             "framework_version": version, "status": "ok", "keras": "tf.keras",
                             "mode": "eager", "api": "train_on_batch", "input": "numpy",
                             "model": "small", "data": "small", "device": "cpu",
                             "cpu_model": FACTS[machine]["cpu_model"],
                             "median_s": ms / 1e3 * (1.5 if key.endswith(".twin") else 1.0),
                             "cell_id": "small-small.tfkeras.eager.train_on_batch.numpy.cpu"})
    return pd.DataFrame(rows)


def _duet(machine, mode, version, ratio, half, n=4, n_look1=4):
    return {"machine": machine, "env": f"tf{version}", "right_env": "tf1.14", "mode": mode,
            "api": "train_on_batch", "keras": "tf.keras", "input": "numpy",
            "left_framework_version": version, "right_framework_version": "1.14.0",
            "ratio": ratio, "ratio_ci_low": ratio / (1 + half),
            "ratio_ci_high": ratio * (1 + half), "simultaneous_high": ratio * (1 + 2 * half),
            "tost_ci_low": ratio / (1 + half / 2), "tost_ci_high": ratio * (1 + half / 2),
            "verdict": "right_faster" if ratio / (1 + half) > 1 else "inconclusive",
            "n": n, "n_look1": n_look1, "n_failed": 0, "n_flagged": 0, "ci_level": 0.95}


# AMD resolves about ±9 %, Intel about ±3 %; two of Intel's rows were extended to 10 duets
DUETS = pd.DataFrame(
    [_duet(AMD, m, v, r, 0.09) for m in ("graph", "eager")
     for v, r in (("2.0.4", 1.10), ("2.1.4", 1.02), ("2.2.3", 0.97))]
    + [_duet(INTEL, m, v, r, 0.03, n=10 if v == "2.1.4" else 4) for m in ("graph", "eager")
       for v, r in (("2.0.4", 1.12), ("2.1.4", 0.90), ("2.2.3", 0.88))])


def _best(machine, family, left_ms, tf_ms, candidates, tf_version):
    return {"machine": machine, "task": "train", "left_family": family,
            "left_framework": family.lower(), "left_median_s": left_ms / 1e3,
            "right_median_s": tf_ms / 1e3, "ratio": left_ms / tf_ms, "verdict": "inconclusive",
            "right_framework_version": tf_version, "right_mode": "graph",
            "right_api": "train_on_batch", "right_keras": "tf.keras", "ci_level": 0.9999,
            "candidates": candidates}


BEST = pd.DataFrame([_best(AMD, "PyTorch", 6.0, 6.7, 297, "2.20.0"),
                     _best(AMD, "Keras 3 on JAX", 6.1, 6.7, 198, "2.20.0"),
                     _best(INTEL, "PyTorch", 4.6, 4.1, 297, "2.12.1"),
                     _best(INTEL, "Keras 3 on JAX", 3.7, 4.1, 198, "2.12.1")])


def _lines(facts=FACTS):
    tabs = {"duets": DUETS, "frameworks_best": BEST}
    return bottom_line(tabs, _cells(), "tf1.14", facts=facts)["lines"]


def _of(lines, kind):
    return {line["machine"]: line for line in lines if line["what"].startswith(kind)}


def test_every_line_is_one_machines_and_names_it_in_plain_words():
    lines = _lines()
    assert all(line.get("machine") in (AMD, INTEL) for line in lines)
    for line in lines:
        assert line["what"].endswith(f"({NAMES[line['machine']]})"), line["what"]
        assert AMD not in line["what"] and INTEL not in line["what"]
    # without the facts: the CPU model the cells recorded
    assert machine_names([AMD, INTEL], None, _cells()) == {
        AMD: "2-core AMD EPYC", INTEL: "2-core Intel Xeon"}
    assert machine_names([AMD], None, None) == {AMD: AMD}


def test_where_it_starts_divides_each_machines_times_by_its_own_reference():
    """The old line divided every TF 1.x time by the first TF 1.14 row's, of either machine."""
    start = _of(_lines(), "Where it starts")
    assert set(start) == {AMD, INTEL}
    for machine, line in start.items():
        ref, *rest = STEP_MS[machine]
        assert f"TF 1.14.0 {ref:,.1f} ms" in line["text"]
        said = re.findall(r"TF (\S+) ([\d.,]+) ms \(([\d.]+)x\)", line["text"])
        assert said, line["text"]
        for version, ms, ratio in said:
            assert float(ms) in rest, (machine, version, ms)  # this machine's own median
            assert float(ratio) == pytest.approx(float(ms) / ref, abs=0.006)
        # the cross-machine ratios the old code gave are not there
        other = INTEL if machine == AMD else AMD
        for ms in STEP_MS[other][1:]:
            assert f"({ms / ref:.2f}x)" not in line["text"] or ms in rest
    assert "TF 1.15.5 24.5 ms (3.50x)" in start[AMD]["text"]
    assert "TF 1.15.5 6.0 ms (1.20x)" in start[INTEL]["text"]


def test_best_against_best_uses_each_machines_tensorflow_best_and_each_rows_candidates():
    best = _of(_lines(), "Best against best")
    for machine, line in best.items():
        rows = BEST[BEST["machine"] == machine]
        tf_ms = rows["right_median_s"].iloc[0] * 1e3
        assert f"TensorFlow's best {tf_ms:,.1f} ms" in line["text"]
        others = BEST[BEST["machine"] != machine]["right_median_s"].iloc[0] * 1e3
        assert f"TensorFlow's best {others:,.1f} ms" not in line["text"]
        for r in rows.to_dict("records"):
            assert (f"{r['left_family']} {r['left_median_s'] * 1e3:,.1f} ms, {r['ratio']:.2f}x "
                    f"(undecided, 99.99 % interval adjusted for its {r['candidates']} "
                    "candidates)") in line["text"]


def test_resolution_is_per_machine():
    res = _of(_lines(), "Resolution")
    for machine, line in res.items():
        rows = DUETS[DUETS["machine"] == machine]
        half = np.sqrt(rows["ratio_ci_high"] / rows["ratio_ci_low"]) - 1
        assert f"about ±{half.median() * 100:.0f} %" in line["text"]
    assert "±9 %" in res[AMD]["text"] and "±3 %" in res[INTEL]["text"]


def test_duets_count_is_the_rows_range_with_the_extended_rows():
    modes = _of(_lines(), "TF 1-style graph")
    assert "4 duets per version" in modes[AMD]["note"]
    intel = DUETS[(DUETS["machine"] == INTEL) & (DUETS["mode"] == "graph")]
    extended = int((intel["n"] > intel["n_look1"]).sum())
    assert extended == 1
    assert (f"{intel['n'].min()} to {intel['n'].max()} duets per version ({extended} row "
            "extended by the second look)") in modes[INTEL]["note"]
    assert duets_count_text(DUETS) == "4 to 10 duets per version (2 rows extended by the second look)"


def test_one_machine_keeps_its_lines_unnamed():
    one = {"duets": DUETS[DUETS["machine"] == AMD],
           "frameworks_best": BEST[BEST["machine"] == AMD]}
    cells = _cells()
    lines = bottom_line(one, cells[cells["machine"].str.startswith(AMD)], "tf1.14")["lines"]
    assert lines and not any("machine" in line or "AMD" in line["what"] for line in lines)
    assert "TF 1.15.5 24.5 ms (3.50x)" in {ln["what"]: ln for ln in lines}["Where it starts"][
        "text"]


def test_duets_table_and_timing_name_the_machine():
    data = ReportData(cells=_cells(), tabs={"duets": DUETS}, study={"machines": FACTS})
    view = duets.build(data)
    for m in view["modes"]:
        table = m["rows"]
        assert table["columns"][0]["label"] == "machine"
        keys = [(r[0]["text"], r[1]["text"]) for r in table["rows"]]
        assert len(keys) == len(set(keys))  # no version twice without its machine
        assert {k[0] for k in keys} == {AMD, INTEL}
    assert view["count"] == duets_count_text(DUETS)
    tt = timing.time_table(data.ok, {AMD: 1e9, INTEL: 2e9})
    assert tt["table"]["columns"][0]["label"] == "machine"
    firsts = {r[0]["text"] for r in tt["table"]["rows"]}
    assert firsts == {AMD, INTEL, f"{AMD} (A/A twin)", f"{INTEL} (A/A twin)"}
    assert sum(tt["bounds"].values()) == len(data.ok)


def test_failures_name_the_machine():
    cells = _cells()
    bad = cells.iloc[[0, 3]].copy()  # the same cell failed on both machines
    bad["status"], bad["reason"] = "failed", "crashed"
    view = failures.failures_view(pd.concat([cells, bad]), [])
    assert view["several_machines"]
    assert sorted(g["machine"] for g in view["groups"]) == sorted(bad["machine"])


def test_stability_counts_envs_as_envs_and_twins_as_their_machine():
    rng = np.random.default_rng(1)
    samples = {}
    for r in _cells().to_dict("records"):
        s = r["median_s"] * rng.lognormal(0, 0.01, 40)
        samples[(r["machine"], r["env"], r["cell_id"])] = {
            "samples": s, "bounds": [], "axes": r,
            "summary": {"drift": False, "noisy": False, "drift_ratio": 1.0}}
    view = stability.stability_view(_cells(), samples, [e for e, _ in VERSIONS])
    assert view["n_cells"] == len(samples) == 12
    assert view["n_envs"] == len(VERSIONS)
    assert view["n_machines"] == 2
    wheres = [r[0]["text"] for r in view["envs"]["rows"]]
    assert not any(w.endswith(".twin") for w in wheres)
    assert f"tf1.14 on {AMD} (A/A twin)" in wheres


# --- the published two-machine tables ---------------------------------------------------------

TABLES = REPO / "docs" / "tables"


@pytest.fixture(scope="module")
def published():
    if not (TABLES / "cells.csv").exists():
        pytest.skip("no published tables")
    tabs = bundle.read_tables(sorted(glob.glob(str(TABLES / "*.csv"))))
    machines = sorted({m for m in tabs["duets"]["machine"]}) if "duets" in tabs else []
    if len(machines) < 2:
        pytest.skip("the published tables hold fewer than two machines")
    return tabs, machines


def test_published_bottom_line_recomputed_per_machine(published):
    tabs, machines = published
    lines = bottom_line(tabs, tabs["cells"], "tf1.14")["lines"]
    cells = tabs["cells"]
    start = _of(lines, "Where it starts")
    assert set(start) == set(machines)
    for machine, line in start.items():
        mine = cells[(cells["machine"] == machine) & (cells["status"] == "ok")
                     & (cells["keras"] == "tf.keras") & (cells["mode"] == "eager")
                     & (cells["api"] == "train_on_batch") & (cells["input"] == "numpy")
                     & (cells["model"] == "small") & (cells["data"] == "small")]
        ref = float(mine.loc[mine["env"] == "tf1.14", "median_s"].iloc[0]) * 1e3
        for version, ms, ratio in re.findall(r"TF (\S+) ([\d.,]+) ms \(([\d.]+)x\)",
                                             line["text"]):
            own = float(mine.loc[mine["framework_version"] == version, "median_s"].iloc[0]) * 1e3
            assert float(ms) == pytest.approx(own, abs=0.051)
            assert float(ratio) == pytest.approx(own / ref, abs=0.006), (machine, version)
    best = _of(lines, "Best against best")
    fb = tabs["frameworks_best"]
    for machine, line in best.items():
        rows = fb[(fb["machine"] == machine) & (fb["task"] == "train")]
        assert f"TensorFlow's best {rows['right_median_s'].iloc[0] * 1e3:,.1f} ms" in line["text"]
        for r in rows.to_dict("records"):
            if pd.isna(r.get("ci_level")):  # one process a cell: no interval to adjust
                continue
            assert f"adjusted for its {int(r['candidates'])} candidates" in line["text"]
    res = _of(lines, "Resolution")
    for machine, line in res.items():
        heads = tabs["duets"][(tabs["duets"]["machine"] == machine)
                              & (tabs["duets"]["api"] == "train_on_batch")
                              & (tabs["duets"]["env"] != tabs["duets"]["right_env"])]
        half = (np.sqrt(heads["ratio_ci_high"] / heads["ratio_ci_low"]) - 1).dropna()
        lo, hi = half.min() * 100, half.max() * 100
        assert f"{lo:.0f}–{hi:.0f} %" in line["text"], (machine, line["text"])


def test_published_changes_cells_rows_the_duets_answer_are_descriptive(published):
    tabs, machines = published
    dr = tabs["duets_releases"]
    answers = releases.duet_answers(dr)
    groups = releases.release_groups(tabs["adjacent_releases"], [], [], dr)
    shown = 0
    for g in groups:
        assert g["n"] == (g["n_slower"] + g["n_faster"] + g["n_equivalent"]
                          + g["n_undecided"] + g["n_duets"])
        for row in g["table"]["rows"]:
            said = row[5]["text"]
            if said.startswith("descriptive"):
                shown += 1
                assert "the duets answer this: " in said and row[5]["cls"] == ""
    assert shown == sum(g["n_duets"] for g in groups) > 0
    # every duets_releases row that a cells' row measures is stated there with the duets' verdict
    adjacent = tabs["adjacent_releases"]
    for r in dr.to_dict("records"):
        match = adjacent[(adjacent["machine"] == r["machine"]) & (adjacent["mode"] == r["mode"])
                         & (adjacent["api"] == r["api"]) & (adjacent["input"] == r["input"])
                         & (adjacent["left_env"] == r["left_env"])
                         & (adjacent["right_env"] == r["right_env"])
                         & (adjacent["left_keras"] == r["left_keras"])
                         & (adjacent["right_keras"] == r["right_keras"])
                         & (adjacent["model"] == "small") & (adjacent["data"] == "small")]
        key = tuple(str(r[k]) for k in releases.DUET_KEYS)
        if len(match):
            assert answers[key]["text"].startswith(verdicts.verdict_word(r["verdict"], "later"))
    cp = releases.changepoint_view(tabs["changepoints"], [], dr)
    # the machine column leads where the view holds two machines' change points (releases.py:
    # changepoint_view); either way no change point may read twice without its machine
    labels = [c["label"] for c in cp["table"]["columns"]]
    assert "machine" not in labels or labels[0] == "machine", labels
    rows = [(r[0]["text"], r[1]["text"], r[3]["text"]) for r in cp["table"]["rows"]]
    assert len(rows) == len(set(rows))  # no change point twice without its machine
    assert cp["n_duets"] == sum("descriptive" in r[-1]["text"] for r in cp["table"]["rows"]) > 0


def test_published_sections_name_the_machine(published):
    tabs, machines = published
    data = ReportData(cells=tabs["cells"], tabs=tabs)
    view = duets.build(data)
    for m in view["modes"]:
        keys = [(r[0]["text"], r[1]["text"], r[2]["text"]) for r in m["rows"]["rows"]]
        assert len(keys) == len(set(keys)) and {k[0] for k in keys} == set(machines)
    head = tabs["duets"][tabs["duets"]["env"] != tabs["duets"]["right_env"]]
    n = head["n"]
    assert view["count"].startswith(f"{int(n.min())} duets" if n.min() == n.max()
                                    else f"{int(n.min())} to {int(n.max())} duets")
    changed = changes.build(data)
    assert changed["duets"]["table"]["columns"][0]["label"] == "machine"
    rules = source_claims.machine_rules(tabs)
    assert {r["machine"] for r in rules} == set(machines)
    for r in rules:
        assert r["text"].startswith(r["machine"] + ": ")
        # the pairs counted are this machine's: recount them from its rows
        found = re.search(r"of (\d+) pairs", r["text"])
        assert found and int(found.group(1)) == r["n"]
    for block in guidance_rules.rules(tabs["guidance"], tabs["cells"], tabs["duets"]):
        for rule in block["do"] + block["dont"]:
            for exc in rule["exceptions"]:
                if "descriptive" in exc:
                    version = exc.split(":")[0]
                    row = head[(head["machine"] == block["machine"])
                               & (head["left_framework_version"] == version)
                               & (head["mode"] == rule["key"][2])
                               & (head["keras"] == rule["key"][1])]
                    assert len(row) == 1
                    assert f"{row['ratio'].iloc[0]:.2f}x" in exc


def test_published_release_claims_per_machine_with_the_duets_verdict(published):
    """Each claim once per machine, its evidence that machine's rows; a release step the duets
    answer counts with the duets' verdict (TF 2.2 eager: slower in the duets on both machines,
    where the cells left it undecided)."""
    tabs, machines = published
    from driver.report import release_claims

    claims = release_claims.release_claims(tabs)
    assert len(claims) == len(release_claims.CLAIMS) * len(machines)
    dr = tabs["duets_releases"]
    for c in claims:
        assert c["machine"] in machines
        if c["words"].startswith("TF 2.2") and c["status"] != release_claims.NOT_TESTABLE:
            step = dr[(dr["machine"] == c["machine"]) & (dr["mode"] == "eager")
                      & (dr["left_env"] == "tf2.2") & (dr["right_env"] == "tf2.1")]
            if len(step) and step["verdict"].iloc[0] == verdicts.RIGHT_FASTER:
                assert f"({step['ratio'].iloc[0]:.2f}x the time)" in c["evidence"]
                assert c["status"] == "does not hold"
        found = re.search(r"(\d+) comparisons? of", c["evidence"])
        if found:  # counted over this machine's rows only
            minor = c["words"][3:6]
            adj = tabs["adjacent_releases"]
            mine = adj[(adj["machine"] == c["machine"])
                       & adj["left_framework_version"].astype(str).str.startswith(minor + ".")]
            assert int(found.group(1)) <= len(mine) + len(tabs["tf2_vs_tf1"])
