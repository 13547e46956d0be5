"""fit over an epoch (api fit_epoch): what one call hands Keras' fit, and which cells exist. The
real cells run in the quick study (tests/e2e/test_workflow.py: per-step samples, the table)."""
import numpy as np

from tfspeed import cells
from tfspeed.backends import kerassteps


class History:
    def __init__(self, loss):
        self.history = {"loss": [loss]}


class Net:
    """Records every fit() call's arguments; a real Keras model runs in the e2e tests."""

    def __init__(self):
        self.calls = []

    def fit(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return History(0.5)


def test_numpy_epoch_is_the_batch_stacked_steps_times_in_one_call():
    x, y = np.ones((32, 14, 3), "float32"), np.zeros((32, 1), "float32")
    net = Net()
    step = kerassteps.numpy_steps(net, x, y, "fit_epoch", steps_per_call=7)
    assert step() == 0.5 and len(net.calls) == 1
    (xs, ys), kwargs = net.calls[0]
    assert xs.shape == (7 * 32, 14, 3) and ys.shape == (7 * 32, 1)
    assert kwargs == {"batch_size": 32, "epochs": 1, "verbose": 0, "shuffle": False}
    # the one-step fit stays one batch a call
    kerassteps.numpy_steps(net, x, y, "fit")()
    (x1, _), kwargs1 = net.calls[1]
    assert x1.shape == (32, 14, 3) and kwargs1["batch_size"] == 32


def test_dataset_epoch_is_steps_per_epoch():
    net = Net()
    kerassteps.fit_epoch_step(net, "dataset", 200)()
    assert net.calls == [(("dataset",), {"steps_per_epoch": 200, "epochs": 1, "verbose": 0})]


TF221 = {"framework": "tensorflow", "framework_version": "2.21.0", "flavours": ["keras3", "tf_keras"],
         "build": "cpu", "devices": ["cpu"]}
TORCH = {"framework": "torch", "framework_version": "2.13.0", "flavours": ["none"], "build": "cpu",
         "devices": ["cpu"]}


def cell(**over):
    base = {"model": "small", "data": "small", "keras": "keras3", "mode": "eager",
            "api": "fit_epoch", "input": "numpy", "device": "cpu"}
    return dict(base, **over)


def test_which_fit_epoch_cells_exist():
    assert cells.task("fit_epoch") == "train"
    assert cells.why_not(TF221, cell()) is None
    assert cells.why_not(TF221, cell(input="tfdata")) is None
    assert cells.why_not(TF221, cell(input="generator")) is not None
    assert cells.why_not(TORCH, cell(keras="none")) is not None
    grid = {"pairs": [["small", "small"]], "keras": ["keras3"], "modes": ["eager"],
            "apis": ["fit", "fit_epoch"], "inputs": ["numpy"], "devices": ["cpu"]}
    assert [c["api"] for c in cells.expand_grid(TF221, grid)] == ["fit", "fit_epoch"]
    assert cells.parse_cell_id(cells.cell_id(cell())) == cell()
