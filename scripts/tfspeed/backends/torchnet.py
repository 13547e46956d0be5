"""The seed's models (models.MODELS) as PyTorch modules, layer for layer as Keras builds them.

Keras holds data channels-last ((batch, steps, channels), (batch, height, width, channels));
PyTorch's convolutions want channels first. The net transposes where a layer needs the other
layout, and goes back to channels-last before Flatten so that the Dense layer after it sees the
features in Keras' order. Conv1D uses TensorFlow's 'same' padding (PyTorch has it for stride 1
only). The LSTMs are Keras' (activation relu, recurrent activation sigmoid, as the question's model
asks), written out: torch.nn.LSTM offers tanh only. Beyond the seed (usermodels.py): Embedding,
GRU (torch.nn.GRU computes Keras' reset_after=True), batch and layer normalisation with Keras'
epsilon and momentum, Keras' MultiHeadAttention and the encoder block written out, Conv3D.
"""
import math

from ..models import DATA, DATA_INPUT, MODELS


def build(torch, model, data):
    nn = torch.nn
    F = torch.nn.functional

    class SamePad(nn.Module):
        """TensorFlow's 'same' padding for a strided Conv1D."""

        def __init__(self, length, kernel, stride):
            super().__init__()
            out = -(-length // stride)
            total = max((out - 1) * stride + kernel - length, 0)
            self.pad = (total // 2, total - total // 2)

        def forward(self, x):
            return F.pad(x, self.pad)

    class Permute(nn.Module):
        def __init__(self, *dims):
            super().__init__()
            self.dims = dims

        def forward(self, x):
            return x.permute(*self.dims)

    class Mean(nn.Module):  # GlobalAveragePooling1D on channels-first data
        def forward(self, x):
            return x.mean(dim=2)

    class MeanND(nn.Module):  # GlobalAveragePooling2D/3D on channels-first data
        def forward(self, x):
            return x.flatten(2).mean(dim=2)

    class Sequences(nn.Module):  # torch.nn.GRU's output sequence, as Keras' return_sequences
        def __init__(self, rnn):
            super().__init__()
            self.rnn = rnn

        def forward(self, x):
            return self.rnn(x)[0]

    class SelfAttention(nn.Module):
        """Keras' MultiHeadAttention(heads, key_dim)(x, x): per-head projections of dim to
        key_dim, softmax(QK^T / sqrt(key_dim)) V, the heads' outputs projected back to dim."""

        def __init__(self, dim, heads, key_dim):
            super().__init__()
            self.heads, self.key_dim = heads, key_dim
            self.query, self.key, self.value = (nn.Linear(dim, heads * key_dim) for _ in range(3))
            self.output = nn.Linear(heads * key_dim, dim)

        def forward(self, x):
            b, n = x.shape[0], x.shape[1]

            def split(t):
                return t.view(b, n, self.heads, self.key_dim).transpose(1, 2)

            q, k, v = split(self.query(x)), split(self.key(x)), split(self.value(x))
            scores = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(self.key_dim), dim=-1)
            return self.output((scores @ v).transpose(1, 2).reshape(b, n, -1))

    class Encoder(nn.Module):
        """kerasnet's encoder block: x = LN(x + MHA(x)); x = LN(x + W2 relu(W1 x))."""

        def __init__(self, dim, heads, key_dim, ff):
            super().__init__()
            self.attention = SelfAttention(dim, heads, key_dim)
            self.norm1 = nn.LayerNorm(dim, eps=1e-3)
            self.ff1, self.ff2 = nn.Linear(dim, ff), nn.Linear(ff, dim)
            self.norm2 = nn.LayerNorm(dim, eps=1e-3)

        def forward(self, x):
            x = self.norm1(x + self.attention(x))
            return self.norm2(x + self.ff2(torch.relu(self.ff1(x))))

    class ReluLSTM(nn.Module):
        """Keras' LSTM(units, activation='relu', return_sequences=True) on (batch, steps,
        features): the input projection of every step at once, then the recurrence step by
        step; bidirectional concatenates a second, reversed pass (Keras' merge_mode 'concat')."""

        def __init__(self, features, units, directions):
            super().__init__()
            self.units = units
            self.inputs = nn.ModuleList(nn.Linear(features, 4 * units)
                                        for _ in range(directions))
            self.recurrent = nn.ModuleList(nn.Linear(units, 4 * units, bias=False)
                                           for _ in range(directions))

        def run(self, x, inp, rec, reverse: bool):
            xs = inp(x)
            h = x.new_zeros(x.shape[0], self.units)
            c = x.new_zeros(x.shape[0], self.units)
            outs = []
            steps = range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])
            for t in steps:
                i, f, g, o = (xs[:, t] + rec(h)).chunk(4, 1)
                c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.relu(g)
                h = torch.sigmoid(o) * torch.relu(c)
                outs.append(h)
            if reverse:
                outs.reverse()
            return torch.stack(outs, 1)

        def forward(self, x):
            parts = [self.run(x, inp, rec, k == 1)
                     for k, (inp, rec) in enumerate(zip(self.inputs, self.recurrent))]
            return torch.cat(parts, 2) if len(parts) > 1 else parts[0]

    shape = DATA[data]
    spatial, channels = list(shape[1:-1]), shape[-1]
    if DATA_INPUT.get(data) == "tokens":  # (batch, steps) of ids: the Embedding adds channels
        spatial, channels = [], None
    last = True  # channels-last (Keras' layout) right now
    layers = []

    def to(channels_last):
        nonlocal last
        if channels_last != last and spatial:
            n = len(spatial) + 2
            order = ((0,) + tuple(range(2, n)) + (1,)) if channels_last else \
                ((0, n - 1) + tuple(range(1, n - 1)))
            layers.append(Permute(*order))
        last = channels_last

    ACTIVATIONS = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}
    for spec in MODELS[model]:
        kind = spec[0]
        if kind == "conv1d":
            to(False)
            filters, kernel, stride, padding = spec[1:]
            if padding == "same":
                layers.append(SamePad(spatial[0], kernel, stride))
                spatial = [-(-spatial[0] // stride)]
            else:
                spatial = [(spatial[0] - kernel) // stride + 1]
            layers.append(nn.Conv1d(channels, filters, kernel, stride=stride))
            channels = filters
        elif kind == "conv2d":
            to(False)
            filters, kernel, activation = spec[1:]
            layers.append(nn.Conv2d(channels, filters, kernel))
            layers += [ACTIVATIONS[activation]()] if activation in ACTIVATIONS else []
            spatial = [s - kernel + 1 for s in spatial]
            channels = filters
        elif kind == "maxpool2d":
            to(False)
            layers.append(nn.MaxPool2d(spec[1]))
            spatial = [s // spec[1] for s in spatial]
        elif kind in ("lstm", "bilstm"):
            to(True)
            directions = 2 if kind == "bilstm" else 1
            layers.append(ReluLSTM(channels, spec[1], directions))
            channels = spec[1] * directions
        elif kind == "gap":
            to(False)
            layers.append(Mean() if len(spatial) == 1 else MeanND())
            spatial = []
        elif kind == "flatten":
            to(True)
            layers.append(nn.Flatten())
            for s in spatial:
                channels *= s
            spatial = []
        elif kind == "dropout":
            layers.append(nn.Dropout(spec[1]))
        elif kind == "conv3d":
            to(False)
            layers.append(nn.Conv3d(channels, spec[1], spec[2]))
            layers += [ACTIVATIONS[spec[3]]()] if spec[3] in ACTIVATIONS else []
            spatial = [s - spec[2] + 1 for s in spatial]
            channels = spec[1]
        elif kind == "embedding":
            layers.append(nn.Embedding(spec[1], spec[2]))
            spatial, channels, last = [shape[1]], spec[2], True
        elif kind == "gru":
            to(True)
            layers.append(Sequences(nn.GRU(channels, spec[1], batch_first=True)))
            channels = spec[1]
        elif kind == "batchnorm":  # Keras: axis -1, momentum 0.99, epsilon 1e-3
            to(False)
            norm = (nn.BatchNorm1d, nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)[len(spatial)]
            layers.append(norm(channels, eps=1e-3, momentum=0.01))
        elif kind == "layernorm":  # Keras: the last axis, epsilon 1e-3
            to(True)
            layers.append(nn.LayerNorm(channels, eps=1e-3))
        elif kind == "mha":
            to(True)
            layers.append(SelfAttention(channels, spec[1], spec[2]))
        elif kind == "encoder":
            to(True)
            layers.append(Encoder(channels, spec[1], spec[2], spec[3]))
        elif kind == "dense":
            to(True)
            layers.append(nn.Linear(channels, spec[1]))
            channels = spec[1]
            act = ACTIVATIONS.get(spec[2])
            if spec[2] == "softmax":
                layers.append(nn.Softmax(dim=-1))
            elif act is not None:
                layers.append(act())
        else:
            raise ValueError("layer %r has no PyTorch translation" % kind)
    return nn.Sequential(*layers)


def same_function_output(model, data, x, weights):
    """A second build of the model with samefunction's seeded weights (Keras' layouts, turned into
    PyTorch's), run forward in eval mode under no_grad on x; after the timed window."""
    import numpy as np
    import torch

    net = build(torch, model, data)
    held = [m for m in net.children() if any(True for _ in m.parameters())]
    state = []  # (parameter or buffer, array) pairs

    def t(a):
        return np.ascontiguousarray(a)

    def linear(module, kernel, bias):
        state.extend([(module.weight, t(kernel.reshape(-1, kernel.shape[-1]).T
                                        if kernel.ndim == 2 else kernel)), (module.bias, bias)])

    def attention(module, arrays):
        qk, qb, kk, kb, vk, vb, ok, ob = arrays
        for dense, kernel, bias in ((module.query, qk, qb), (module.key, kk, kb),
                                    (module.value, vk, vb)):
            state.extend([(dense.weight, t(kernel.reshape(kernel.shape[0], -1).T)),
                          (dense.bias, bias.reshape(-1))])
        state.extend([(module.output.weight, t(ok.reshape(-1, ok.shape[-1]).T)),
                      (module.output.bias, ob)])

    def gates(a, u):  # Keras' GRU gates z, r, h -> PyTorch's r, z, n
        return np.concatenate([a[..., u:2 * u], a[..., :u], a[..., 2 * u:]], -1)

    specs = [(s, w) for s, w in zip(MODELS[model], weights) if w]
    if len(specs) != len(held):
        raise ValueError("%d PyTorch modules hold weights, the description gives %d"
                         % (len(held), len(specs)))
    for (spec, arrays), module in zip(specs, held):
        kind = spec[0]
        if kind in ("conv1d", "conv2d", "conv3d"):
            n = arrays[0].ndim - 2
            state.extend([(module.weight, t(arrays[0].transpose((n + 1, n) + tuple(range(n))))),
                          (module.bias, arrays[1])])
        elif kind == "dense":
            linear(module, *arrays)
        elif kind in ("lstm", "bilstm"):
            for d in range(len(module.inputs)):
                kernel, recurrent, bias = arrays[3 * d:3 * d + 3]
                state.extend([(module.inputs[d].weight, t(kernel.T)), (module.inputs[d].bias, bias),
                              (module.recurrent[d].weight, t(recurrent.T))])
        elif kind == "gru":
            kernel, recurrent, bias = arrays
            u, rnn = recurrent.shape[0], module.rnn
            state.extend([(rnn.weight_ih_l0, t(gates(kernel, u).T)),
                          (rnn.weight_hh_l0, t(gates(recurrent, u).T)),
                          (rnn.bias_ih_l0, gates(bias[0], u)), (rnn.bias_hh_l0, gates(bias[1], u))])
        elif kind == "embedding":
            state.append((module.weight, arrays[0]))
        elif kind == "batchnorm":
            state.extend(zip((module.weight, module.bias, module.running_mean, module.running_var),
                             arrays))
        elif kind == "layernorm":
            state.extend(zip((module.weight, module.bias), arrays))
        elif kind == "mha":
            attention(module, arrays)
        elif kind == "encoder":
            attention(module.attention, arrays[:8])
            state.extend(zip((module.norm1.weight, module.norm1.bias), arrays[8:10]))
            linear(module.ff1, *arrays[10:12])
            linear(module.ff2, *arrays[12:14])
            state.extend(zip((module.norm2.weight, module.norm2.bias), arrays[14:16]))
    with torch.no_grad():
        for target, array in state:
            value = torch.as_tensor(np.asarray(array, dtype="float32"))
            if tuple(target.shape) != tuple(value.shape):
                raise ValueError("weight shape %s for %s" % (tuple(value.shape),
                                                             tuple(target.shape)))
            target.copy_(value)
        net.eval()
        xt = torch.from_numpy(x)
        return net(xt.long() if x.dtype.kind == "i" else xt).numpy()
