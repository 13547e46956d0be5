"""Every path and file-name pattern under results/: the one place that knows where things are.

Paths are relative to the study's working directory (Snakemake's --directory), as the rules use
them. A cell file is results/cells/<machine>/<env>/<cell_id>.r<repeat>.json; tfspeed.cells owns the
cell id, this module the rest.
"""
import glob
import os
import re
from pathlib import Path

from tfspeed.cells import cell_id

RESULTS = "results"
CELLS = f"{RESULTS}/cells"
TABLES = f"{RESULTS}/tables"
ENVS = f"{RESULTS}/envs"
CELLS_CSV = f"{TABLES}/cells.csv"
WORKBOOK = f"{RESULTS}/study.xlsx"
REPORT = f"{RESULTS}/report.html"
SELFBENCH = f"{RESULTS}/selfbench.json"
# What aggregation writes for the report beside the tables, so that the report never opens a cell
# file: every process's samples and status, and the facts of every env and machine.
PROCESSES_JSON = f"{TABLES}/processes.json"
FACTS_JSON = f"{TABLES}/facts.json"

# The headline's duets (driver/study/duet.py): one file per duet, under the TF 2.x side's env and
# cell; the reference side is in the file.
DUETS = f"{RESULTS}/duets"

# Snakemake output patterns (wildcards in braces) of the same paths.
CELL_PATTERN = CELLS + "/{machine}/{env}/{cell}.r{rep}.json"
DUET_PATTERN = DUETS + "/{machine}/{env}/{cell}.r{rep}.json"
ROUND_PATTERN = CELLS + "/{machine}/round{rep}.done"
# the paired rows' first look is done (rules/bench.smk first_look; with a time budget, round 0's
# cells wait for it): beside the rounds' order files, not among the duet files
FIRST_LOOK_PATTERN = RESULTS + "/rounds/{machine}/first_look.done"
MANIFEST_PATTERN = ENVS + "/{machine}/{env}.json"
TABLE_PATTERN = TABLES + "/{table}.csv"
# The allocation's plan of each extra round (rounds after the first `repeats`).
PLAN_PATTERN = RESULTS + "/rounds/{machine}/round{rep}.json"
# The duets' second look: the rows still open after the first `duets.replicates` (plan_duets.py).
DUET_PLAN_PATTERN = RESULTS + "/duet_plans/{machine}.json"
# The planned order of every round (driver/study/order.py), written before the round runs.
ORDER_PATTERN = RESULTS + "/rounds/{machine}/order{rep}.json"

# Per machine key: the probe's reference (the key's first probe), the latest probe, and the
# overrides of a study that went on although the probe stopped it (driver/study/probe.py).
MACHINES = f"{RESULTS}/machines"
PROBE_PATTERN = MACHINES + "/{machine}/probe.latest.json"

# Twin cells (A/A calibration) run under a machine key of their own beside the machine's.
TWIN_SUFFIX = ".twin"

CELL_FILE = re.compile(r"^(?P<cell>[^.].*)\.r(?P<rep>\d+)\.json$")


def cell_path(machine, env, cell, repeat):
    return f"{CELLS}/{machine}/{env}/{cell_id(cell)}.r{int(repeat)}.json"


def duet_path(machine, env, cell, rep):
    return DUET_PATTERN.format(machine=machine, env=env, cell=cell, rep=int(rep))


def env_manifest(machine, env):
    return f"{ENVS}/{machine}/{env}.json"


def order_path(machine, repeat):
    return f"{RESULTS}/rounds/{machine}/order{int(repeat)}.json"


def probe_dir(machine):
    return f"{MACHINES}/{machine}"


def probe_reference(machine):
    return f"{MACHINES}/{machine}/probe.json"


def probe_latest(machine):
    return f"{MACHINES}/{machine}/probe.latest.json"


def round_marker(machine, repeat):
    return f"{CELLS}/{machine}/round{int(repeat)}.done"


def twin_key(machine):
    return machine + TWIN_SUFFIX


def is_twin(machine):
    return str(machine).endswith(TWIN_SUFFIX)


def base_machine(machine):
    """The machine a (twin) machine key belongs to."""
    return machine[: -len(TWIN_SUFFIX)] if machine.endswith(TWIN_SUFFIX) else machine


def parse_cell_path(path):
    """(machine, env, cell_id, repeat) from a cell file's path, or None if the name is not one."""
    path = Path(path)
    match = CELL_FILE.match(path.name)
    if not match:
        return None
    return path.parent.parent.name, path.parent.name, match["cell"], int(match["rep"])


def other_machine_files(cells_root, machine, machines="all"):
    """Cell files of machines other than `machine` under `cells_root` (results/cells) that a study
    includes: every machine folder for "all", else the listed keys. Sorted, for a stable DAG."""
    if machines == "all":
        keys = sorted(os.listdir(cells_root)) if os.path.isdir(cells_root) else []
    else:
        keys = list(machines or [])
    files = []
    for key in keys:
        if base_machine(key) != machine:
            files += sorted(glob.glob(os.path.join(cells_root, key, "*", "*.r[0-9]*.json")))
    return files
