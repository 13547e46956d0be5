"""The seed's models (models.MODELS) as PyTorch modules, layer for layer as Keras builds them.

Keras holds data channels-last ((batch, steps, channels), (batch, height, width, channels));
PyTorch's convolutions want channels first. The net transposes where a layer needs the other
layout, and goes back to channels-last before Flatten so that the Dense layer after it sees the
features in Keras' order. Conv1D uses TensorFlow's 'same' padding (PyTorch has it for stride 1
only). The LSTMs are Keras' (activation relu, recurrent activation sigmoid, as the question's model
asks), written out: torch.nn.LSTM offers tanh only.
"""
from ..models import DATA, MODELS


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
            layers += [nn.ReLU()] if activation == "relu" else []
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
            layers.append(Mean())
            spatial = []
        elif kind == "flatten":
            to(True)
            layers.append(nn.Flatten())
            for s in spatial:
                channels *= s
            spatial = []
        elif kind == "dropout":
            layers.append(nn.Dropout(spec[1]))
        elif kind == "dense":
            to(True)
            layers.append(nn.Linear(channels, spec[1]))
            channels = spec[1]
            act = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid}.get(spec[2])
            if spec[2] == "softmax":
                layers.append(nn.Softmax(dim=-1))
            elif act is not None:
                layers.append(act())
        else:
            raise ValueError("layer %r has no PyTorch translation" % kind)
    return nn.Sequential(*layers)
