"""The words for frameworks, modes and APIs, in one place. Framework names are the catalogue's
(tfspeed/frameworks.py); modes and APIs have two forms: labels in tables (the seed's configuration
strings, the source layout's column headers: "Eager", "custom loop") and phrases in the report's
sentences ("Eager mode", "a custom loop"). A value without an entry is shown as it is."""
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
MODE = {"eager": "Eager", "graph": "Graph", "run_eagerly": "run_eagerly", "function": "tf.function",
        "xla": "XLA", "compile": "torch.compile", "torchscript": "TorchScript", "numpy": "NumPy"}

API_PHRASE = {**API, "fit": "fit() one step per call", "fit_epoch": "fit() over an epoch",
              "custom_loop": "a custom loop", "predict": "predict()", "call": "model(x)",
              "predict_on_batch": "predict_on_batch()"}
MODE_PHRASE = {"graph": "Graph mode", "eager": "Eager mode",
               **{m: MODE[m] for m in ("run_eagerly", "function", "xla")}}
