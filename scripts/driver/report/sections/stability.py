"""Stability: every timed step of every cell as stem plots, drifting and noisy cells flagged."""
from driver.report import views
from driver.report.figures import MAX_PLOT_POINTS

ID, TITLE, ORDER = "stability", "Stability", 70


def build(data) -> dict:
    return {**views.stability_view(data.ok, data.samples, data.order),
            "max_points": MAX_PLOT_POINTS}
