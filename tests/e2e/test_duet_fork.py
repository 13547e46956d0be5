"""The quick study's duets with `duets.workers: fork` (the default): every duet file is ok and
says per side that its worker was forked from its env's fork helper (scripts/run_cell.py
--helper, driver/study/forkserver.py), with the helper's pid, import seconds and the children it
had forked before; a helper serves more than one duet (its children counted in order), the
reference env's is a new one every round and mode (the quick preset sets duets.renew_helpers:
reference), a helper is left
out of the duet's other processes, and is gone once the cells ran (supervise_cell.py asks every
helper of the machine to exit before a cell times)."""
import collections
import json

import pytest

pytestmark = pytest.mark.e2e


def test_the_quick_studys_duets_are_forked_from_helpers_gone_before_the_cells(quick_run):
    work, _ = quick_run
    records = [json.loads(p.read_text()) for p in sorted((work / "results/duets").rglob("*.json"))]
    assert records
    children = collections.defaultdict(list)
    for rec in records:
        assert rec["status"] == "ok", (rec.get("reason"), rec.get("log_tail"))
        assert rec["design"]["workers"] == "fork"
        seen = set()  # a pair in one process: both sides are one worker
        for name in ("left", "right"):
            origin = rec["workers"][name]
            assert origin["forked"] is True, origin
            assert origin["helper_import_s"] > 0 and origin["helper_children_before"] >= 0
            seen.add((origin["helper_pid"], origin["helper_children_before"]))
        if rec["kind"] == "pair":
            assert len(seen) == 1
        for pid, before in seen:
            children[pid].append(before)
        helpers = {rec["workers"][n]["helper_pid"] for n in ("left", "right")}
        assert not helpers & {p["pid"] for p in rec["foreign_processes"] or []}
    # duets.renew_helpers: reference (tests/quick.yaml): the reference env's sides of one round and
    # mode share a helper, a new one every round; other envs keep theirs for the run
    ref = collections.defaultdict(set)
    for rec in records:
        if rec["kind"] == "duet" and rec["reference_env"] == "tf1.14":
            rnd = rec["replicate"] // rec["design"].get("weight", 1)
            ref[rnd, rec["reference_cell"]["mode"]].add(rec["workers"]["right"]["helper_pid"])
            assert rec["design"]["renew"] == ["tf1.14"]
    assert ref and all(len(p) == 1 for p in ref.values()), ref
    rounds = {r for r, _ in ref}
    assert len(rounds) >= 2 and len({next(iter(p)) for p in ref.values()}) == len(ref)
    # each helper's children numbered once each, and some helper served several duets
    assert all(len(set(c)) == len(c) for c in children.values())
    assert max(len(c) for c in children.values()) > 2
    # the cells ran after the duets: no helper is left (each removes its facts file at exit)
    for folder in (work / "results" / "scratch").glob("*/helpers"):
        assert not list(folder.glob("*.json")), list(folder.iterdir())
    for pid in children:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                assert b"--helper" not in handle.read()
        except OSError:
            pass  # gone
