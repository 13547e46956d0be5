"""Performance history: median step time against TF version, one panel per configuration."""
from driver.report.forest import history_panels

ID, TITLE, ORDER = "history", "Performance history", 50


def build(data) -> dict:
    return history_panels(data.ok, data.order, data.reference_env)
