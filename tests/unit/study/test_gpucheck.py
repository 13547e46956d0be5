"""The GPU build check (driver/study/gpucheck.py, called by scripts/build_env.py): a GPU env whose
framework sees no GPU on a machine that has one fails its build with the reason. No GPU here: the
GPU side is stood in for at the function boundary (the two queries), the no-GPU side runs for real."""
import shutil
import subprocess
import sys

import pytest

from driver.study import gpucheck

GPU_LINE = "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0000)"


def manifest(name="tf2.21-gpu", framework="tensorflow", version="2.21.0", build="gpu"):
    return {"name": name, "framework": framework, "framework_version": version, "build": build,
            "python_executable": sys.executable}


def test_gpu_build_that_sees_no_gpu_on_a_gpu_machine_fails_with_the_reason():
    ok, why = gpucheck.gpu_check(manifest("tf1.15-gpu", version="1.15.5"),
                                 listed=lambda: [GPU_LINE], seen=lambda py, fw: (0, ""))
    assert not ok
    assert "tf1.15-gpu is a GPU build" in why and "NVIDIA H100" in why
    assert "tensorflow 1.15.5 sees none" in why
    assert "--sdm conda" in why and "CUDA 10.0" in why


def test_new_tf_gets_the_and_cuda_hint_and_a_failed_query_is_named():
    ok, why = gpucheck.gpu_check(manifest(), listed=lambda: [GPU_LINE],
                                 seen=lambda py, fw: (None, "ImportError: libcudart.so.12"))
    assert not ok
    assert "its GPU query failed: ImportError: libcudart.so.12" in why
    assert "tensorflow[and-cuda]" in why and "--sdm conda" not in why


def test_gpu_build_that_sees_the_gpu_passes_and_says_so():
    asked = []
    ok, why = gpucheck.gpu_check(manifest(framework="torch", version="2.13.0"),
                                 listed=lambda: [GPU_LINE, GPU_LINE.replace("0", "1", 1)],
                                 seen=lambda py, fw: asked.append((py, fw)) or (2, ""))
    assert ok and why == "torch sees 2 GPU(s); nvidia-smi lists 2"
    assert asked == [(sys.executable, "torch")]


def test_cpu_build_is_never_queried():
    def boom(*_):
        raise AssertionError("a CPU build must not be queried")

    assert gpucheck.gpu_check(manifest(build="cpu"), listed=boom, seen=boom) == (
        True, "not a GPU build")


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has nvidia-smi")
def test_no_gpu_machine_for_real_skips_the_check_and_says_so():
    assert gpucheck.machine_gpus() == []
    ok, why = gpucheck.gpu_check(manifest())  # the real queries: nvidia-smi is absent here
    assert ok and why == "not checked: nvidia-smi lists no GPU on this machine"


def test_machine_gpus_reads_nvidia_smi_list(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi")
    out = subprocess.CompletedProcess([], 0, stdout=GPU_LINE + "\n  MIG 1g.10gb Device 0: (UUID)\n")
    assert gpucheck.machine_gpus(run=lambda *a, **k: out) == [GPU_LINE]
    failed = subprocess.CompletedProcess([], 9, stdout="NVIDIA-SMI has failed\n")
    assert gpucheck.machine_gpus(run=lambda *a, **k: failed) == []


def test_framework_query_runs_in_the_given_python_for_real():
    # The workflow's own Python has no TF: the real query fails, and says why.
    count, detail = gpucheck.framework_gpus(sys.executable, "tensorflow")
    assert count is None and "tensorflow" in detail
    assert gpucheck.framework_gpus(sys.executable, "mxnet") == (
        None, "no GPU query for framework 'mxnet'")
