"""Duets: the plan (driver/study/duetplan.py) and the worker protocol with real workers
(scripts/run_cell.py --serve on NumPy's matmul cell, which needs no framework)."""
import json
import math
import os
import sys

import pytest

from driver.study import duet, duetplan
from tfspeed import cells as tfcells

SCRIPTS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "scripts")
MATMUL = {"model": "matmul", "data": "small", "keras": "none", "mode": "numpy", "api": "matmul",
          "input": "numpy", "device": "cpu"}
RULE = {"kind": "adaptive", "iterations": 10, "target_rel": 0.01, "min_samples": 5,
        "max_samples": 100, "budget_s": 0.05, "level": 0.95, "warmup_rel": 0.02,
        "warmup_block_s": 0.01, "warmup_max_s": 1, "min_samples_max_s": 5}


def spec(version, flavours, framework="tensorflow"):
    return {"framework": framework, "framework_version": version, "flavours": flavours,
            "build": "cpu"}


SPECS = {"tf1.14": spec("1.14.0", ["keras", "tf.keras", "tf.python.keras"]),
         "tf2.9": spec("2.9.3", ["tf.keras", "tf.python.keras"]),
         "tf2.21": spec("2.21.0", ["keras3", "tf_keras"]),
         "torch2.13": spec("2.13.0", ["none"], "torch"),
         "tf1.15": spec("1.15.5", ["keras", "tf.keras"])}
SETTINGS = {"modes": ["graph", "eager"], "api": "train_on_batch", "replicates": 3}


def test_plan_counts_the_keras_users_get():
    plan = duetplan.plan(SPECS, list(SPECS), "tf1.14", SETTINGS)
    got = sorted((d.env, d.cell["mode"], d.cell["keras"]) for d in plan)
    assert got == [("tf2.21", "eager", "keras3"), ("tf2.21", "eager", "tf_keras"),
                   ("tf2.21", "graph", "tf_keras"), ("tf2.9", "eager", "tf.keras"),
                   ("tf2.9", "graph", "tf.keras")]
    for d in plan:  # the reference side: the reference env's tf.keras in the same mode
        assert d.reference_env == "tf1.14"
        assert d.reference_cell == dict(d.cell, keras="tf.keras")


def test_plan_off_and_without_reference():
    assert duetplan.plan(SPECS, list(SPECS), "tf1.14", dict(SETTINGS, modes=[])) == []
    assert duetplan.plan(SPECS, ["tf2.9"], "tf1.14", SETTINGS) == []


def test_order_runs_replicate_by_replicate_and_priorities_follow_it():
    plan = duetplan.plan(SPECS, list(SPECS), "tf1.14", SETTINGS)
    run = duetplan.ordered(plan, 3, seed=5)
    assert [rep for _, rep in run] == sorted(rep for _, rep in run)
    assert len(run) == 3 * len(plan)
    firsts = [d.cell_id + d.env for d, rep in run if rep == 0]
    seconds = [d.cell_id + d.env for d, rep in run if rep == 1]
    assert sorted(firsts) == sorted(seconds) and firsts != seconds  # each replicate drawn anew
    prio = duetplan.priorities(plan, 3, seed=5)
    ranked = sorted(prio, key=prio.get, reverse=True)
    assert ranked == [(d.env, d.cell_id, rep) for d, rep in run]
    assert min(prio.values()) > 0  # above every cell (cells are below zero)


def side():
    env, _ = duet.cell_env({}, MATMUL, "auto")
    return {"python": sys.executable, "run_cell": os.path.join(SCRIPTS, "run_cell.py"),
            "cell": MATMUL, "rule": RULE, "framework": "tensorflow", "env": env}


def test_real_workers_take_turns_and_rebuild():
    rec, workers = duet.start_pair({"a": side(), "b": side()}, 0.01, 4)
    try:
        assert set(rec["ready"]) == {"a", "b"}
        assert [len(rec["windows"][s]) for s in "ab"] == [4, 4]
        assert all(len(w) >= 5 for s in "ab" for w in rec["windows"][s])
        # each window metered by its worker (the other processes' CPU while it timed)
        assert [len(workers[s].cpu) for s in "ab"] == [4, 4]
        if os.path.exists("/proc/stat"):
            assert all(c["foreign_cpu_share"] is not None for s in "ab" for c in workers[s].cpu)
        assert "first_call_s" in workers["a"].rebuild()
        again, _ = duet.alternate(workers, 2, 0.01)
        assert len(again["b"]) == 2
    finally:
        for w in workers.values():
            w.close()
    assert all(w.proc.returncode == 0 for w in workers.values())


def test_workers_import_side_by_side_and_build_one_after_the_other():
    """concurrent_import: both workers say `loaded` (their import time rides on the ready facts)
    and are then built one after the other; without it there is no import phase. A waiting
    worker builds nothing until told, and quits cleanly when told."""
    rec, workers = duet.start_pair({"a": side(), "b": side()}, 0.01, 2)
    try:
        assert all("import_s" in rec["ready"][s] for s in "ab")
        assert [len(rec["windows"][s]) for s in "ab"] == [2, 2]
    finally:
        for w in workers.values():
            w.close()
    rec, workers = duet.start_pair({"a": side(), "b": side()}, 0.01, 2, concurrent_import=False)
    try:
        assert not any("import_s" in rec["ready"][s] for s in "ab")
    finally:
        for w in workers.values():
            w.close()
    # the protocol: a waiting worker builds nothing until told, and quits cleanly when told
    w = duet.Worker(sys.executable, os.path.join(SCRIPTS, "run_cell.py"), MATMUL, RULE,
                    "tensorflow", side()["env"], timeout_s=60, wait_build=True)
    assert "import_s" in w.expect("loaded")
    w.send("quit")
    assert w.proc.wait(timeout=30) == 0


def test_a_pair_in_one_process_times_each_side_in_the_same_worker():
    """start_together: one process holds both cells; window 1 times the partner (here a
    1000 x 1000 product against a 32-wide one, so the sides cannot be confused), each side
    builds in turn (`first`), every side's CPU meter is its own, and a rebuild builds both."""
    big = dict(side(), cell=dict(MATMUL, data="matmul"))
    for first in ("a", "b"):
        rec, workers = duet.start_together({"a": side(), "b": big}, 0.01, 4, first=first)
        try:
            assert rec["together"] and rec["built_first"] == first
            assert workers["a"].worker is workers["b"] if first == "b" else \
                workers["b"].worker is workers["a"]
            assert set(rec["ready"]) == {"a", "b"}
            assert all("first_call_s" in rec["ready"][s] for s in "ab")
            med = {s: sorted(sum(rec["windows"][s], []))[len(sum(rec["windows"][s], [])) // 2]
                   for s in "ab"}
            assert med["b"] > 5 * med["a"]
            assert [len(workers[s].cpu) for s in "ab"] == [4, 4]
        finally:
            for w in workers.values():
                w.close()
    proc = workers["a"].proc if isinstance(workers["a"], duet.Worker) else workers["b"].proc
    assert proc.returncode == 0
    # a rebuild rebuilds both cells, and the partner's facts come back with it
    w = duet.Worker(sys.executable, os.path.join(SCRIPTS, "run_cell.py"), MATMUL, RULE,
                    "tensorflow", side()["env"], timeout_s=60, partner=big["cell"])
    try:
        assert w.expect("ready")["partner"]["first_call_s"] >= 0
        assert "partner" in w.rebuild()
    finally:
        w.close()


def test_cells_in_one_process_interleave_call_by_call():
    """mix_block: the pair's cells interleaved in blocks of calls (one 'window' a side); extra
    cells share the process and the interleaving, and the pair's samples stay its own (the big
    product on side b, the small one on side a, whatever the extras)."""
    big = dict(side(), cell=dict(MATMUL, data="matmul"))
    rec, workers = duet.start_together({"a": side(), "b": big}, 0.01, 2, mix_block=2,
                                       extra=[MATMUL, dict(MATMUL, data="matmul")])
    try:
        assert [len(rec["windows"][s]) for s in "ab"] == [1, 1]
        a, b = (sorted(rec["windows"][s][0]) for s in "ab")
        assert len(a) >= 4 and len(b) >= 4 and len(a) % 2 == 0  # whole blocks of 2
        assert b[len(b) // 2] > 5 * a[len(a) // 2]
        assert len(workers["a"].worker.cpu_of[0]) == 1 if isinstance(workers["a"], duet.Partner) \
            else len(workers["a"].cpu_of[0]) == 1
        assert len(rec["ready"]["a"]["partners"]) == 3
    finally:
        for w in workers.values():
            w.close()


def test_a_one_cell_worker_answers_mix_instead_of_leaving_the_coordinator_waiting():
    w = duet.Worker(sys.executable, os.path.join(SCRIPTS, "run_cell.py"), MATMUL, RULE,
                    "tensorflow", side()["env"], timeout_s=30)
    try:
        w.expect("ready")
        (own,) = w.mix(0.01, 2)
        assert len(own) >= 4
    finally:
        w.close()


def test_a_pair_in_one_process_needs_one_env_and_one_rule():
    other_rule = dict(side(), rule=dict(RULE, budget_s=0.1))
    with pytest.raises(ValueError, match="'rule'"):
        duet.start_together({"a": side(), "b": other_rule}, 0.01, 2)
    with pytest.raises(ValueError, match="'python'"):
        duet.start_together({"a": side(), "b": dict(side(), python="/other/python")}, 0.01, 2)
    with pytest.raises(ValueError, match="first"):
        duet.start_together({"a": side(), "b": side()}, 0.01, 2, first="c")


def test_a_dying_worker_is_an_error_naming_it_not_a_hang():
    bad = dict(side(), cell=dict(MATMUL, data="no_such_data"))
    with pytest.raises(duet.WorkerError, match="exited"):
        duet.start_pair({"a": side(), "b": bad}, 0.01, 2, timeout_s=60)


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="no /proc")
def test_a_worker_above_the_memory_limit_is_killed_naming_the_limit():
    """cell_memory_mb holds for duets as for cells: a worker whose resident memory passes it is
    killed, and the duet fails with the limit named (the real worker needs far more than 1 MB)."""
    with pytest.raises(duet.WorkerError, match="memory limit of 1 MB .cell_memory_mb."):
        duet.start_pair({"a": side(), "b": side()}, 0.01, 2, timeout_s=60, memory_mb=1)
    rec, workers = duet.start_pair({"a": side(), "b": side()}, 0.01, 2, timeout_s=60,
                                   memory_mb=16000)
    try:
        assert all(w.peak_rss_mb > 1 for w in workers.values())
    finally:
        for w in workers.values():
            w.close()


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="no /proc")
def test_the_other_side_is_policed_while_this_one_imports():
    """expect(..., also=): while one worker imports, the other's memory is checked too (before,
    a side waiting for the other's `loaded` was not watched)."""
    run_cell = os.path.join(SCRIPTS, "run_cell.py")
    a = duet.Worker(sys.executable, run_cell, MATMUL, RULE, "tensorflow", side()["env"],
                    timeout_s=60, wait_build=True)
    b = duet.Worker(sys.executable, run_cell, MATMUL, RULE, "tensorflow", side()["env"],
                    timeout_s=60, wait_build=True, memory_mb=1)
    try:
        with pytest.raises(duet.WorkerError, match="memory limit of 1 MB"):
            a.expect("loaded", also=[b])
        assert b.proc.poll() is not None  # killed
    finally:
        a.kill()
        b.kill()


def test_abba():
    assert [duet.abba(k) for k in range(4)] == [("a", "b"), ("b", "a"), ("b", "a"), ("a", "b")]


def test_cell_env_removes_the_orchestrators_threads_and_hides_gpus():
    env, removed = duet.cell_env({"variables": {"KERAS_BACKEND": "jax"}}, MATMUL, "auto",
                                 base={"OMP_NUM_THREADS": "1", "PATH": "/bin"})
    assert "OMP_NUM_THREADS" not in env and removed == {"OMP_NUM_THREADS": "1"}
    assert env["KERAS_BACKEND"] == "jax" and env["CUDA_VISIBLE_DEVICES"] == ""
    pinned, _ = duet.cell_env({}, MATMUL, 2, base={})
    assert pinned["OMP_NUM_THREADS"] == "2"


def test_a_duets_figures_are_its_sides_medians_over_all_windows():
    """supervise_duet.summarize: each side's median over all its windows' samples, their log
    ratio (TF 2.x side b over the reference side a), and each window pair's own log ratio."""
    import math

    import supervise_duet

    out = supervise_duet.summarize({"a": [[1.0, 3.0], [2.0]], "b": [[4.0], [2.0, 6.0]]})
    assert (out["right_median_s"], out["left_median_s"]) == (2.0, 4.0)
    assert out["log_ratio"] == pytest.approx(math.log(2.0))
    assert out["window_log_ratios"] == pytest.approx([math.log(4.0 / 2.0), math.log(4.0 / 2.0)])


# ---------------------------------------------------------------------------------- pairs

def _cells(env, keras, modes, apis, inputs):
    return [(env, {"model": "small", "data": "small", "keras": k, "mode": m, "api": a,
                   "input": i, "device": "cpu"})
            for k in keras for m in modes for a in apis for i in inputs]


def test_pairs_are_planned_from_the_studys_cells_left_and_right_as_their_table_names_them():
    """plan_pairs: every two cells of one env that differ in one table's axis only (left as the
    table names it), nothing across envs, modes or Keras; the filters; one A/A row per env and
    mode; the key joins both ids and names the table, an A/A row's names none."""
    cells = (_cells("tf1.14", ["tf.keras"], ["graph", "eager"], ["fit", "train_on_batch"],
                    ["numpy", "tfdata"])
             + _cells("tf2.21", ["keras3"], ["eager"], ["fit", "train_on_batch"], ["numpy"]))
    pairs = duetplan.plan_pairs(cells, {"tables": ["fit_vs_train_on_batch", "numpy_vs_tfdata"],
                                        "aa": True})
    rows = [d for d in pairs if d.table]
    assert len(rows) == 4 + 1 + 4  # fit/tob: 4 in TF 1.14, 1 in TF 2.21; numpy/tfdata: 4
    for d in rows:
        assert d.together and d.env == d.reference_env
        axis, sides = duetplan.PAIR_TABLES[d.table]
        assert (d.cell[axis], d.reference_cell[axis]) in sides
        assert {k for k in d.cell if d.cell[k] != d.reference_cell[k]} == {axis}
        assert d.cell_id.split(duetplan.PAIR_SEP) == [
            tfcells.cell_id(d.cell), tfcells.cell_id(d.reference_cell)]
    aa = [d for d in pairs if d.cell == d.reference_cell]
    assert sorted((d.env, d.cell["mode"]) for d in aa) == [
        ("tf1.14", "eager"), ("tf1.14", "graph"), ("tf2.21", "eager")]
    assert all(d.table is None and duetplan.PAIR_SEP in d.cell_id for d in aa)
    assert len({d.cell_id for d in pairs}) == len(pairs)
    only = duetplan.plan_pairs(cells, {"tables": ["numpy_vs_tfdata"], "envs": ["tf2.21"]})
    assert only == []  # TF 2.21's cells here have numpy only
    graph = duetplan.plan_pairs(cells, {"tables": ["fit_vs_train_on_batch"], "modes": ["graph"]})
    assert len(graph) == 2 and {d.cell["mode"] for d in graph} == {"graph"}
    assert duetplan.plan_pairs(cells, {"tables": []}) == []
    # a headline duet keeps its cell's id as its key
    head = duetplan.Duet("tf2.21", cells[-1][1], "tf1.14", cells[0][1])
    assert head.cell_id == tfcells.cell_id(cells[-1][1]) and head.table is None


def _manifest(tmp_path):
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"python_executable": sys.executable, "status": "ok",
                                "framework": "tensorflow", "name": "numpy-only"}))
    return str(path)


BIG = dict(MATMUL, data="matmul")  # the left side of a NumPy duet: 1000 x 1000 against MATMUL


def _numpy_duet(tmp_path, name, design, *args):
    """supervise_duet on two sizes of NumPy's product in the numpy-only env (BIG on the left,
    MATMUL on the right, so the sides cannot be confused), `args` after the machine: the record
    it writes, checked to be ok."""
    sys.path.insert(0, SCRIPTS)
    import supervise_duet
    manifest, out = _manifest(tmp_path), tmp_path / name
    supervise_duet.main([
        "--cell", json.dumps(BIG), "--reference-cell", json.dumps(MATMUL),
        "--rule", json.dumps(RULE), "--manifest", manifest, "--reference-manifest", manifest,
        "--env", "numpy-only", "--reference-env", "numpy-only", "--machine", "m", *args,
        "--design", json.dumps(design), "--lock", str(tmp_path / "lock"), "--out", str(out)])
    rec = json.loads(out.read_text())
    assert rec["status"] == "ok", (rec.get("reason"), rec.get("log_tail"))
    return rec


@pytest.mark.parametrize("replicate", [0, 1])
def test_a_pair_file_comes_from_one_worker_with_the_build_order_alternating(tmp_path, replicate):
    """supervise_duet with a design that says `together`: one worker builds both cells (the
    1000 x 1000 product on the left, the 32-wide one on the right, so the sides cannot be
    confused), the right side first in even replicates; each side's samples from the
    interleaving, the log ratio left / right, the kind `pair`, and the worker left out of the
    other processes named."""
    rec = _numpy_duet(tmp_path, "pair.json", {"replicates": 2, "max_replicates": 2,
                                              "together": True, "mix_block": 2},
                      "--replicate", str(replicate), "--windows", "4", "--window-s", "0.02")
    assert rec["kind"] == "pair" and rec["design"]["together"]
    assert rec["built_first"] == ("right" if replicate == 0 else "left")
    assert len(rec["left_windows_s"]) == len(rec["right_windows_s"]) == 1
    assert rec["log_ratio"] > math.log(5) and rec["left_samples"] > 0
    assert rec["cpu_window"] is not None and rec["foreign_processes"] is not None
    assert rec["status"] == "ok" and rec["wall_s"] > 0


def test_a_duet_of_one_env_runs_two_workers_of_two_cells(tmp_path):
    """The reference across modes (duetplan: duets.graph_vs_eager) is a duet whose two sides are
    one env's two cells: two workers of the same Python, each built from its own cell (as a
    graph and an eager cell are; here two sizes of NumPy's product, so the sides cannot be
    confused); its row has its own family and a key joining both cells' ids."""
    from driver.tables.duets import family, row_id
    rec = _numpy_duet(tmp_path, "duet.json", {"replicates": 4, "max_replicates": 4},
                      "--windows", "2", "--window-s", "0.02")
    assert rec["kind"] == "duet" and len(rec["left_windows_s"]) == 2
    assert rec["log_ratio"] > math.log(5)
    assert family(rec) == "duets_modes"
    assert row_id(rec) == tfcells.cell_id(BIG) + duetplan.PAIR_SEP + tfcells.cell_id(MATMUL)


@pytest.mark.parametrize("build", ["apart", "together"])
def test_a_duets_sides_are_built_as_its_design_says(tmp_path, build):
    """config duets.build: `apart` asks side b to build only after side a is ready; `together`
    asks both at once, so their builds overlap. Each side's ready facts say when its build was
    asked for and came back (build_span_s, seconds from the first ask)."""
    rec = _numpy_duet(tmp_path, "duet.json", {"replicates": 2, "max_replicates": 2,
                                              "build": build},
                      "--windows", "2", "--window-s", "0.02")
    a, b = rec["ready"]["right"]["build_span_s"], rec["ready"]["left"]["build_span_s"]
    assert a[0] == 0.0 and a[1] > 0 and b[1] > b[0], (a, b)
    if build == "apart":
        assert b[0] >= a[1], (a, b)
    else:
        assert b[0] < a[1], (a, b)
    assert rec["design"]["build"] == build


def test_a_duet_with_forked_workers_says_so_per_side(tmp_path):
    """supervise_duet with `workers: fork`: both workers are children of the env's fork helper
    (one env here, so one helper), the file says so per side with the helper's pid and its
    children before each, the helper is left out of the other processes named, and the next
    cell's supervisor would find it and ask it to exit (forkserver.stop_helpers)."""
    from driver.study import forkserver
    rec = _numpy_duet(tmp_path, "duet.json", {"replicates": 2, "max_replicates": 2,
                                              "workers": "fork"},
                      "--windows", "2", "--window-s", "0.02", "--owner-pid", str(os.getpid()))
    left, right = rec["workers"]["left"], rec["workers"]["right"]
    assert left["forked"] and right["forked"], rec["workers"]
    assert left["helper_pid"] == right["helper_pid"]
    assert (right["helper_children_before"], left["helper_children_before"]) == (0, 1)
    assert left["helper_pid"] not in {p["pid"] for p in rec["foreign_processes"]}
    folder = forkserver.helpers_dir(str(tmp_path / "duet.json"), "m")
    assert forkserver.stop_helpers(folder) == [left["helper_pid"]]


def test_a_sides_helper_generation_follows_the_design_the_round_and_the_mode():
    """supervise_duet.generation: renewed envs get "ROUND:MODE" with ROUND the replicate over
    the row's weight (a weight-2 row runs replicates 2r and 2r + 1 in round r); other envs, and
    a design without renew, get none."""
    import supervise_duet
    gen = supervise_duet.generation
    eager = {"mode": "eager"}
    assert gen({"renew": ["tf1.14"]}, "tf1.14", eager, 3) == "3:eager"
    assert gen({"renew": ["tf1.14"], "weight": 2}, "tf1.14", {"mode": "graph"}, 5) == "2:graph"
    assert gen({"renew": ["tf1.14"]}, "tf2.21", eager, 3) is None
    assert gen({"renew": "all"}, "tf2.21", eager, 0) == "0:eager"
    assert gen({"renew": []}, "tf1.14", eager, 3) is None and gen({}, "tf1.14", eager, 3) is None


def test_a_window_starts_with_the_untimed_calls_it_is_told():
    """config duets.settle_calls reaches the worker: `window S W K` makes K untimed calls first
    (the reply says how many); a command without K makes the worker's default, and the plan's
    duet design carries the setting (pairs, which interleave, do not)."""
    w = duet.Worker(sys.executable, os.path.join(SCRIPTS, "run_cell.py"), MATMUL, RULE,
                    "tensorflow", side()["env"], timeout_s=60)
    try:
        w.expect("ready")
        for settle, said in ((5, 5), (0, 0), (None, 3)):
            w.send("window 0.01 0 %d" % settle if settle is not None else "window 0.01")
            reply = w.expect("window")
            assert reply["settle"] == said and len(reply["samples_s"]) >= 5
    finally:
        w.close()
    plan = duetplan.plan(SPECS, list(SPECS), "tf1.14", SETTINGS)
    pairs, looks = {"mix_block": 4}, dict(SETTINGS, max_replicates=6)
    assert duetplan.design(plan[0], dict(looks, settle_calls=2), pairs, "tf1.14")["settle"] == 2
    assert duetplan.design(plan[0], looks, pairs, "tf1.14")["settle"] == 1
