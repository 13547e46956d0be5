"""Same model, same function: seeded weights in one framework-neutral form (Keras' layouts, drawn
from NumPy), loaded into the framework's own build of the model; its inference output on the cell's
data is compared with a NumPy forward pass of the same description. A framework that matches NumPy
within the tolerance computes the same function as every other that does, so a TF vs PyTorch
comparison compares equal work. Runs after the timed window (run_cell.py), on a second copy of the
net, and never fails a cell: a mismatch or an error is recorded in the cell file (`same_function`).
NumPy only, besides the framework at hand.
"""
import numpy as np

from .models import DATA, DATA_INPUT, MODELS, _conv_out

RTOL = 1e-4  # of the largest output magnitude: float32 frameworks against a float64 NumPy pass
ATOL = 1e-6


def canonical_weights(model, data, seed=0):
    """[[arrays] per layer of MODELS[model]] in Keras' get_weights() order and layouts."""
    rng = np.random.RandomState(seed)
    shape = DATA[data]
    spatial, channels = list(shape[1:-1]), shape[-1]
    if DATA_INPUT.get(data) == "tokens":
        spatial, channels = list(shape[1:]), None

    def w(*dims, fan_in=None):
        fan = fan_in or dims[0]
        return (rng.randn(*dims) / np.sqrt(fan)).astype("float32")

    def b(n):
        return (0.1 * rng.randn(n)).astype("float32")

    def norm(c):
        return [(1 + 0.1 * rng.randn(c)).astype("float32"), b(c)]

    def attention(d, heads, key_dim):
        out = []
        for _ in range(3):  # query, key, value: kernel (d, heads, key_dim), bias (heads, key_dim)
            out += [w(d, heads, key_dim), (0.1 * rng.randn(heads, key_dim)).astype("float32")]
        return out + [w(heads, key_dim, d, fan_in=heads * key_dim), b(d)]

    out = []
    for spec in MODELS[model]:
        kind, arrays = spec[0], []
        if kind == "conv1d":
            arrays = [w(spec[2], channels, spec[1], fan_in=spec[2] * channels), b(spec[1])]
            spatial, channels = [_conv_out(spatial[0], spec[2], spec[3], spec[4])], spec[1]
        elif kind in ("conv2d", "conv3d"):
            k, n = spec[2], len(spatial)
            arrays = [w(*([k] * n + [channels, spec[1]]), fan_in=k ** n * channels), b(spec[1])]
            spatial, channels = [s - k + 1 for s in spatial], spec[1]
        elif kind == "maxpool2d":
            spatial = [s // spec[1] for s in spatial]
        elif kind == "dense":
            arrays, channels = [w(channels, spec[1]), b(spec[1])], spec[1]
        elif kind in ("gap", "flatten"):
            if kind == "flatten":
                channels = int(np.prod(spatial + [channels]))
            spatial = []
        elif kind in ("lstm", "bilstm"):
            u = spec[1]
            for _ in range(2 if kind == "bilstm" else 1):
                arrays += [w(channels, 4 * u), w(u, 4 * u), b(4 * u)]
            channels = u * (2 if kind == "bilstm" else 1)
        elif kind == "gru":  # reset_after: a bias row for the input and one for the recurrence
            u = spec[1]
            arrays = [w(channels, 3 * u), w(u, 3 * u), (0.1 * rng.randn(2, 3 * u)).astype("float32")]
            channels = u
        elif kind == "embedding":
            arrays, channels = [rng.randn(spec[1], spec[2]).astype("float32")], spec[2]
        elif kind == "batchnorm":  # gamma, beta, moving mean, moving variance
            arrays = norm(channels) + [b(channels), (1 + 0.5 * rng.rand(channels)).astype("float32")]
        elif kind == "layernorm":
            arrays = norm(channels)
        elif kind == "mha":
            arrays = attention(channels, spec[1], spec[2])
        elif kind == "encoder":
            ff = spec[3]
            arrays = (attention(channels, spec[1], spec[2]) + norm(channels)
                      + [w(channels, ff), b(ff), w(ff, channels), b(channels)] + norm(channels))
        out.append(arrays)
    return out


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


_ACT = {None: lambda x: x, "relu": lambda x: np.maximum(x, 0), "tanh": np.tanh,
        "sigmoid": lambda x: 1 / (1 + np.exp(-x)), "softmax": _softmax}


def _conv(x, kernel, bias, strides=1, padding="valid"):
    """Keras' ConvND (channels-last) as a sum over the kernel's taps: x (batch, *spatial, c).
    (NumPy 1.16 in the TF 1 envs: no sliding_window_view, np.pad needs its mode.)"""
    n, k = kernel.ndim - 2, kernel.shape[0]
    if padding == "same":
        pads = []
        for s in x.shape[1:-1]:
            total = max((-(-s // strides) - 1) * strides + k - s, 0)
            pads.append((total // 2, total - total // 2))
        x = np.pad(x, [(0, 0)] + pads + [(0, 0)], mode="constant")
    out_shape = [(s - k) // strides + 1 for s in x.shape[1:-1]]
    out = np.zeros([x.shape[0]] + out_shape + [kernel.shape[-1]])
    for tap in np.ndindex(*([k] * n)):
        index = tuple(slice(t, t + (o - 1) * strides + 1, strides) for t, o in zip(tap, out_shape))
        out += x[(slice(None),) + index] @ kernel[tap]
    return out + bias


def _rnn(x, kernel, recurrent, bias, cell, reverse=False):
    steps = range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])
    u = recurrent.shape[0]
    h, c = np.zeros((x.shape[0], u)), np.zeros((x.shape[0], u))
    outs = [None] * x.shape[1]
    for t in steps:
        h, c = cell(x[:, t], h, c, kernel, recurrent, bias)
        outs[t] = h
    return np.stack(outs, 1)


def _lstm_cell(xt, h, c, kernel, recurrent, bias):  # Keras' LSTM(activation='relu'): i, f, c, o
    z = xt @ kernel + h @ recurrent + bias
    i, f, g, o = np.split(z, 4, axis=-1)
    sig = _ACT["sigmoid"]
    c = sig(f) * c + sig(i) * np.maximum(g, 0)
    return sig(o) * np.maximum(c, 0), c


def _gru_cell(xt, h, c, kernel, recurrent, bias):  # Keras' GRU(reset_after=True): z, r, h
    sig = _ACT["sigmoid"]
    xz, xr, xh = np.split(xt @ kernel + bias[0], 3, axis=-1)
    hz, hr, hh = np.split(h @ recurrent + bias[1], 3, axis=-1)
    z, r = sig(xz + hz), sig(xr + hr)
    return z * h + (1 - z) * np.tanh(xh + r * hh), c


def _layernorm(x, gamma, beta, eps=1e-3):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _attention(x, arrays):
    qk, qb, kk, kb, vk, vb, ok, ob = arrays
    q = np.einsum("bnd,dhk->bhnk", x, qk) + qb[None, :, None, :]
    k = np.einsum("bnd,dhk->bhnk", x, kk) + kb[None, :, None, :]
    v = np.einsum("bnd,dhk->bhnk", x, vk) + vb[None, :, None, :]
    scores = _softmax(q @ k.transpose(0, 1, 3, 2) / np.sqrt(qk.shape[-1]))
    return np.einsum("bhnk,hkd->bnd", scores @ v, ok) + ob


def forward(model, x, weights):
    """The model's inference output on x, in float64 NumPy, with Keras' semantics."""
    x = x if x.dtype.kind == "i" else x.astype("float64")
    for spec, arrays in zip(MODELS[model], weights):
        kind, arrays = spec[0], [a.astype("float64") for a in arrays]
        if kind == "conv1d":
            x = _conv(x, arrays[0], arrays[1], spec[3], spec[4])
        elif kind in ("conv2d", "conv3d"):
            x = _ACT[spec[3]](_conv(x, arrays[0], arrays[1]))
        elif kind == "maxpool2d":
            p = spec[1]
            hh, ww = x.shape[1] // p * p, x.shape[2] // p * p
            x = x[:, :hh, :ww].reshape(x.shape[0], hh // p, p, ww // p, p, -1).max(axis=(2, 4))
        elif kind == "dense":
            x = _ACT[spec[2]](x @ arrays[0] + arrays[1])
        elif kind == "gap":
            x = x.mean(axis=tuple(range(1, x.ndim - 1)))
        elif kind == "flatten":
            x = x.reshape(x.shape[0], -1)
        elif kind == "lstm":
            x = _rnn(x, *arrays, _lstm_cell)
        elif kind == "bilstm":
            x = np.concatenate([_rnn(x, *arrays[:3], _lstm_cell),
                                _rnn(x, *arrays[3:], _lstm_cell, reverse=True)], -1)
        elif kind == "gru":
            x = _rnn(x, *arrays, _gru_cell)
        elif kind == "embedding":
            x = arrays[0][x]
        elif kind == "batchnorm":
            gamma, beta, mean, var = arrays
            x = (x - mean) / np.sqrt(var + 1e-3) * gamma + beta
        elif kind == "layernorm":
            x = _layernorm(x, *arrays)
        elif kind == "mha":
            x = _attention(x, arrays)
        elif kind == "encoder":
            x = _layernorm(x + _attention(x, arrays[:8]), *arrays[8:10])
            ff = np.maximum(x @ arrays[10] + arrays[11], 0) @ arrays[12] + arrays[13]
            x = _layernorm(x + ff, *arrays[14:16])
        # dropout: the identity at inference
    return x


def compare(output, reference):
    """The record's `same_function`: the largest difference against NumPy and whether it is
    within ATOL + RTOL x the largest output magnitude."""
    output = np.asarray(output, dtype="float64").reshape(reference.shape)
    diff = float(np.max(np.abs(output - reference)))
    tolerance = ATOL + RTOL * float(np.max(np.abs(reference)))
    return {"max_abs_diff": diff, "tolerance": tolerance, "match": bool(diff <= tolerance),
            "reference": "numpy", "weights": "seeded (samefunction.canonical_weights, seed 0)"}


def check(cell, framework):
    """`same_function` of a cell: its framework's build of the model with the seeded weights,
    run forward in inference on the cell's data, against the NumPy pass; an error is recorded as
    {"error": ...} and never fails the cell."""
    from . import backends
    from .backends.kerasnet import make_data

    try:
        model, data = cell["model"], cell["data"]
        x, _ = make_data(model, data)
        weights = canonical_weights(model, data)
        backend = backends.find(cell, framework)  # the one that ran the cell builds it again
        build = getattr(backend, "same_function_output", None)
        if build is None:
            raise backends.Unsupported("no same-function build for framework %r (its backend has "
                                       "no same_function_output)" % framework)
        return compare(build(cell, x, weights), forward(model, x, weights))
    except Exception as exc:  # the check is a fact about the cell, never its failure
        return {"error": "%s: %s" % (type(exc).__name__, exc), "match": None}
