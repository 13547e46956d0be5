"""One place for the words (driver/tables/labels.py) and one ordering of versions
(tfspeed/versions.py)."""
import pytest

from driver.report import answer, fmt
from driver.tables import comparisons, labels, summaries
from tfspeed import cells, frameworks, versions


def test_every_mode_and_framework_has_its_label():
    assert set(labels.MODE) == set(cells.MODES)
    assert set(labels.FRAMEWORK) == set(labels.FRAMEWORK_SHORT) == set(frameworks.NAMES)
    assert set(labels.API) <= set(cells.APIS) and set(labels.API_PHRASE) <= set(cells.APIS)
    assert set(labels.MODE_PHRASE) <= set(labels.MODE)


def test_tables_and_sentences_read_the_one_module():
    assert answer.API_TEXT is labels.API_PHRASE and answer.MODE_TEXT is labels.MODE_PHRASE
    assert comparisons.family("torch", "keras3") == "Keras 3 on PyTorch"
    row = {"api": "custom_loop", "input": "numpy", "keras": "none", "framework": "torch",
           "framework_version": "2.13.0", "mode": "compile", "device": "cpu"}
    assert summaries.configuration_text(row) == \
        "custom loop + numpy + PyTorch 2.13.0 + torch.compile + CPU"


@pytest.mark.parametrize("text, key", [("2.15.1", (2, 15, 1)), ("tf1.14", (1, 14)),
                                       ("torch2.3", (2, 3)), ("", (float("inf"),)),
                                       (None, (float("inf"),))])
def test_one_version_ordering(text, key):
    assert fmt.version_key(text) == versions.sort_key(text) == key
    assert sorted(["2.10.0", "2.3.4", "1.15.5"], key=fmt.version_key) == ["1.15.5", "2.3.4", "2.10.0"]
    assert versions.major("2.15.1") == 2 and versions.major("") is None
