"""Coverage: what the study measured here and what it did not, and why."""
from driver.report.coverage import coverage

ID, TITLE, ORDER = "coverage", "Coverage", 30


def build(data) -> dict:
    return coverage(data.cells, data.machine_facts, data.config)
