"""Seed 001's custom-gradient micro-case: y = x**2 and dy/dx of one scalar tf.Variable (x = 2.0).

eager: a GradientTape around y = x**2 (what TF 2 offers eagerly: tf.gradients is graph-only);
function: the seed's own code, `y = x**2; return y, tf.gradients(y, x)` inside tf.function with
x passed in; graph: the same tf.gradients in a v1 session. A step returns the gradient (4.0) as a
host float. The step is all overhead (one multiply): what it times is the cost of a call."""
from ..versions import version_tuple
from . import Prepared


def prepare(cell, rule):
    from .tf import setup, thread_facts

    tf, tfv = setup(cell)
    mode = cell["mode"]
    facts = {"tf_version": tf.__version__, **thread_facts(tf)}
    if mode == "graph":
        v1 = tf.compat.v1 if hasattr(tf, "compat") and hasattr(tf.compat, "v1") else tf
        x = v1.Variable(2.0)
        y = x ** 2
        grad = tf.gradients(y, x)
        sess = v1.Session()
        sess.run(v1.global_variables_initializer())
        return Prepared(step=lambda: float(sess.run(grad)[0]), facts=facts)
    x = tf.Variable(2.0)
    if mode == "function":
        @tf.function
        def custom_gradient(v):
            y = v ** 2
            return y, tf.gradients(y, v)

        def step():
            _, grad = custom_gradient(x)
            return float(grad[0].numpy())

        get = getattr(custom_gradient, "experimental_get_tracing_count", None)
        return Prepared(step=step, traces=get if callable(get) else None, facts=facts)

    def eager_step():
        with tf.GradientTape() as tape:
            y = x ** 2
        return float(tape.gradient(y, x).numpy())

    return Prepared(step=eager_step, facts=facts)


# Which cells this backend runs (tfspeed/backends/__init__.py: a micro-case, offered every
# framework's cells): the gradient cells, to refuse those that are not TensorFlow's with the reason.
def claims(cell):
    return cell["api"] == "gradient"


def why_not(env, cell):
    """Eager (GradientTape), inside tf.function (tf.gradients, the seed's code) and in a v1
    session (tf.gradients), in TensorFlow only."""
    if env["framework"] != "tensorflow":
        return "the custom-gradient micro-case is TensorFlow's (seed 001)"
    if cell["keras"] != "none" or cell["input"] != "numpy":
        return "the custom-gradient micro-case uses no Keras and no input pipeline"
    if cell["mode"] not in ("eager", "function", "graph"):
        return "the custom-gradient micro-case runs eager, in tf.function or in a session"
    if cell["mode"] == "function" and version_tuple(env["framework_version"] or "0") < (2, 0):
        return "tf.function needs TF 2"
    return "CPU build" if cell["device"] == "gpu" and env["build"] != "gpu" else None
