"""The cell file: one process of one cell, as JSON. This module is its one owner: it builds the
record (the supervisor's part; the runner's result is merged in), writes it atomically, and reads
and validates it against schemas/cell.schema.json, naming the file it rejects.

Schema versions: 1 (the first); 2 adds the warm-up, the threads, the CPU over the timed window
and `too_few_samples` (what a cell of version 1 lacks is read as missing); 3 adds the machine's
fingerprint (provenance.machine.fingerprint), the thread variables the cell ran with
(provenance.machine.thread_env) and the foreign-CPU resolution (cpu_window).
"""
import datetime
import json
from collections.abc import Iterable
from pathlib import Path

import jsonschema

from driver.study import layout
from tfspeed.atomic import write_json
from tfspeed.cells import APIS, AXES, DEVICES, INPUTS, KERAS, MODES, cell_id

SCHEMA_VERSION = 3
SCHEMA_PATH = Path(__file__).resolve().parents[3] / "schemas" / "cell.schema.json"
# The values each axis may take: tfspeed.cells is the one place that says (the schema checks the
# shape only, so that a new mode or API needs no schema change).
AXIS_VALUES = {"keras": KERAS, "mode": MODES, "api": APIS, "input": INPUTS, "device": DEVICES}


def new_record(cell, env, machine, repeat, manifest, flops_per_step, provenance):
    """The supervisor's part of a cell file: who, where, when; the runner's result is merged in."""
    record = {
        "schema_version": SCHEMA_VERSION, "cell_id": cell_id(cell), "env": env,
        "machine": machine, "repeat": repeat, "framework": manifest.get("framework"),
        "framework_version": manifest.get("framework_version"),
        "started_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "flops_per_step": flops_per_step, "provenance": provenance,
        # how the process was made: a fresh interpreter of the env (scripts/measure_fork.py
        # measures the alternative, a fork of a process that has imported the framework)
        "process_origin": "fresh",
    }
    record.update({axis: cell[axis] for axis in AXES})
    return record


def write(path, record):
    """Atomically: a reader finds the whole file or none."""
    write_json(str(path), record)


def not_reached(path) -> bool:
    """Whether the cell file at `path` is one that the time budget did not reach (its process was
    never started: budget.round0_gate); False for a missing or unreadable file."""
    try:
        with open(path) as handle:
            return bool(json.load(handle).get("not_reached"))
    except (OSError, ValueError, AttributeError):
        return False


class CellFileError(ValueError):
    """A cell file that cannot be used; the message starts with the file's path."""


def load_schema(path: Path | str = SCHEMA_PATH):
    schema = json.loads(Path(path).read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _short(text: str, limit: int = 300) -> str:
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "..."


def read_cell_file(path: Path | str, validator=None) -> dict:
    """One cell file, validated; raises CellFileError naming the file otherwise.

    Besides the schema, the file must agree with itself and with where it lies: its cell_id is the
    id of its axes, and a file named `<cell_id>.r<repeat>.json` under `<machine>/<env>/` says that
    machine, env, cell and repeat. A copied or renamed file would otherwise be counted as a
    different cell.
    """
    path = Path(path)
    validator = validator or load_schema()
    try:
        doc = json.loads(path.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise CellFileError(f"{path}: cell file is missing") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CellFileError(
            f"{path}: not a complete JSON document ({exc}); the file is truncated or corrupt. "
            "Delete it so that the cell runs again.") from None
    errors = sorted(validator.iter_errors(doc), key=lambda e: (len(e.path), list(map(str, e.path))))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.path) or "(top level)"
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise CellFileError(f"{path}: does not match {SCHEMA_PATH.name} at {where}: "
                            f"{_short(err.message)}{more}")
    for axis, allowed in AXIS_VALUES.items():
        if doc[axis] not in allowed:
            raise CellFileError(f"{path}: {axis} {doc[axis]!r} is not one of tfspeed.cells' "
                                f"values ({', '.join(allowed)})")
    expected_id = cell_id({axis: doc[axis] for axis in AXES})
    if doc["cell_id"] != expected_id:
        raise CellFileError(f"{path}: cell_id {doc['cell_id']!r} does not match its axes "
                            f"({expected_id!r})")
    parsed = layout.parse_cell_path(path)
    if parsed:
        found = dict(zip(("machine", "env", "cell_id", "repeat"), parsed))
        for key, value in found.items():
            if doc[key] != value:
                raise CellFileError(f"{path}: says {key} {doc[key]!r} but its path says {value!r}")
    return doc


def load_cells(files: Iterable[Path | str], validator=None) -> list[dict]:
    """Every file read and validated; two files for the same (machine, env, cell, repeat) is an
    error too (which one would be right?)."""
    validator = validator or load_schema()
    records, seen = [], {}
    for path in files:
        doc = read_cell_file(path, validator)
        key = (doc["machine"], doc["env"], doc["cell_id"], doc["repeat"])
        if key in seen:
            raise CellFileError(f"{path}: the same cell and repeat as {seen[key]}")
        seen[key] = path
        records.append(doc)
    return records
