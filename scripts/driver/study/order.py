"""The planned order of a round: a seeded random permutation of its processes, under blocking.

A fixed order makes anything tied to a position (the cell before, the state a heavy block leaves)
a constant bias that no between-process spread can show; a fresh random order per round turns it
into variance. Randomising freely would pull comparison partners apart in time, so the round is
laid out in blocks (docs/design.md):

- A block holds the cells that compare with each other: the same model, data, API, input and
  device (mode and Keras flavour vary inside it, so graph vs eager, Keras vs tf.keras and every
  env's side of TF2 vs TF1 share a block).
- Inside a block, cells go in units: one per env. The reference env's unit (TF 1.14, the right
  side of TF2 vs TF1) sits in the middle of its block, the other units in random order around
  it; so reference cells are spread through the round, each beside its partners.
- Inside a unit, the cells keep one random order that is reversed in rounds 1 and 2 of every 4
  (A B, B A, B A, A B: ABBA over the rounds), so a linear drift cancels between partners.
- Blocks go in random order. A twin (A/A calibration) is a unit of its own in its original's
  block, placed at random like a TF 2 env's unit: as far from its original as real partners are.

Everything is a pure function of (the round's processes, reference env, seed, round): the same
inputs plan the same order, and the plan is written to results/rounds/ before the round runs.
"""
import hashlib
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import numpy as np

from tfspeed.cells import parse_cell_id

# Keras flavours that stand for the same training stack in comparisons (tf.keras, what it became
# from TF 2.16 on, the standalone and private Keras): one block, so their comparisons stay close.
KERAS_FAMILY = {"keras3": "keras", "tf_keras": "keras", "tf.keras": "keras",
                "tf.python.keras": "keras", "keras": "keras"}


class Slot(NamedTuple):
    """One process of a round: the cell (env, cell id) and whether it is a twin (A/A) process."""
    env: str
    cell_id: str
    twin: bool = False


def block_key(cell_id: str) -> tuple:
    """The block a cell belongs to: every axis but env, mode and Keras flavour."""
    axes = parse_cell_id(cell_id)
    return (axes["model"], axes["data"], axes["api"], axes["input"], axes["device"],
            KERAS_FAMILY.get(axes["keras"], axes["keras"]))


def _number(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def rng(seed: int, *keys) -> np.random.Generator:
    """A generator for (seed, keys): stable across Python runs (no hash randomisation)."""
    return np.random.default_rng(np.random.SeedSequence([int(seed), *(_number(repr(k))
                                                                     for k in keys)]))


def abba_reversed(rep: int) -> bool:
    """Rounds 0, 1, 2, 3 run a unit as A B, B A, B A, A B (then again)."""
    return rep % 4 in (1, 2)


def _units(slots: Sequence[Slot]) -> dict[tuple, list[Slot]]:
    units: dict[tuple, list[Slot]] = {}
    for slot in slots:
        key = ("twin", slot.env, slot.cell_id) if slot.twin else ("env", slot.env)
        units.setdefault(key, []).append(slot)
    return units


def plan_order(slots: Iterable[Slot], reference_env: str, seed: int, rep: int) -> list[Slot]:
    """The round's slots in planned order (see the module's docstring). Each slot exactly once;
    raises ValueError on a slot listed twice."""
    slots = [Slot(*s) for s in slots]
    if len(set(slots)) != len(slots):
        dup = sorted({s for s in slots if slots.count(s) > 1})
        raise ValueError(f"round {rep}: slots listed twice: {dup[:3]}")
    blocks: dict[tuple, list[Slot]] = {}
    for slot in slots:
        blocks.setdefault(block_key(slot.cell_id), []).append(slot)
    draw = rng(seed, "round", rep)
    laid_out = []
    for key in sorted(blocks):
        units = _units(sorted(blocks[key]))
        ref = units.pop(("env", reference_env), None)
        keys = sorted(units)
        order = [units[keys[i]] for i in draw.permutation(len(keys))]
        if ref is not None:
            order.insert((len(order) + int(draw.integers(0, 2))) // 2, ref)
        cells = []
        for unit in order:
            base = [unit[i] for i in rng(seed, "unit", unit[0].env, unit[0].twin,
                                         key).permutation(len(unit))]
            cells += base[::-1] if abba_reversed(rep) else base
        laid_out.append(cells)
    out = []
    for i in draw.permutation(len(laid_out)):
        out += laid_out[i]
    return out


def plan_document(ordered: Sequence[Slot], machine: str, reference_env: str, seed: int,
                  rep: int) -> dict:
    """What results/rounds/<machine>/order<rep>.json holds: the seed and the order, each process
    with its position and block."""
    return {"round": int(rep), "machine": machine, "seed": int(seed),
            "reference_env": reference_env,
            "how": "seeded random order of blocks and units; reference unit mid-block; "
                   "ABBA over rounds inside units (driver/study/order.py)",
            "order": [{"position": i, "env": s.env, "cell_id": s.cell_id, "twin": s.twin,
                       "block": ".".join(block_key(s.cell_id))}
                      for i, s in enumerate(ordered)]}


def positions(ordered: Sequence[Slot]) -> dict[Slot, int]:
    return {slot: i for i, slot in enumerate(ordered)}
