"""A duet's workers forked from a fork helper (scripts/run_cell.py --helper, driver/study/
forkserver.py), with the real TF 1.14 env the study builds (.envs/tf1.14-*; skipped where it is
not built): a child builds the small cell, times windows and quits as a fresh worker does; the
helper counts its children, sleeps without CPU, survives a child's crash, and exits when idle,
when its owner is gone and when asked; a helper that cannot start leaves a fresh worker that
says why."""
import glob
import os
import signal
import subprocess
import sys
import time

import pytest

from driver.study import duet, forkserver

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RUN_CELL = os.path.join(REPO, "scripts", "run_cell.py")
PYTHONS = sorted(glob.glob(os.path.join(REPO, ".envs", "tf1.14-*", "bin", "python")))
CELL = {"model": "small", "data": "small", "keras": "tf.keras", "mode": "graph",
        "api": "train_on_batch", "input": "numpy", "device": "cpu"}
RULE = {"kind": "fixed", "iterations": 20, "target_rel": 0.01, "min_samples": 3,
        "max_samples": 20, "budget_s": 0.5, "level": 0.95, "warmup_rel": 0.02,
        "warmup_block_s": 0.05, "warmup_max_s": 1, "min_samples_max_s": 5}

pytestmark = pytest.mark.skipif(not PYTHONS, reason="the TF 1.14 env is not built (.envs)")


def side():
    env, _ = duet.cell_env({"variables": {}}, CELL, "auto")
    return {"python": PYTHONS[-1], "run_cell": RUN_CELL, "cell": CELL, "rule": RULE,
            "framework": "tensorflow", "env": env}


def worker(spawner, wait_build=True):
    s = side()
    return duet.Worker(s["python"], s["run_cell"], s["cell"], s["rule"], s["framework"],
                       s["env"], timeout_s=120, wait_build=wait_build, spawn=spawner)


def gone(pid, within=10.0):
    end = time.monotonic() + within
    while time.monotonic() < end:
        if forkserver._gone(pid):
            return True
        time.sleep(0.05)
    return False


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def spawner(tmp_path):
    sp = forkserver.ForkSpawner(str(tmp_path / "helpers"),
                                owner=forkserver.process_token(os.getpid()), idle_s=60)
    yield sp
    forkserver.stop_helpers(sp.folder)


def test_a_forked_child_builds_times_and_quits_as_a_fresh_worker_does(spawner):
    rec, workers = duet.start_pair({"a": side(), "b": side()}, 0.1, 2, spawn=spawner)
    try:
        origins = [workers[s].origin for s in "ab"]
        assert all(o["forked"] for o in origins)
        assert origins[0]["helper_pid"] == origins[1]["helper_pid"]  # one env: one helper
        assert [o["helper_children_before"] for o in origins] == [0, 1]
        assert origins[0]["helper_import_s"] > 0
        assert all(rec["ready"][s]["first_call_s"] > 0 for s in "ab")
        assert all(len(w) >= 5 for s in "ab" for w in rec["windows"][s])
        # each child is its own process group, so the meter's "own" CPU is the child's
        helper = origins[0]["helper_pid"]
        assert all(workers[s].proc.pid != helper for s in "ab")
        assert all(os.getpgid(workers[s].proc.pid) == workers[s].proc.pid for s in "ab")
        assert all(c["own_cpu_s"] is not None for s in "ab" for c in workers[s].cpu)
        assert all(workers[s].peak_rss_mb > 0 for s in "ab")
    finally:
        for w in workers.values():
            w.close()
    assert [workers[s].proc.returncode for s in "ab"] == [0, 0]
    assert all(gone(workers[s].proc.pid) for s in "ab")  # reaped: no zombie left
    # the helper sleeps on accept without using CPU
    before = cpu_s(helper)
    time.sleep(2.0)
    assert cpu_s(helper) - before <= 0.03
    # a second duet's workers come from the same helper, after its first two children
    rec, again = duet.start_pair({"a": side(), "b": side()}, 0.05, 1, spawn=spawner)
    for w in again.values():
        w.close()
    assert [again[s].origin["helper_children_before"] for s in "ab"] == [2, 3]


def test_a_childs_crash_is_an_error_and_the_helper_survives(spawner):
    w = worker(spawner)
    w.expect("loaded")
    helper = w.origin["helper_pid"]
    os.kill(w.proc.pid, signal.SIGSEGV)
    with pytest.raises(duet.WorkerError, match="exited"):
        w.build()
    assert w.proc.returncode == -signal.SIGSEGV
    assert forkserver.ping(forkserver.address(spawner.folder, list(spawner.helpers)[0]))
    again = worker(spawner, wait_build=False)  # the same helper forks the next one
    assert "first_call_s" in again.expect("ready")
    assert again.origin["helper_pid"] == helper and again.origin["helper_children_before"] == 1
    again.close()
    assert again.proc.returncode == 0


def test_the_helper_exits_when_asked(spawner):
    w = worker(spawner)
    w.expect("loaded")
    w.close()
    helper = w.origin["helper_pid"]
    assert forkserver.stop_helpers(spawner.folder) == [helper]
    assert gone(helper, 1.0)
    assert not os.listdir(spawner.folder) or not any(
        f.endswith(".json") for f in os.listdir(spawner.folder))
    assert forkserver.stop_helpers(spawner.folder) == []  # none left: nothing to do


def test_the_helper_exits_when_idle(tmp_path):
    sp = forkserver.ForkSpawner(str(tmp_path / "h"), owner=forkserver.process_token(os.getpid()),
                                idle_s=1.0)
    w = worker(sp)
    w.expect("loaded")
    helper = w.origin["helper_pid"]
    time.sleep(2.0)
    assert not forkserver._gone(helper)  # a live child keeps it
    w.close()
    assert gone(helper, 6.0)


def test_the_helper_exits_when_its_owner_is_gone(tmp_path):
    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        sp = forkserver.ForkSpawner(str(tmp_path / "h"), owner=forkserver.process_token(owner.pid),
                                    idle_s=600)
        sp.prepare([side()])
        (facts,) = sp.helpers.values()
        assert not forkserver._gone(facts["helper_pid"])
    finally:
        owner.kill()
        owner.wait()
    assert gone(facts["helper_pid"], 6.0)


def test_a_helper_that_cannot_start_leaves_a_fresh_worker_that_says_why(tmp_path):
    sp = forkserver.ForkSpawner(str(tmp_path / "h"), owner=forkserver.process_token(os.getpid()),
                                start_timeout_s=0.001)
    w = worker(sp, wait_build=False)
    try:
        assert w.origin["forked"] is False and "did not listen" in w.origin["fallback"]
        assert "first_call_s" in w.expect("ready")
    finally:
        w.close()
    assert w.proc.returncode == 0
    # a worker run through another command (conda run) is never forked
    s = side()
    proc = sp(s["python"], s["run_cell"], ["--serve"], s["env"], prefix=("env",))
    proc.kill()
    proc.wait()
    assert proc.origin == {"forked": False, "fallback": "a prefixed worker command"}


def test_a_stale_facts_file_is_removed_without_waiting(tmp_path):
    """A helper killed outright leaves its facts file: the next cell removes it at once (its pid
    may be another process's by now: nothing is waited for or killed)."""
    (tmp_path / "k.json").write_text('{"address": "@tfspeed-helper-none", "helper_pid": %d}'
                                     % os.getpid())
    t0 = time.monotonic()
    assert forkserver.stop_helpers(str(tmp_path)) == []
    assert time.monotonic() - t0 < 1.0 and not list(tmp_path.iterdir())


def generation_worker(spawner, tag):
    s = side()
    s["env"][forkserver.GENERATION] = tag
    return duet.Worker(s["python"], s["run_cell"], s["cell"], s["rule"], s["framework"],
                       s["env"], timeout_s=120, wait_build=True, spawn=spawner)


def test_a_new_rounds_helper_retires_the_last_rounds_and_keeps_its_own_rounds(spawner):
    """duets.renew_helpers: a side whose environment names a generation "ROUND:MODE" is forked
    from that generation's helper; both modes of a round live side by side; the first side of
    the next round asks that round's earlier helpers of the same env to exit (they are gone),
    and leaves a helper of another key (no generation) running."""
    helpers = {}
    for tag in ("0:graph", "0:eager", "0:graph", None, "1:eager"):
        w = generation_worker(spawner, tag) if tag else worker(spawner)
        w.expect("loaded")
        w.close()
        helpers.setdefault(tag, set()).add(w.origin["helper_pid"])
    assert len(helpers["0:graph"]) == 1  # one helper served the round's two graph sides
    pids = {t: next(iter(p)) for t, p in helpers.items()}
    assert len(set(pids.values())) == 4
    assert sorted(spawner.retired) == sorted([pids["0:graph"], pids["0:eager"]])
    assert gone(pids["0:graph"], 2.0) and gone(pids["0:eager"], 2.0)
    assert not forkserver._gone(pids[None]) and not forkserver._gone(pids["1:eager"])


def test_a_generation_changes_the_key_and_only_its_suffix():
    env = {"A": "1", "TMPDIR": "/x"}
    base = forkserver.helper_key("py", RUN_CELL, "tensorflow", env)
    keys = {t: forkserver.helper_key("py", RUN_CELL, "tensorflow",
                                     dict(env, **{forkserver.GENERATION: t}))
            for t in ("0:graph", "0:eager", "1:graph")}
    assert all(k.split("-g")[0] == base and len(base) == 16 for k in keys.values())
    assert keys["0:graph"].startswith(base + "-g0-") and keys["1:graph"].startswith(base + "-g1-")
    assert len(set(keys.values())) == 3


def tagged(tag):
    s = side()
    s["env"]["TFSPEED_TEST_TAG"] = tag  # another key: another helper
    return s


@pytest.mark.parametrize("short", [True, False])
def test_a_new_helper_makes_room_by_the_least_recently_used(tmp_path, short):
    """Where memory is short (a reserve above what any machine has), a spawner about to start a
    helper asks the folder's others to exit, the one that forked longest ago first, and never
    one its own duet uses; where it is not (no reserve), every helper stays."""
    folder = str(tmp_path / "h")
    owner = forkserver.process_token(os.getpid())
    first = forkserver.ForkSpawner(folder, owner=owner, idle_s=60)
    try:
        first.prepare([tagged("a")])
        first.prepare([tagged("b")])
        w = worker(first)  # the untagged helper forks last: the most recently used
        w.expect("loaded")
        w.close()
        pids = {k: f["helper_pid"] for k, f in first.helpers.items()}
        order = [pids[first._key(s["python"], s["run_cell"], "tensorflow", s["env"])]
                 for s in (tagged("a"), tagged("b"))]
        reserve = (lambda total: 2 * total) if short else (lambda total: 0.0)
        second = forkserver.ForkSpawner(folder, owner=owner, idle_s=60, reserve=reserve)
        second.prepare([tagged("b"), tagged("c")])  # b is this duet's: kept
        if short:
            untagged = [p for p in pids.values() if p not in order]
            assert second.retired == [order[0]] + untagged
            assert gone(order[0], 2.0) and all(gone(p, 2.0) for p in untagged)
            assert not forkserver._gone(order[1])
        else:
            assert second.retired == [] and not any(forkserver._gone(p) for p in pids.values())
    finally:
        forkserver.stop_helpers(folder)


def test_a_ping_is_not_a_use(tmp_path):
    """Another duet's look for room pings every helper: that must not keep one alive past its
    idle limit."""
    sp = forkserver.ForkSpawner(str(tmp_path / "h"), owner=forkserver.process_token(os.getpid()),
                                idle_s=2.0)
    sp.prepare([side()])
    (facts,) = sp.helpers.values()
    end = time.monotonic() + 8.0
    answers = []
    while time.monotonic() < end and not forkserver._gone(facts["helper_pid"]):
        answers.append(forkserver.ping(facts["address"], timeout=1.0))
        time.sleep(0.3)
    assert forkserver._gone(facts["helper_pid"])
    assert answers[0]["since_fork_s"] >= 0 and answers[0]["children"] == 0


def test_stopping_by_owner_leaves_another_owners_helper(tmp_path):
    """The study's end (rules/common.smk stop_fork_helpers) stops its own Snakemake's helpers
    only: a helper of another owner in the same folder keeps running."""
    folder = str(tmp_path / "h")
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    mine_token = forkserver.process_token(os.getpid())
    try:
        mine = forkserver.ForkSpawner(folder, owner=mine_token, idle_s=60)
        mine.prepare([tagged("a")])
        theirs = forkserver.ForkSpawner(folder, owner=forkserver.process_token(other.pid),
                                        idle_s=60)
        theirs.prepare([tagged("b")])
        (a,), (b,) = ([f["helper_pid"] for f in sp.helpers.values()] for sp in (mine, theirs))
        assert forkserver.stop_helpers(folder, owner=mine_token) == [a]
        assert gone(a, 2.0) and not forkserver._gone(b)
    finally:
        forkserver.stop_helpers(folder)
        other.kill()
        other.wait()
