"""The study plan as one Python object: what a config asks for, checked, and what the study holds.

`StudyPlan(config, repo)` takes the config as Snakemake has it (config.yaml with any --configfile
laid over it, checked against schemas/config.schema.yaml, which fills the defaults) and the
repository. It loads the env specs (driver/study/envspec.py), checks the rules that span several
keys (a ConfigError names the key), and holds the cells (the union of the grids), the twins
(A/A calibration cells), the slots of the first `repeats` rounds, the probe's cells, each cell's
stopping rule, the headline's duets (driver/study/duetplan.py) and the cells their sides time.

Pure planning: no Snakemake. rules/common.smk builds one plan and wraps it in the input, params
and priority functions the rules call (the checkpoints, `ancient` and wildcards stay there);
scripts/reference_docs.py and the tests build plans of their own.
"""
import functools
import json
import os
import re
from pathlib import Path

import yaml

from driver.study import duetplan, envspec, layout, order, provenance, sides
from tfspeed import cells as tfcells
from tfspeed import models, usermodels

# An env whose file cannot be read gets one placeholder cell per pair, written as failed with the
# spec's error; these are its axes.
PLACEHOLDER = dict(keras="none", mode="eager", api="fit", input="numpy", device="cpu")
# The machine probe's cells (driver/study/probe.py): NumPy's matmul, then the small model.
PROBE_GRID = {"pairs": [["matmul", "matmul"]], "keras": ["none"], "modes": ["numpy"],
              "apis": ["matmul"], "inputs": ["numpy"], "devices": ["cpu"]}


class ConfigError(ValueError):
    """A config the study cannot run; `key` names the config key (dotted, grids by index)."""

    def __init__(self, key, message):
        super().__init__("config error at '%s': %s" % (key, message))
        self.key, self.message = key, message


def config_error(key, message):
    raise ConfigError(key, message)


def load_env_specs(env_dirs, repo):
    """Every <env_dirs>/*.yaml with what its pins say; a file that cannot be read keeps its error."""
    repo = Path(repo)
    specs, paths = {}, {}
    for folder in env_dirs:
        if not (repo / folder).is_dir():
            config_error("env_dirs", "%r is not a folder under %s" % (folder, repo))
        for path in sorted((repo / folder).glob("*.yaml")):
            if path.stem in paths:
                config_error("env_dirs", "env %r is defined twice: %s and %s"
                             % (path.stem, paths[path.stem], path))
            paths[path.stem] = path
    for path in paths.values():
        try:
            specs[path.stem] = envspec.parse_spec(path.stem, yaml.safe_load(path.read_text()),
                                                  str(path))
        except (yaml.YAMLError, envspec.SpecError) as exc:
            specs[path.stem] = {"name": path.stem, "invalid": str(exc), "build": "cpu",
                                "framework": None, "framework_version": None, "flavours": []}
        specs[path.stem]["path"] = str(path)
    return specs


def package_sources(sources, repo):
    """Config `package_sources` with find_links folders made absolute (relative = to the repository):
    the builder runs in the study's working directory."""
    links = [link if re.match(r"^(https?|file)://", link)
             else str(Path(repo) / Path(link).expanduser())
             for link in sources.get("find_links", [])]
    return dict(sources, find_links=links)


def unknown_pair(model, data):
    """The error for a pair naming a model or data that neither the study nor config has."""
    if model not in models.MODELS:
        return "unknown model %r; models: %s (config `models` adds your own)" % (
            model, ", ".join(models.MODELS))
    return "unknown data %r; data: %s (config `data` adds your own)" % (
        data, ", ".join(models.DATA))


class StudyPlan:
    """The study a config describes. `conda`: Snakemake deploys the envs with conda (--sdm conda),
    which plans no duets (a duet needs both envs at once; conda gives a job one)."""

    def __init__(self, config, repo, conda=False):
        self.config, self.repo, self.conda = config, Path(repo), conda
        self.env_specs = load_env_specs(config["env_dirs"], self.repo)
        self.envs = self._study_envs()
        self._check()
        self.reference_env = self.probe_env = config["reference_env"]
        self.seed = config["order"]["seed"]
        self.probe = config["probe"]
        self.cells = self._cells()
        if not self.cells:
            config_error("grids", "the grids hold no cell that can exist in the study's envs")
        self.cell_by_id = {(env, tfcells.cell_id(cell)): (env, cell) for env, cell in self.cells}
        self.repeats = config["repeats"]
        self.allocation = config["allocation"]
        # config time_budget_min: the extra rounds get what the first rounds leave (budget.py)
        budget = config.get("time_budget_min")
        self.time_budget_s = None if budget is None else 60.0 * budget
        self.extra_rounds = (max(0, self.allocation["max_repeats"] - self.repeats)
                             if self.allocation["budget_s"] > 0 else 0)
        self.duet_settings = dict(config["duets"])
        first = self.duet_settings["replicates"]
        most = self.duet_settings.get("max_replicates") or first
        if most < first:
            config_error("duets.max_replicates", "must be at least duets.replicates (%d), not %d"
                         % (first, most))
        self.duet_settings["max_replicates"] = most
        # a second look at the rows still open after `replicates` duets (scripts/plan_duets.py)
        self.second_look = most > first
        # the envs the grids give cells: a preset of a few envs plans their duets only
        for i, pair in enumerate(self.duet_settings.get("models") or []):
            if pair[0] not in models.MODELS or pair[1] not in models.DATA:
                config_error("duets.models[%d]" % i, unknown_pair(*pair))
        study_envs = sorted({e for e, _ in self.cells})
        self.duets = [] if conda else (
            duetplan.plan(self.env_specs, study_envs, self.reference_env, self.duet_settings)
            + duetplan.plan_own(self.env_specs, study_envs, self.reference_env,
                                self.duet_settings))
        for i, (model, data) in enumerate(self.duet_settings.get("models") or []):
            if not conda and self.duet_settings.get("modes") and not any(
                    d.own and (d.cell["model"], d.cell["data"]) == (model, data)
                    for d in self.duets):
                config_error("duets.models[%d]" % i, "no duet of %s on %s can be planned: it needs "
                             "a TF 2.x env beside %s, and its cell in both (tfspeed/cells.py: "
                             "why_not)" % (model, data, self.reference_env))
        # other frameworks' ways against TF's (config duets.frameworks): a table of their own
        for key, problem in duetplan.frameworks_why_not(self.env_specs, study_envs,
                                                        self.duet_settings)[:1]:
            config_error(key, problem)
        self.duets += [] if conda else duetplan.plan_frameworks(
            self.env_specs, study_envs, self.duet_settings)
        # pairs in one process (config `pairs`): planned, ordered and looked at as duets are
        self.pair_settings = dict(config.get("pairs") or {})
        self._check_pairs()
        self.pairs = [] if conda else duetplan.plan_pairs(self.cells, self.pair_settings,
                                                               self.env_specs)
        self.timed_duets = self.duets + self.pairs
        self.duet_by_id = {(d.env, d.cell_id): d for d in self.timed_duets}
        # cells that a duet's sides time (driver/study/sides.py): no process of their own
        self._taken = set(sides.single_sides(sides.planned_rows(self.timed_duets))) & set(
            self.cell_by_id) if self.duet_settings.get("sides_as_cells") else set()
        self.sides_as_cells = sorted(self._taken)
        self.twins = self._twins()
        self.duet_priority = duetplan.priorities(self.timed_duets, first, self.seed, most)

    # ------------------------------------------------------------------------------ checks

    def _check_pairs(self):
        """config `pairs`: its tables known, its envs named by env files, before any job (as a
        grid's envs, those the study leaves out are left out of the pairs)."""
        settings = self.pair_settings
        for name in settings.get("tables") or []:
            if name not in duetplan.PAIR_TABLES:
                config_error("pairs.tables", "%r cannot be timed as a pair in one process; "
                             "tables that can: %s" % (name, ", ".join(sorted(
                                 duetplan.PAIR_TABLES))))
        envs = settings.get("envs", "all")
        if isinstance(envs, list):
            unknown = [e for e in envs if e not in self.env_specs]
            if unknown:
                config_error("pairs.envs", "unknown env %s; env files present: %s" % (
                    ", ".join(map(repr, unknown)), ", ".join(sorted(self.env_specs))))

    def _study_envs(self):
        """The env names in the study, checked against the env files."""
        chosen = self.config["envs"]
        if isinstance(chosen, list):
            unknown = [e for e in chosen if e not in self.env_specs]
            if unknown:
                config_error("envs", "unknown env %s; env files present: %s"
                             % (", ".join(map(repr, unknown)), ", ".join(sorted(self.env_specs))))
            return list(chosen)
        return [n for n, s in self.env_specs.items() if chosen == "all" or s["build"] == chosen]

    def _check(self):
        """Rules that span several keys (the schema checks each key alone)."""
        config, envs = self.config, self.envs
        if not envs:
            config_error("envs", "no env files under envs/ match %r" % (config["envs"],))
        ref = config["reference_env"]
        if ref not in envs:
            config_error("reference_env",
                         "%r is not an env of this study (%s)" % (ref, ", ".join(envs)))
        unpinned = envspec.unpinned_packages(config["package_sources"].get("packages"),
                                             self.env_specs)
        if unpinned:
            config_error("package_sources.packages", "%s pinned by no env file under %s"
                         % (", ".join(map(repr, unpinned)), ", ".join(config["env_dirs"])))
        stop = config["stop"]
        if stop["min_samples"] > stop["max_samples"]:
            config_error("stop.min_samples", "min_samples %s exceeds max_samples %s"
                         % (stop["min_samples"], stop["max_samples"]))
        try:  # config `models` and `data` (a user's own), made known to tfspeed.models
            usermodels.register(config.get("models"), config.get("data"))
        except usermodels.ModelError as exc:
            config_error(exc.where, exc.message)
        names = set()
        for i, grid in enumerate(config["grids"]):
            where = "grids[%d] (%s)" % (i, grid["name"])
            if grid["name"] in names:
                config_error(f"{where}.name", "grid name %r is used twice" % grid["name"])
            names.add(grid["name"])
            if isinstance(grid.get("envs"), list):
                outside = [e for e in grid["envs"] if e not in envs]
                if outside:
                    config_error(f"{where}.envs", "%s not in the study's envs (%s)"
                                 % (", ".join(map(repr, outside)), ", ".join(envs)))
            seen = set()
            for model, data in grid["pairs"]:
                if (model, data) in seen:
                    config_error(f"{where}.pairs", "pair [%s, %s] is listed twice" % (model, data))
                seen.add((model, data))
                why = self._pair_error(model, data)
                if why:
                    config_error(f"{where}.pairs", why)

    def _pair_error(self, model, data):
        if model in models.FAULT_MODELS:
            if not self.config["allow_fault_models"]:
                return ("%r is a test-only fault model; set allow_fault_models: true to use it"
                        % model)
            return None
        if model not in models.MODELS or data not in models.DATA:
            return unknown_pair(model, data)
        if usermodels.is_user(model, data):
            return usermodels.pair_error(model, data)
        if not models.output_length_ok(model, data):
            return ("model %r cannot take data %r (its convolutions leave nothing; the seed "
                    "leaves this pair out)" % (model, data))
        return None

    # ------------------------------------------------------------------------------ cells

    def _cells(self):
        """[(env, cell)] of the whole study: the union of the grids, each cell once."""
        out, seen = [], set()
        for grid in self.config["grids"]:
            envs = self.envs if grid.get("envs", "all") == "all" else grid["envs"]
            for env in envs:
                spec = self.env_specs[env]
                if "invalid" in spec:
                    cells = [dict(PLACEHOLDER, model=m, data=d) for m, d in grid["pairs"]]
                else:
                    cells = tfcells.expand_grid(spec, grid)
                for cell in cells:
                    key = (env, tfcells.cell_id(cell))
                    if key not in seen:
                        seen.add(key)
                        out.append((env, cell))
        return out

    def _twins(self):
        """A/A calibration: `twins` cells, spread evenly over the study, also run as independent
        twin cells under the machine key <machine>.twin; each round places a twin like a real
        comparison's other side (driver/study/order.py), allocation treats twin pairs like
        comparisons, and the `twins` and `twins_rate` tables compare each with its original."""
        n, cells = self.config["twins"], self.own_cells
        picked = [cells[round(i * (len(cells) - 1) / max(1, n - 1))] for i in range(n)] if n else []
        return list({(e, tfcells.cell_id(c)): (e, c) for e, c in picked}.values())

    @property
    def own_cells(self):
        """[(env, cell)] that run processes: all but `sides_as_cells` (driver/study/sides.py)."""
        return [(e, c) for e, c in self.cells if (e, tfcells.cell_id(c)) not in self._taken]

    @functools.cached_property
    def machine(self):
        """The machine key of this study's files: config `machine`, or this machine's."""
        key = self.config["machine"]
        return key if key != "auto" else provenance.machine_key()

    def env_file(self, env):
        return self.env_specs[env]["path"]

    def fixed_round(self, rep):
        """Whether round `rep` runs every cell and twin without a plan: round 0 always; rounds 1 ..
        repeats - 1 too without a time budget. With one, they are planned (checkpoint
        plan_round): each runs in full while the budget left allows it, after the paired rows'
        second look (driver/study/budget.py)."""
        return rep == 0 or (rep < self.repeats and self.time_budget_s is None)

    def rounds(self):
        """Every round the study may run: the first `repeats`, then the allocation's extra ones."""
        return range(self.repeats + self.extra_rounds)

    def first_round_slots(self, rep=0):
        """[order.Slot] of round `rep` below `repeats`: every cell, then every twin; under a time
        budget no twin in round 0 (one process a side has no interval, and where the budget
        reaches no round 1 it only takes time from the second look: docs/design.md "Twins")."""
        twins = [] if rep == 0 and self.time_budget_s is not None else self.twins
        return [order.Slot(e, tfcells.cell_id(c)) for e, c in self.own_cells] + [
            order.Slot(e, tfcells.cell_id(c), True) for e, c in twins]

    def chosen_slots(self, chosen):
        """An extra round's slots from what plan_round chose (driver/tables/allocation.py):
        entries [env, cell_id], or [env, cell_id, "twin"] for a twin process; cells the study no
        longer holds, or takes from duet sides, are left out."""
        own = set(self.cell_by_id) - self._taken
        return [order.Slot(k[0], k[1], k[2:] == ["twin"]) for k in chosen if tuple(k[:2]) in own]

    @staticmethod
    def slot_keys(slots):
        """Slots as plan_round writes them: [env, cell_id], or [env, cell_id, "twin"]."""
        return [[s.env, s.cell_id] + (["twin"] if s.twin else []) for s in slots]

    def round_order(self, slots, rep):
        """The round's slots in their planned order (driver/study/order.py), and each position."""
        ordered = order.plan_order(slots, self.reference_env, self.seed, rep)
        return ordered, order.positions(ordered)

    def order_document(self, ordered, machine, rep):
        """What results/rounds/<machine>/order<rep>.json records: the seed and the order; under
        a time budget, round 0's also the budget, which its cells' supervisor reads
        (budget.round0_gate): a new budget rewrites the file, so a cell not reached under the
        old one runs again (rules/common.smk: cell_inputs) and a finished one does not."""
        doc = order.plan_document(ordered, machine, self.reference_env, self.seed, rep)
        if rep == 0 and self.time_budget_s is not None:
            doc["time_budget_s"] = self.time_budget_s
        return doc

    def order_files(self, machine, slots_of):
        """The order file of every round the study runs: the first `repeats`, then each extra
        round whose slots (`slots_of(machine, rep)`: the allocation's choice) are not empty."""
        return [layout.order_path(machine, r) for r in self.rounds()
                if self.fixed_round(r) or slots_of(machine, r)]

    def cell_files(self, machine, slots_of, rep=None):
        """The cell files of round `rep`, or of every round (`slots_of` as for order_files): under
        a time budget an empty round 1 can come before an extra round that fills what is left."""
        reps = self.rounds() if rep is None else [rep]
        return [f for r in reps for f in self.slot_files(machine, r, slots_of(machine, r))]

    def slot_files(self, machine, rep, slots):
        """Cell files of a round's slots: twin processes under the twin machine key."""
        twin = layout.twin_key(machine)
        return [layout.cell_path(twin if s.twin else machine, s.env,
                                 self.cell_by_id[(s.env, s.cell_id)][1], rep) for s in slots]

    # ------------------------------------------------------------------------------ rules

    def stop_rule(self, model, api=None, duet=False):
        """The runner's stopping rule from config (schema-filled); fit_epoch: steps per call
        (fit_epoch_steps); a duet's or pair's (`duet`): warm-up blocks of duets.warmup_block_s."""

        def count(value):  # "seed": the model's seed iteration count
            return models.SEED_ITERATIONS.get(model, 10) if value == "seed" else value

        stop = dict(self.config["stop"])
        out = {"kind": stop.pop("rule"), "iterations": count(stop.pop("iterations")), **stop}
        if api == "fit_epoch":
            out["steps_per_call"] = count(self.config["fit_epoch_steps"])
        if duet and self.duet_settings.get("warmup_block_s"):
            out["warmup_block_s"] = self.duet_settings["warmup_block_s"]
        return out

    def cell_params(self, cell_id):
        """The cell's axes as JSON; a user's model or data travels with it as `spec` (the seed's
        cells' parameters stay as they were)."""
        cell = tfcells.parse_cell_id(cell_id)
        spec = usermodels.payload(cell["model"], cell["data"])
        if spec:
            cell["spec"] = spec
        return json.dumps(cell, sort_keys=True)

    def rule_params(self, cell_id):
        cell = tfcells.parse_cell_id(cell_id)
        return json.dumps(self.stop_rule(cell["model"], cell["api"]), sort_keys=True)

    # ------------------------------------------------------------------------------ duets

    def duet_files(self, machine):
        """Every duet's file of the first look, replicate by replicate in the planned order."""
        return [layout.duet_path(machine, d.env, d.cell_id, r) for d, r in
                duetplan.ordered(self.timed_duets, self.duet_settings["replicates"], self.seed)]

    def extra_duet_files(self, machine, open_rows):
        """The second look's files: replicates `replicates` .. `max_replicates` - 1 of each row
        in open_rows ([[env, cell_id], ...], scripts/plan_duets.py), in the planned order."""
        wanted = {(env, cid) for env, cid in open_rows}
        run = duetplan.ordered(self.timed_duets, self.duet_settings["max_replicates"], self.seed,
                               start=self.duet_settings["replicates"])
        return [layout.duet_path(machine, d.env, d.cell_id, r) for d, r in run
                if (d.env, d.cell_id) in wanted]

    def duet_params(self, env, cell_id):
        d = self.duet_by_id[(env, cell_id)]
        return {"cell": json.dumps(d.cell, sort_keys=True),
                "reference_cell": json.dumps(d.reference_cell, sort_keys=True),
                "reference_env": d.reference_env,
                "design": json.dumps(duetplan.design(d, self.duet_settings, self.pair_settings,
                                                     self.reference_env), sort_keys=True),
                "rule": json.dumps(self.stop_rule(d.cell["model"], d.cell["api"], duet=True),
                                   sort_keys=True)}

    # ------------------------------------------------------------------------------ probe

    def probe_cells(self):
        """JSON [{id, cell, rule}] of the probe's cells that can exist in the probe env."""
        spec = self.env_specs[self.probe_env]
        if "invalid" in spec:
            return "[]"
        cells = tfcells.expand_grid(spec, PROBE_GRID)[:1]
        grid = dict(PROBE_GRID, pairs=[["small", "small"]], keras="all", modes=["graph", "eager"])
        cells += tfcells.expand_grid(spec, dict(grid, apis=["train_on_batch"]))[:1]
        items = [{"id": tfcells.cell_id(c), "cell": c, "rule": self.stop_rule(c["model"])}
                 for c in cells]
        return json.dumps(items, sort_keys=True)

    def probe_stamp(self, machine):
        """Changes when the study has other cells to run, or the machine rebooted (boot id):
        the probe runs at the start of every study that times something."""
        files = [layout.cell_path(machine, e, c, r) for r in range(self.repeats)
                 for e, c in self.cells]
        missing = [f for f in files + self.duet_files(machine) if not os.path.exists(f)]
        if not missing:
            # nothing left to time: keep the last probe's stamp, so a finished study reruns nothing
            try:
                latest = Path(layout.probe_latest(machine)).read_text()
                return json.loads(latest)["study_stamp"] or ""
            except (OSError, ValueError, KeyError):
                pass
        return envspec.spec_hash(json.dumps([provenance.boot_id(), missing]))

    # ------------------------------------------------------------------------------ size

    def built_envs(self):
        """The envs the study builds (venv mode): those of its cells and duets, and the probe's."""
        envs = {e for e, _ in self.cells}
        envs |= {e for d in self.timed_duets for e in (d.env, d.reference_env)}
        if self.probe["processes"]:
            envs.add(self.probe_env)
        return sorted(envs)

    def job_counts(self):
        """Jobs of the plan as `snakemake -n` counts them in an empty directory (allocation's
        extra rounds are not planned yet): cell processes, duets, env builds."""
        return {"run_cell": sum(len(self.first_round_slots(r)) for r in range(self.repeats)
                                if self.fixed_round(r)),
                "run_duet": sum(d.weight for d in self.timed_duets)
                * self.duet_settings["replicates"],
                "build_env": 0 if self.conda else len(self.built_envs())}
