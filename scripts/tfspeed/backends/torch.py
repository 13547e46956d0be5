"""PyTorch: the seed's Conv1D models translated layer for layer (same shapes, TF-style 'same'
padding, Adam(1e-4) with Keras' epsilon, binary cross-entropy on a sigmoid output), trained by a
custom loop. Modes: `eager`, `torchscript` (torch.jit.trace), `compile` (torch.compile)."""
from .. import machine
from ..models import DATA, MODELS, TRAINING
from ..timing import clock
from . import Prepared, Unsupported
from .kerasnet import make_data


def build(torch, model, data):
    nn = torch.nn
    F = torch.nn.functional
    shape = DATA[data]
    channels = shape[-1]
    length = shape[1] if len(shape) == 3 else 1

    class SamePad(nn.Module):
        """TensorFlow's 'same' padding for a strided Conv1D (PyTorch only has it for stride 1)."""

        def __init__(self, length, kernel, stride):
            super().__init__()
            out = -(-length // stride)
            total = max((out - 1) * stride + kernel - length, 0)
            self.pad = (total // 2, total - total // 2)

        def forward(self, x):
            return F.pad(x, self.pad)

    class ChannelsFirst(nn.Module):  # Keras data is (batch, steps, channels)
        def forward(self, x):
            return x.transpose(1, 2)

    class GlobalAvgPool(nn.Module):
        def forward(self, x):
            return x.mean(dim=2)

    layers = [ChannelsFirst()] if len(shape) == 3 else []
    for spec in MODELS[model]:
        kind = spec[0]
        if kind == "conv1d":
            filters, kernel, stride, padding = spec[1:]
            if padding == "same":
                layers.append(SamePad(length, kernel, stride))
                length = -(-length // stride)
            else:
                length = (length - kernel) // stride + 1
            layers.append(nn.Conv1d(channels, filters, kernel, stride=stride))
            channels = filters
        elif kind == "gap":
            layers.append(GlobalAvgPool())
        elif kind == "dropout":
            layers.append(nn.Dropout(spec[1]))
        elif kind == "dense":
            layers.append(nn.Linear(channels, spec[1]))
            channels = spec[1]
            if spec[2] == "relu":
                layers.append(nn.ReLU())
            elif spec[2] == "sigmoid":
                layers.append(nn.Sigmoid())
        else:
            raise Unsupported("layer %r has no PyTorch translation here (the Keras LSTM uses a "
                              "relu activation, which torch.nn.LSTM does not offer)" % kind)
    return nn.Sequential(*layers)


def prepare(cell, rule):
    import torch

    torch.manual_seed(0)
    if machine.pinned_threads():  # config `threads`: on purpose, recorded as pinned
        torch.set_num_threads(machine.pinned_threads())
    if cell["device"] == "gpu" and not torch.cuda.is_available():
        raise Unsupported("device gpu: no CUDA device visible to PyTorch on this machine")
    device = torch.device("cuda" if cell["device"] == "gpu" else "cpu")
    model, data, mode = cell["model"], cell["data"], cell["mode"]
    x_np, y_np = make_data(model, data)
    x = torch.from_numpy(x_np).to(device)
    y = torch.from_numpy(y_np).to(device)
    t0 = clock()
    net = build(torch, model, data).to(device)
    opt_name, lr, loss_name = TRAINING[model]
    params = list(net.parameters())
    if opt_name == "adam":
        opt = torch.optim.Adam(params, lr=lr, eps=1e-7)  # Keras' default epsilon
    else:
        opt = torch.optim.SGD(params, lr=lr)
    loss_fn = torch.nn.BCELoss() if loss_name == "binary_crossentropy" else torch.nn.MSELoss()
    net.train()
    if mode == "torchscript":
        forward = torch.jit.trace(net, x)
    elif mode == "compile":
        forward = torch.compile(net)
    else:
        forward = net
    build_s = clock() - t0

    def step():
        opt.zero_grad()
        loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        return loss.item()  # a host value: the device has finished

    facts = {"torch_version": torch.__version__, "build_s": build_s,
             "optimizer": "torch.optim." + type(opt).__name__,
             "intra_op_threads": torch.get_num_threads(),
             "inter_op_threads": torch.get_num_interop_threads(),
             "built_with_cuda": torch.version.cuda is not None}
    return Prepared(step=step, facts=facts)
