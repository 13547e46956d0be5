"""The answer, first on the page, in docs/RESULTS.md and in the README's block: one claim per
question a TensorFlow user asks and per machine (driver/report/statements.py builds each once,
with the rows it covers):

- training in the TF 1-style graph (`tf.compat.v1.disable_eager_execution()`), TF 2.x against
  the reference TF 1, with the Keras each version's row uses (tf_keras from TF 2.16);
- training in eager mode (TF 2's default, the step compiled by Keras with tf.function) with
  today's Keras (Keras 3, the tf.keras of TF >= 2.16);
- training in eager mode with Keras 2 (tf.keras up to TF 2.15, the legacy tf_keras after);
- inference on a small batch: predict() against calling the model, model(x).

The training claims come from the duets table (each version timed in turns beside TF 1 in two
live workers, driver/tables/duets.py) and, where a study has no duets, from the tf2_vs_tf1
table's like-for-like rows; inference from call_vs_predict."""
from driver.report.claim_lines import by_question, fit_note, intro
from driver.report.statements import claims, machine_keys, machine_names


def questions(tabs: dict, min_effect: float, reference: str, facts: dict | None = None) -> dict:
    """{"items": [question], "claims": [Claim], "machines": [key], "names": {key: plain name},
    "intro": the line above, "fit": what the answer did not measure (claim_lines.fit_note, or
    None), "source": "duets" | "cells"}: per question (by_question) its label and one line per
    machine, in the page's order. `facts`: facts.json's "machines" (the CPU model and cores of
    each key), else cells.csv names them."""
    names = machine_names(tabs.get("cells"), facts or {}, machine_keys(tabs))
    found = claims(tabs, min_effect, reference, names=names)
    return {"items": by_question(found, min_effect), "claims": found["items"],
            "machines": found["machines"], "names": found["names"],
            "intro": intro(found, reference, min_effect),
            "fit": fit_note(tabs, found, reference, facts), "source": found["source"]}
