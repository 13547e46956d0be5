"""The bottom line (driver/report/bottom_line.py): computed from the tables, it says what they
hold and changes when they do; absent tables and columns give fewer lines, never an error."""
import glob

import pandas as pd
import pytest
import yaml
from helpers import REPO, snakemake

from driver.report.bottom_line import bottom_line, previous_tables
from driver.report.fmt import ratio_text
from driver.tables import bundle


def _row(version, ratio, lo, hi, verdict, mode="graph", keras="tf.keras", api="train_on_batch"):
    return {"machine": "m", "model": "small", "data": "small", "mode": mode, "api": api,
            "input": "numpy", "device": "cpu", "left_env": f"tf{version}", "right_env": "tf1.14",
            "left_framework_version": version, "right_framework_version": "1.14.0",
            "left_keras": keras, "right_keras": "tf.keras", "ratio": ratio,
            "ratio_ci_low": lo, "ratio_ci_high": hi, "verdict": verdict,
            "left_cell_id": f"c-{keras}-{mode}", "right_cell_id": f"r-{mode}"}


def _tabs(rows):
    return {"tf2_vs_tf1": pd.DataFrame(rows)}


GRAPH = [_row("2.1.0", 0.81, 0.75, 0.88, "left_faster"),
         _row("2.5.0", 0.89, 0.80, 0.99, "left_faster"),
         _row("2.10.0", 1.00, 0.85, 1.18, "inconclusive")]


def test_mode_line_states_range_typical_and_worst_bound():
    out = bottom_line(_tabs(GRAPH), pd.DataFrame(), "tf1.14")
    (line,) = out["lines"][:1]
    assert line["what"].startswith("TF 1-style graph")
    assert "0.81–1.00x TF 1.14.0's step time" in line["text"]
    assert "typically 11 % faster" in line["text"]
    assert "no version is more than 18 % slower at 95 % each" in line["text"]
    assert line["tally"] == "2 faster, 1 undecided of 3"


def test_a_planted_slow_version_is_named_and_moves_the_bound():
    rows = [*GRAPH, _row("2.15.0", 1.40, 1.25, 1.57, "right_faster")]
    text = bottom_line(_tabs(rows), pd.DataFrame(), "tf1.14")["lines"][0]["text"]
    assert "significantly slower: TF 2.15.0 (1.40x)" in text
    assert "no other version is more than 18 % slower" in text
    assert "0.81–1.40x" in text


def test_keras3_beside_tf_keras_and_tf1_releases():
    rows = [_row("2.16.0", 1.6, 1.5, 1.7, "right_faster", mode="eager", keras="tf_keras"),
            _row("2.16.0", 0.9, 0.85, 0.96, "left_faster", mode="eager", keras="keras3")]
    cells = pd.DataFrame([
        {"env": e, "framework": "tensorflow", "framework_version": v, "status": "ok",
         "keras": "tf.keras", "mode": "eager", "api": "train_on_batch", "input": "numpy",
         "model": "small", "data": "small", "median_s": s}
        for e, v, s in (("tf1.14", "1.14.0", 0.004), ("tf1.15", "1.15.5", 0.012),
                        ("tf2.0", "2.0.4", 0.013))])
    lines = {line["what"]: line["text"] for line in
             bottom_line(_tabs(rows), cells, "tf1.14")["lines"]}
    k3 = lines["Today's default tf.keras (Keras 3)"]
    assert "Keras 3 (TF 2.16.0–2.16.0) 0.90–0.90x" in k3 and "tf_keras 1.60–1.60x" in k3
    start = lines["Where it starts"]
    assert "already in TF 1.15.5" in start and "TF 1.15.5 12.0 ms (3.00x)" in start
    assert "TF 2.0.4 13.0 ms (3.25x)" in start


def test_fit_as_users_call_it_beside_the_one_step_call():
    """fit() over an epoch and the one-step fit(), each against train_on_batch, from their own
    tables; the epoch's steps from the cells; the line changes when the tables do."""
    def fit_row(env, ratio, verdict, api):
        return {**_row("2.21.0", ratio, ratio * 0.9, ratio * 1.1, verdict, api=api),
                "left_env": env, "right_env": env, "left_api": api, "right_api": "train_on_batch",
                "right_keras": "tf.keras"}
    tabs = {**_tabs(GRAPH),
            "fit_epoch_vs_train_on_batch": pd.DataFrame([
                fit_row("tf1.14", 1.05, "inconclusive", "fit_epoch"),
                fit_row("tf2.0", 0.95, "inconclusive", "fit_epoch"),
                fit_row("tf2.21", 1.30, "right_faster", "fit_epoch")]),
            "fit_vs_train_on_batch": pd.DataFrame([
                fit_row("tf1.14", 1.2, "right_faster", "fit"),
                fit_row("tf2.21", 8.0, "right_faster", "fit")])}
    cells = pd.DataFrame([{"api": "fit_epoch", "steps_per_call": 200, "status": "ok"},
                          {"api": "fit", "steps_per_call": 1, "status": "ok"}])
    lines = {line["what"]: line["text"] for line in
             bottom_line(tabs, cells, "tf1.14")["lines"]}
    text = lines["fit() as you call it"]
    assert ("fit() over an epoch (200 steps per call) takes 0.95–1.30x (median 1.05x) "
            "train_on_batch()'s step time in 3 configurations: significantly slower in 1, "
            "faster in 0" in text)
    assert "a one-step fit() call, which pays fit's set-up in every step, takes 1.20–8.00x " \
        "(median 4.60x) (slower in 2, faster in 0 of 2)" in text
    # without the epoch table: said, not dropped; without either: no line
    del tabs["fit_epoch_vs_train_on_batch"]
    text = {line["what"]: line["text"] for line in
            bottom_line(tabs, cells, "tf1.14")["lines"]}["fit() as you call it"]
    assert text.startswith("fit() over an epoch was not measured")
    del tabs["fit_vs_train_on_batch"]
    assert "fit() as you call it" not in {
        line["what"] for line in bottom_line(tabs, cells, "tf1.14")["lines"]}


def test_missing_tables_and_columns_degrade():
    assert bottom_line({}, pd.DataFrame(), "tf1.14")["lines"] == []
    rows = pd.DataFrame(GRAPH).drop(columns=["ratio_ci_low", "ratio_ci_high"])
    lines = bottom_line({"tf2_vs_tf1": rows}, pd.DataFrame(), "tf1.14")["lines"]
    assert len(lines) == 1 and "typically 11 % faster" in lines[0]["text"]
    assert "at 95 %" not in lines[0]["text"]


def test_agreement_with_a_previous_run():
    prev = [dict(r) for r in GRAPH]
    prev[0]["verdict"] = "right_faster"  # a flip
    lines = bottom_line(_tabs(GRAPH), pd.DataFrame(), "tf1.14",
                        previous=_tabs(prev))["lines"]
    assert lines[-1]["text"].startswith("the verdicts of 2 of 3 TF 2.x vs TF 1 rows agree")
    assert "1 flip" in lines[-1]["text"]


def test_one_unit_convention():
    assert ratio_text(17.0, -1600.3) == "17.0x slower (-1,600 %)"
    assert ratio_text(0.8, 25.0) == "1.25x faster (+25 %)"
    assert ratio_text(2.0) == "2.00x slower (-100 %)"
    assert ratio_text(float("nan")) == "–"


def test_published_first_screen_lines():
    folder = REPO / "docs" / "tables"
    if not (folder / "cells.csv").exists():
        pytest.skip("no published tables")
    tabs = bundle.read_tables(sorted(glob.glob(str(folder / "*.csv"))))
    cells = bundle.read_table(folder / "cells.csv")
    lines = bottom_line(tabs, cells, "tf1.14")["lines"]
    whats = [line["what"] for line in lines]
    machines = sorted({m for m in tabs["duets"]["machine"]})
    # one line per machine and kind, the machines in turn, each named in plain words
    assert [w.split(" (")[0] for w in whats[:2 * len(machines)]] == \
        ["TF 1-style graph, train_on_batch()"] * len(machines) + \
        ["Eager mode, train_on_batch()"] * len(machines)
    assert [line.get("machine", machines[0]) for line in lines[:len(machines)]] == machines
    assert 3 * len(machines) <= len(lines) <= 7 * len(machines)


# --- config previous_results: an earlier run's tables for the agreement line ------------------

def test_previous_results_folder_gives_the_agreement_line(tmp_path):
    """A results directory as the workflow writes it (tables/<name>.csv) is read and compared."""
    prev = [dict(r) for r in GRAPH]
    prev[2]["verdict"] = "left_faster"  # undecided here, faster there: disagrees, no flip
    (tmp_path / "tables").mkdir()
    bundle.write_table(pd.DataFrame(prev), tmp_path / "tables" / "tf2_vs_tf1.csv")
    bundle.write_table(pd.DataFrame(GRAPH), tmp_path / "tables" / "versions.csv")
    paths = previous_tables(str(tmp_path))
    assert [p.rsplit("/", 1)[1] for p in paths] == ["tf2_vs_tf1.csv", "versions.csv"]
    assert previous_tables("tables", root=tmp_path) == paths  # the tables folder, relative
    lines = bottom_line(_tabs(GRAPH), pd.DataFrame(), "tf1.14",
                        previous=bundle.read_tables(paths))["lines"]
    assert lines[-1]["what"] == "Another run"
    assert lines[-1]["text"] == ("the verdicts of 2 of 3 TF 2.x vs TF 1 rows agree with the "
                                 "previous run's; 0 flip from faster to slower or back.")
    assert previous_tables(None) is None
    assert all(line["what"] != "Another run"
               for line in bottom_line(_tabs(GRAPH), pd.DataFrame(), "tf1.14")["lines"])


def test_previous_results_refused_naming_the_key(tmp_path):
    with pytest.raises(ValueError, match=r"config error at 'previous_results': .*is not a folder"):
        previous_tables(str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match=r"'previous_results': .*holds no tables/tf2_vs_tf1.csv"):
        previous_tables(str(tmp_path / "empty"))


def test_schema_refuses_a_previous_results_that_is_not_a_path():
    from snakemake.exceptions import WorkflowError
    from snakemake.utils import validate

    schema = str(REPO / "schemas" / "config.schema.yaml")
    config = yaml.safe_load((REPO / "config.yaml").read_text())
    assert config["previous_results"] is None
    validate(dict(config), schema)
    for bad in (3, "", ["results"]):
        with pytest.raises(WorkflowError, match="previous_results"):
            validate(dict(config, previous_results=bad), schema)


def test_workflow_stops_on_a_bad_previous_results_before_any_job(tmp_path):
    """The key is checked when the workflow is read: a dry run already stops, naming it."""
    proc = snakemake(tmp_path, REPO / "config.yaml", "-n", "--config",
                     f"previous_results={tmp_path / 'no-such-run'}", timeout=300)
    assert proc.returncode != 0
    err = proc.stdout + proc.stderr
    assert "config error at 'previous_results'" in err and "no-such-run" in err
    assert not (tmp_path / "results").exists()


def test_duets_decide_the_mode_lines_with_a_bound_for_all_versions_at_once():
    """With a duets table, its rows make the graph and eager sentences: the bound is the
    simultaneous one, Keras 3 is the eager default from TF 2.16 and tf_keras is named beside it."""
    from duetfiles import duet_records

    from driver.tables import duets

    recs = duet_records([("tf2.0", "2.0.4", "graph", "tf.keras", 0.0),
                         ("tf2.9", "2.9.3", "graph", "tf.keras", 0.3),
                         ("tf2.21", "2.21.0", "graph", "tf_keras", 0.0),
                         ("tf2.0", "2.0.4", "eager", "tf.keras", 0.7),
                         ("tf2.21", "2.21.0", "eager", "keras3", 0.05),
                         ("tf2.21", "2.21.0", "eager", "tf_keras", 0.9)], seed=0)
    table = duets.duets_table(recs)
    out = bottom_line({"tf2_vs_tf1": pd.DataFrame(GRAPH), "duets": table}, pd.DataFrame(),
                      "tf1.14")
    graph, eager = out["lines"][:2]
    assert "TF 2.0.4–2.21.0" in graph["text"] and "for all versions at once" in graph["text"]
    assert graph["tally"] == "1 slower, 2 equivalent of 3"
    assert "duets" in graph["note"]
    worst = table[(table["mode"] == "graph") & (table["verdict"] != "right_faster")]
    assert f"{(worst['simultaneous_high'].max() - 1) * 100:,.0f} % slower" in graph["text"]
    assert eager["tally"] == "1 slower, 1 equivalent of 2"  # Keras 3 counted, tf_keras beside
    assert "legacy tf_keras package TF 2.21.0" in eager["text"]
