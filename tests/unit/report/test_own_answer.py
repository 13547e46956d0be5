"""The answer for a user's own model (driver/report/sections/own_answer.py): one sentence per
model and task from the frameworks rows, recomputed here from hand-made rows."""
import pandas as pd

from driver.report.sections import own_answer as own


def row(env, keras, mode, api, ratio, low, high, verdict, model="mine"):
    out = {"machine": "m", "model": model, "data": "seqs", "device": "cpu", "ratio": ratio,
           "ratio_ci_low": low, "ratio_ci_high": high, "verdict": verdict}
    for side, values in (("left", (env, keras, mode, api, "numpy")),
                         ("right", ("tf2.21", "tf_keras", "graph", "train_on_batch", "numpy"))):
        for key, value in zip(("env", "keras", "mode", "api", "input"), values):
            out[f"{side}_{key}"] = value
    return out


ROWS = pd.DataFrame([
    row("tf2.21", "keras3", "eager", "train_on_batch", 1.02, 0.97, 1.07, "equivalent"),
    row("tf2.15", "tf.keras", "eager", "fit", 1.80, 1.60, 2.00, "right_faster"),
    row("tf2.21", "tf_keras", "eager", "train_on_batch", 1.30, 1.20, 1.45, "right_faster"),
    row("tf1.14", "keras", "graph", "train_on_batch", 1.08, 0.90, 1.30, "undecided"),
    row("tf2.21", "keras3", "eager", "predict", 5.0, 4.0, 6.0, "right_faster"),
    row("tf2.21", "keras3", "eager", "train_on_batch", 1.0, 0.9, 1.1, "equivalent", "other"),
])


def test_the_lead_names_fastest_as_fast_avoid_and_undecided_with_ratios():
    text = own.lead(ROWS, "mine", "train", 10)
    assert text.startswith("The fastest way to train mine here is tf_keras, graph, "
                           "train_on_batch, numpy in tf2.21.")
    assert ("As fast within ±10 %: keras3, eager, train_on_batch, numpy in tf2.21 "
            "(1.02x [0.97–1.07]).") in text
    # the ones to avoid, slowest first
    assert ("Avoid: tf.keras, eager, fit, numpy in tf2.15 (1.80x [1.60–2.00]); tf_keras, eager, "
            "train_on_batch, numpy in tf2.21 (1.30x [1.20–1.45]).") in text
    assert text.endswith("Not decided by this run: keras, graph, train_on_batch, numpy in tf1.14 "
                         "(1.08x [0.90–1.30]).")
    assert "other" not in text and "predict" not in text  # another model, another task


def test_inference_has_its_own_sentence_and_no_rows_no_sentence():
    assert own.lead(ROWS, "mine", "infer", 10).startswith("The fastest way to predict with mine")
    assert own.lead(ROWS, "absent", "train", 10) is None
    assert own.lead(pd.DataFrame(), "mine", "train", 10) is None


def test_the_page_has_the_section_only_for_a_study_of_its_own_model():
    """An OPTIONAL section: no 'Your model' in the navigation of a seed study; with a model of
    the user's and its frameworks rows, the section and its sentence are on the page."""
    from helpers import REPO

    from driver.report import render

    seed = render.build_context(pd.DataFrame(), {"frameworks": ROWS}, {}, {}, "m", {})
    assert "own_answer" not in [s["id"] for s in seed["sections"]]
    own = render.build_context(pd.DataFrame(), {"frameworks": ROWS}, {}, {}, "m",
                               {"models": {"mine": {"builder": "my_model.py:build"}}})
    assert "own_answer" in [s["id"] for s in own["sections"]]
    html = render.render_html(own, REPO / "report" / "template.html.j2")
    section = html[html.index('<section id="own_answer"'):]
    assert own["own_answer"]["leads"][0]["text"] in section.replace("&#39;", "'")
    assert '<a href="#own_answer">Your model</a>' in html
