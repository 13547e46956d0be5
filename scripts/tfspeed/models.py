"""The source study's models and data shapes as data (seed 000), so every backend builds the same net.

A layer is a tuple: ("conv1d", filters, kernel, strides, padding), ("gap",), ("dropout", rate),
("dense", units, activation), ("flatten",), ("bilstm", units), ("lstm", units), ("conv2d", filters,
kernel, activation) (valid padding, stride 1), ("maxpool2d", size). Conv1D layers have no
activation, as in the seed. Beyond the seed (a user's own model, config `models`; see
docs/reference/models.md and LAYERS): ("embedding", vocabulary, dim) on integer token data, ("gru",
units), ("batchnorm",), ("layernorm",), ("mha", heads, key_dim) (self-attention),
("encoder", heads, key_dim, ff_units) (a post-norm transformer encoder block) and ("conv3d",
filters, kernel, activation). Standard library only: the Snakemake side imports this too.
"""

_MEDIUM_CONVS = [("conv1d", f, 20, 1, "valid") for f in (64, 128, 256, 256, 128, 64)]
_HEAD = [("gap",), ("dense", 256, "relu"), ("dropout", 0.5), ("dense", 128, "relu"),
         ("dense", 64, "relu"), ("dense", 1, "sigmoid")]

MODELS = {
    # seed 000, make_model_small
    "small": [("conv1d", 128, 40, 4, "same"), ("gap",), ("dropout", 0.5),
              ("dense", 64, "relu"), ("dense", 1, "sigmoid")],
    # seed 000, make_model_medium
    "medium": _MEDIUM_CONVS + _HEAD,
    # seed 000, make_model_large
    "large": ([("conv1d", 64, 400, 4, "valid"), ("conv1d", 128, 200, 1, "valid")]
              + [("conv1d", 256, 12, 1, "same")] * 40
              + [("conv1d", 512, 20, 2, "valid"), ("conv1d", 1028, 10, 2, "valid"),
                 ("conv1d", 256, 1, 1, "valid")]
              + _HEAD),
    # seed 000, the question's own model (LSTM); optional, off in the CPU default
    "lstm": [("bilstm", 512), ("lstm", 512), ("conv1d", 128, 400, 4, "same"), ("flatten",),
             ("dense", 256, "relu"), ("dropout", 0.5), ("dense", 128, "relu"),
             ("dense", 64, "relu"), ("dense", 1, "sigmoid")],
    # seed 002: 10 -> 50 -> 1, MSE, SGD(0.01), all 1000 samples in one batch
    "mlp": [("dense", 50, "relu"), ("dense", 1, None)],
    # seed 004: one 1000 x 1000 float32 matmul; also the machine's attainable FLOP/s probe
    "matmul": [("matmul",)],
    # seed 003's "small CNN" (its code leaves it out; defined here): MNIST-like 28x28x1 images,
    # Conv2D 32 3x3 relu, MaxPool 2, Conv2D 64 3x3 relu, MaxPool 2, Flatten, Dense 10 softmax
    "cnn2d": [("conv2d", 32, 3, "relu"), ("maxpool2d", 2), ("conv2d", 64, 3, "relu"),
              ("maxpool2d", 2), ("flatten",), ("dense", 10, "softmax")],
    # seed 001's dense net: 784 -> 128 relu -> 10 softmax, sparse categorical cross-entropy, Adam
    "mlp784": [("dense", 128, "relu"), ("dense", 10, "softmax")],
    # seed 001's custom-gradient micro-case: y = x**2 and dy/dx of one scalar variable
    "xsquared": [("xsquared",)],
}

# Loss and optimizer per model: the seed's Conv1D models use Adam(1e-4) + binary cross-entropy.
TRAINING = {
    "small": ("adam", 1e-4, "binary_crossentropy"),
    "medium": ("adam", 1e-4, "binary_crossentropy"),
    "large": ("adam", 1e-4, "binary_crossentropy"),
    "lstm": ("adam", 1e-4, "binary_crossentropy"),
    "mlp": ("sgd", 1e-2, "mse"),
    "matmul": (None, None, None),
    # Keras' compile() defaults of seed 001 (optimizer='adam': learning rate 1e-3); the CNN is
    # compiled the same way (inference only: a trained model as a user holds it)
    "cnn2d": ("adam", 1e-3, "sparse_categorical_crossentropy"),
    "mlp784": ("adam", 1e-3, "sparse_categorical_crossentropy"),
    "xsquared": (None, None, None),
}

# (batch, timesteps, channels); seed 000's batch_shape_small/medium/large. "tiny" is a tenth of
# "small" (the question's LSTM: 9.6 s per step in TF 2.21 Keras 3 eager, 2.3 s in PyTorch, on a
# 2-core VM). "mlp" is seed 002's; "mnist" a batch of 32 28x28x1 images (seed 003); "mnist784"
# seed 001's 100 samples of 784 features; "scalar" seed 001's one variable.
DATA = {
    "small": (32, 140, 30),
    "medium": (32, 1400, 30),
    "large": (32, 14000, 30),
    "tiny": (32, 14, 30),
    "mlp": (1000, 10),
    "matmul": (1000, 1000),
    "mnist": (32, 28, 28, 1),
    "mnist784": (100, 784),
    "scalar": (),
}

# What each data set's inputs are: "float" (random normal, the seed's) unless named here;
# "tokens" are integer ids below the vocabulary of the model's Embedding layer.
DATA_INPUT = {}

# Models that take one data shape of their own (model -> data); the Conv1D models and the LSTM
# take any sequence data (small, medium, large, tiny) their convolutions leave a length in.
OWN_DATA = {"mlp": "mlp", "matmul": "matmul", "cnn2d": "mnist", "mlp784": "mnist784",
            "xsquared": "scalar"}

# The seed's iteration counts by model size (fixed stopping rule).
SEED_ITERATIONS = {"small": 200, "medium": 100, "large": 50, "lstm": 10, "mlp": 100,
                   "matmul": 100, "cnn2d": 200, "mlp784": 100, "xsquared": 100}

# The APIs that run the model forward only (inference; cells.INFER_APIS says the same): their
# FLOPs per step are the forward pass.
INFER_APIS = ("call", "inference_mode", "predict", "predict_on_batch")

# Test-only models that misbehave on purpose (fault injection); never in a real study.
FAULT_MODELS = ("fault_segfault", "fault_abort", "fault_hang", "fault_oom", "fault_raise",
                "fault_xss")


# Every layer kind a model description may hold: its arguments by name, in order (usermodels.py
# checks a user's layers against these). The micro-cases' "matmul" and "xsquared" are not layers.
LAYERS = {
    "conv1d": ("filters", "kernel", "strides", "padding"),
    "conv2d": ("filters", "kernel", "activation"),
    "conv3d": ("filters", "kernel", "activation"),
    "maxpool2d": ("size",),
    "gap": (),
    "flatten": (),
    "dropout": ("rate",),
    "dense": ("units", "activation"),
    "lstm": ("units",),
    "bilstm": ("units",),
    "gru": ("units",),
    "embedding": ("vocabulary", "dim"),
    "batchnorm": (),
    "layernorm": (),
    "mha": ("heads", "key_dim"),
    "encoder": ("heads", "key_dim", "ff_units"),
}


def attention_flops(batch, steps, dim, heads, key_dim):
    """Self-attention as Keras' MultiHeadAttention(heads, key_dim) computes it: query, key and value
    projections (dim -> heads x key_dim each), scores QK^T and their weighted sum of V (heads x
    steps x steps x key_dim each), the output projection (heads x key_dim -> dim); 2 FLOPs per
    multiply-add. The softmax and scaling are element-wise: left out."""
    inner = heads * key_dim
    return (3 * 2 * batch * steps * dim * inner + 2 * 2 * batch * heads * steps * steps * key_dim
            + 2 * batch * steps * inner * dim)


def _conv_out(length, kernel, strides, padding):
    if padding == "same":
        return -(-length // strides)
    return (length - kernel) // strides + 1


# A user's own models and data (config `models` and `data`): usermodels.py checks each and registers
# it here (register_model, register_data), so that every backend builds it as it builds the seed's.
# name -> the description it was made from; and the check of which user model takes which data
# (usermodels.pair_error), handed over with them (register_pair_check).
_USER = {"models": {}, "data": {}}
_PAIR_CHECK = []


def register_data(name, shape, input_kind, description):
    """A user's data set: its shape with the batch, its input kind ("float", "tokens") and the
    config entry it was made from."""
    DATA[name] = tuple(shape)
    DATA_INPUT.pop(name, None)
    if input_kind != "float":
        DATA_INPUT[name] = input_kind
    _USER["data"][name] = dict(description)


def register_model(name, layers, training, iterations, description):
    """A user's model: its layers (tuples as MODELS holds them), (optimizer, learning rate, loss),
    its fixed-rule iterations and the config entry it was made from."""
    MODELS[name], TRAINING[name] = list(layers), tuple(training)
    SEED_ITERATIONS[name] = iterations
    _USER["models"][name] = dict(description)


def register_pair_check(check):
    """check(model, data) -> why a user's model cannot take the data, or None: what
    output_length_ok asks about a pair with a user's model or data."""
    del _PAIR_CHECK[:]
    _PAIR_CHECK.append(check)


def is_user(model=None, data=None):
    """Whether the model or the data is a user's (registered from config, not the seed's)."""
    return model in _USER["models"] or data in _USER["data"]


def user_description(kind, name):
    """The config entry a user's model (kind "models") or data ("data") was made from, or None."""
    return _USER[kind].get(name)


def snapshot():
    """Everything registration changes, to put back with restore (a test's registrations)."""
    import copy

    return copy.deepcopy((MODELS, TRAINING, DATA, DATA_INPUT, SEED_ITERATIONS, _USER)), \
        list(_PAIR_CHECK)


def restore(saved):
    tables, check = saved
    for held, value in zip((MODELS, TRAINING, DATA, DATA_INPUT, SEED_ITERATIONS, _USER), tables):
        held.clear()
        held.update(value)
    _PAIR_CHECK[:] = check


def output_length_ok(model, data):
    """False where the model cannot take the data (seed 000 leaves out large model x small data).
    A user's model or data: False where the layers cannot take the data's shape (the pair check
    registered with them)."""
    if is_user(model, data):
        return bool(_PAIR_CHECK) and _PAIR_CHECK[0](model, data) is None
    if model in OWN_DATA or data in OWN_DATA.values():
        return OWN_DATA.get(model) == data
    if model not in MODELS or data not in DATA:
        return False
    length = DATA[data][1]
    for layer in MODELS[model]:
        if layer[0] == "conv1d":
            length = _conv_out(length, layer[2], layer[3], layer[4])
            if length < 1:
                return False
    return True


def layer_flops(model, data):
    """[(kind, flops)] of one forward pass over one batch: multiply-adds x 2 of each Conv1D,
    Conv2D, Conv3D, Dense, LSTM, GRU, attention and encoder layer (an Embedding adds 0: a look-up,
    listed because it holds weights; see train_flops). Element-wise ops (bias, activations,
    pooling, normalisation, the optimizer) are left out: they are O(parameters) or
    O(activations), small next to the products here."""
    shape = DATA[data]
    batch = shape[0]
    # spatial sizes (none for flat features, one for sequences, two for images), then channels
    spatial, channels = list(shape[1:-1]), shape[-1]
    if DATA_INPUT.get(data) == "tokens":  # (batch, steps) of ids: the Embedding adds channels
        spatial, channels = list(shape[1:]), None
    out = []
    for layer in MODELS[model]:
        kind = layer[0]
        if kind == "conv1d":
            filters, kernel, strides, padding = layer[1:]
            spatial = [_conv_out(spatial[0], kernel, strides, padding)]
            out.append((kind, 2 * batch * spatial[0] * kernel * channels * filters))
            channels = filters
        elif kind == "conv2d":
            filters, kernel = layer[1], layer[2]
            spatial = [s - kernel + 1 for s in spatial]
            out.append((kind, 2 * batch * spatial[0] * spatial[1] * kernel * kernel * channels
                        * filters))
            channels = filters
        elif kind == "maxpool2d":
            spatial = [s // layer[1] for s in spatial]
        elif kind == "dense":
            positions = 1
            for s in spatial:
                positions *= s
            out.append((kind, 2 * batch * positions * channels * layer[1]))
            channels = layer[1]
        elif kind == "gap":
            spatial = []
        elif kind == "flatten":
            for s in spatial:
                channels *= s
            spatial = []
        elif kind in ("lstm", "bilstm"):
            units = layer[1]
            directions = 2 if kind == "bilstm" else 1
            # 4 gates, each (input + recurrent) matmul per timestep
            out.append((kind, directions * 2 * batch * spatial[0] * 4 * units
                        * (channels + units)))
            channels = units * directions
        elif kind == "gru":  # 3 gates, each (input + recurrent) matmul per timestep
            units = layer[1]
            out.append((kind, 2 * batch * spatial[0] * 3 * units * (channels + units)))
            channels = units
        elif kind == "conv3d":
            filters, kernel = layer[1], layer[2]
            spatial = [s - kernel + 1 for s in spatial]
            out.append((kind, 2 * batch * spatial[0] * spatial[1] * spatial[2] * kernel ** 3
                        * channels * filters))
            channels = filters
        elif kind == "embedding":  # a table look-up: no products, but weights (see train_flops)
            out.append((kind, 0))
            channels = layer[2]
        elif kind == "mha":
            out.append((kind, attention_flops(batch, spatial[0], channels, layer[1], layer[2])))
        elif kind == "encoder":  # attention, then the feed-forward pair dim -> ff_units -> dim
            heads, key_dim, ff = layer[1:]
            out.append((kind, attention_flops(batch, spatial[0], channels, heads, key_dim)
                        + 2 * 2 * batch * spatial[0] * channels * ff))
        # batchnorm, layernorm, dropout: element-wise, left out (see above)
    return out


def forward_flops(model, data):
    return sum(f for _, f in layer_flops(model, data))


def train_flops(model, data):
    """FLOPs of one training step as frameworks do the work: the forward pass, and backward the
    gradient w.r.t. each layer's weights (as much as its forward) and w.r.t. its input (as much
    again), except for the first weighted layer, whose input is the data: no framework computes a
    gradient for it. So 3x forward minus the first layer's forward."""
    if model == "matmul":
        n = DATA[data][0]
        return 2 * n ** 3
    if model == "xsquared":
        return None  # one scalar multiply: overhead only, no FLOP/s to speak of
    layers = layer_flops(model, data)
    return 3 * sum(f for _, f in layers) - (layers[0][1] if layers else 0)


def step_flops(model, data, api):
    """FLOPs of one step of `api`: the forward pass for inference APIs, a training step (see
    train_flops) otherwise; None where there is no formula."""
    if model not in MODELS:
        return None
    if (_USER["models"].get(model) or {}).get("builder") is not None:
        return None  # built by the user's code: no layer list to count
    if api in INFER_APIS:
        return forward_flops(model, data)
    return train_flops(model, data)
