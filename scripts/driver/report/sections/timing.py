"""Where the time goes: first call vs steps, achieved FLOP/s against the machine's measured peak
(template `_time.html.j2`: the module is not named `time`, which is the standard library's)."""
import math

from driver.report import views
from driver.report.figures import COMPUTE_BOUND, OVERHEAD_BOUND, time_figures

ID, TITLE, ORDER = "time", "Where the time goes", 60


def build(data) -> dict:
    peaks = views.measured_peaks(data.cells)
    tt = views.time_table(data.ok, peaks)
    return {"figures": time_figures(data.ok, data.order, peaks), **tt,
            "compute_bound": COMPUTE_BOUND, "overhead_bound": OVERHEAD_BOUND,
            "peaks": [(m, "not measured" if math.isnan(p) else f"{p * 1e-9:,.1f} GFLOP/s")
                      for m, p in sorted(peaks.items())]}
