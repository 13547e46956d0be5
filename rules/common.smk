# Helpers of the workflow: what the study holds (envs, cells, files), from config and envs/*.yaml.
# Rules files hold rules only; everything they ask about the study comes from here.
import functools
import json
import os
import re
import sys
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError
from snakemake_interface_executor_plugins.settings import DeploymentMethod

REPO = Path(workflow.basedir)
sys.path.insert(0, str(REPO / "scripts"))

from driver.study import duetplan  # noqa: E402
from driver.study import envspec  # noqa: E402
from driver.study import layout  # noqa: E402
from driver.study import order  # noqa: E402
from driver.study import provenance  # noqa: E402
from driver.study.locks import default_lock_path  # noqa: E402
from driver.tables.registry import NAMES as TABLES  # noqa: E402
from tfspeed import cells as tfcells  # noqa: E402
from tfspeed import models  # noqa: E402
from tfspeed import usermodels  # noqa: E402

DRIVER_PYTHON = sys.executable
# With --sdm conda, cells run in Snakemake's conda envs made from the same files; else in our venvs.
USE_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method


def load_env_specs():
    """Every <env_dirs>/*.yaml with what its pins say; a file that cannot be read keeps its error."""
    specs, paths = {}, {}
    for folder in config["env_dirs"]:
        if not (REPO / folder).is_dir():
            config_error("env_dirs", "%r is not a folder under %s" % (folder, REPO))
        for path in sorted((REPO / folder).glob("*.yaml")):
            if path.stem in paths:
                config_error(
                    "env_dirs",
                    "env %r is defined twice: %s and %s"
                    % (path.stem, paths[path.stem], path),
                )
            paths[path.stem] = path
    for path in paths.values():
        rel = str(path)
        try:
            specs[path.stem] = envspec.parse_spec(
                path.stem, yaml.safe_load(path.read_text()), rel
            )
        except (yaml.YAMLError, envspec.SpecError) as exc:
            specs[path.stem] = {
                "name": path.stem,
                "invalid": str(exc),
                "build": "cpu",
                "framework": None,
                "framework_version": None,
                "flavours": [],
            }
        specs[path.stem]["path"] = str(path)
    return specs


def package_sources(sources):
    """Config `package_sources` with find_links folders made absolute (relative = to the repository):
    the builder runs in the study's working directory."""
    links = [
        (
            link
            if re.match(r"^(https?|file)://", link)
            else str(REPO / Path(link).expanduser())
        )
        for link in sources.get("find_links", [])
    ]
    return dict(sources, find_links=links)


def config_error(key, message):
    raise WorkflowError("config error at '%s': %s" % (key, message))


ENV_SPECS = load_env_specs()


def study_envs():
    """The env names in the study, checked against envs/."""
    chosen = config["envs"]
    if isinstance(chosen, list):
        unknown = [e for e in chosen if e not in ENV_SPECS]
        if unknown:
            config_error(
                "envs",
                "unknown env %s; env files present: %s"
                % (", ".join(map(repr, unknown)), ", ".join(sorted(ENV_SPECS))),
            )
        return list(chosen)
    return [n for n, s in ENV_SPECS.items() if chosen == "all" or s["build"] == chosen]


def check_config():
    """Rules that span several keys (the schema checks each key alone)."""
    envs = study_envs()
    if not envs:
        config_error("envs", "no env files under envs/ match %r" % (config["envs"],))
    ref = config["reference_env"]
    if ref not in envs:
        config_error(
            "reference_env",
            "%r is not an env of this study (%s)" % (ref, ", ".join(envs)),
        )
    unpinned = envspec.unpinned_packages(
        config["package_sources"].get("packages"), ENV_SPECS
    )
    if unpinned:
        config_error(
            "package_sources.packages",
            "%s pinned by no env file under %s"
            % (", ".join(map(repr, unpinned)), ", ".join(config["env_dirs"])),
        )
    stop = config["stop"]
    if stop["min_samples"] > stop["max_samples"]:
        config_error(
            "stop.min_samples",
            "min_samples %s exceeds max_samples %s"
            % (stop["min_samples"], stop["max_samples"]),
        )
    register_user_models()
    names = set()
    for i, grid in enumerate(config["grids"]):
        where = "grids[%d] (%s)" % (i, grid["name"])
        if grid["name"] in names:
            config_error(f"{where}.name", "grid name %r is used twice" % grid["name"])
        names.add(grid["name"])
        if isinstance(grid.get("envs"), list):
            outside = [e for e in grid["envs"] if e not in envs]
            if outside:
                config_error(
                    f"{where}.envs",
                    "%s not in the study's envs (%s)"
                    % (", ".join(map(repr, outside)), ", ".join(envs)),
                )
        seen = set()
        for model, data in grid["pairs"]:
            if (model, data) in seen:
                config_error(
                    f"{where}.pairs", "pair [%s, %s] is listed twice" % (model, data)
                )
            seen.add((model, data))
            if model in models.FAULT_MODELS:
                if not config["allow_fault_models"]:
                    config_error(
                        f"{where}.pairs",
                        "%r is a test-only fault model; set "
                        "allow_fault_models: true to use it" % model,
                    )
            elif model not in models.MODELS or data not in models.DATA:
                config_error(f"{where}.pairs", unknown_pair(model, data))
            elif usermodels.is_user(model, data):
                why = usermodels.pair_error(model, data)
                if why:
                    config_error(f"{where}.pairs", why)
            elif not models.output_length_ok(model, data):
                config_error(
                    f"{where}.pairs",
                    "model %r cannot take data %r (its convolutions "
                    "leave nothing; the seed leaves this pair out)" % (model, data),
                )


def register_user_models():
    """Config `models` and `data` (a user's own), checked and made known to tfspeed.models."""
    try:
        usermodels.register(config.get("models"), config.get("data"))
    except usermodels.ModelError as exc:
        config_error(exc.where, exc.message)


def unknown_pair(model, data):
    """The error for a pair naming a model or data that neither the study nor config has."""
    if model not in models.MODELS:
        return "unknown model %r; models: %s (config `models` adds your own)" % (
            model,
            ", ".join(models.MODELS),
        )
    return "unknown data %r; data: %s (config `data` adds your own)" % (
        data,
        ", ".join(models.DATA),
    )


check_config()
MACHINE = config["machine"] if config["machine"] != "auto" else provenance.machine_key()


def study_cells():
    """[(env, cell)] of the whole study: the union of the grids, each cell once."""
    out, seen = [], set()
    for grid in config["grids"]:
        envs = study_envs() if grid.get("envs", "all") == "all" else grid["envs"]
        for env in envs:
            spec = ENV_SPECS[env]
            if "invalid" in spec:
                # One placeholder cell per pair: it is written as failed with the spec's error.
                cells = [
                    dict(
                        model=m,
                        data=d,
                        keras="none",
                        mode="eager",
                        api="fit",
                        input="numpy",
                        device="cpu",
                    )
                    for m, d in grid["pairs"]
                ]
            else:
                cells = tfcells.expand_grid(spec, grid)
            for cell in cells:
                key = (env, tfcells.cell_id(cell))
                if key not in seen:
                    seen.add(key)
                    out.append((env, cell))
    return out


CELLS = study_cells()
if not CELLS:
    config_error("grids", "the grids hold no cell that can exist in the study's envs")


REPEATS = config["repeats"]
ALLOCATION = config["allocation"]
# config time_budget_min: the extra rounds get what the first rounds leave of it (budget.py)
TIME_BUDGET_S = (
    None if config.get("time_budget_min") is None else 60.0 * config["time_budget_min"]
)
EXTRA_ROUNDS = (
    max(0, ALLOCATION["max_repeats"] - REPEATS) if ALLOCATION["budget_s"] > 0 else 0
)
CELL_BY_ID = {(env, tfcells.cell_id(cell)): (env, cell) for env, cell in CELLS}
# A/A calibration: `twins` cells, spread evenly over the study, also run as independent twin
# cells under the machine key <machine>.twin (a suffix of whatever the machine key is); each round
# places a twin like a real comparison's other side (driver/study/order.py), and allocation treats
# twin pairs like comparisons; the `twins` and `twins_rate` tables compare each with its original.
TWINS = (
    [
        CELLS[round(i * (len(CELLS) - 1) / max(1, config["twins"] - 1))]
        for i in range(config["twins"])
    ]
    if config["twins"]
    else []
)
TWINS = list({(e, tfcells.cell_id(c)): (e, c) for e, c in TWINS}.values())


def round_slots(machine, rep):
    """[order.Slot(env, cell_id, twin)] of round `rep`: every cell and twin in the first `repeats`
    rounds; after them, what the checkpoint plan_round chose (driver/tables/allocation.py):
    entries [env, cell_id], or [env, cell_id, "twin"] for a twin process; possibly none.
    """
    if rep < REPEATS:
        return [order.Slot(e, tfcells.cell_id(c)) for e, c in CELLS] + [
            order.Slot(e, tfcells.cell_id(c), True) for e, c in TWINS
        ]
    plan = checkpoints.plan_round.get(machine=machine, rep=rep).output.plan
    with open(plan) as handle:
        chosen = json.load(handle)["cells"]
    return [
        order.Slot(key[0], key[1], key[2:] == ["twin"])
        for key in chosen
        if (key[0], key[1]) in CELL_BY_ID
    ]


@functools.lru_cache(maxsize=None)
def round_order(machine, rep):
    """The round's slots in their planned order (driver/study/order.py), and each one's position."""
    ordered = order.plan_order(
        round_slots(machine, rep), config["reference_env"], config["order"]["seed"], rep
    )
    return ordered, order.positions(ordered)


def round_plan(wildcards):
    """What results/rounds/<machine>/order<rep>.json records: the seed and the order."""
    rep = int(wildcards.rep)
    ordered, _ = round_order(wildcards.machine, rep)
    return order.plan_document(
        ordered,
        wildcards.machine,
        config["reference_env"],
        config["order"]["seed"],
        rep,
    )


def extra_round_plan(wildcards):
    """An extra round's order is planned from the allocation's choice (the checkpoint)."""
    if int(wildcards.rep) < REPEATS:
        return []
    return [checkpoints.plan_round.get(**wildcards).output.plan]


def cell_priority(wildcards):
    """Snakemake runs the ready job of highest priority first, and every cell of a round becomes
    ready at once (after the round before): the planned order, position 0 first. Below zero, the
    default of every other rule, so that env builds (which take the timing slot too) all run
    before the first cell: round 0 is not reordered by envs becoming ready one by one.
    """
    machine = layout.base_machine(wildcards.machine)
    ordered, position = round_order(machine, int(wildcards.rep))
    slot = order.Slot(wildcards.env, wildcards.cell, layout.is_twin(wildcards.machine))
    return -1 - position.get(slot, len(ordered))


def order_files(machine=None):
    """The plan file of every round this study runs."""
    machine = machine or MACHINE
    return [
        layout.order_path(machine, r)
        for r in range(REPEATS + EXTRA_ROUNDS)
        if r < REPEATS or round_slots(machine, r)
    ]


def cell_files(rep=None, machine=None):
    """This study's cell files (every round, or one), under this machine's key unless told.
    Every round: the first `repeats`, then extra rounds until a plan chooses no cell."""
    machine = machine or MACHINE
    if rep is not None:
        return round_files(machine, rep)
    files = []
    for r in range(REPEATS + EXTRA_ROUNDS):
        chosen = round_files(machine, r)
        if not chosen:
            break
        files += chosen
    return files


def round_files(machine, rep):
    """Cell files of one round: the chosen cells and twin cells (under the twin machine key)."""
    twin = layout.twin_key(machine)
    return [
        layout.cell_path(
            twin if s.twin else machine, s.env, CELL_BY_ID[(s.env, s.cell_id)][1], rep
        )
        for s in round_slots(machine, rep)
    ]


def files_before_round(wildcards):
    """What plan_round decides from: the cell files of every round before this one."""
    rep = int(wildcards.rep)
    return [f for r in range(rep) for f in cell_files(r, wildcards.machine)]


def stop_rule(model, api=None):
    """The runner's stopping rule: every value from config (the schema fills the defaults); a
    fit_epoch cell's also says how many steps one call covers (config fit_epoch_steps).
    """

    def count(value):  # "seed": the model's seed iteration count
        return models.SEED_ITERATIONS.get(model, 10) if value == "seed" else value

    stop = dict(config["stop"])
    out = {
        "kind": stop.pop("rule"),
        "iterations": count(stop.pop("iterations")),
        **stop,
    }
    if api == "fit_epoch":
        out["steps_per_call"] = count(config["fit_epoch_steps"])
    return out


def cell_params(wildcards):
    """The cell's axes as JSON; a user's model or data travels with it as `spec` (the seed's
    cells' parameters stay as they were)."""
    cell = tfcells.parse_cell_id(wildcards.cell)
    spec = usermodels.payload(cell["model"], cell["data"])
    if spec:
        cell["spec"] = spec
    return json.dumps(cell, sort_keys=True)


def rule_params(wildcards):
    cell = tfcells.parse_cell_id(wildcards.cell)
    return json.dumps(stop_rule(cell["model"], cell["api"]), sort_keys=True)


def env_file(wildcards):
    return ENV_SPECS[wildcards.env]["path"]


def env_manifest(wildcards):
    return layout.env_manifest(layout.base_machine(wildcards.machine), wildcards.env)


def cell_inputs(wildcards):
    """The env's manifest (venv mode); the machine's probe and the round's planned order, which
    come first; for repeats after the first, the previous round's marker.

    For a cell whose file exists, these are ancient: a new probe, plan or round marker reruns no
    finished cell. For a missing cell they are plain inputs: Snakemake (9.27) drops every job
    downstream of an ancient input whose own job must rerun (a probe whose stamp changed after a
    kill -9), so the missing cells would never run (tests/e2e/test_workflow.py).
    """
    out = {}
    if not USE_CONDA:
        out["manifest"] = env_manifest(wildcards)
    done = os.path.exists(layout.CELL_PATTERN.format(**wildcards))
    before = ancient if done else str
    machine = layout.base_machine(wildcards.machine)
    if PROBE["processes"]:
        out["probe"] = before(layout.probe_latest(machine))
    rep = int(wildcards.rep)
    out["order"] = before(layout.order_path(machine, rep))
    if rep > 0:
        out["previous_round"] = before(layout.round_marker(machine, rep - 1))
    return out


# The headline's duets (driver/study/duetplan.py, docs/design.md): each TF 2.x configuration of the
# headline and the reference env's, in two live workers taking turns. Venv mode only: a duet needs
# both envs at once, which Snakemake's conda deployment (one env per job) does not give a job.
DUETS = config["duets"]
DUET_LIST = (
    []
    if USE_CONDA
    # the envs the grids give cells: a preset of a few envs plans their duets only
    else duetplan.plan(
        ENV_SPECS, sorted({e for e, _ in CELLS}), config["reference_env"], DUETS
    )
)
DUET_BY_ID = {(d.env, d.cell_id): d for d in DUET_LIST}
DUET_PRIORITY = duetplan.priorities(
    DUET_LIST, DUETS["replicates"], config["order"]["seed"]
)


def duet_files(machine=None):
    machine = machine or MACHINE
    return [
        layout.duet_path(machine, d.env, d.cell_id, r)
        for d, r in duetplan.ordered(
            DUET_LIST, DUETS["replicates"], config["order"]["seed"]
        )
    ]


def duet_inputs(wildcards):
    """Both envs' manifests and the machine's probe (ancient once the duet's file exists)."""
    d = DUET_BY_ID[(wildcards.env, wildcards.cell)]
    machine = layout.base_machine(wildcards.machine)
    out = {
        "manifest": layout.env_manifest(machine, d.env),
        "reference_manifest": layout.env_manifest(machine, d.reference_env),
    }
    if PROBE["processes"]:
        done = os.path.exists(layout.DUET_PATTERN.format(**wildcards))
        out["probe"] = (ancient if done else str)(layout.probe_latest(machine))
    return out


def duet_params(wildcards):
    d = DUET_BY_ID[(wildcards.env, wildcards.cell)]
    return {
        "cell": json.dumps(d.cell, sort_keys=True),
        "reference_cell": json.dumps(d.reference_cell, sort_keys=True),
        "reference_env": d.reference_env,
        "rule": json.dumps(stop_rule(d.cell["model"], d.cell["api"]), sort_keys=True),
    }


def duet_priority(wildcards):
    return DUET_PRIORITY[(wildcards.env, wildcards.cell, int(wildcards.rep))]


def manifest_arg(wildcards, input):
    return "--conda" if USE_CONDA else "--manifest %s" % input.manifest


def other_machine_cells(wildcards):
    """Cell files copied in from other machines (results/cells/<key>/), per config `machines`."""
    return layout.other_machine_files(layout.CELLS, MACHINE, config["machines"])


# The machine probe (driver/study/probe.py, rules/probe.smk): NumPy's matmul and the small model in
# the reference env, run before any cell of the study.
PROBE = config["probe"]
PROBE_ENV = config["reference_env"]


def probe_cells():
    """JSON [{id, cell, rule}] of the probe's cells that can exist in the probe env."""
    spec = ENV_SPECS[PROBE_ENV]
    if "invalid" in spec:
        return "[]"
    grid = {
        "pairs": [["matmul", "matmul"]],
        "keras": ["none"],
        "modes": ["numpy"],
        "apis": ["matmul"],
        "inputs": ["numpy"],
        "devices": ["cpu"],
    }
    cells = tfcells.expand_grid(spec, grid)[:1]
    grid = dict(grid, pairs=[["small", "small"]], keras="all", modes=["graph", "eager"])
    cells += tfcells.expand_grid(spec, dict(grid, apis=["train_on_batch"]))[:1]
    items = [
        {"id": tfcells.cell_id(c), "cell": c, "rule": stop_rule(c["model"])}
        for c in cells
    ]
    return json.dumps(items, sort_keys=True)


def probe_stamp(wildcards):
    """Changes when the study has other cells to run, or the machine rebooted (boot id):
    the probe runs at the start of every study that times something."""
    files = [
        layout.cell_path(wildcards.machine, e, c, r)
        for r in range(REPEATS)
        for e, c in CELLS
    ]
    missing = [
        f for f in files + duet_files(wildcards.machine) if not os.path.exists(f)
    ]
    if not missing:
        # nothing left to time: keep the last probe's stamp, so a finished study reruns nothing
        try:
            latest = Path(layout.probe_latest(wildcards.machine)).read_text()
            return json.loads(latest)["study_stamp"] or ""
        except (OSError, ValueError, KeyError):
            pass
    return envspec.spec_hash(json.dumps([provenance.boot_id(), missing]))


def probe_inputs(wildcards):
    return (
        {}
        if USE_CONDA
        else {"manifest": layout.env_manifest(wildcards.machine, PROBE_ENV)}
    )


def probe_env_file(wildcards):
    return ENV_SPECS[PROBE_ENV]["path"]


def final_outputs():
    return [layout.CELLS_CSV, layout.WORKBOOK, layout.REPORT]


wildcard_constraints:
    machine=r"[A-Za-z0-9_.-]+",
    env="|".join(re.escape(e) for e in sorted(ENV_SPECS)),
    cell=r"[A-Za-z0-9_-]+-[A-Za-z0-9_]+\.[A-Za-z0-9_]+\.[a-z_]+\.[a-z_]+\.[a-z]+\.[a-z]+",
    rep=r"\d+",
