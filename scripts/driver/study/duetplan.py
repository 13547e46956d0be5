"""The headline's duets: which TF 2.x configurations meet the reference env, and in what order.

A duet (driver/study/duet.py) times one TF 2.x cell and the reference env's cell of the same
configuration in two live workers that take turns window by window; config `duets` says which
(docs/design.md, "Duets"):

- every env of the study whose framework is TensorFlow 2.x, against `reference_env`;
- in each mode of `duets.modes`, on the small model and data, numpy input, the `duets.api`;
- the Keras a user of that version gets, counted as the headline counts it: tf.keras where the
  env has it (TF <= 2.15); from TF 2.16, where tf.keras is Keras 3, the legacy tf_keras in graph
  mode (Keras 3 has none) and both Keras 3 and tf_keras in eager mode. The reference side is
  always the reference env's tf.keras in the same mode;
- with `duets.aa`, an A/A row per mode: the reference env's cell against itself, the duets' own
  false-positive and order-bias check (driver/tables/duets.py: is_aa; its own table);
- `duets.replicates` duets each, every one with fresh workers; replicate r of every duet runs
  before replicate r + 1 of any, in an order drawn from `order.seed` and r; with
  `duets.max_replicates` above it, the rows still undecided after them get the rest (a second
  look, scripts/plan_duets.py; driver/stats/sequential.py keeps the size).

Pure planning (no Snakemake, no framework): the study plan (driver/study/plan.py) asks it,
and so do the tests.
"""
import random
from typing import NamedTuple

from tfspeed import cells as tfcells
from tfspeed.versions import version_tuple

HEADLINE = {"model": "small", "data": "small", "input": "numpy", "device": "cpu"}


class Duet(NamedTuple):
    env: str  # the TF 2.x env (the left side of every comparison)
    cell: dict  # its cell
    reference_env: str
    reference_cell: dict

    @property
    def cell_id(self):
        return tfcells.cell_id(self.cell)


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
    if not settings.get("modes") or reference_env not in envs:
        return []
    ref_spec = specs[reference_env]
    out = []
    for env in envs:
        spec = specs[env]
        if env == reference_env or "invalid" in spec or spec["framework"] != "tensorflow":
            continue
        if version_tuple(spec["framework_version"] or "0")[0] < 2:
            continue
        for mode in settings["modes"]:
            ref_cell = dict(HEADLINE, keras="tf.keras", mode=mode, api=settings["api"])
            if tfcells.why_not(ref_spec, ref_cell) is not None:
                continue
            for keras in counted_keras(spec, mode):
                cell = dict(HEADLINE, keras=keras, mode=mode, api=settings["api"])
                if tfcells.why_not(spec, cell) is None:
                    out.append(Duet(env, cell, reference_env, ref_cell))
    if settings.get("aa"):  # only beside a headline row of the mode: alone it checks nothing
        modes = {d.cell["mode"] for d in out}
        for mode in settings["modes"]:
            ref_cell = dict(HEADLINE, keras="tf.keras", mode=mode, api=settings["api"])
            if mode in modes and tfcells.why_not(ref_spec, ref_cell) is None:
                out.insert(0, Duet(reference_env, ref_cell, reference_env, ref_cell))
    return out


def ordered(duets, replicates, seed, start=0):
    """[(duet, replicate)] in run order: replicate by replicate (from `start`), each drawn in its
    own order."""
    out = []
    for rep in range(start, replicates):
        order = list(duets)
        random.Random("%s:duets:%d" % (seed, rep)).shuffle(order)
        out += [(d, rep) for d in order]
    return out


def priorities(duets, replicates, seed, max_replicates=None):
    """{(env, cell_id, replicate): Snakemake priority}: positive, so duets run before every cell
    (cells are below zero) and after nothing but the env builds they need; earlier in the run
    order = higher. The second look's replicates come after the first look's."""
    run = ordered(duets, max(replicates, max_replicates or 0), seed)
    return {(d.env, d.cell_id, rep): len(run) - i for i, (d, rep) in enumerate(run)}
