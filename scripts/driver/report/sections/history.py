"""Performance history: median step time against TF version, one panel per configuration."""
from driver.report.forest import history_panels
from driver.report.releases import changepoint_marks

ID, TITLE, ORDER = "history", "Performance history", 50


def build(data) -> dict:
    return history_panels(data.ok, data.order, data.reference_env,
                          marks=changepoint_marks(data.table("changepoints")))
