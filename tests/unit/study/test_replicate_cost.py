"""What a paired replicate cost (driver/study/replicate_cost.py), from planted duet files: wall
time over timed seconds, the orchestrator's gap after each job (pauses left out), forked workers
and the processes beside flagged replicates, per machine and kind."""
import pytest

from driver.study import replicate_cost


def duet(i, wall, kind="duet", flagged=False, forked=True, machine="m", start=None):
    return {"machine": machine, "status": "ok", "kind": kind, "windows": 8, "window_s": 0.25,
            "wall_s": wall, "started_utc": start or f"2026-11-28T10:00:{10 * i:02d}",
            "foreign_cpu_flag": flagged,
            "foreign_processes": [{"command": "snakemake", "cpu_s": 0.4}] if flagged else [],
            "workers": {s: {"forked": forked} for s in ("left", "right")}}


def test_cost_gap_forked_and_flagged_per_kind():
    recs = [duet(0, 6.0), duet(1, 8.0, flagged=True), duet(2, 7.0, forked=False),
            duet(3, 5.0, kind="pair"), duet(5, 6.0, kind="pair")]  # a pause before the last
    figs = replicate_cost.figures(recs)["m"]
    d, p = figs["duet"], figs["pair"]
    assert d["cost"]["n"] == 3 and d["cost"]["median"] == pytest.approx(7.0 / 4.0)
    # each starts 10 s after the one before: the gap is 10 - wall (the pair after a 20 s
    # pause: its gap of 14 s is a pause, left out)
    assert d["with_gap"]["median"] == pytest.approx(10.0 / 4.0)
    assert p["with_gap"]["n"] == 0 and p["cost"]["median"] == pytest.approx(5.5 / 4.0)
    assert d["forked"] == 2 and d["flagged"] == 1 and d["flagged_by"] == {"snakemake": 1}
    lines = replicate_cost.text({"m": figs})
    assert lines[0].startswith("m: a duet replicate cost 1.75x its timed seconds (median of 3")
    assert "both workers forked in 2 of 3" in lines[0] and "flagged" in lines[0]


def test_load_reads_a_results_folders_duet_files(tmp_path):
    import json

    folder = tmp_path / "duets" / "m" / "tf2.1"
    folder.mkdir(parents=True)
    (folder / "a.r0.json").write_text(json.dumps(duet(0, 6.0)))
    (folder / "b.r0.json").write_text("{not json")
    assert [r["wall_s"] for r in replicate_cost.load(tmp_path)] == [6.0]
