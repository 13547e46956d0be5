"""Allocation of extra processes (driver/tables/allocation.py) and twin cells, on synthetic cell files:
settled comparisons (a CI narrow enough, whatever it says) get no more processes, open ones do,
within the budget; comparisons too wide to settle by max_repeats get none."""
import math

import pytest
from test_aggregate import write_processes

from driver.tables import aggregate as tab
from driver.tables import allocation


def study(tmp_path):
    """graph vs eager in four envs: tf2.0-tf2.2 clearly different with narrow CIs (settled),
    tf2.3's CI wider than half the margin (open)."""
    root = tmp_path / "cells"
    files = [f for env in ("tf2.0", "tf2.1", "tf2.2") for f in (
        *write_processes(root, env, 0.010, spread=0.005, mode="graph"),
        *write_processes(root, env, 0.020, spread=0.005, mode="eager"))]
    files += [*write_processes(root, "tf2.3", 0.010, spread=0.05, mode="graph"),
             *write_processes(root, "tf2.3", 0.0104, spread=0.05, mode="eager",
                              orthogonal=True)]
    result = tab.tabulate(files, "tf1.14", 0.1, 0.95)
    return result


def test_only_open_comparisons_get_processes(tmp_path):
    result = study(tmp_path)
    gve = result["graph_vs_eager"].set_index("env")
    assert gve.at["tf2.0", "verdict"] == "left_faster"
    assert gve.at["tf2.3", "verdict"] == "undecided"
    assert gve.at["tf2.3", "bound_pct"] > 10  # the margin lies inside its equivalence CI
    plan = allocation.plan_next_round(result["cells"], result, result["records"], repeats=3,
                                      max_repeats=8, budget_s=1000)
    # the sides of every open row, in every chased table: tf2.3's cells, and those of tf2.0 and
    # tf2.1, its neighbours in the version order (adjacent_releases rows as wide as tf2.3's);
    # tf2.2, whose rows are all narrow, gets none
    open_sides = {(env, cell) for (_, env, cell) in allocation.open_cells(result)}
    assert set(map(tuple, plan["cells"])) == open_sides
    assert sorted(env for env, _ in plan["cells"]) == ["tf2.0", "tf2.0", "tf2.1", "tf2.1",
                                                       "tf2.3", "tf2.3"]
    assert plan["predicted_s"] == pytest.approx(6 * 9.5)  # write_cell's cell_wall_s


def test_allocation_stops_within_its_budget(tmp_path):
    result = study(tmp_path)
    one = allocation.plan_next_round(result["cells"], result, result["records"], 3, 8, 10.0)
    assert len(one["cells"]) == 1 and one["predicted_s"] <= 10.0
    none = allocation.plan_next_round(result["cells"], result, result["records"], 3, 8, 5.0)
    assert none["cells"] == []
    capped = allocation.plan_next_round(result["cells"], result, result["records"], 3, 3, 1e6)
    assert capped["cells"] == []


def test_cells_say_why_they_got_no_more(tmp_path):
    root = tmp_path / "cells"
    files = [f for env in ("tf2.0", "tf2.1", "tf2.2") for f in (
        *write_processes(root, env, 0.010, spread=0.005, mode="graph"),
        *write_processes(root, env, 0.020, spread=0.005, mode="eager"))]
    files += [*write_processes(root, "tf2.3", 0.010, spread=0.05, mode="graph"),
             *write_processes(root, "tf2.3", 0.0104, spread=0.05, mode="eager",
                              orthogonal=True)]

    def why(repeats, max_repeats, budget_s, files=files, time_budget_s=None):
        cells = tab.tabulate(files, "tf1.14", 0.1, 0.95, allocation={
            "repeats": repeats, "max_repeats": max_repeats, "budget_s": budget_s,
            "time_budget_s": time_budget_s})["cells"]
        return cells.set_index("env")["allocation"]

    assert set(why(2, 3, 100).loc["tf2.2"]) == {"settled"}
    assert set(why(2, 3, 100).loc["tf2.3"]) == {"max_repeats"}  # 3 processes of 3
    assert set(why(3, 8, 5).loc["tf2.3"]) == {"budget"}  # a process costs 9.5 s
    assert set(why(3, 8, 0).loc["tf2.3"]) == {"off"}
    # open, under max_repeats, affordable: at the study's end no round is left for it
    assert set(why(3, 8, 100).loc["tf2.3"]) == {"no_round_left"}
    # allocation on, but a time budget the first rounds used up: the budget, not "off"
    assert set(why(3, 8, 100, time_budget_s=1.0).loc["tf2.3"]) == {"budget"}
    wide = [*files[:18], *write_processes(root, "tf2.3", 0.010, spread=0.4, mode="graph"),
            *write_processes(root, "tf2.3", 0.0104, spread=0.4, mode="eager", orthogonal=True)]
    assert set(why(3, 8, 100, wide).loc["tf2.3"]) == {"too_wide"}


def test_open_score_is_precision_only():
    """Settled when the equivalence CI's half-width is at most half the margin, open when wider,
    whatever the ratio: the same se gives the same answer at 1.0, near the margin and far
    beyond it (a rule that looked at the ratio would be optional stopping)."""
    m = 0.10
    for ratio in (1.0, 1.08, 1.5):
        assert allocation.open_score(ratio, 0.02, 20, 4, m, 0.05, 8) is None  # 0.035 < 0.048
        wide = allocation.open_score(ratio, 0.04, 20, 4, m, 0.05, 8)
        assert wide == pytest.approx(1.7247 * 0.04 / math.log(1.1), rel=1e-3)
        assert allocation.open_score(ratio, 0.2, 20, 4, m, 0.05, 8) == -1.0  # cannot by 8
    assert allocation.open_score(1.0, float("nan"), float("nan"), 1, m, 0.05, 8) == math.inf


def test_twins_are_compared_with_their_originals_only(tmp_path):
    root = tmp_path / "cells"
    files = [*write_processes(root, "tf2.0", 0.010, mode="graph"),
             *write_processes(root, "tf2.0", 0.020, mode="eager"),
             *write_processes(root, "tf2.0", 0.010, mode="graph", machine="xeon-2c.twin")]
    result = tab.tabulate(files, "tf1.14", 0.1, 0.95)
    twins = result["twins"]
    assert len(twins) == 1 and twins.at[0, "verdict"] in ("equivalent", "undecided")
    assert not twins.at[0, "significant"]
    # the twin is in no other table
    assert len(result["graph_vs_eager"]) == 1 and result["machines"].empty
