"""What every report section reads: the typed tables and what aggregation wrote beside them,
with the few things several sections derive from them (the env order, the ok cells, the
configured minimum effect), computed once. Sections take a `ReportData` and return plain data."""
import datetime
import math
from dataclasses import dataclass, field
from functools import cached_property

import pandas as pd

from driver.report.fmt import col, num, text
from driver.tables import ordering


@dataclass
class ReportData:
    cells: pd.DataFrame
    tabs: dict
    samples: dict = field(default_factory=dict)
    study: dict = field(default_factory=dict)
    machine: str = ""
    config: dict = field(default_factory=dict)
    selfbench_path: str | None = None
    now: datetime.datetime | None = None
    previous: dict | None = None  # a previous run's tables, when one is at hand

    def table(self, name: str) -> pd.DataFrame:
        """A registered table, or an empty frame when aggregation wrote none."""
        return self.tabs.get(name, pd.DataFrame())

    @cached_property
    def order(self) -> list[str]:
        """Envs in the study's order (framework, then version number)."""
        order = list(self.study.get("env_order") or [])
        if not order and len(self.cells) and {"env", "framework", "framework_version"} <= set(
                self.cells.columns):
            order = ordering.env_order(self.cells)
        return order

    @cached_property
    def status(self) -> pd.Series:
        return col(self.cells, "status").map(text)

    @cached_property
    def ok(self) -> pd.DataFrame:
        return self.cells[self.status == "ok"] if len(self.cells) else self.cells

    @cached_property
    def min_effect(self) -> float:
        value = num((self.config or {}).get("min_effect", 0.10))
        return 0.05 if math.isnan(value) else value

    @cached_property
    def reference_env(self) -> str:
        return text((self.config or {}).get("reference_env"), "tf1.14")

    @cached_property
    def machine_facts(self) -> dict:
        return self.study.get("machines") or {}
