"""The words for frameworks, modes and APIs, in one place. Framework names are the catalogue's
(tfspeed/frameworks.py); modes and APIs have two forms: labels in tables (the seed's configuration
strings, the source layout's column headers: "Eager", "custom loop") and phrases in the report's
sentences ("Eager mode", "a custom loop"). A value without an entry is shown as it is."""
import re
from collections.abc import Mapping

from tfspeed import frameworks


class CatalogueWords(Mapping):
    """framework name -> one field of its catalogue row, read from the catalogue at each look-up
    (a framework registered after this module was imported has its words too)."""

    def __init__(self, field: str):
        self.field = field

    def _words(self) -> dict:
        return {f.name: getattr(f, self.field) for f in frameworks.CATALOGUE}

    def __getitem__(self, name):
        return self._words()[name]

    def __iter__(self):
        return iter(self._words())

    def __len__(self):
        return len(self._words())


FRAMEWORK = CatalogueWords("label")  # "TensorFlow"
FRAMEWORK_SHORT = CatalogueWords("short_label")  # "TF"

# fit is timed two ways (tfspeed/cells.py), named so a reader knows which: a whole fit() call per
# training step (the seed's numpy timing, set-up in every step) and one fit() over an epoch (the
# seed's tf.data timing: the call's time over its steps, set-up paid once per epoch)
API = {"train_on_batch": "train_on_batch()", "fit": "fit() 1 step/call",
       "fit_epoch": "fit() epoch/call", "custom_loop": "custom loop", "matmul": "matmul"}
# graph is the TF 1-style graph (tf.compat.v1.disable_eager_execution() in TF 2), eager TF 2's
# default (Keras compiles the step with tf.function unless run_eagerly), function the user's own
# @tf.function step (tfspeed/backends/tf.py)
MODE = {"eager": "Eager", "graph": "TF 1-style graph", "run_eagerly": "run_eagerly",
        "function": "own @tf.function",
        "xla": "XLA", "compile": "torch.compile", "torchscript": "TorchScript", "numpy": "NumPy"}

API_PHRASE = {**API, "fit": "fit() one step per call", "fit_epoch": "fit() over an epoch",
              "custom_loop": "a custom loop", "predict": "predict()", "call": "model(x)",
              "predict_on_batch": "predict_on_batch()"}
MODE_PHRASE = {"graph": "TF 1-style graph", "eager": "Eager mode",
               **{m: MODE[m] for m in ("run_eagerly", "function", "xla")}}

# Inference call styles in a table cell (API above is the training APIs' labels, which the
# guidance table's configuration strings use).
API_CELL = {**API, "call": "model(x)", "predict": "predict()",
            "predict_on_batch": "predict_on_batch()"}
INPUT = {"numpy": "NumPy", "tfdata": "tf.data"}

# A table's column (the CSV's machine name) as a reader's header. The CSV keeps the machine name;
# the page shows it in the header's tooltip.
COLUMN = {
    "machine": "machine", "env": "env", "framework": "framework",
    "framework_version": "release", "python": "Python", "keras_version": "Keras version",
    "model": "model", "data": "data", "keras": "Keras", "mode": "mode", "api": "API",
    "input": "input", "device": "device", "cell_id": "cell", "status": "status",
    "n_samples": "samples", "median_s": "median ms", "first_call_s": "first call ms",
    "p95_s": "p95 ms", "p99_s": "p99 ms", "max_s": "max ms",
    "p95_over_median": "p95 / median", "p99_over_median": "p99 / median",
    "max_over_median": "max / median", "spikes": "spikes", "n_spikes": "spikes",
    "spike_factor": "spike factor", "fastest_env": "fastest", "verdict": "verdict",
    "ratio": "ratio", "pct": "%", "p_adjusted": "p (adjusted)",
    # a machine's facts (driver/tables/facts.py)
    "cpu_count": "CPU cores", "cpu_flags": "CPU flags", "cpu_mhz": "CPU MHz",
    "cpu_model": "CPU model", "cur_freq_khz": "current clock, kHz", "governor": "CPU governor",
    "gpus": "GPUs", "mem_total_gb": "memory, GB", "thread_env": "thread variables",
}
# The two sides of a comparison when a table has no words of its own for them.
SIDES = ("left", "right")


def env_label(env) -> str:
    """An env id as a reader names it: 'tf2.10' -> 'TF 2.10', 'torch2.3' -> 'PyTorch 2.3',
    'keras3-jax' -> 'Keras 3 on JAX' (the catalogue's words); any other id as it is."""
    s = "" if env is None else str(env)
    if s.startswith("keras3-"):
        fw = frameworks.get(s.split("-", 1)[1])
        return f"Keras 3 on {fw.label}" if fw else s
    fw = frameworks.of_env(s)
    m = re.fullmatch(re.escape(fw.env_prefix) + r"(\d+(?:\.\d+)*)(.*)", s) if fw else None
    return f"{fw.short_label} {m.group(1)}{m.group(2)}" if m else s


def env_ids(label) -> list[str]:
    """The env ids inside a label ('tf2.0 Graph ms' -> ['tf2.0'])."""
    prefixes = "|".join(re.escape(f.env_prefix) for f in frameworks.CATALOGUE)
    return re.findall(rf"(?<![\w.])(?:(?:{prefixes})\d+(?:\.\d+)+|keras3-[a-z]+)(?![\w.])",
                      str(label))


def header(name, sides=SIDES) -> str:
    """A column's header in words: 'left_framework_version' -> 'left release', 'tf2.10' ->
    'TF 2.10', 'p95_over_median' -> 'p95 / median'; `sides` names the left and right sides
    (e.g. ('TF 2', 'TF 1')). Anything else with underscores reads as words ('a_b' -> 'a b');
    text that is already words comes back as it is."""
    s = "" if name is None else str(name)
    for prefix, side in zip(("left_", "right_"), sides):
        if s.startswith(prefix) and s != prefix:
            return f"{side} {header(s[len(prefix):])}"
    if s in COLUMN:
        return COLUMN[s]
    if s.endswith("_s") and RAW_NAME.fullmatch(s):
        return header(s[:-2]) + " ms"
    if s in VALUE_NAMES:  # a value's own name (the tf_keras package, an API) is its word
        return s
    if RAW_NAME.fullmatch(s):
        return s.replace("_", " ")
    for env in env_ids(s):  # 'tf2.0 Graph ms' -> 'TF 2.0 Graph ms'
        s = re.sub(rf"(?<![\w.]){re.escape(env)}(?![\w.])", env_label(env), s)
    return s


def value_label(column, value) -> str:
    """A cell value of an identifying column in a reader's words (API and mode labels, input
    names, env ids as 'TF 2.10'); other values as they are."""
    base = str(column).removeprefix("left_").removeprefix("right_")
    v = "" if value is None else str(value)
    table = {"api": API_CELL, "mode": MODE, "input": INPUT}.get(base)
    if table is not None:
        return table.get(v, v)
    return env_label(v) if base == "env" else v


# What a machine's column name looks like (snake_case): neither it nor an env id (tf2.10) may
# reach a header of the page (tests/unit/report/test_tables_view.py).
RAW_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")


# Values whose own names have underscores (a Keras package, an API): words a TF user types.
VALUE_NAMES = {"tf_keras", *API_CELL, *MODE}


def raw_headers(labels) -> list[str]:
    """The labels that are machine names (a CSV column) or hold an env id, not words."""
    return [x for x in labels if (RAW_NAME.fullmatch(str(x).strip())
                                  and str(x).strip() not in VALUE_NAMES) or env_ids(x)]
