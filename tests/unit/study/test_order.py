"""The planned order of a round (driver/study/order.py): a permutation, reproducible, different
per round, partners close in time, reference cells spread, twins placed like real partners."""
import statistics

import pytest

from driver.study.order import Slot, abba_reversed, block_key, plan_document, plan_order
from tfspeed.cells import cell_id

REF = "tf1.14"
TF2 = ["tf2.0", "tf2.3", "tf2.8", "tf2.12", "tf2.16", "tf2.21"]


def cid(keras="tf.keras", mode="eager", api="train_on_batch", inp="numpy", model="small"):
    return cell_id(dict(model=model, data="small", keras=keras, mode=mode, api=api, input=inp,
                        device="cpu"))


def study_slots(twins=0):
    """A study like the default's: history (tob, eager/graph) in every env; fit and tf.data in
    three envs; inference in two; matmul in two; PyTorch cells without a partner."""
    slots = []
    for env in [REF, *TF2]:
        for mode in ("eager", "graph"):
            slots.append(Slot(env, cid(mode=mode)))
    for env in (REF, "tf2.0", "tf2.21"):
        for mode in ("eager", "graph"):
            slots += [Slot(env, cid(mode=mode, api="fit")), Slot(env, cid(mode=mode, inp="tfdata"))]
            slots.append(Slot(env, cid(keras="keras", mode=mode)))
    for env in (REF, "tf2.21"):
        slots += [Slot(env, cid(api="call")), Slot(env, cid(api="predict"))]
        slots.append(Slot(env, cid(keras="none", mode="graph", api="matmul", model="matmul")))
    slots += [Slot("torch2.13", cid(keras="none", api=a)) for a in ("custom_loop", "call")]
    originals = [s for s in slots if s.env != "torch2.13"]
    step = max(1, len(originals) // max(1, twins))
    slots += [Slot(s.env, s.cell_id, True) for s in originals[::step][:twins]]
    return slots


def partner_pairs(slots):
    """(TF 2 slot, reference slot) of every TF2 vs TF1 pair (same axes, here same cell id)."""
    ref = {s.cell_id: s for s in slots if s.env == REF and not s.twin}
    return [(s, ref[s.cell_id]) for s in slots
            if s.env in TF2 and not s.twin and s.cell_id in ref]


def gaps(ordered, pairs):
    pos = {s: i for i, s in enumerate(ordered)}
    return [abs(pos[a] - pos[b]) for a, b in pairs]


def test_every_process_exactly_once():
    slots = study_slots(twins=6)
    for rep in range(4):
        ordered = plan_order(slots, REF, seed=7, rep=rep)
        assert sorted(ordered) == sorted(slots)
        assert len(set(ordered)) == len(ordered)


def test_a_slot_listed_twice_is_refused():
    slots = study_slots()
    with pytest.raises(ValueError, match="listed twice"):
        plan_order(slots + slots[:1], REF, seed=1, rep=0)


def test_seed_reproduces_the_order_and_another_seed_changes_it():
    slots = study_slots(twins=4)
    first = plan_order(slots, REF, seed=11, rep=2)
    assert plan_order(list(reversed(slots)), REF, seed=11, rep=2) == first
    assert plan_order(slots, REF, seed=12, rep=2) != first


def test_rounds_get_different_permutations():
    slots = study_slots()
    orders = [tuple(plan_order(slots, REF, seed=3, rep=r)) for r in range(6)]
    assert len(set(orders)) == 6
    # not a rotation or reversal of one order either: the blocks' sequence itself changes
    blocks = [tuple(dict.fromkeys(block_key(s.cell_id) for s in o)) for o in orders]
    assert len(set(blocks)) >= 5


def test_an_envs_cells_of_a_block_are_adjacent_in_abba_order():
    slots = study_slots()
    eager, graph = Slot("tf2.8", cid(mode="eager")), Slot("tf2.8", cid(mode="graph"))
    first = []
    for rep in range(8):
        ordered = plan_order(slots, REF, seed=5, rep=rep)
        i, j = ordered.index(eager), ordered.index(graph)
        assert abs(i - j) == 1, "graph and eager of one env (one unit) run back to back"
        first.append(i < j)
    flips = [first[0] ^ abba_reversed(r) for r in range(8)]
    assert first == flips  # A B, B A, B A, A B, ...
    assert first[:4].count(True) == 2


def test_reference_cells_are_spread_beside_their_partners():
    slots = study_slots()
    n = len(slots)
    fixed = sorted(slots)  # env blocks, as the old fixed order ran them
    fixed_gap = statistics.median(gaps(fixed, partner_pairs(slots)))
    for rep in range(4):
        ordered = plan_order(slots, REF, seed=9, rep=rep)
        ref_pos = [i for i, s in enumerate(ordered) if s.env == REF]
        runs = 1 + sum(1 for a, b in zip(ref_pos, ref_pos[1:]) if b != a + 1)
        ref_blocks = {block_key(s.cell_id) for s in slots if s.env == REF}
        assert runs == len(ref_blocks), "one run of reference cells per block, not one block"
        assert min(ref_pos) < n / 3 and max(ref_pos) > 2 * n / 3
        assert statistics.median(gaps(ordered, partner_pairs(slots))) <= fixed_gap / 2


def test_reference_unit_sits_mid_block():
    slots = [Slot(e, cid(mode=m)) for e in [REF, *TF2] for m in ("eager", "graph")]
    for rep in range(4):
        ordered = plan_order(slots, REF, seed=2, rep=rep)
        first_ref = min(i for i, s in enumerate(ordered) if s.env == REF)
        assert first_ref == 2 * (len(TF2) // 2)  # three TF 2 units of two cells before it


def test_twins_lie_in_their_block_as_far_apart_as_tf2_vs_tf1():
    slots = study_slots(twins=8)
    twin_gaps, tf_gaps = [], []
    for seed in range(30):
        ordered = plan_order(slots, REF, seed=seed, rep=seed % 4)
        twins = [(s, Slot(s.env, s.cell_id)) for s in ordered if s.twin]
        twin_gaps += gaps(ordered, twins)
        tf_gaps += gaps(ordered, partner_pairs(slots))
        blocks = [block_key(s.cell_id) for s in ordered]
        for twin, _ in twins:
            i = ordered.index(twin)
            assert blocks[i] == block_key(twin.cell_id)
    ratio = statistics.mean(twin_gaps) / statistics.mean(tf_gaps)
    assert 0.5 <= ratio <= 2.0, ratio
    assert statistics.median(twin_gaps) > 1  # not run back to back with their original


def test_plan_document_records_seed_positions_and_blocks():
    slots = study_slots(twins=2)
    ordered = plan_order(slots, REF, seed=4, rep=1)
    doc = plan_document(ordered, "m", REF, 4, 1)
    assert doc["seed"] == 4 and doc["round"] == 1
    assert [e["position"] for e in doc["order"]] == list(range(len(slots)))
    assert [(e["env"], e["cell_id"], e["twin"]) for e in doc["order"]] == [tuple(s) for s in ordered]
