"""Allocation of extra processes (driver/tables/allocation.py) and twin cells, on synthetic cell files:
settled comparisons get no more processes, open ones do, within the budget."""
import pytest
from test_aggregate import write_processes

from driver.tables import aggregate as tab
from driver.tables import allocation


def study(tmp_path):
    """graph vs eager in two envs: tf2.0 clearly different (settled), tf2.3 too close to call."""
    root = tmp_path / "cells"
    files = [*write_processes(root, "tf2.0", 0.010, mode="graph"),
             *write_processes(root, "tf2.0", 0.020, mode="eager"),
             *write_processes(root, "tf2.3", 0.010, spread=0.2, mode="graph"),
             *write_processes(root, "tf2.3", 0.0104, spread=0.2, mode="eager")]
    result = tab.tabulate(files, "tf1.14", 0.1, 0.95)
    return result


def test_only_open_comparisons_get_processes(tmp_path):
    result = study(tmp_path)
    gve = result["graph_vs_eager"].set_index("env")
    assert gve.at["tf2.0", "verdict"] == "left_faster"
    assert gve.at["tf2.3", "verdict"] == "inconclusive"
    plan = allocation.plan_next_round(result["cells"], result, result["records"], repeats=3,
                                      max_repeats=8, budget_s=1000)
    assert sorted(env for env, _ in plan["cells"]) == ["tf2.3", "tf2.3"]
    assert plan["predicted_s"] == pytest.approx(2 * 9.5)  # write_cell's cell_wall_s


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
    files = [*write_processes(root, "tf2.0", 0.010, mode="graph"),
             *write_processes(root, "tf2.0", 0.020, mode="eager"),
             *write_processes(root, "tf2.3", 0.010, spread=0.2, mode="graph"),
             *write_processes(root, "tf2.3", 0.0104, spread=0.2, mode="eager")]

    def why(repeats, max_repeats, budget_s):
        cells = tab.tabulate(files, "tf1.14", 0.1, 0.95, allocation={
            "repeats": repeats, "max_repeats": max_repeats, "budget_s": budget_s})["cells"]
        return cells.set_index("env")["allocation"]

    assert set(why(2, 3, 100).loc["tf2.0"]) == {"settled"}
    assert set(why(2, 3, 100).loc["tf2.3"]) == {"max_repeats"}  # 3 processes of 3
    assert set(why(3, 8, 5).loc["tf2.3"]) == {"budget"}  # a process costs 9.5 s
    assert set(why(3, 8, 0).loc["tf2.3"]) == {"off"}


def test_twins_are_compared_with_their_originals_only(tmp_path):
    root = tmp_path / "cells"
    files = [*write_processes(root, "tf2.0", 0.010, mode="graph"),
             *write_processes(root, "tf2.0", 0.020, mode="eager"),
             *write_processes(root, "tf2.0", 0.010, mode="graph", machine="xeon-2c.twin")]
    result = tab.tabulate(files, "tf1.14", 0.1, 0.95)
    twins = result["twins"]
    assert len(twins) == 1 and twins.at[0, "verdict"] in ("equivalent", "inconclusive")
    assert not twins.at[0, "significant"]
    # the twin is in no other table
    assert len(result["graph_vs_eager"]) == 1 and result["machines"].empty
