"""The headline's duets: which TF 2.x configurations meet the reference env, and in what order.

A duet (driver/study/duet.py) times one TF 2.x cell and the reference env's cell of the same
configuration in two live workers that take turns window by window; config `duets` says which
(docs/design.md, "Duets"):

- every env of the study whose framework is TensorFlow 2.x, against `reference_env`;
- in each mode of `duets.modes`, on the small model and data, numpy input, the `duets.api`
  (a user's model across envs and modes: `duets.models`, plan_own, a table of its own);
- the Keras a user of that version gets, counted as the headline counts it: tf.keras where the
  env has it (TF <= 2.15); from TF 2.16, where tf.keras is Keras 3, the legacy tf_keras in graph
  mode (Keras 3 has none) and both Keras 3 and tf_keras in eager mode. The reference side is
  always the reference env's tf.keras in the same mode;
- with `duets.aa`, an A/A row per mode: the reference env's cell against itself, the duets' own
  false-positive and order-bias check (driver/tables/duets.py: is_aa; its own table);
- with `duets.graph_vs_eager` (k > 0) and both modes, one more row: the reference env's graph
  cell against its eager cell, with k times the duets' replicates at each look (`weight`): it
  enters every row of the derived duets_graph_vs_eager table (driver/tables/
  duets_graph_vs_eager.py), so its spread is kept small; its key joins both cells' ids (PAIR_SEP);
- `duets.replicates` duets each, every one with fresh workers; replicate r of every duet runs
  before replicate r + 1 of any, in an order drawn from `order.seed` and r; with
  `duets.max_replicates` above it, the rows still undecided after them get the rest (a second
  look, scripts/plan_duets.py; driver/stats/sequential.py keeps the size).

Pairs in one process (config `pairs`, docs/design.md "Pairs in one process"): a comparison whose
two cells live in one env and one mode (PAIR_TABLES: fit vs train_on_batch, numpy vs tf.data, fit
over an epoch vs train_on_batch, model(x) vs predict, two Keras) is timed by one
fresh worker that builds both cells and interleaves them call by call (run_cell.py `mix`), so the
process's own state is the same for both sides. They are planned, ordered, looked at twice and
stored as duets are (results/duets/), with `together` set: their key joins both cells' ids
(PAIR_SEP), and their rows form tables of their own (`pairs`, `pairs_aa`), never the headline's.

Pure planning (no Snakemake, no framework): the study plan (driver/study/plan.py) asks it,
and so do the tests.
"""
import random
from typing import NamedTuple

from tfspeed import cells as tfcells
from tfspeed import usermodels
from tfspeed.versions import version_tuple

HEADLINE = {"model": "small", "data": "small", "input": "numpy", "device": "cpu"}
# A pair's key: both cells' ids (a file name part; a cell id never holds it)
PAIR_SEP = "~"
# The comparison tables whose rows a pair in one process can time: {table: (axis, ((left,
# right), ...))}, the pairs of the axis' values as the table names them (driver/tables/
# comparisons.py: KERAS_PAIRS, CALL_PAIRS), first-named on the left. Both cells share the env and
# the mode; fit_epoch's calls cover fit_epoch_steps steps where train_on_batch's cover one, and
# the worker times both per step (run_cell.py: each cell its own rule, `mix` in blocks of equal
# steps). Which Keras pairs can share a process: keras_why_not.
PAIR_TABLES = {"fit_vs_train_on_batch": ("api", (("fit", "train_on_batch"),)),
               "numpy_vs_tfdata": ("input", (("numpy", "tfdata"),)),
               "fit_epoch_vs_train_on_batch": ("api", (("fit_epoch", "train_on_batch"),)),
               "call_vs_predict": ("api", (("call", "predict"), ("call", "predict_on_batch"),
                                           ("predict_on_batch", "predict"),
                                           ("inference_mode", "call"))),
               "keras_vs_tfkeras": ("keras", (("keras", "tf.keras"), ("keras3", "tf_keras"),
                                              ("tf.python.keras", "tf.keras"))),
               # modes that share a process: none of them is TF 1-style graph (which a TF 2
               # process turns on for all it builds), so eager, tf.function, XLA and
               # run_eagerly cells live side by side, as do PyTorch's
               "compiled_vs_eager": ("mode", (("function", "eager"), ("xla", "function"),
                                              ("xla", "eager"), ("eager", "run_eagerly"),
                                              ("compile", "eager"), ("torchscript", "eager")))}


def keras_why_not(spec, left, right, mode):
    """None where two Keras flavours can be built and trained in one process (a pair of
    keras_vs_tfkeras), else why not. `spec`: the env's envspec facts (None: unknown, no pair).

    - standalone Keras 2.2 and tf.keras on TF 1.x: yes (tried in TF 1.14, graph mode, the only
      mode standalone Keras 2.2 has: each keeps its own session on TF's one default graph);
    - Keras 3 and tf_keras from TF 2.16: yes (tried in TF 2.21, eager: two packages with their
      own state over one TF runtime; Keras 3 has no graph mode, so there is no graph pair);
    - standalone Keras 2.3.1 and tf.keras on TF 2.x (TF 2.0): no pair. Both keep global state
      in TF (graphs, sessions, the learning phase), and they have not been tried in one process
      (no TF 2.0 env was at hand); the cells answer that row until a run shows they can;
    - tensorflow.python.keras and tf.keras: on TF 1.x (tried in TF 1.14, graph and eager); on
      TF 2.x before 2.6 in graph mode only (in TF 2.0 the private copy's train_on_batch fails in
      eager mode as a fresh cell too); none from TF 2.6, where tf.keras became the keras
      package and the private copy a leftover (measured in TF 2.15 only: it has no
      optimizers.Adam, its cell is skipped, so a pair's worker could never build it).
    """
    if spec is None or spec.get("framework") != "tensorflow":
        return "no TensorFlow env facts: which Keras can share a process is unknown"
    tfv = version_tuple(spec.get("framework_version") or "0")
    if (left, right) == ("keras", "tf.keras"):
        return None if tfv < (2, 0) else (
            "standalone Keras 2.3 and tf.keras on TF 2 are not tried in one process")
    if (left, right) == ("keras3", "tf_keras"):
        return None if tfv >= (2, 16) else "Keras 3 beside tf_keras needs TF >= 2.16"
    if (left, right) == ("tf.python.keras", "tf.keras"):
        if tfv < (2, 0) or (tfv < (2, 6) and mode == "graph"):
            return None
        return ("tensorflow.python.keras fails in eager mode on TF 2.0 and is not planned "
                "from TF 2.6 on (2.15's has no optimizers.Adam)")
    return "%s vs %s is not a pair of keras_vs_tfkeras" % (left, right)


class Duet(NamedTuple):
    env: str  # the TF 2.x env (the left side of every comparison)
    cell: dict  # its cell
    reference_env: str
    reference_cell: dict
    together: bool = False  # a pair in one process (both cells in one worker), not a duet
    weight: int = 1  # duets per replicate round (the reference across modes: graph_vs_eager)
    own: bool = False  # a user's model across envs and modes (plan_own): the duets_own table
    frameworks: bool = False  # another framework's way against TF's (plan_frameworks)

    @property
    def cell_id(self):
        """The row's key: the cell's id; a pair's, one env's two cells', and a frameworks duet's
        (its right side is named by config, not implied) join both (PAIR_SEP)."""
        if self.together or self.frameworks or (
                self.env == self.reference_env and self.cell != self.reference_cell):
            return tfcells.cell_id(self.cell) + PAIR_SEP + tfcells.cell_id(self.reference_cell)
        return tfcells.cell_id(self.cell)

    @property
    def table(self):
        """The comparison table a pair's row belongs to (PAIR_TABLES); None for a duet and for
        a pair's A/A row."""
        if not self.together:
            return None
        for name, (axis, sides) in PAIR_TABLES.items():
            if (self.cell[axis], self.reference_cell[axis]) in sides and all(
                    self.cell[a] == self.reference_cell[a] for a in tfcells.AXES if a != axis):
                return name
        return None


def counted_keras(spec, mode):
    """The Keras flavours a user of this env gets in this mode, as the headline counts them."""
    if "tf.keras" in spec["flavours"]:
        return ["tf.keras"]
    if mode == "graph":
        return ["tf_keras"]
    return [k for k in ("keras3", "tf_keras") if k in spec["flavours"]]


def plan(specs, envs, reference_env, settings):
    """[Duet] of a study: specs = {env: envspec facts}, envs = the study's envs, settings = config
    `duets`. Cells that cannot exist on either side (tfspeed/cells.py: why_not) are left out."""
    if not settings.get("modes") or reference_env not in envs or not settings.get(
            "headline", True):
        return []
    return _plan_model(specs, envs, reference_env, settings, HEADLINE,
                       aa=bool(settings.get("aa")),
                       weight=int(settings.get("graph_vs_eager") or 0))


def plan_own(specs, envs, reference_env, settings):
    """[Duet(own=True)]: a user's model across envs and modes (config `duets.models`, docs/
    own-model.md), in a table of its own (duets_own), never the headline's: per [model, data],
    each TF 2.x env's cell of the duets' API in each mode (the Keras its users get) against the
    reference env's tf.keras cell in the same mode, and the reference's graph cell against its
    eager cell (one duet a replicate round). With the pairs inside each env and mode, they join
    the model's ways into one graph (driver/report/sections/own_answer.py)."""
    if not settings.get("modes") or reference_env not in envs:
        return []
    out = []
    for model, data in settings.get("models") or []:
        base = dict(HEADLINE, model=model, data=data)
        out += [d._replace(own=True) for d in _plan_model(
            specs, envs, reference_env, settings, base, aa=False, weight=1)]
    return out


WAY_KEYS = ("env", "keras", "mode", "api", "input")


def frameworks_why_not(specs, envs, settings):
    """[(config key, problem)] of config `duets.frameworks` ({"against": way, "ways": [way]}, a
    way = {env, mode, api, keras?, input?}): an env without an env file, a way whose cell
    cannot exist in its env (tfspeed/cells.py why_not), a way on the TensorFlow side's framework.
    A way whose env the study leaves out (a preset of a few envs) is left out, as grids and
    pairs leave such envs out. Empty when every way can be planned."""
    block = settings.get("frameworks") or {}
    if not block:
        return []
    problems = []
    named = [("duets.frameworks.against", block.get("against"))] + [
        ("duets.frameworks.ways[%d]" % i, w) for i, w in enumerate(block.get("ways") or [])]
    for key, way in named:
        if not isinstance(way, dict) or not way.get("env"):
            problems.append((key, "needs an env, a mode and an api"))
            continue
        if way["env"] not in specs:
            problems.append((key + ".env", "%r has no env file (envs: %s)"
                             % (way["env"], ", ".join(sorted(specs)))))
            continue
        if way["env"] not in envs:  # an env the study leaves out, as grids and pairs do
            continue
        spec = specs[way["env"]]
        if "invalid" in spec:
            problems.append((key + ".env", "env %r is invalid: %s" % (way["env"], spec["invalid"])))
            continue
        reason = tfcells.why_not(spec, way_cell(spec, way))
        if reason:
            problems.append((key, "%s cannot run in %s: %s" % (
                tfcells.cell_id(way_cell(spec, way)), way["env"], reason)))
    if not problems:
        tf_side = specs[block["against"]["env"]]["framework"]
        for i, way in enumerate(block.get("ways") or []):
            if way["env"] not in envs:
                continue
            if specs[way["env"]]["framework"] == tf_side and not way_cell(
                    specs[way["env"]], way)["keras"].startswith("keras3"):
                problems.append(("duets.frameworks.ways[%d]" % i, "%s is %s, the side it is "
                                 "timed against: a way of another framework (PyTorch, Keras 3 "
                                 "on JAX or torch) belongs here" % (way["env"], tf_side)))
    return problems


def way_cell(spec, way, base=None):
    """A way of config `duets.frameworks` as a cell: of `base`'s model and data (default: the
    headline's small model and data), numpy input unless named; the Keras a TF env's users get
    in its mode unless named (none where the framework has no Keras)."""
    keras = way.get("keras")
    if not keras:
        keras = (counted_keras(spec, way.get("mode", "eager"))[0]
                 if spec.get("framework") == "tensorflow" and spec.get("flavours") else
                 (spec.get("flavours") or ["none"])[0])
    return dict(base or HEADLINE, keras=keras, mode=way.get("mode", "eager"),
                api=way.get("api", "train_on_batch"), input=way.get("input", "numpy"))


def framework_models(settings):
    """The (model, data) each frameworks way is timed on: the headline's (unless `headline` is
    off) and each of `duets.models` (a user's model: its rows join the model's own answer)."""
    out = [(HEADLINE["model"], HEADLINE["data"])] if settings.get("headline", True) else []
    return out + [tuple(pair) for pair in settings.get("models") or []]


def plan_frameworks(specs, envs, settings):
    """[Duet(frameworks=True)]: config `duets.frameworks`, other frameworks' ways to train the
    headline's small model, each against one TensorFlow way (`against`), in duets of a table
    of their own (duets_frameworks): best against best where the config names each framework's
    fastest way (the cells' frameworks_best table says, descriptively, which way the run's cells
    found fastest). Each way's cell and the `against` cell must exist in their envs
    (frameworks_why_not; plan.py refuses the config before any job otherwise)."""
    block = settings.get("frameworks") or {}
    if not block or frameworks_why_not(specs, envs, settings):
        return []
    ref, out = block["against"], []
    if ref["env"] not in envs:  # the study leaves TensorFlow's side out: no such duets
        return []
    for model, data in framework_models(settings):
        base = dict(HEADLINE, model=model, data=data)
        ref_cell = way_cell(specs[ref["env"]], ref, base)
        for w in block.get("ways") or []:
            if w["env"] not in envs:
                continue
            cell = way_cell(specs[w["env"]], w, base)
            # a way a user's model cannot take in that env (a layer its Keras lacks) is left
            # out for that model alone; the headline's ways were checked by frameworks_why_not
            if all(tfcells.why_not(specs[e], c) is None for e, c in ((w["env"], cell),
                                                                      (ref["env"], ref_cell))):
                out.append(Duet(w["env"], carried(cell), ref["env"], carried(ref_cell),
                                frameworks=True))
    return out


def _plan_model(specs, envs, reference_env, settings, base, aa, weight):
    """The duets of one model and data (`base`: a cell's axes but keras, mode and api): each TF
    2.x env against the reference per mode; with `aa`, an A/A row per mode; with `weight` > 0
    and both modes, the reference's graph against its eager cell, `weight` duets a round."""
    ref_spec = specs[reference_env]
    out = []
    for env in envs:
        spec = specs[env]
        if env == reference_env or "invalid" in spec or spec["framework"] != "tensorflow":
            continue
        if version_tuple(spec["framework_version"] or "0")[0] < 2:
            continue
        for mode in settings["modes"]:
            ref_cell = dict(base, keras="tf.keras", mode=mode, api=settings["api"])
            if tfcells.why_not(ref_spec, ref_cell) is not None:
                continue
            for keras in counted_keras(spec, mode):
                cell = dict(base, keras=keras, mode=mode, api=settings["api"])
                if tfcells.why_not(spec, cell) is None:
                    out.append(Duet(env, carried(cell), reference_env, carried(ref_cell)))
    if aa:  # only beside a headline row of the mode: alone it checks nothing
        modes = {d.cell["mode"] for d in out}
        for mode in settings["modes"]:
            ref_cell = dict(base, keras="tf.keras", mode=mode, api=settings["api"])
            if mode in modes and tfcells.why_not(ref_spec, ref_cell) is None:
                out.insert(0, Duet(reference_env, carried(ref_cell), reference_env,
                                   carried(ref_cell)))
    if weight and {"graph", "eager"} <= {d.cell["mode"] for d in out}:
        graph, eager = (dict(base, keras="tf.keras", mode=m, api=settings["api"])
                        for m in ("graph", "eager"))
        if all(tfcells.why_not(ref_spec, c) is None for c in (graph, eager)):
            out.append(Duet(reference_env, carried(graph), reference_env, carried(eager),
                            weight=weight))
    return out


def carried(cell):
    """The cell as its worker needs it: a user's model or data (config `models`, `data`, a
    builder's code among them) with its description as `spec` (usermodels.payload), as a cell's
    own parameters carry it (plan.py cell_params); the seed's cells as they are. The pair's key
    and table come from the axes alone, so `spec` changes neither; it travels in the duet's
    parameters, so an edited builder is a new pair for Snakemake as it is a new cell."""
    spec = usermodels.payload(cell["model"], cell["data"])
    return dict(cell, spec=spec) if spec else cell


def plan_pairs(cells, settings, specs=None):
    """[Duet(together=True)] of a study: cells = the study's [(env, cell)], settings = config
    `pairs` ({"tables", "envs", "modes", "aa"}), specs = {env: envspec facts} (keras_vs_tfkeras
    needs them: keras_why_not). Every two cells of one env that differ in one table's axis only,
    left and right as the table names them (PAIR_TABLES; a table of several value pairs, each);
    with `aa`, per env and mode that has pairs, its first pair's left cell against itself (the
    pairs' own false-positive check). Not paired: two cells of one env and mode in different
    tables' configurations (each pair differs in one axis alone); a pair of Keras flavours that
    cannot share a process (keras_why_not: the row stays with the cells); cells the grids leave
    out on either side (a call cell in graph mode pairs only with a predict cell there). A
    user's model and data (config `models`, `data`, a builder's among them) pair as the seed's
    do; each side carries their description to the worker (`carried`)."""
    tables = settings.get("tables") or []
    envs, modes = settings.get("envs") or "all", settings.get("modes") or "all"
    chosen = [(e, c) for e, c in cells if (envs == "all" or e in envs)
              and (modes == "all" or c["mode"] in modes)]
    by_id = {(e, tfcells.cell_id(c)): c for e, c in chosen}
    out = []
    for name in tables:
        axis, sides = PAIR_TABLES[name]
        for left, right in sides:
            for env, cell in chosen:
                if cell[axis] != left:
                    continue
                other = by_id.get((env, tfcells.cell_id(dict(cell, **{axis: right}))))
                if other is None or (axis == "keras" and keras_why_not(
                        (specs or {}).get(env), left, right, cell["mode"]) is not None):
                    continue
                out.append(Duet(env, carried(cell), env, carried(other), together=True))
    if settings.get("aa"):
        seen = set()
        for d in list(out):
            if (d.env, d.cell["mode"]) not in seen:
                seen.add((d.env, d.cell["mode"]))
                out.append(Duet(d.env, d.cell, d.env, d.cell, together=True))
    return out


def ordered(duets, replicates, seed, start=0):
    """[(duet, replicate)] in run order: replicate by replicate (from `start`), each drawn in its
    own order; a duet of weight k has k places in each round's draw, its replicates k r .. k r +
    k - 1 (so both looks scale by k)."""
    out = []
    for rep in range(start, replicates):
        order = [i for i, d in enumerate(duets) for _ in range(d.weight)]
        random.Random("%s:duets:%d" % (seed, rep)).shuffle(order)
        taken = {}
        for i in order:
            taken[i] = taken.get(i, -1) + 1
            out.append((duets[i], rep * duets[i].weight + taken[i]))
    return out


def priorities(duets, replicates, seed, max_replicates=None):
    """{(env, cell_id, replicate): Snakemake priority}: positive, so duets run before every cell
    (cells are below zero) and after nothing but the env builds they need; earlier in the run
    order = higher. The second look's replicates come after the first look's."""
    run = ordered(duets, max(replicates, max_replicates or 0), seed)
    return {(d.env, d.cell_id, rep): len(run) - i for i, (d, rep) in enumerate(run)}


def design(d, settings, pair_settings, reference_env):
    """A duet row's design as supervise_duet.py reads it (--design): its replicates at each look
    (times its weight: the duets it has a round), how its workers are made (config
    duets.workers) and whose fork helpers are new every round (duets.renew_helpers: "all", or
    the env names), then a pair in one process's fields or a duet's build (duets.build) and the
    untimed calls that start each of its windows (duets.settle_calls), and
    whether it is a duets_own / duets_frameworks row (driver/tables/duets.py)."""
    renew = settings.get("renew_helpers", "none")
    out = {k: settings[k] * d.weight for k in ("replicates", "max_replicates")}
    out.update(workers=settings.get("workers", "fork"), weight=d.weight,
               renew={"all": "all", "reference": [reference_env]}.get(renew, []))
    if d.together:
        out.update(together=True, table=d.table, mix_block=pair_settings["mix_block"])
    else:
        out["build"] = settings.get("build", "together")
        out["settle"] = int(settings.get("settle_calls", 1))
    out.update({k: True for k in ("own", "frameworks") if getattr(d, k)})
    return out
