"""TensorFlow 1.14 to 2.x with every Keras flavour it carries: standalone `keras` (2.2.5/2.3.1),
`tf.keras`, `tensorflow.python.keras`, `tf_keras` and Keras 3 (`keras3`, tf.keras from TF 2.16).

Mode names follow the source study: `eager` is eager execution on (TF 2's default; TF 1 after
enable_eager_execution), `graph` is v1 graph mode (TF 1's default; TF 2 after
disable_eager_execution). `run_eagerly`, `function` and `xla` are TF 2's extra modes.
Inference (`call`, `predict`, `predict_on_batch`) in v1 graph mode builds the model under an
explicit `tf.device('/CPU:0')` or `'/GPU:0'` (seed 004's placement in a TF 1 session).
"""
import contextlib
import os

from .. import machine
from ..models import INFER_APIS
from ..timing import clock
from ..versions import version_tuple
from . import Prepared, Unsupported, kerasnet


def setup(cell):
    """Choose eager or graph before any model or tensor exists; return (tf, version tuple)."""
    import tensorflow as tf

    tfv = version_tuple(tf.__version__)
    v1 = tf.compat.v1 if hasattr(tf, "compat") and hasattr(tf.compat, "v1") else tf
    if cell["mode"] == "graph":
        if tfv >= (2,):
            v1.disable_eager_execution()
    elif tfv < (2,):
        v1.enable_eager_execution()
    pinned = machine.pinned_threads()
    if pinned and tfv >= (2,):  # config `threads`: on purpose, recorded as pinned
        tf.config.threading.set_intra_op_parallelism_threads(pinned)
        tf.config.threading.set_inter_op_parallelism_threads(pinned)
    if tfv >= (2,):
        tf.random.set_seed(0)
    else:
        v1.set_random_seed(0)
    return tf, tfv


def keras_module(tf, flavour):
    if flavour == "keras":
        import keras
    elif flavour == "tf.keras":
        keras = tf.keras
    elif flavour == "tf.python.keras":
        # seed 000 warns this private copy can be 10-100x slower than tf.keras
        try:
            from tensorflow.python import keras
            keras.layers, keras.models, keras.optimizers.Adam, keras.callbacks  # noqa: B018
        except (ImportError, AttributeError) as exc:
            raise Unsupported("tensorflow.python.keras is not usable here: %s" % exc) from exc
    elif flavour == "tf_keras":
        import tf_keras as keras
    elif flavour == "keras3":
        import keras
    else:
        raise Unsupported("keras flavour %r" % flavour)
    return keras


def gpu_check(tf, cell):
    if cell["device"] != "gpu":
        return
    try:
        gpus = tf.config.list_physical_devices("GPU")
    except AttributeError:
        gpus = [1] if tf.test.is_gpu_available() else []
    if not gpus:
        raise Unsupported("device gpu: no GPU visible to TensorFlow on this machine")


def tracing_count(fn):
    get = getattr(fn, "experimental_get_tracing_count", None)
    return get if callable(get) else None


def thread_facts(tf) -> dict:
    """TF's intra/inter-op thread settings as the cell ran (0 = TF picks: TF 1's default)."""
    try:
        threading = tf.config.threading
        return {"intra_op_threads": threading.get_intra_op_parallelism_threads(),
                "inter_op_threads": threading.get_inter_op_parallelism_threads()}
    except AttributeError:
        return {"intra_op_threads": 0, "inter_op_threads": 0}


def facts_of(tf, K, opt):
    facts = {"keras_version": getattr(K, "__version__", None), "optimizer": type(opt).__module__
             + "." + type(opt).__name__, "tf_version": tf.__version__,
             "onednn_opts": os.environ.get("TF_ENABLE_ONEDNN_OPTS")}
    try:
        facts["build_info"] = {k: str(v) for k, v in dict(tf.sysconfig.get_build_info()).items()}
    except AttributeError:
        facts["build_info"] = None
    facts.update(thread_facts(tf))
    try:
        facts["built_with_cuda"] = bool(tf.test.is_built_with_cuda())
    except AttributeError:
        facts["built_with_cuda"] = None
    return facts


def make_dataset(tf, x, y, distinct=4):
    """The seed's make_data_tf: each element is a whole batch; a few distinct batches repeated, so
    any number of steps can be drawn without holding `iterations` batches in memory."""
    import numpy as np

    xs = np.stack([np.roll(x, i, axis=0) for i in range(distinct)])
    ys = np.stack([np.roll(y, i, axis=0) for i in range(distinct)])
    return tf.data.Dataset.from_tensor_slices((xs, ys)).repeat()


def placement(tf, cell):
    """seed 004: an explicit tf.device for inference in a v1 session; nothing elsewhere."""
    if cell["mode"] == "graph" and cell["api"] in INFER_APIS:
        return tf.device("/GPU:0" if cell["device"] == "gpu" else "/CPU:0")
    return contextlib.nullcontext()


def prepare(cell, rule):
    tf, tfv = setup(cell)
    gpu_check(tf, cell)
    K = keras_module(tf, cell["keras"])
    seed = getattr(getattr(K, "utils", None), "set_random_seed", None)
    if callable(seed):  # Keras 3 draws its initial weights from its own seed, not TF's
        seed(0)
    model, data, mode, api, inp = (cell["model"], cell["data"], cell["mode"], cell["api"],
                                   cell["input"])
    x, y = kerasnet.make_data(model, data)
    t0 = clock()
    with placement(tf, cell):
        net = kerasnet.build_model(K, model, data)
    legacy = mode == "graph" and tfv >= (2, 11) and cell["keras"] in ("tf.keras", "tf_keras")
    if api == "custom_loop":
        opt = kerasnet.make_optimizer(K, model)
    else:  # inference cells too: a trained model as a user holds it, compiled
        # model(x) in tf.function/XLA is the step's own function: compile() gets no jit_compile
        opt = kerasnet.compile_model(K, net, model, "eager" if api == "call" else mode, legacy)
    build_s = clock() - t0
    facts = facts_of(tf, K, opt)
    facts["build_s"] = build_s
    facts["legacy_optimizer"] = legacy
    dataset = make_dataset(tf, x, y) if inp == "tfdata" else None

    if api == "custom_loop":
        step, traces = custom_loop(tf, K, net, opt, model, mode, x, y, dataset)
        return Prepared(step=step, traces=traces, facts=facts)
    if api == "call":
        step, traces = call_step(tf, K, net, mode, x, cell["keras"])
        return Prepared(step=step, traces=traces, facts=facts)

    def keras_traces():
        fn = getattr(net, "predict_function" if api in INFER_APIS else "train_function", None)
        get = tracing_count(fn) if fn is not None else None
        return get() if get else None

    if inp == "numpy":
        return Prepared(step=kerasnet.numpy_steps(net, x, y, api, rule.steps_per_call),
                        traces=keras_traces, facts=facts)
    if inp in kerasnet.PYTHON_INPUTS:  # a generator or a Sequence
        return Prepared(step=kerasnet.python_input_steps(K, net, x, y, api, inp),
                        traces=keras_traces, facts=facts)
    if api == "fit":
        return Prepared(step=kerasnet.fit_step(net, dataset), traces=keras_traces, facts=facts)
    if api == "fit_epoch":
        return Prepared(step=kerasnet.fit_epoch_step(net, dataset, rule.steps_per_call),
                        traces=keras_traces, facts=facts)
    # train_on_batch over tf.data
    if tf.executing_eagerly():
        iterator = iter(dataset)

        def step():
            xb, yb = next(iterator)
            return kerasnet.host_loss(net.train_on_batch(xb, yb))
    else:
        # v1 graph mode: the batch tensors come from one get_next() made once; calling
        # train_on_batch(iterator) instead adds a get_next op to the graph at every call (TF warns of
        # "gradual slowdown"), which would time graph growth, not training.
        iterator = tf.compat.v1.data.make_one_shot_iterator(dataset)
        xb, yb = iterator.get_next()

        def step():
            try:
                return kerasnet.host_loss(net.train_on_batch(xb, yb))
            except (TypeError, ValueError) as exc:
                raise Unsupported("train_on_batch does not take tf.data tensors in graph mode "
                                  "here: %s" % exc) from exc
    return Prepared(step=step, traces=keras_traces, facts=facts)


def keras_session(tf, K):
    """The session that holds a v1-graph-mode Keras model's variables (Keras initialises them when
    it hands the session out): the flavour's own get_session where it has one that works here,
    else TF's v1 Keras backend (tf.keras on TF 2, standalone Keras 2.3.1 on TF 2, whose own
    get_session refuses TF 2)."""
    getters = [getattr(getattr(K, "backend", None), "get_session", None)]
    if K.__name__ == "tf_keras":
        from tf_keras.src import backend as tfk_backend
        getters.append(tfk_backend.get_session)
    v1 = getattr(getattr(tf, "compat", None), "v1", None)
    if v1 is not None and hasattr(v1, "keras"):
        getters.append(lambda: v1.keras.backend.get_session())
    errors = []
    for get in getters:
        if callable(get):
            try:
                return get()
            except (RuntimeError, AttributeError) as exc:
                errors.append("%s: %s" % (type(exc).__name__, exc))
    raise Unsupported("no Keras session to run the output in (%s): %s"
                      % (K.__name__, "; ".join(errors) or "no get_session"))


def call_step(tf, K, net, mode, x, flavour):
    """`call`: the forward pass as the mode runs it (the step returns the output as numpy).

    graph: the plain `session.run(model.output, {model.input: x})` of a v1 session (the learning
    phase left at its default: inference). eager: `model(x, training=False)` on the numpy array.
    function / xla: `model(x, training=False)` inside tf.function (jit_compile=True for xla)."""
    if mode == "graph":
        sess = keras_session(tf, K)
        out, inp = net.outputs[0], net.inputs[0]
        return (lambda: kerasnet.host_output(sess.run(out, feed_dict={inp: x}))), None
    if mode == "eager":
        return (lambda: kerasnet.host_output(net(x, training=False))), None
    kwargs = {"jit_compile": True} if mode == "xla" else {}
    fn = tf.function(lambda xb: net(xb, training=False), **kwargs)
    return (lambda: kerasnet.host_output(fn(x))), tracing_count(fn)


def custom_loop(tf, K, net, opt, model, mode, x, y, dataset):
    """A GradientTape step (seeds 002, 003): eager, wrapped in tf.function, or XLA-compiled."""
    loss_name = kerasnet.TRAINING[model][2]
    loss_fn = {"binary_crossentropy": K.losses.BinaryCrossentropy,
               "mse": K.losses.MeanSquaredError,
               "sparse_categorical_crossentropy": K.losses.SparseCategoricalCrossentropy,
               }[loss_name]()
    variables = net.trainable_variables

    def train_step(xb, yb):
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, net(xb, training=True))
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss

    traces = None
    if mode == "function":
        train_step = tf.function(train_step)
        traces = tracing_count(train_step)
    elif mode == "xla":
        train_step = tf.function(train_step, jit_compile=True)
        traces = tracing_count(train_step)
    if dataset is not None:
        iterator = iter(dataset)

        def step():
            xb, yb = next(iterator)
            return float(train_step(xb, yb))
    else:
        def step():
            return float(train_step(x, y))
    return step, traces


# Which cells this backend runs (tfspeed/backends/__init__.py): TensorFlow's model cells, with
# every Keras flavour it carries (the catalogue's row names this module for TensorFlow).
BUILDS_MODEL = True


def why_not(env, cell):
    keras, mode, api, inp = cell["keras"], cell["mode"], cell["api"], cell["input"]
    tfv = version_tuple(env["framework_version"] or "0")
    if api == "call":
        return _why_not_call(keras, mode, tfv)
    if keras == "keras" and inp == "tfdata":
        return "standalone Keras takes no tf.data"
    if keras == "keras" and mode != "graph" and tfv < (2, 0):
        return "standalone Keras 2.2 builds placeholders: graph mode only on TF 1"
    if api == "custom_loop":
        if keras in ("keras", "tf.python.keras") or tfv < (2, 0):
            return "custom loops are studied on TF 2 Keras models"
        if mode not in ("eager", "function", "xla"):
            return "custom loops run eager, in tf.function, or XLA"
        if mode == "xla" and tfv < (2, 5):
            return "jit_compile needs TF >= 2.5"
        return None
    if mode == "graph":
        return "Keras 3 has no v1 graph mode" if keras == "keras3" else None
    if mode == "eager":
        return None
    if mode == "run_eagerly":
        if keras == "keras" or tfv < (2, 0):
            return "run_eagerly is a TF 2 Keras option"
        return None
    if mode == "xla":
        if keras in ("keras", "tf.python.keras") or tfv < (2, 8):
            return "compile(jit_compile=True) needs TF >= 2.8 Keras"
        return None
    if mode == "function" and api in INFER_APIS:
        return "predict compiles its own tf.function; mode function is for model(x) (call)"
    return "mode %s is not a TensorFlow mode" % mode


def _why_not_call(keras, mode, tfv):
    """`call` (model(x)): eager, in v1 graph mode as a session.run of the output, and in
    tf.function / XLA on TF 2 Keras models (as custom loops)."""
    if mode == "graph":
        return "Keras 3 has no v1 graph mode" if keras == "keras3" else None
    if mode == "eager":
        if keras == "keras":
            # Keras 2.3.1 on TF 2.0: "Layer ... was called with an input that isn't a symbolic
            # tensor" for the numpy array
            return "standalone Keras' model(x) takes symbolic tensors only: graph mode"
        return None
    if mode in ("function", "xla"):
        if keras in ("keras", "tf.python.keras") or tfv < (2, 0):
            return "model(x) in tf.function is studied on TF 2 Keras models"
        if mode == "xla" and tfv < (2, 5):
            return "jit_compile needs TF >= 2.5"
        return None
    if mode == "run_eagerly":
        return "run_eagerly is a compile() option: model(x) does not use it"
    return "mode %s is not a TensorFlow mode" % mode


# Hooks (tfspeed/backends/__init__.py): TensorFlow's same-function build, its matmul, its session
# cleared between builds and why a GPU build may not see the GPU.


def clear_session(cell):
    """run_cell.py --serve, before it builds the cell's model again: the Keras session cleared
    (a cell without Keras has none)."""
    if cell["keras"] == "none":
        return
    import tensorflow as tf

    keras_module(tf, cell["keras"]).backend.clear_session()


def gpu_hint(version):
    """driver/study/gpucheck.py: what to do when a GPU build of this TF sees no GPU."""
    if version_tuple(version) < (2, 14):
        return ("TF before 2.14 finds CUDA and cuDNN only outside pip (no tensorflow[and-cuda] "
                "extra; TF 1.15 needs CUDA 10.0, which no PyPI wheel provides): build it with "
                "`snakemake --sdm conda` (the env file's cudatoolkit/cudnn) or install that CUDA "
                "on the system")
    return ("pin tensorflow[and-cuda] (CUDA and cuDNN as nvidia-* wheels) and check that the "
            "driver (nvidia-smi) supports their CUDA version")


def same_function_output(cell, x, weights):
    """samefunction.py's second build of the cell's model, in the cell's Keras flavour."""
    import tensorflow as tf

    return kerasnet.same_function_output(keras_module(tf, cell["keras"]), cell, x, weights)


def matmul(a, b, mode, device):
    """Seed 004's matmul in a v1 session placed explicitly, as seed 004 does: tf.device('/GPU:0')
    for a gpu cell, '/CPU:0' otherwise; eager and tf.function run where TF puts them. A gpu cell is
    skipped where no GPU is visible."""
    tf, _ = setup({"mode": "graph" if mode == "graph" else "eager"})
    gpu_check(tf, {"device": device})
    facts = {"tf_version": tf.__version__}
    place = "/GPU:0" if device == "gpu" else "/CPU:0"
    if mode == "graph":
        v1 = tf.compat.v1 if hasattr(tf, "compat") else tf
        # Variables, not constants: Grappler folds matmul(constant, constant) once and every later
        # sess.run returns the cached product (it "measured" 4 TFLOP/s on 2 cores).
        with tf.device(place):
            va, vb = v1.Variable(a), v1.Variable(b)
            c = tf.matmul(va, vb)
        sess = v1.Session()
        sess.run(v1.global_variables_initializer())
        return Prepared(step=lambda: float(sess.run(c)[0, 0]), facts=facts)
    ta, tb = tf.constant(a), tf.constant(b)
    if mode == "eager":
        return Prepared(step=lambda: float(tf.matmul(ta, tb).numpy()[0, 0]), facts=facts)
    kwargs = {"jit_compile": True} if mode == "xla" else {}
    fn = tf.function(lambda: tf.matmul(ta, tb), **kwargs)
    return Prepared(step=lambda: float(fn().numpy()[0, 0]), facts=facts)


def matmul_why_not(env, cell):
    mode = cell["mode"]
    if mode in ("function", "xla") and \
            version_tuple(env["framework_version"]) < ((2, 0) if mode == "function" else (2, 5)):
        return "%s matmul needs a newer TF" % mode
    return None
