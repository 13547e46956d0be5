"""A results folder as one object (asv's `Results` pattern): given a study's results/, its tables/
folder or a published docs/ folder, it finds and loads what aggregation wrote there (the typed
tables through driver/tables/bundle.py, facts.json and processes.json through
driver/tables/facts.py, the cells table, the duets table, the cell files) and knows the layout
(driver/study/layout.py); no other module opens a results folder's files
(tests/unit/tables/test_results.py greps for readers).

    res = Results("results")               # or "results/tables", or "docs"
    res.cells()                            # cells.csv, typed
    res.table("tf2_vs_tf1")                # a table, typed (an empty frame when not written)
    res.tables()                           # {name: frame} of every table the folder holds
    res.comparisons()                      # {name: frame} of the registry's comparisons it holds
    res.facts(), res.samples()             # facts.json, processes.json ({} when not written)

`Results.from_files` takes the files one by one, as a rule names its inputs."""
from __future__ import annotations

import glob
import json
from functools import cached_property
from pathlib import Path

import pandas as pd

from driver.study import layout
from driver.tables import bundle, facts
from driver.tables.registry import COMPARISONS

# The names of what a tables folder holds, from the layout's paths (results/tables/<name>).
TABLES_DIR = Path(layout.TABLES).name
CELLS = Path(layout.CELLS_CSV).stem
FACTS_FILE = Path(layout.FACTS_JSON).name
PROCESSES_FILE = Path(layout.PROCESSES_JSON).name
CELL_FILES_DIR = Path(layout.CELLS).name
TABLE_FILE = Path(layout.TABLE_PATTERN).name  # "{table}.csv"
DUETS = "duets"
# Comparison tables across machines, not one run's comparisons.
ACROSS_MACHINES = ("machines",)
# What identifies a comparison row across runs (whichever of these a table has): the envs and the
# cells on each side; machine keys are left out, so that two machines' rows line up.
ROW_KEY = ("env", "left_env", "right_env", "left_cell_id", "right_cell_id")
ENV_KEY = ("env", "left_env", "right_env")


def row_key(df: pd.DataFrame, columns=ROW_KEY) -> pd.Series:
    """Each row's key across runs: its `columns` (those the table has) joined by "|"."""
    keys = [k for k in columns if k in df.columns]
    if not keys:
        return pd.Series("", index=df.index, dtype=object)
    return df[keys].astype(str).agg("|".join, axis=1)


def table_file(name: str) -> str:
    """A table's file name: <name>.csv."""
    return TABLE_FILE.format(table=name)


def locate(path, marker: str = CELLS) -> Path:
    """The tables folder of `path`: its tables/ subfolder where that holds the `marker` table
    (cells, by default), else `path` itself."""
    path = Path(path)
    sub = path / TABLES_DIR
    return sub if (sub / table_file(marker)).is_file() else path


class Results:
    """One results folder: its tables folder, found from results/, tables/ or docs/."""

    def __init__(self, path, marker: str = CELLS):
        self.given = Path(path)
        self.folder = locate(path, marker)
        self._paths: dict[str, Path] | None = None  # set by from_files: the tables, by name
        self._facts_path = self.folder / FACTS_FILE
        self._processes_path = self.folder / PROCESSES_FILE
        self._cells_path = self.folder / table_file(CELLS)
        self._typed: dict[str, pd.DataFrame] = {}

    @classmethod
    def from_files(cls, cells_csv=None, tables=(), processes_json=None,
                   facts_json=None) -> Results:
        """The results that a rule's named inputs make up: cells.csv, the tables (paths named
        <name>.csv), processes.json and facts.json, each optional."""
        first = cells_csv or next(iter(tables), None) or facts_json or processes_json or "."
        out = cls(Path(first).parent)
        out._paths = {Path(p).stem: Path(p) for p in tables}
        if cells_csv or CELLS in out._paths:
            out._cells_path = Path(cells_csv) if cells_csv else out._paths[CELLS]
        out._facts_path = Path(facts_json) if facts_json else None
        out._processes_path = Path(processes_json) if processes_json else None
        return out

    def __repr__(self) -> str:
        return f"Results({str(self.folder)!r})"

    # -- where things are ------------------------------------------------------------------
    @property
    def root(self) -> Path:
        """The results folder (the parent of tables/, where cells/ and duets/ are)."""
        return self.folder.parent if self.folder.name == TABLES_DIR else self.folder

    def path(self, name: str) -> Path:
        """The file of table `name` (it may not exist)."""
        if name == CELLS:
            return self._cells_path
        if self._paths is not None:
            return self._paths.get(name, self.folder / table_file(name))
        return self.folder / table_file(name)

    def has(self, name: str) -> bool:
        """Does the folder hold table `name`? (From files: was it named? A named file that is
        missing is an error when read, as a rule's declared input.)"""
        if self._paths is not None and name != CELLS:
            return name in self._paths
        return self.path(name).is_file()

    def names(self, cells: bool = False) -> list[str]:
        """The tables the folder holds, sorted by file name; the cells table only with
        `cells`."""
        if self._paths is not None:  # in the order given
            found = list(self._paths)
            if cells and CELLS not in found and self._cells_path.is_file():
                found.append(CELLS)
        else:
            found = [Path(p).stem for p in sorted(glob.glob(str(self.folder / table_file("*"))))]
        return [n for n in found if cells or n != CELLS]

    def paths(self, cells: bool = True) -> list[Path]:
        """The table files the folder holds (for a rule's params and for copying)."""
        return [self.path(n) for n in self.names(cells=cells)]

    @property
    def facts_path(self) -> Path | None:
        return self._facts_path

    @property
    def processes_path(self) -> Path | None:
        return self._processes_path

    # -- what it holds ---------------------------------------------------------------------
    def table(self, name: str) -> pd.DataFrame:
        """Table `name`, typed (driver/tables/bundle.py); an empty frame when the folder holds
        none."""
        if name not in self._typed:
            self._typed[name] = bundle.read_table(self.path(name)) if self.has(name) \
                else pd.DataFrame()
        return self._typed[name]

    def raw_table(self, name: str) -> pd.DataFrame:
        """Table `name` as the text its file holds (every value a string, none missing)."""
        try:
            return pd.read_csv(self.path(name), dtype=str, keep_default_na=False)
        except pd.errors.EmptyDataError:
            return pd.DataFrame()

    def tables(self, names=None, cells: bool = False) -> dict[str, pd.DataFrame]:
        """{name: typed frame} of `names` that the folder holds (default: every table it holds,
        the cells table only with `cells`)."""
        wanted = self.names(cells=cells) if names is None else [n for n in names if self.has(n)]
        return {n: self.table(n) for n in wanted}

    def cells(self) -> pd.DataFrame:
        """cells.csv, typed: a missing file is an error naming it."""
        if not self._cells_path.is_file():
            raise FileNotFoundError(f"{self.folder}: no {table_file(CELLS)} (not a results or "
                                    "tables folder)")
        return self.table(CELLS)

    def has_cells(self) -> bool:
        return self._cells_path.is_file()

    def duets(self) -> pd.DataFrame:
        """The headline's duets table (driver/tables/duets.py); empty when the study ran none."""
        return self.table(DUETS)

    def comparisons(self) -> dict[str, pd.DataFrame]:
        """{name: typed frame} of the registry's comparison tables the folder holds, in the
        registry's order (the `machines` table, across machines, is not a run's comparison)."""
        return {n: self.table(n) for n in COMPARISONS
                if n not in ACROSS_MACHINES and self.has(n)}

    @cached_property
    def _facts(self) -> dict:
        path = self._facts_path
        return facts.read_facts(path) if path and path.is_file() else {}

    def facts(self) -> dict:
        """facts.json (driver/tables/facts.py): machines, envs, dates, failures; {} when the
        folder holds none."""
        return self._facts

    @cached_property
    def _samples(self) -> dict:
        path = self._processes_path
        return facts.read_samples(path) if path and path.is_file() else {}

    def samples(self) -> dict:
        """processes.json as {(machine, env, cell_id): {"samples": array, ...}}; {} when the
        folder holds none."""
        return self._samples

    def cell_records(self, ok_only: bool = True) -> list[dict]:
        """The cell files under the results folder (cells/<machine>/<env>/*.json), as dicts; with
        `ok_only` those that are ok and hold samples."""
        out = []
        pattern = self.root / CELL_FILES_DIR / "*" / "*" / "*.json"
        for path in glob.glob(str(pattern)):
            rec = json.loads(Path(path).read_text())
            if not ok_only or (rec.get("status") == "ok" and rec.get("samples_s")):
                out.append(rec)
        return out
