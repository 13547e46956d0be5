"""Same model, same function: the NumPy forward pass that every framework's build is held to,
checked by hand on small cases, and a check that fails when a layer computes something else."""
import copy

import numpy as np
import pytest

from tfspeed import models, samefunction, usermodels


@pytest.fixture(autouse=True)
def clean_registry():
    saved = models.snapshot()
    yield
    models.restore(saved)


def test_conv_same_padding_and_strides_by_hand():
    """Conv1D, kernel 3, stride 2, 'same' on 5 steps: TF pads (1, 1), outputs 3 steps."""
    x = np.arange(5.0).reshape(1, 5, 1)
    kernel = np.array([1.0, 10.0, 100.0]).reshape(3, 1, 1)
    out = samefunction._conv(x, kernel, np.zeros(1), strides=2, padding="same")
    padded = [0, 0, 1, 2, 3, 4, 0]
    want = [padded[i] + 10 * padded[i + 1] + 100 * padded[i + 2] for i in (0, 2, 4)]
    assert out.reshape(-1).tolist() == want
    # 3-D, valid: one output voxel is the sum of the 2x2x2 input times the kernel
    x = np.arange(8.0).reshape(1, 2, 2, 2, 1)
    kernel = np.ones((2, 2, 2, 1, 1))
    assert samefunction._conv(x, kernel, np.array([0.5])).reshape(-1).tolist() == [28.5]


def test_attention_of_one_head_by_hand():
    """Identity projections, key_dim = dim: softmax(x x^T / sqrt(d)) x."""
    x = np.array([[[1.0, 0.0], [0.0, 2.0]]])
    eye = np.eye(2).reshape(2, 1, 2)
    zeros = np.zeros((1, 2))
    arrays = [eye, zeros, eye, zeros, eye, zeros, np.eye(2).reshape(1, 2, 2), np.zeros(2)]
    scores = x[0] @ x[0].T / np.sqrt(2)
    weights = np.exp(scores) / np.exp(scores).sum(1, keepdims=True)
    np.testing.assert_allclose(samefunction._attention(x, arrays)[0], weights @ x[0])


def test_gru_step_by_hand():
    """One step from h = 0: h = (1 - z) tanh(x W_h + b_h + r b_rh)."""
    xt = np.array([[1.0]])
    kernel = np.array([[0.5, -1.0, 2.0]])  # z, r, h
    bias = np.array([[0.0, 0.0, 0.1], [0.0, 0.0, 0.3]])
    h, _ = samefunction._gru_cell(xt, np.zeros((1, 1)), None, kernel, np.zeros((1, 3)), bias)
    sig = 1 / (1 + np.exp(-np.array([0.5, -1.0])))
    assert h[0, 0] == pytest.approx((1 - sig[0]) * np.tanh(2.0 + 0.1 + sig[1] * 0.3))


def _encoder_model():
    usermodels.register(
        {"m": {"layers": [["embedding", 30, 8], ["gru", 6], "batchnorm", ["encoder", 2, 4, 16],
                          "gap", ["dense", 3, "softmax"]],
               "loss": "sparse_categorical_crossentropy"}},
        {"t": {"batch": 4, "shape": [7], "input": "tokens", "target": "sparse"}})
    from tfspeed.backends.kerasdata import make_data
    x, _ = make_data("m", "t")
    return x, samefunction.canonical_weights("m", "t")


def test_float32_rounding_matches_and_a_changed_layer_does_not():
    x, weights = _encoder_model()
    reference = samefunction.forward("m", x, weights)
    assert reference.shape == (4, 3)
    np.testing.assert_allclose(reference.sum(1), 1)  # softmax rows
    # a framework computing in float32 is within the tolerance
    assert samefunction.compare(reference.astype("float32"), reference)["match"]
    # planted: the GRU's z and r gates swapped (a wrong weight layout) must fail the check
    swapped = copy.deepcopy(weights)
    u = 6
    for i in (0, 1):
        a = swapped[1][i]
        swapped[1][i] = np.concatenate([a[:, u:2 * u], a[:, :u], a[:, 2 * u:]], 1)
    bias = swapped[1][2]
    swapped[1][2] = np.concatenate([bias[:, u:2 * u], bias[:, :u], bias[:, 2 * u:]], 1)
    wrong = samefunction.forward("m", x, swapped)
    verdict = samefunction.compare(wrong, reference)
    assert not verdict["match"] and verdict["max_abs_diff"] > 10 * verdict["tolerance"]
    # planted: Keras 2's hard_sigmoid as the GRU's recurrent activation (what tf.keras in TF 1.14
    # computes unless told otherwise; kerasnet asks for sigmoid) is caught
    original = samefunction._ACT["sigmoid"]
    try:
        samefunction._ACT["sigmoid"] = lambda v: np.clip(0.2 * v + 0.5, 0, 1)
        assert not samefunction.compare(samefunction.forward("m", x, weights), reference)["match"]
    finally:
        samefunction._ACT["sigmoid"] = original
