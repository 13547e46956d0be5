"""The `device` axis is honoured by the backends that can run on a GPU without TensorFlow: PyTorch
(model cells and seed 004's matmul: .to(cuda)), JAX's matmul (jax.device_put) and Keras 3 on either
backend (which places a model on the GPU wherever it sees one). Each decision is checked without a
GPU; the framework itself is exercised on this machine's CPU where it is installed (a built torch
or keras3 env; the .venv has neither, then those tests skip), and on a GPU in
docs/runs/2026-11-26-gpu-h200-seed004.md."""
import numpy as np
import pytest

from tfspeed.backends import Unsupported, keras3
from tfspeed.backends import jax as jax_backend
from tfspeed.backends import torch as torch_backend


def test_torch_places_a_gpu_cell_on_cuda_and_a_cpu_cell_on_the_cpu():
    assert torch_backend.device_name("gpu", cuda_visible=True) == "cuda"
    assert torch_backend.device_name("cpu", cuda_visible=True) == "cpu"  # a GPU present: not used
    assert torch_backend.device_name("cpu", cuda_visible=False) == "cpu"
    with pytest.raises(Unsupported, match="device gpu: no CUDA device visible to PyTorch"):
        torch_backend.device_name("gpu", cuda_visible=False)


def test_jax_platform_of_the_device_axis():
    assert (jax_backend.platform("gpu"), jax_backend.platform("cpu")) == ("gpu", "cpu")


@pytest.mark.parametrize("device, visible, words", [
    ("gpu", True, None),
    ("cpu", False, None),
    ("gpu", False, "device gpu: no GPU visible to Keras 3's jax backend"),
    ("cpu", True, "device cpu: Keras 3's jax backend sees a GPU"),
])
def test_keras3_runs_a_cell_only_where_its_backend_puts_the_model(device, visible, words):
    reason = keras3.device_why_not(device, "jax", visible)
    assert reason is None if words is None else words in reason


def operands():
    rng = np.random.RandomState(1)
    return rng.rand(64, 64).astype("float32"), rng.rand(64, 64).astype("float32")


def test_torch_matmul_on_the_cpu_for_real():
    torch = pytest.importorskip("torch")
    a, b = operands()
    prepared = torch_backend.matmul(a, b, "eager", "cpu")
    assert prepared.facts["device"] == "cpu"
    assert prepared.step() == pytest.approx(float(np.dot(a, b)[0, 0]), rel=1e-5)
    if not torch.cuda.is_available():
        with pytest.raises(Unsupported, match="no CUDA device"):
            torch_backend.matmul(a, b, "eager", "gpu")


def test_jax_matmul_on_the_cpu_for_real():
    jax = pytest.importorskip("jax")
    a, b = operands()
    for mode in ("eager", "xla"):
        prepared = jax_backend.matmul(a, b, mode, "cpu")
        assert prepared.facts["device"].lower().startswith("tfrt_cpu") or \
            "cpu" in prepared.facts["device"].lower()
        assert prepared.step() == pytest.approx(float(np.dot(a, b)[0, 0]), rel=1e-5)
    if jax.default_backend() != "gpu":
        with pytest.raises(Unsupported, match="device gpu: no GPU device visible to JAX"):
            jax_backend.matmul(a, b, "eager", "gpu")
