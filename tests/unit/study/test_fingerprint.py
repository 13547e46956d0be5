"""The machine fingerprint and key (driver/study/fingerprint.py): two machines that differ only in a
CPU flag or family get two keys; the same machine twice keeps one; the cell file records the
fingerprint and the thread variables the cell itself ran with."""
import json
import os
import sys
from pathlib import Path

import pytest

from driver.study import fingerprint, provenance, record

REPO = Path(__file__).resolve().parents[3]

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
cpu MHz\t\t: 2445.404
flags\t\t: fpu sse4_2 fma avx f16c avx2 hypervisor sha_ni
bogomips\t: 4890.81

processor\t: 1
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
stepping\t: 1
cpu MHz\t\t: 2445.404
flags\t\t: fpu sse4_2 fma avx f16c avx2 hypervisor sha_ni
"""
LSCPU = json.dumps({"lscpu": [
    {"field": "CPU(s):", "data": "2"}, {"field": "Thread(s) per core:", "data": "1"},
    {"field": "Core(s) per socket:", "data": "2"}, {"field": "Socket(s):", "data": "1"},
    {"field": "Hypervisor vendor:", "data": "KVM"},
    {"field": "Caches (sum of all):", "data": None, "children": [
        {"field": "L1d:", "data": "64 KiB (2 instances)"}]},
    {"field": "L2 cache:", "data": "1 MiB (2 instances)"},
    {"field": "L3 cache:", "data": "32 MiB (1 instance)"}]})
MEMINFO = "MemTotal:       24608412 kB\nMemFree:         1000 kB\n"
NVIDIA = "NVIDIA H100 80GB HBM3, 550.54.15, 81559 MiB\n"


def fp(cpuinfo=CPUINFO, gpus=None, meminfo=MEMINFO):
    return fingerprint.build(fingerprint.parse_cpuinfo(cpuinfo), fingerprint.parse_lscpu(LSCPU),
                             fingerprint.parse_meminfo(meminfo), gpus, 2)


def test_the_fingerprint_reads_what_the_kernels_depend_on():
    f = fp()
    assert (f["vendor"], f["family"], f["model"], f["stepping"]) == ("AuthenticAMD", "25", "1", "1")
    assert f["flags"] == ["avx", "avx2", "f16c", "fma", "sse4_2"]  # not fpu, sha_ni
    assert f["caches"] == {"L2": "1 MiB (2 instances)", "L3": "32 MiB (1 instance)"}
    assert (f["logical_cpus"], f["threads_per_core"], f["cores_per_socket"]) == (2, 1, 2)
    assert f["hypervisor"] == "KVM" and f["mem_total_gib"] == 23 and f["gpus"] == []
    assert fingerprint.machine_key(f) == "amd-epyc-2c-" + f["hash"][:8]


def test_a_family_or_one_flag_gives_another_key():
    base = fingerprint.machine_key(fp())
    family26 = CPUINFO.replace("cpu family\t: 25", "cpu family\t: 26")
    avx512 = CPUINFO.replace("avx2 hypervisor", "avx2 avx512f avx512_bf16 avx512_vnni hypervisor")
    keys = {base, fingerprint.machine_key(fp(family26)), fingerprint.machine_key(fp(avx512))}
    assert len(keys) == 3
    # all three share the readable stem the old key was
    assert {k.rsplit("-", 1)[0] for k in keys} == {"amd-epyc-2c"}
    assert fingerprint.differences(fp(), fp(avx512)) == [
        "flags: + avx512_bf16, + avx512_vnni, + avx512f"]
    assert fingerprint.differences(fp(), fp(family26)) == ['family: "25" -> "26"']


def test_the_same_machine_twice_keeps_one_key():
    # clock speed, bogomips and free memory move; the key does not
    moved = CPUINFO.replace("2445.404", "3100.000").replace("4890.81", "5000.00")
    assert fingerprint.machine_key(fp()) == fingerprint.machine_key(
        fp(moved, meminfo=MEMINFO.replace("1000 kB", "9999 kB")))
    assert fingerprint.differences(fp(), fp(moved)) == []
    # and this machine read twice
    assert provenance.machine_key() == provenance.machine_key()
    assert fingerprint.read_fingerprint() == fingerprint.read_fingerprint()


def test_a_gpu_and_its_driver_enter_the_key():
    gpus = fingerprint.parse_nvidia_smi(NVIDIA)
    assert gpus == [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "550.54.15",
                     "memory.total": "81559 MiB"}]
    with_gpu = fp(gpus=gpus)
    assert fingerprint.machine_key(with_gpu).startswith("amd-epyc-2c-nvidia-h100-80gb-hbm3-")
    newer_driver = fp(gpus=fingerprint.parse_nvidia_smi(NVIDIA.replace("550.54.15", "560.1")))
    assert fingerprint.machine_key(newer_driver) != fingerprint.machine_key(with_gpu)
    assert fingerprint.parse_nvidia_smi("") == []  # no GPU: nvidia-smi absent or silent


def test_facts_without_a_fingerprint_keep_the_old_key():
    old = {"cpu_model": "AMD EPYC", "cpu_count": 2, "gpus": None}
    assert provenance.machine_key(old) == "amd-epyc-2c"


def test_unreadable_sources_give_an_empty_but_valid_fingerprint():
    f = fingerprint.build(fingerprint.parse_cpuinfo(""), fingerprint.parse_lscpu("not json"),
                          fingerprint.parse_meminfo(""), None, None)
    assert f["flags"] == [] and f["family"] is None and len(f["hash"]) == 64
    assert fingerprint.machine_key(f).startswith("machine-")


MATMUL = {"model": "matmul", "data": "matmul", "keras": "none", "mode": "numpy", "api": "matmul",
          "input": "numpy", "device": "cpu"}
RULE = {"kind": "fixed", "iterations": 5, "target_rel": 0.01, "min_samples": 3,
        "max_samples": 10, "budget_s": 0.2, "level": 0.95, "warmup_rel": 0.02,
        "warmup_block_s": 0.02, "warmup_max_s": 1, "min_samples_max_s": 5}


@pytest.mark.skipif(not os.path.exists("/proc/cpuinfo"), reason="no /proc")
def test_a_cell_file_records_the_fingerprint_and_the_cells_own_thread_env(tmp_path, monkeypatch):
    """A real cell (NumPy's matmul: mode numpy imports no framework) under the real supervisor."""
    sys.path.insert(0, str(REPO / "scripts"))
    import supervise_cell

    manifest = tmp_path / "numpy.json"
    manifest.write_text(json.dumps({"python_executable": sys.executable, "framework": "tensorflow",
                                    "status": "ok"}))
    out = tmp_path / "cell.json"
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # what Snakemake sets for the supervisor
    supervise_cell.main(["--cell", json.dumps(MATMUL), "--rule", json.dumps(RULE),
                         "--manifest", str(manifest), "--env", "numpy", "--machine", "m",
                         "--foreign-cpu-max-share", "0.05", "--lock", str(tmp_path / "lock"),
                         "--out", str(out)])
    doc = json.loads(out.read_text())
    assert doc["status"] == "ok", doc.get("reason")
    record.load_schema().validate(doc)
    machine = doc["provenance"]["machine"]
    assert machine["fingerprint"] == fingerprint.read_fingerprint()
    assert doc["schema_version"] == record.SCHEMA_VERSION == 3
    # the cell ran without the orchestrator's OMP_NUM_THREADS=1, and the record says so
    assert machine["thread_env"]["OMP_NUM_THREADS"] is None
    assert doc["provenance"]["thread_env_removed"] == {"OMP_NUM_THREADS": "1"}
    assert doc["cpu_window"]["foreign_cpu_resolution_share"] > 0


def _facts(f):
    return {"cpu_model": "AMD EPYC", "fingerprint": f}


def test_compare_runs_says_when_two_results_come_from_different_machines():
    f25 = fp()
    f26 = fp(CPUINFO.replace("cpu family\t: 25", "cpu family\t: 26"))
    same = fingerprint.compare_machines({"k": _facts(f25)}, {"k2": _facts(f25), "k2.twin": {}})
    assert same["same_machine"] is True
    other = fingerprint.compare_machines({"k": _facts(f25)}, {"k": _facts(f26)})
    assert other["same_machine"] is False and 'family: "25" -> "26"' in other["note"]
    old = fingerprint.compare_machines({"amd-epyc-2c": {"cpu_model": "AMD EPYC"}},
                                       {"k": _facts(f25)})
    assert old["same_machine"] is None and "unknown" in old["note"]
    two = fingerprint.compare_machines(
        {"k": dict(_facts(f25), fingerprints=[f25["hash"], f26["hash"]])}, {"k": _facts(f25)})
    assert two["same_machine"] is False and "several machines" in two["note"]


def test_the_facts_of_a_key_list_every_fingerprint_under_it():
    from driver.tables.facts import machine_facts

    f25 = fp()
    f26 = fp(CPUINFO.replace("cpu family\t: 25", "cpu family\t: 26"))
    recs = [{"machine": "k", "started_utc": "2026-11-25T10:00", "provenance":
             {"machine": _facts(f25)}},
            {"machine": "k", "started_utc": "2026-11-25T11:00", "provenance":
             {"machine": _facts(f26)}},
            {"machine": "j", "started_utc": "2026-11-25T11:00", "provenance":
             {"machine": {"cpu_model": "old"}}}]
    facts = machine_facts(recs)
    assert facts["k"]["fingerprints"] == sorted([f25["hash"], f26["hash"]])
    assert facts["j"]["fingerprints"] == []
    assert fingerprint.compare_machines(facts, {"k": _facts(f25)})["same_machine"] is False


def test_the_report_line_shows_the_fingerprint_the_probe_and_a_second_machine():
    from driver.report.sections.verdict import describe_machine

    f = fp(CPUINFO.replace("avx2 hypervisor", "avx2 avx512f avx512_bf16 hypervisor"))
    probe = {"verdict": "ok", "stamp": "20261125T125907Z", "cells": {
        "matmul-matmul.none.numpy.matmul.numpy.cpu": {"median_s": 0.0296, "ratio": 1.02}}}
    line = describe_machine(dict(_facts(f), cpu_count=2, probe=probe))
    assert "AMD EPYC, 2 cores" in line
    assert "family 25 model 1 stepping 1" in line and "avx512_bf16, avx512f" in line
    assert "hypervisor: KVM" in line and "fingerprint " + f["hash"][:8] in line
    assert "matmul-matmul 29.6 ms (1.02x the key's reference probe)" in line
    two = describe_machine(dict(_facts(f), fingerprints=["a" * 64, "b" * 64]))
    assert "2 different machines wrote cells under this key" in two
    assert fingerprint.describe({"cpu_model": "old"}) == []
