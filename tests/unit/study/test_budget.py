"""The study's time budget (driver/study/budget.py): the extra rounds get what the first rounds
left of it; allocation.budget_s alone without one; nothing when allocation is off."""
from driver.study.budget import extra_budget_s, first_rounds_s


def rec(machine, repeat, wall):
    return {"machine": machine, "repeat": repeat, "provenance": {"cell_wall_s": wall}}


RECORDS = [rec("m", 0, 5.0), rec("m", 1, 6.0), rec("m.twin", 0, 4.0), rec("m", 2, 7.0),
           rec("other", 0, 100.0), {"machine": "m", "repeat": 0, "provenance": {}}]


def test_first_rounds_count_twins_and_only_this_machine():
    assert first_rounds_s(RECORDS, 2, "m") == 15.0
    assert first_rounds_s(RECORDS, 2) == 115.0


def test_the_extra_rounds_get_what_the_first_rounds_left():
    assert extra_budget_s(RECORDS, 2, 120, 60.0, "m") == 45.0
    assert extra_budget_s(RECORDS, 2, 120, 10.0, "m") == 0.0  # a slow machine: no extra rounds
    assert extra_budget_s(RECORDS, 2, 120, None, "m") == 120.0  # no time budget: as before
    assert extra_budget_s(RECORDS, 2, 0, 3600.0, "m") == 0.0  # allocation off


def test_duets_count_against_the_time_budget():
    """The headline's duets run first and their wall time is spent from time_budget_min."""
    from driver.study import budget

    recs = [{"repeat": 0, "machine": "m", "provenance": {"cell_wall_s": 100.0}}]
    duets = [{"machine": "m", "wall_s": 30.0}, {"machine": "m", "wall_s": 20.0},
             {"machine": "other", "wall_s": 1000.0}]
    assert budget.extra_budget_s(recs, 1, 60.0, 300.0, "m", duets=duets) == 150.0
    assert budget.extra_budget_s(recs, 1, 60.0, 300.0, "m") == 200.0
    assert budget.extra_budget_s(recs, 1, 60.0, 120.0, "m", duets=duets) == 0.0
    assert budget.duets_s(duets) == 1050.0


def test_a_budgeted_round_runs_whole_while_it_fits_else_not_at_all():
    from driver.study.budget import next_full_round

    cells = [{"machine": "m", "repeat": 0, "provenance": {"cell_wall_s": 3.0}}
             for _ in range(10)]
    duets = [{"machine": "m", "status": "ok", "wall_s": 6.0,
              "started_utc": f"2026-11-28T10:00:{7 * i:02d}"} for i in range(5)]  # gap 1 s
    slots = [["tf1.14", f"c{i}"] for i in range(10)]
    # spent: 10 cells (3 s + 1 s gap) and 5 duets (6 s + 1 s) = 75 s; the round: 10 x 4 s
    fits = next_full_round(cells, duets, slots, 115.0, "m")
    assert fits["cells"] == slots and fits["spent_s"] == 75.0 and fits["predicted_s"] == 40.0
    short = next_full_round(cells, duets, slots, 114.0, "m")
    assert short["cells"] == [] and short["not_reached"] == {"processes": 10,
                                                             "minutes": 40.0 / 60.0}
    # another machine's files do not count
    other = [dict(c, machine="x") for c in cells]
    assert next_full_round(cells + other, duets, slots, 115.0, "m")["cells"] == slots
