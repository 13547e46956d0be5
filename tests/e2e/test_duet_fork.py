"""The quick study's duets with `duets.workers: fork` (the default): every duet file is ok and
says per side that its worker was forked from its env's fork helper (scripts/run_cell.py
--helper, driver/study/forkserver.py), with the helper's pid, import seconds and the children it
had forked before; a helper serves more than one duet (its children counted in order), the
reference env's is a new one every round and mode (the quick preset sets duets.renew_helpers:
reference), a helper is left
out of the duet's other processes, and is gone once the study ended (Snakemake's onsuccess asks
its helpers to exit). The cells (config cell_workers: fork) are children of the same helpers."""
import collections
import json

import pytest

pytestmark = pytest.mark.e2e


def test_the_quick_studys_duets_are_forked_from_helpers_gone_after_the_study(quick_run):
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
    # the study ended: no helper is left (each removes its facts file at exit)
    for folder in (work / "results" / "scratch").glob("*/helpers"):
        assert not list(folder.glob("*.json")), list(folder.iterdir())
    for pid in children:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                assert b"--helper" not in handle.read()
        except OSError:
            pass  # gone


def test_the_quick_studys_cells_are_children_of_the_duets_helpers(quick_run):
    """Every cell process that ran says it was forked (process_origin, provenance.worker), and
    an env's cells share the helper its duets used where that env's helpers are not renewed."""
    work, _ = quick_run
    cells = [json.loads(p.read_text()) for p in sorted((work / "results/cells").rglob("*.json"))]
    ran = [c for c in cells if (c.get("provenance") or {}).get("worker")]
    assert ran and all(c in ran for c in cells if c["status"] == "ok")
    for c in ran:
        worker = c["provenance"]["worker"]
        assert c["process_origin"] == "fork" and worker["forked"] is True, worker
        assert worker["helper_import_s"] > 0
    duets = [json.loads(p.read_text()) for p in sorted((work / "results/duets").rglob("*.json"))]
    duet_helpers = {(d["env"], d["workers"]["left"]["helper_pid"]) for d in duets
                    if d["kind"] == "duet" and d["env"] not in d["design"].get("renew", [])}
    cell_helpers = {(c["env"], c["provenance"]["worker"]["helper_pid"]) for c in ran}
    assert duet_helpers & cell_helpers, (sorted(duet_helpers), sorted(cell_helpers))
