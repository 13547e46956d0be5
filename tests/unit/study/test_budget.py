"""The study's time budget (driver/study/budget.py): the extra rounds get what the first rounds
left of it; allocation.budget_s alone without one; nothing when allocation is off."""
import pytest

from driver.study.budget import extra_budget_s


def rec(machine, repeat, wall):
    return {"machine": machine, "repeat": repeat, "provenance": {"cell_wall_s": wall}}


RECORDS = [rec("m", 0, 5.0), rec("m", 1, 6.0), rec("m.twin", 0, 4.0), rec("m", 2, 7.0),
           rec("other", 0, 100.0), {"machine": "m", "repeat": 0, "provenance": {}}]


def test_the_extra_rounds_get_what_the_first_rounds_left():
    """The first `repeats` rounds count, twins too, and only this machine's (or every one's)."""
    assert extra_budget_s(RECORDS, 2, 120, 60.0, "m") == 45.0
    assert extra_budget_s(RECORDS, 2, 120, 200.0) == 85.0
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


def test_the_extra_rounds_count_the_gaps_as_the_other_planners_do():
    """What the extra rounds get is what `spent_s` leaves (walls and the job gap after each), the
    measure of the second look's and the later rounds' plans: a run whose round 1 found 27 s left
    once gave the allocation 190 s, the gaps left out (intel-xeon-2c-7192096f, 2026-11-29)."""
    from driver.study.budget import extra_budget_s, next_full_round, spent_s

    cells = [{"machine": "m", "repeat": 0, "provenance": {"cell_wall_s": 3.0},
              "started_utc": f"2026-11-28T10:01:{4 * i:02d}"} for i in range(10)]  # gap 1 s
    duets = [{"machine": "m", "status": "ok", "wall_s": 6.0,
              "started_utc": f"2026-11-28T10:00:{7 * i:02d}"} for i in range(5)]
    assert spent_s(cells, duets, "m") == 75.0  # 10 x (3 + 1) + 5 x (6 + 1); walls alone 60
    assert extra_budget_s(cells, 1, 120.0, 100.0, "m", duets=duets) == 25.0
    later = [dict(c, repeat=1) for c in cells]  # the extra rounds' own cells are not counted
    assert extra_budget_s(cells + later, 1, 120.0, 100.0, "m", duets=duets) == 25.0
    left = next_full_round(cells, duets, [["tf1.14", "c"]], 100.0, "m")["left_s"]
    assert left == 25.0


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


def duet(i, wall=6.0, ready=None):
    return {"machine": "m", "status": "ok", "wall_s": wall, "kind": "duet",
            "started_utc": f"2026-11-28T10:00:{7 * i:02d}",  # 1 s after the one before
            "ready": {"left": ready or {}, "right": ready or {}}}


def test_round0_starts_a_process_only_while_it_fits():
    """Round 0 under a budget (budget.round0_gate): a cell process starts when what was spent
    plus one process at this machine's cost ends within the budget; else the file says what was
    spent and the process' cost, and nothing starts."""
    from driver.study.budget import round0_gate

    duets = [duet(i) for i in range(5)]  # 5 x (6 s + 1 s gap) = 35 s
    cells = [{"machine": "m", "repeat": 0, "provenance": {"cell_wall_s": 3.0},
              "started_utc": f"2026-11-28T10:01:{4 * i:02d}"} for i in range(3)]  # 3 x 4 s
    # spent 47 s; a process: the cells' median 3 s + the 1 s gap
    assert round0_gate(cells, duets, 51.0, machine="m") is None
    late = round0_gate(cells, duets, 50.9, machine="m")
    assert late["spent_s"] == 47.0 and late["time_budget_s"] == 50.9
    assert late["cell_process"]["seconds"] == 4.0 and late["cell_process"]["source"] == "cells"
    # another machine's files do not count, twins do
    others = [dict(c, machine="x") for c in cells] + [dict(d, machine="x") for d in duets]
    assert round0_gate(cells + others, duets + others, 51.0, machine="m") is None
    assert round0_gate(cells + others, duets + others, 51.0) is not None
    twins = [dict(c, machine="m.twin") for c in cells]
    assert round0_gate(cells + twins, duets, 51.0, machine="m")["spent_s"] == 59.0
    # before any cell: the duets' workers predict a process (ready 1.5 s + sampling 0.5 + gap)
    ready = {"import_s": 1.0, "build_s": 0.2, "first_call_s": 0.2, "warmup_s": 0.1}
    duets = [duet(i, ready=ready) for i in range(5)]
    assert round0_gate([], duets, 38.0) is None
    first = round0_gate([], duets, 37.9)
    assert first["cell_process"]["source"] == "duets" and first["cell_process"]["seconds"] == 3.0


def test_the_gate_reads_this_machines_files_as_they_are(tmp_path):
    """budget.timing_files: the machine's cells, its twins' and its duets, nothing else; a file
    being written (unreadable) is left out."""
    import json

    from driver.study.budget import timing_files

    def put(rel, doc):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(doc if isinstance(doc, str) else json.dumps(doc))

    put("cells/m/tf2.0/a.r0.json", {"machine": "m", "n": 1})
    put("cells/m.twin/tf2.0/a.r0.json", {"machine": "m.twin", "n": 2})
    put("cells/x/tf2.0/a.r0.json", {"machine": "x", "n": 3})
    put("duets/m/tf2.0/a.r0.json", {"machine": "m", "n": 4})
    put("duets/m/tf2.0/b.r0.json", '{"machine": "m", "n": ')
    cells, duets = timing_files("m", results=str(tmp_path))
    assert sorted(c["n"] for c in cells) == [1, 2] and [d["n"] for d in duets] == [4]


def reserve_records(extra=0):
    """A first look of 4 replicates a row (real duet files, supervise_duet.summarize): tf2.1
    graph open (its replicates spread about 1), tf2.2 graph decided (1.5x), a pair in tf2.21
    open; `extra` second-look replicates of tf2.1 on top."""
    import numpy as np
    from test_redecide import duet as duet_file

    rng = np.random.default_rng(3)
    spread = [1.15, 0.92, 1.1, 0.95, 1.0, 1.05]
    out = []
    for env, ratios, kind in (("tf2.1", spread[:4] + spread[4:4 + extra], "duet"),
                              ("tf2.2", [1.5, 1.52, 1.48, 1.51], "duet"),
                              ("tf2.21", spread[:4], "pair")):
        for rep, ratio in enumerate(ratios):
            rec = duet_file(env, "graph", rep, ratio, rng, windows=6, kind=kind)
            rec.update(wall_s=5.0, started_utc=f"2026-12-02T10:{len(out):02d}:00")
            out.append(rec)
    return out


def test_round0_leaves_the_headlines_second_look_what_it_needs(tmp_path):
    """config duets.before_cells (round 0's order file's `reserve`): the gate holds back the
    second look of the headline's open rows (tier 0: 6 more duets of tf2.1 at its 5 s), not a
    decided row's nor an open pair's (tier 1, only with `paired`); what a row's second look
    has already run is no longer held; the rows are kept in the cache and read from it."""
    import json
    from functools import partial

    from driver.study import budget
    from driver.tables.second_look import reserve_rows

    round0_gate = partial(budget.round0_gate, rows_of=reserve_rows)
    second_look_reserve_s = partial(budget.second_look_reserve_s, rows_of=reserve_rows)
    sys_path_tests()
    reserve = {"tier": 0, "q": 0.05, "level": 0.95, "min_effect": 0.10,
               "alpha_equivalence": 0.05}
    first = reserve_records()
    cache = tmp_path / "m.reserve.json"
    held = second_look_reserve_s(first, reserve, 0.0, str(cache))
    assert held == 6 * 5.0 and cache.exists()
    rows = json.loads(cache.read_text())["rows"]
    assert [(r["env"], r["n_max"]) for r in rows] == [("tf2.1", 10)]
    assert second_look_reserve_s(first, dict(reserve, tier=1), 0.0, None) == 12 * 5.0
    assert second_look_reserve_s(first, dict(reserve, tier=-1), 0.0, None) == 0.0
    assert second_look_reserve_s(first, None, 0.0, None) == 0.0
    # two of its six duets run: four held; the cache answers (a planted row would show)
    planted = json.loads(cache.read_text())
    planted["rows"][0]["each_s"] = 7.0
    cache.write_text(json.dumps(planted))
    assert second_look_reserve_s(reserve_records(extra=2), reserve, 0.0, str(cache)) == 4 * 7.0
    # another first look (a row more) is not the cached one: computed again
    more = first + [dict(first[0], env="tf2.9")]
    assert second_look_reserve_s(more, reserve, 0.0, str(cache)) != 4 * 7.0
    # the gate: 12 duets of 5 s and a cell of 3 s spent (gaps a minute long are pauses, not
    # counted), a cell process 3 s: 66 s, and 30 s held
    cells = [{"machine": "m", "repeat": 0, "provenance": {"cell_wall_s": 3.0},
              "started_utc": "2026-12-02T11:00:00"}]
    cache.unlink()
    assert round0_gate(cells, first, 66.0 + 30.0, machine="m", reserve=reserve,
                       cache=str(cache)) is None
    late = round0_gate(cells, first, 65.9 + 30.0, machine="m", reserve=reserve,
                       cache=str(cache))
    assert late["reserved_s"] == 30.0 and late["spent_s"] == 63.0
    assert round0_gate(cells, first, 65.9 + 30.0, machine="m") is None  # without: it fits
    # a duet's A/A row and a pair's A/A row of the same cell are two rows: counted apart
    aa = dict(first[0], env="tf1.14", reference_cell=first[0]["cell"])
    assert budget.row_key(aa) != budget.row_key(dict(aa, kind="pair"))
    # a reserve with no way to compute its rows is an error, not a silent 0
    with pytest.raises(ValueError, match="rows_of"):
        budget.second_look_reserve_s(first, reserve, 0.0, None)


def sys_path_tests():
    """test_redecide's duet factory: tests/unit/tables on the path."""
    import sys
    from pathlib import Path

    here = str(Path(__file__).resolve().parents[1] / "tables")
    if here not in sys.path:
        sys.path.insert(0, here)
