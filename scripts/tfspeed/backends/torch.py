"""PyTorch: the seed's models translated layer for layer (backends/torchnet.py).

Training: a custom loop (Adam(1e-4) with Keras' epsilon, binary cross-entropy on a sigmoid output).
Inference: `model(x)` in eval mode under torch.no_grad() (api `call`) or torch.inference_mode()
(api `inference_mode`), the output copied to a numpy array. Modes: `eager`, `torchscript`
(torch.jit.trace), `compile` (torch.compile)."""
from .. import machine
from ..models import INFER_APIS, TRAINING
from ..timing import clock
from . import Prepared, Unsupported
from .kerasnet import make_data
from .torchnet import build
from .torchnet import same_function_output as _same_function_output


def prepare(cell, rule):
    import torch

    torch.manual_seed(0)
    if machine.pinned_threads():  # config `threads`: on purpose, recorded as pinned
        torch.set_num_threads(machine.pinned_threads())
    device = torch.device(device_name(cell["device"], torch.cuda.is_available()))
    model, data, mode, api = cell["model"], cell["data"], cell["mode"], cell["api"]
    x_np, y_np = make_data(model, data)
    x = torch.from_numpy(x_np).to(device)
    if x_np.dtype.kind == "i":  # token ids (usermodels.py): torch's Embedding takes int64
        x = x.long()
    y = torch.from_numpy(y_np).to(device)
    t0 = clock()
    net = build(torch, model, data).to(device)
    facts = {"torch_version": torch.__version__,
             "intra_op_threads": torch.get_num_threads(),
             "inter_op_threads": torch.get_num_interop_threads(),
             "built_with_cuda": torch.version.cuda is not None}
    facts.update(device_facts(torch, device))
    if api in INFER_APIS:
        step = inference_step(torch, net, mode, api, x)
        facts["build_s"] = clock() - t0
        return Prepared(step=step, facts=facts)
    opt_name, lr, loss_name = TRAINING[model]
    params = list(net.parameters())
    if opt_name == "adam":
        opt = torch.optim.Adam(params, lr=lr, eps=1e-7)  # Keras' default epsilon
    else:
        opt = torch.optim.SGD(params, lr=lr)
    loss_fn = loss_function(torch, loss_name)
    net.train()
    if mode == "torchscript":
        forward = torch.jit.trace(net, x)
    elif mode == "compile":
        forward = torch.compile(net)
    else:
        forward = net
    facts["build_s"] = clock() - t0
    facts["optimizer"] = "torch.optim." + type(opt).__name__

    def step():
        opt.zero_grad()
        loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        return loss.item()  # a host value: the device has finished

    return Prepared(step=step, facts=facts)


def loss_function(torch, name):
    """Keras' loss on the model's output: binary cross-entropy on a sigmoid, MSE, and sparse
    categorical cross-entropy on a softmax (Keras clips the probabilities to 1e-7 before the log;
    the targets are class ids, as Keras takes them, in a (batch, 1) float array)."""
    if name == "binary_crossentropy":
        return torch.nn.BCELoss()
    if name == "sparse_categorical_crossentropy":
        def sparse_ce(out, y):
            log = torch.log(out.clamp(1e-7, 1 - 1e-7))
            return torch.nn.functional.nll_loss(log, y.reshape(-1).long())
        return sparse_ce
    return torch.nn.MSELoss()


def inference_step(torch, net, mode, api, x):
    """One forward pass in eval mode under no_grad (`call`) or inference_mode, returning the
    output's first value after copying the whole output to a numpy array (the device is done)."""
    net.eval()
    context = torch.no_grad if api == "call" else torch.inference_mode
    if mode == "torchscript":
        with torch.no_grad():
            forward = torch.jit.trace(net, x)
    elif mode == "compile":
        forward = torch.compile(net)
    else:
        forward = net

    def step():
        with context():
            out = forward(x)
        return float(out.cpu().numpy().reshape(-1)[0])

    return step


# Which cells this backend runs (tfspeed/backends/__init__.py): PyTorch's own model cells (the
# catalogue's row names this module for PyTorch, before keras3.py, which runs Keras 3 on torch).
BUILDS_MODEL = True


def claims(cell):
    return cell["keras"] != "keras3"


def why_not(env, cell):
    api = cell["api"]
    if api in ("predict", "predict_on_batch"):
        return "PyTorch has no predict: model(x) under no_grad (call) or inference_mode"
    if cell["input"] != "numpy" or api not in ("custom_loop", "call", "inference_mode"):
        return "PyTorch runs a custom loop on tensors made from numpy"
    if cell["mode"] not in ("eager", "compile", "torchscript"):
        return "PyTorch modes: eager, compile, torchscript"
    return None


# Hooks (tfspeed/backends/__init__.py): PyTorch's same-function build, its matmul and why a built
# env's import check failed.
CPU_HINT = (
    "the installed torch %s is not a CPU build (no +cpu): PyPI's torch for Linux is the CUDA build, "
    "whose nvidia-* libraries this CPU env does not list. Give a source of the CPU wheel in config "
    "`package_sources` (extra_index_urls: [https://download.pytorch.org/whl/cpu], or find_links: a "
    "folder holding the wheel), see docs/reference/environments.md, \"Package sources\"")


def import_hint(packages, build):
    """build_env.py, when a built env's import check fails: a CPU env holding torch's CUDA build
    (its version has no +cpu) is the usual cause; None otherwise."""
    torch = packages.get("torch", "")
    if torch and "+" not in torch and build == "cpu":
        return CPU_HINT % torch
    return None


def same_function_output(cell, x, weights):
    """samefunction.py's second build of the cell's model, translated layer for layer."""
    return _same_function_output(cell["model"], cell["data"], x, weights)


def device_name(device, cuda_visible):
    """The torch device of a cell's `device` axis, placed explicitly: "cuda" for a gpu cell
    (Unsupported where PyTorch sees no CUDA device), "cpu" for a cpu cell even where a GPU is
    visible."""
    if device == "gpu" and not cuda_visible:
        raise Unsupported("device gpu: no CUDA device visible to PyTorch on this machine")
    return "cuda" if device == "gpu" else "cpu"


def device_facts(torch, device):
    """Where the cell ran, for provenance: the device, and on CUDA the GPU's name and whether
    float32 matmuls and convolutions may use TF32 (PyTorch's defaults: no for matmul, yes for
    cuDNN convolutions)."""
    facts = {"device": str(device)}
    if device.type == "cuda":
        facts.update(gpu_name=torch.cuda.get_device_name(device),
                     tf32_matmul=bool(torch.backends.cuda.matmul.allow_tf32),
                     tf32_cudnn=bool(torch.backends.cudnn.allow_tf32))
    return facts


def matmul(a, b, mode, device):
    """Seed 004's matmul in PyTorch: eager torch.matmul, or torch.compile'd, on the cell's device
    (the operands placed there once); each step copies the whole product back to the host, as
    TF's session.run and .numpy() do."""
    import torch

    place = torch.device(device_name(device, torch.cuda.is_available()))
    ta, tb = torch.from_numpy(a).to(place), torch.from_numpy(b).to(place)
    fn = torch.compile(torch.matmul) if mode == "compile" else torch.matmul
    facts = {"torch_version": torch.__version__}
    facts.update(device_facts(torch, place))
    return Prepared(step=lambda: float(fn(ta, tb).cpu().numpy()[0, 0]), facts=facts)
