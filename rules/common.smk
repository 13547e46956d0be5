# Snakemake's side of the study plan (scripts/driver/study/plan.py): the plan, built once from
# config and envs/*.yaml, and the input, params and priority functions the rules call. Rules files
# hold rules only; what the study holds is the plan's. Checkpoints, `ancient` and wildcards stay here.
import functools
import json
import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake_interface_executor_plugins.settings import DeploymentMethod

REPO = Path(workflow.basedir)
sys.path.insert(0, str(REPO / "scripts"))

from driver.study import layout, order, plan, record, scheduling  # noqa: E402
from driver.study.locks import default_lock_path  # noqa: E402
from driver.tables.registry import NAMES as TABLES  # noqa: E402

DRIVER_PYTHON = sys.executable
# One re-evaluation timer in Snakemake's scheduler, not one more per ended job: its CPU stays flat
# through the study instead of growing beside the timing jobs (driver/study/scheduling.py).
scheduling.quiet_reevaluation()
# a cell's id (tfspeed/cells.py: cell_id) as a wildcard's pattern
CELL_RE = (
    r"[A-Za-z0-9_-]+-[A-Za-z0-9_]+\.[A-Za-z0-9_]+\.[a-z_]+\.[a-z_]+\.[a-z]+\.[a-z]+"
)
# With --sdm conda, cells run in Snakemake's conda envs made from the same files; else in our venvs.
USE_CONDA = DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method
try:
    PLAN = plan.StudyPlan(config, REPO, conda=USE_CONDA)
except plan.ConfigError as exc:
    raise WorkflowError(str(exc)) from None
MACHINE = PLAN.machine
REPEATS, ALLOCATION, TIME_BUDGET_S = PLAN.repeats, PLAN.allocation, PLAN.time_budget_s
DUETS, PROBE, PROBE_ENV = PLAN.duet_settings, PLAN.probe, PLAN.probe_env


def stop_fork_helpers():
    """At the study's end, success or not: every fork helper this Snakemake process owns exits
    (driver/study/forkserver.py), rather than when it notices Snakemake is gone; another
    Snakemake's in the same folder keeps its own."""
    from driver.study import forkserver

    me = forkserver.process_token(os.getpid())
    for folder in sorted(Path("results", "scratch").glob("*/helpers")):
        forkserver.stop_helpers(str(folder), owner=me)


# The functions the rules call that only ask the plan
package_sources = lambda sources: plan.package_sources(sources, REPO)
probe_cells = PLAN.probe_cells
cell_params = lambda wildcards: PLAN.cell_params(wildcards.cell)
rule_params = lambda wildcards: PLAN.rule_params(wildcards.cell)
env_file = lambda wildcards: PLAN.env_file(wildcards.env)
probe_env_file = lambda wildcards: PLAN.env_file(PROBE_ENV)
probe_stamp = lambda wildcards: PLAN.probe_stamp(wildcards.machine)
duet_files = lambda machine=None: all_duet_files(machine or MACHINE)
duet_params = lambda wildcards: PLAN.duet_params(wildcards.env, wildcards.cell)
duet_priority = lambda w: PLAN.duet_priority[(w.env, w.cell, int(w.rep))]
order_files = lambda machine=None: PLAN.order_files(machine or MACHINE, round_slots)
manifest_arg = lambda wildcards, input: (
    "--conda" if USE_CONDA else "--manifest %s" % input.manifest
)
final_outputs = lambda: [layout.CELLS_CSV, layout.WORKBOOK, layout.REPORT]


def all_duet_files(machine):
    """The first look's duet files and, with a second look, those the checkpoint plan_duets
    chose for the rows still open."""
    files = PLAN.duet_files(machine)
    if not PLAN.second_look or not files:
        return files
    chosen = checkpoints.plan_duets.get(machine=machine).output.plan
    with open(chosen) as handle:
        return files + PLAN.extra_duet_files(machine, json.load(handle)["open"])


def round_slots(machine, rep):
    """Round `rep`'s slots: every cell and twin in the first `repeats` rounds (under a time
    budget no twin in round 0); after them, what the checkpoint plan_round chose (possibly
    none)."""
    if PLAN.fixed_round(rep):
        return PLAN.first_round_slots(rep)
    chosen = checkpoints.plan_round.get(machine=machine, rep=rep).output.plan
    with open(chosen) as handle:
        return PLAN.chosen_slots(json.load(handle)["cells"])


@functools.lru_cache(maxsize=None)
def round_order(machine, rep):
    return PLAN.round_order(round_slots(machine, rep), rep)


def round_plan(wildcards):
    rep = int(wildcards.rep)
    doc = PLAN.order_document(
        round_order(wildcards.machine, rep)[0], wildcards.machine, rep
    )
    if "time_budget_s" in doc:
        doc["reserve"] = second_look_reserve()
    return doc


def second_look_reserve():
    """What round 0's gate holds back for the second look (config duets.before_cells, as the
    highest tier of driver/tables/second_look.TIERS it takes) and the levels the rows are
    judged at (driver/study/budget.py: second_look_reserve_s)."""
    tier = {"none": -1, "headline": 0, "paired": 1}[
        DUETS.get("before_cells", "headline")
    ]
    return {
        "tier": tier,
        "q": config["fdr_q"],
        "level": config["stop"]["level"],
        "min_effect": config["min_effect"],
        "alpha_equivalence": config["equivalence_alpha"],
    }


def extra_round_plan(wildcards):
    """An extra round's order is planned from the allocation's choice (the checkpoint)."""
    if PLAN.fixed_round(int(wildcards.rep)):
        return []
    return [checkpoints.plan_round.get(**wildcards).output.plan]


def cell_priority(wildcards):
    """The round's planned order, position 0 first; below zero (every other rule's default), so
    that env builds (they take the timing slot too) all run before the first cell."""
    machine = layout.base_machine(wildcards.machine)
    ordered, position = round_order(machine, int(wildcards.rep))
    slot = order.Slot(wildcards.env, wildcards.cell, layout.is_twin(wildcards.machine))
    return -1 - position.get(slot, len(ordered))


def cell_files(rep=None, machine=None):
    """Cell files of one round, or of every round until a plan chooses no cell."""
    return PLAN.cell_files(machine or MACHINE, round_slots, rep)


def first_round_cell_files(machine):
    """The cell files of the rounds every cell runs (round 0 with a time budget; twins too), done
    or not: the second look's plan counts them against the budget (scripts/plan_duets.py).
    """
    fixed = [r for r in range(REPEATS) if PLAN.fixed_round(r)]
    return [f for r in fixed for f in cell_files(r, machine)]


def second_look_cells(machine):
    """With a time budget, round 0's cell files (twins too): the checkpoint plan_duets runs after
    them, so the second look gets what is left once every first look has run, at its measured
    cost; none without a budget (the second look is then not sized by time)."""
    return first_round_cell_files(machine) if TIME_BUDGET_S is not None else []


def files_before_round(wildcards):
    return [
        f for r in range(int(wildcards.rep)) for f in cell_files(r, wildcards.machine)
    ]


def cell_inputs(wildcards):
    """The env's manifest (venv mode), the machine's probe, the round's order and, after the first
    round, the previous round's marker. Ancient once the cell's file exists (a new probe or plan
    reruns no finished cell); plain for a missing cell, which Snakemake 9.27 would otherwise drop
    when an ancient input's job reruns (tests/e2e/test_workflow.py). A cell that round 0's time
    budget did not reach keeps its order file plain: a new budget rewrites that file
    (plan.order_document), so the cell runs then, and only then."""
    machine = layout.base_machine(wildcards.machine)
    out = {} if USE_CONDA else {"manifest": layout.env_manifest(machine, wildcards.env)}
    cell = layout.CELL_PATTERN.format(**wildcards)
    before = ancient if os.path.exists(cell) else str
    if PROBE["processes"]:
        out["probe"] = before(layout.probe_latest(machine))
    rep = int(wildcards.rep)
    out["order"] = (str if record.not_reached(cell) else before)(
        layout.order_path(machine, rep)
    )
    if rep > 0:
        out["previous_round"] = before(layout.round_marker(machine, rep - 1))
    elif TIME_BUDGET_S is not None and PLAN.timed_duets:
        # with a time budget the paired rows' first look runs before round 0's cells, whatever
        # env finished building first: the gate weighs what it spent (budget.round0_gate)
        out["first_look"] = before(layout.FIRST_LOOK_PATTERN.format(machine=machine))
    return out


def duet_inputs(wildcards):
    """Both envs' manifests and the machine's probe (ancient once the duet's file exists)."""
    d = PLAN.duet_by_id[(wildcards.env, wildcards.cell)]
    machine = layout.base_machine(wildcards.machine)
    out = {
        "manifest": layout.env_manifest(machine, d.env),
        "reference_manifest": layout.env_manifest(machine, d.reference_env),
    }
    if PROBE["processes"]:
        done = os.path.exists(layout.DUET_PATTERN.format(**wildcards))
        out["probe"] = (ancient if done else str)(layout.probe_latest(machine))
    return out


def other_machine_cells(wildcards):
    """Cell files copied in from other machines (results/cells/<key>/), per config `machines`."""
    return layout.other_machine_files(layout.CELLS, MACHINE, config["machines"])


def probe_inputs(wildcards):
    if USE_CONDA:
        return {}
    return {"manifest": layout.env_manifest(wildcards.machine, PROBE_ENV)}


wildcard_constraints:
    machine=r"[A-Za-z0-9_.-]+",
    env="|".join(re.escape(e) for e in sorted(PLAN.env_specs)),
    # a cell's id; a pair in one process (duetplan.PAIR_SEP) joins two
    cell=f"{CELL_RE}(~{CELL_RE})?",
    rep=r"\d+",
