"""The second look within one budget (driver/tables/second_look.py) and the not_decided table:
the chance a row's second look decides it matches what the duets table's own analysis decides in
simulation (and a one-look chance, the design's sequential levels left out, does not); the rows
closest to a decision per second are taken while they fit; a cell process's cost comes from this
machine's cells or its duets; undecided rows are listed with what would decide them."""
import math

import numpy as np
import pandas as pd
import pytest

from driver.study.budget import cell_process_s, job_gap_s
from driver.tables import duets as duet_tables
from driver.tables import second_look
from driver.tables.not_decided import NOT_REACHED, STILL_OPEN, not_decided_table

CELL = {"model": "small", "data": "small", "keras": "tf.keras", "mode": "graph",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}


def records(x, n1, n2):
    return [{"machine": "m", "env": "tf2.9", "cell": CELL, "reference_env": "tf1.14",
             "reference_cell": CELL, "status": "ok", "replicate": i, "log_ratio": float(v),
             "left_median_s": math.exp(float(v)) * 0.01, "right_median_s": 0.01, "wall_s": 9.0,
             "design": {"replicates": n1, "max_replicates": n2}} for i, v in enumerate(x)]


def decided_rate(mean, sd, n1, n2, look1, draws, seed):
    """How often the duets table's own analysis (one-row family: BH at q) decides a row whose
    look 1 was `look1`, when its remaining replicates come from N(mean, sd)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(draws):
        x = np.concatenate([look1, rng.normal(mean, sd, n2 - n1)])
        row = duet_tables.duets_table(records(x, n1, n2), kind="duets").iloc[0]
        hits += row["verdict"] != "undecided"
    return hits / draws


@pytest.mark.parametrize("mean", [0.0, 0.08, 0.12])
def test_decide_chance_matches_the_tables_own_decisions(mean):
    n1, n2, sd = 4, 10, 0.12
    look1 = mean + sd * np.array([-1.1, -0.3, 0.4, 1.0])  # mean `mean`, sd about `sd`
    m1, sd1 = float(np.mean(look1)), float(np.std(look1, ddof=1))
    chance = second_look.decide_chance(m1, sd1, n1, n2, 0.05, 0.10, 0.05)
    rate = decided_rate(m1, sd1, n1, n2, look1, 200, seed=int(mean * 100))
    assert abs(chance - rate) < 0.12, (chance, rate)
    # a planted miscalibration: a planner that takes the spread for half what it is (wrong by
    # 2x in sd) promises a decision the table's own analysis does not deliver
    half = second_look.decide_chance(m1, sd1 / 2, n1, n2, 0.05, 0.10, 0.05)
    assert abs(half - rate) > 0.12, (half, rate)


def test_decide_chance_is_lowest_between_the_boundaries():
    # between the difference test's half-width and the margin less the equivalence test's
    between = second_look.decide_chance(0.06, 0.12, 4, 10, 0.05, 0.10, 0.05)
    far_out = second_look.decide_chance(0.40, 0.05, 4, 10, 0.05, 0.10, 0.05)
    far_in = second_look.decide_chance(0.0, 0.02, 4, 10, 0.05, 0.10, 0.05)
    assert between < 0.5 < 0.95 < min(far_out, far_in)
    assert math.isnan(second_look.decide_chance(0.1, 0.0, 4, 10, 0.05, 0.10, 0.05))


def test_choose_takes_chance_per_second_while_it_fits():
    rows = [{"env": "a", "cell_id": "x", "chance": 0.9, "cost_s": 60.0},   # 0.015 /s
            {"env": "b", "cell_id": "x", "chance": 0.5, "cost_s": 20.0},   # 0.025 /s
            {"env": "c", "cell_id": "x", "chance": 0.1, "cost_s": 10.0},   # 0.010 /s
            {"env": "d", "cell_id": "x", "chance": math.nan, "cost_s": 5.0}]
    costs = {(r["env"], r["cell_id"]): r["cost_s"] for r in rows}
    items = [dict(r, sides=[[r["env"], r["cell_id"]]]) for r in rows]
    chosen, left_out, _ = second_look.choose_items(items, costs, 75.0)
    assert [r["env"] for r in chosen] == ["b", "c", "d"]  # a does not fit after b: the rest do
    assert [r["env"] for r in left_out] == ["a"]
    assert sum(r["cost_s"] for r in chosen) <= 75.0
    everything, none, _ = second_look.choose_items(items, costs, 1e9)
    assert len(everything) == 4 and not none
    nothing, all_out, _ = second_look.choose_items(items, costs, 0.0)
    assert not nothing and len(all_out) == 4


def test_cell_process_cost_from_cells_else_from_duets():
    duets = [{"status": "ok", "wall_s": 8.0, "started_utc": f"2026-11-28T10:00:{10 * i:02d}",
              "ready": {s: {"import_s": 2.0, "build_s": 0.1, "first_call_s": 0.3,
                            "warmup_s": 0.4} for s in ("left", "right")}} for i in range(5)]
    # a pause (a checkpoint, the end of one run and a continuation's start) is not a job's gap
    paused = duets + [dict(duets[0], started_utc="2026-11-28T10:01:20")]
    assert job_gap_s(paused) == pytest.approx(2.0)
    from_duets = cell_process_s(duets, [], sampling_s=0.5)
    assert from_duets["source"] == "duets"
    assert from_duets["job_gap_s"] == pytest.approx(2.0)  # starts 10 s apart, 8 s each
    assert from_duets["seconds"] == pytest.approx(2.8 + 0.5 + 2.0)
    cells = [{"provenance": {"cell_wall_s": w}} for w in (3.0, 4.0, 5.0)]
    from_cells = cell_process_s(duets, cells)
    assert from_cells["source"] == "cells" and from_cells["seconds"] == pytest.approx(4.0 + 2.0)
    # a forked worker's import was paid by its helper: counted, as a cell pays it each time
    forked = [dict(d, ready={s: {"build_s": 0.1, "first_call_s": 0.3, "warmup_s": 0.4}
                             for s in ("left", "right")},
                   workers={s: {"forked": True, "helper_import_s": 2.0}
                            for s in ("left", "right")}) for d in duets]
    assert cell_process_s(forked, [])["seconds"] == pytest.approx(5.3)


def table_row(env, verdict, n, n_max, log_ratio, sd):
    return {"machine": "m", "env": env, "cell_id": "c", "table": None, "verdict": verdict,
            "n": n, "n_max": n_max, "log_ratio": log_ratio, "sd_log": sd,
            "ratio": math.exp(log_ratio), "wall_s": 6.0}


def test_not_decided_lists_not_reached_and_open_rows_with_what_would_decide_them():
    duets = pd.DataFrame([table_row("tf2.1", "undecided", 4, 10, 0.12, 0.08),
                          table_row("tf2.2", "undecided", 10, 10, 0.12, 0.08),
                          table_row("tf2.3", "left_faster", 10, 10, -0.3, 0.05)])
    plans = {"m": {"not_reached": [{"env": "tf2.1", "cell_id": "c", "cost_s": 36.0,
                                    "chance": 0.4}],
                   "budget": {"time_budget_s": 3000.0},
                   "rounds": [{"round": 1, "processes": 159, "minutes": 9.3}]}}
    table = not_decided_table({"duets": duets}, plans).set_index("env")
    cells = table[table.paired_table == "cells"]
    assert list(cells.cell_id) == ["round 1"] and cells.replicates.iloc[0] == 159
    table = table[table.paired_table != "cells"]
    assert list(table.index) == ["tf2.1", "tf2.2"]  # the decided row is not listed
    assert table.loc["tf2.1", "state"] == NOT_REACHED
    assert table.loc["tf2.1", "replicates"] == 6 and table.loc["tf2.1", "minutes"] == 0.6
    # the budget (50 min) plus every not-reached row's minutes (0.6 + 9.3), rounded up
    assert table.loc["tf2.1", "command"] == 'make study ARGS="--config time_budget_min=60"'
    assert cells.command.iloc[0] == table.loc["tf2.1", "command"]
    assert table.loc["tf2.2", "state"] == STILL_OPEN
    # 0.12 is outside the margin (log 1.1 = 0.095): the difference test needs 1.96 sd / 0.12
    need = math.ceil((1.959964 * 0.08 / 0.12) ** 2)
    assert table.loc["tf2.2", "replicates"] == max(0, need - 10)


def test_round0_cells_not_reached_are_one_round_of_the_plans(tmp_path, monkeypatch):
    """Round 0's processes the budget did not reach (cell records: skipped, not_reached, with
    the cost of the process not started; twins too) are listed as the cells' round 0, their
    minutes summed into the continuation; a finished or failed cell, another machine's, or a
    later round's (planned whole, never cut) is not."""
    from driver.tables.not_decided import read_plans

    monkeypatch.chdir(tmp_path)  # no plan files here
    late = {"status": "skipped", "not_reached": True, "repeat": 0,
            "time_budget": {"cell_process": {"seconds": 6.0}}}
    records = [dict(late, machine="m"), dict(late, machine="m.twin"),
               {"status": "ok", "repeat": 0, "machine": "m"},
               {"status": "failed", "repeat": 0, "machine": "m"},
               dict(late, machine="x"), dict(late, machine="m", repeat=1)]
    plans = read_plans(["m", "other"], records)
    assert plans == {"m": {"rounds": [{"round": 0, "processes": 2, "minutes": 0.2}]}}
    plans["m"]["budget"] = {"time_budget_s": 3000.0}
    table = not_decided_table({}, plans)
    assert list(table.cell_id) == ["round 0"] and list(table.replicates) == [2]
    assert list(table.command) == ['make study ARGS="--config time_budget_min=51"']


def test_a_release_brings_both_its_rows_and_a_shared_row_is_paid_once():
    costs = {("tf2.1", "c"): 30.0, ("tf2.2", "c"): 30.0, ("tf2.3", "c"): 30.0}
    own = {"env": "tf2.2", "cell_id": "c", "family": "duets", "chance": 0.9,
           "sides": [["tf2.2", "c"]]}
    rel = [{"env": "tf2.2", "cell_id": "c", "against": "tf2.1", "family": "duets_releases",
            "chance": 0.6, "sides": [["tf2.2", "c"], ["tf2.1", "c"]]},
           {"env": "tf2.3", "cell_id": "c", "against": "tf2.2", "family": "duets_releases",
            "chance": 0.2, "sides": [["tf2.3", "c"], ["tf2.2", "c"]]}]
    chosen, out, keys = second_look.choose_items([own] + rel, costs, 60.0)
    # tf2.2's own row first (0.9 / 30), then the release against tf2.1 costs only tf2.1's 30 s
    assert [(c["env"], c.get("against"), c["cost_s"]) for c in chosen] == [
        ("tf2.2", None, 30.0), ("tf2.2", "tf2.1", 30.0)]
    assert keys == [["tf2.1", "c"], ["tf2.2", "c"]]
    assert [(o["env"], o["cost_s"]) for o in out] == [("tf2.3", 30.0)]  # what is left to pay
    # a release whose rows are both extended anyway comes free
    chosen, out, _ = second_look.choose_items(
        [own, dict(own, env="tf2.1", sides=[["tf2.1", "c"]])] + rel[:1], costs, 60.0)
    assert not out and chosen[-1]["family"] == "duets_releases" and chosen[-1]["cost_s"] == 0


def release_records(env, version, x, keras="tf.keras", mode="eager"):
    cell = dict(CELL, keras=keras, mode=mode)
    return [{"machine": "m", "env": env, "cell": cell, "reference_env": "tf1.14",
             "reference_cell": dict(cell, keras="tf.keras"), "status": "ok", "replicate": i,
             "log_ratio": float(v), "left_median_s": math.exp(float(v)) * 0.01,
             "right_median_s": 0.01, "wall_s": 6.0, "left_framework_version": version,
             "right_framework_version": "1.14.0",
             "design": {"replicates": 4, "max_replicates": 10}} for i, v in enumerate(x)]


def test_release_items_are_the_open_releases_between_decided_rows():
    rng = np.random.default_rng(3)
    recs = (release_records("tf2.1", "2.1.0", 0.50 + 0.05 * rng.standard_normal(4))
            + release_records("tf2.2", "2.2.0", 0.55 + 0.05 * rng.standard_normal(4))
            # tf2.3 decided against tf2.2 (much slower) at look 1
            + release_records("tf2.3", "2.3.0", 1.50 + 0.01 * rng.standard_normal(4)))
    table = duet_tables.duets_table(recs, kind="duets")
    assert set(table["verdict"]) == {"right_faster"}  # every row decided against TF 1.14
    items = second_look.release_items(table)
    assert [(i["env"], i["against"]) for i in items] == [("tf2.2", "tf2.1")]
    item = items[0]
    ids = dict(zip(table["env"], table["cell_id"]))
    assert item["sides"] == [["tf2.2", ids["tf2.2"]], ["tf2.1", ids["tf2.1"]]]
    assert 0 < item["chance"] < 1 and item["n"] == 4 and item["n_max"] == 10


def test_not_decided_lists_open_releases_and_pays_their_rows_once():
    duets = pd.DataFrame([table_row("tf2.1", "undecided", 4, 10, 0.12, 0.08)])
    releases = pd.DataFrame([
        {"machine": "m", "mode": "eager", "left_env": "tf2.1", "right_env": "tf2.0",
         "left_n": 4, "right_n": 4, "ratio": 1.05, "log_ratio": math.log(1.05), "se_log": 0.04,
         "verdict": "undecided"},
        {"machine": "m", "mode": "eager", "left_env": "tf2.2", "right_env": "tf2.1",
         "left_n": 10, "right_n": 10, "ratio": 1.07, "log_ratio": math.log(1.07),
         "se_log": 0.03, "verdict": "undecided"},
        {"machine": "m", "mode": "eager", "left_env": "tf2.3", "right_env": "tf2.2",
         "left_n": 4, "right_n": 4, "ratio": 1.5, "log_ratio": math.log(1.5), "se_log": 0.03,
         "verdict": "left_faster"}])
    plans = {"m": {"not_reached": [
        {"env": "tf2.1", "cell_id": "c", "cost_s": 36.0, "chance": 0.4, "family": "duets"},
        {"env": "tf2.1", "cell_id": "c", "against": "tf2.0", "mode": "eager",
         "family": "duets_releases", "cost_s": 72.0, "chance": 0.3, "n_max": 10,
         "sides": [["tf2.1", "c"], ["tf2.0", "c"]]}],
        "budget": {"time_budget_s": 3000.0}}}
    table = not_decided_table({"duets": duets, "duets_releases": releases}, plans)
    rel = table[table.paired_table == "duets_releases"].set_index("env")
    assert list(rel.index) == ["tf2.1", "tf2.2"]  # the decided release is not listed
    assert rel.loc["tf2.1", "state"] == NOT_REACHED and rel.loc["tf2.1", "replicates"] == 6
    assert rel.loc["tf2.1", "minutes"] == pytest.approx(1.2)
    assert rel.loc["tf2.2", "state"] == STILL_OPEN
    # about how many replicates per row: inside the margin, the equivalence test's one-sided
    # normal quantile; the derived row's spread of one replicate is sqrt(10) se
    sd = 0.03 * math.sqrt(10)
    need = math.ceil((1.644854 * sd / (math.log(1.1) - math.log(1.07))) ** 2)
    assert rel.loc["tf2.2", "replicates"] == need - 10
    # the release's 1.2 min is not added again: its tf2.1 row is listed (0.6 min): 50 + 0.6
    assert set(table["command"].dropna()) == {'make study ARGS="--config time_budget_min=51"'}


def test_the_open_rows_come_before_the_releases():
    """The study's priority: a release closer to a decision per second than an open headline row
    still waits for the rows; it gets what they leave, its rows already chosen costing nothing."""
    costs = {("tf2.1", "c"): 30.0, ("tf2.2", "c"): 30.0, ("tf2.3", "c"): 30.0}
    rows = [{"env": "tf2.3", "cell_id": "c", "family": "duets", "chance": 0.1}]
    releases = [{"env": "tf2.2", "cell_id": "c", "against": "tf2.1", "family": "duets_releases",
                 "chance": 0.99, "sides": [["tf2.2", "c"], ["tf2.1", "c"]]},
                {"env": "tf2.3", "cell_id": "c", "against": "tf2.2", "family": "duets_releases",
                 "chance": 0.5, "sides": [["tf2.3", "c"], ["tf2.2", "c"]]}]
    chosen, out, keys = second_look.plan_second_look(rows, releases, costs, 60.0)
    assert [(c["env"], c.get("against"), c["cost_s"]) for c in chosen] == [
        ("tf2.3", None, 30.0), ("tf2.3", "tf2.2", 30.0)]  # tf2.3 paid: its release costs 30 s
    assert keys == [["tf2.2", "c"], ["tf2.3", "c"]]
    assert [(o["env"], o["cost_s"]) for o in out] == [("tf2.2", 30.0)]
    # alone, the better release would have gone first (and the row not at all)
    greedy, _, _ = second_look.choose_items(
        [dict(rows[0], sides=[["tf2.3", "c"]])] + releases, costs, 60.0)
    assert greedy[0]["against"] == "tf2.1"


def test_a_release_whose_rows_stopped_short_is_not_reached_without_a_plan_item():
    """A run planned before releases were items (or whose plan lost them): a release whose rows
    stopped at their first look is `not reached`, its minutes its rows' missing duets at their
    own duet time, never "open after the second look"."""
    axes = {"mode": "eager", "api": "train_on_batch", "input": "numpy", "keras": "tf.keras"}
    duets = pd.DataFrame([dict(table_row("tf2.1", "right_faster", 4, 10, 0.5, 0.05), **axes),
                          dict(table_row("tf2.2", "right_faster", 10, 10, 0.5, 0.05), **axes,
                               cell_id="d")])
    releases = pd.DataFrame([{"machine": "m", "mode": "eager", "api": "train_on_batch",
                              "input": "numpy", "left_keras": "tf.keras",
                              "right_keras": "tf.keras", "left_env": "tf2.2",
                              "right_env": "tf2.1", "left_n": 10, "right_n": 4, "ratio": 1.05,
                              "log_ratio": math.log(1.05), "se_log": 0.04,
                              "verdict": "undecided"}])
    plans = {"m": {"not_reached": [], "budget": {"time_budget_s": 3000.0}}}
    table = not_decided_table({"duets": duets, "duets_releases": releases}, plans)
    row = table[table.paired_table == "duets_releases"].iloc[0]
    assert row["state"] == NOT_REACHED and row["replicates"] == 6
    assert row["minutes"] == pytest.approx(6 * 6.0 / 60)  # tf2.1's six duets of 6 s
    # its minutes enter the continuation: no row of its own is listed (50 + 0.6 min)
    assert row["command"] == 'make study ARGS="--config time_budget_min=51"'


def test_the_headline_rows_come_before_the_pairs_and_the_pairs_before_releases_and_frameworks():
    """The issue's order of priority, tier by tier (second_look.TIERS): a pair closer to a
    decision per second than an open headline row waits for it; a release waits for the pairs;
    another framework's row waits for the releases. Each tier gets what the tiers before it
    left; the plain greedy over everything would take the pair first and leave the headline
    row out."""
    costs = {("tf2.1", "c"): 30.0, ("tf2.2", "c"): 30.0, ("tf2.21", "p"): 20.0,
             ("tf2.21", "f"): 10.0}
    rows = [{"env": "tf2.21", "cell_id": "f", "family": "duets_frameworks", "chance": 0.99},
            {"env": "tf2.21", "cell_id": "p", "family": "pairs", "chance": 0.9},
            {"env": "tf2.2", "cell_id": "c", "family": "duets", "chance": 0.3}]
    releases = [{"env": "tf2.2", "cell_id": "c", "against": "tf2.1", "family": "duets_releases",
                 "chance": 0.99, "sides": [["tf2.2", "c"], ["tf2.1", "c"]]}]
    chosen, out, keys = second_look.plan_second_look(rows, releases, costs, 50.0)
    assert [(c["family"], c["cost_s"]) for c in chosen] == [("duets", 30.0), ("pairs", 20.0)]
    assert sorted(o["family"] for o in out) == ["duets_frameworks", "duets_releases"]
    assert keys == [["tf2.2", "c"], ["tf2.21", "p"]]
    # with room for everything, every tier is reached, the release paying only its tf2.1 row
    chosen, out, _ = second_look.plan_second_look(rows, releases, costs, 1e9)
    assert [c["family"] for c in chosen] == ["duets", "pairs", "duets_releases",
                                             "duets_frameworks"]
    assert chosen[2]["cost_s"] == 30.0 and not out
    # the plain greedy (one tier) takes the frameworks row and the pair first: the planted
    # planner this test exists to catch
    greedy, left_out, _ = second_look.choose_items(
        [dict(r, sides=[[r["env"], r["cell_id"]]]) for r in rows], costs, 50.0)
    assert "duets" in {o["family"] for o in left_out}
    assert second_look.tier({"family": "something_new"}) > max(second_look.TIERS.values())
