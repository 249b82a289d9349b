"""Action modes on a heterogeneous cluster, against hand-built placements: the placement rule
(fastest runnable type with room, backfill), the select repair rule and the priority order
per type, and the sequential (slot, type) layout with its exact mask."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from shockwave_gym.errors import InvalidActionError
from shockwave_gym.interface.packing import pack_in_order
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.interface.typed_actions import (
    TypeContext,
    TypedPriorityMode,
    TypedSelectMode,
    TypedSequentialMode,
)

# six jobs on a v100=4, p100=2, k80=2 cluster
GANG = np.array([4, 2, 2, 1, 1, 2])
CAPACITY = (4, 2, 2)
ALL = np.ones((6, 3), bool)


#: rates (iterations/s) per job and type: V100 fastest for every job but job 4 (P100)
RATES = np.tile([3.0, 2.0, 1.0], (6, 1))
RATES[4] = [2.0, 2.5, 1.0]


def context(runnable=ALL, capacity=CAPACITY, rates=RATES) -> TypeContext:
    return TypeContext(capacity, runnable, rates)


def test_placement_puts_each_job_on_its_fastest_type_with_room():
    ids, types = context().place(np.arange(6), GANG)
    # 0 (4) fills v100; 1 (2) its next fastest, p100; 2 (2) k80; 3, 4, 5 fit nowhere
    assert ids.tolist() == [0, 1, 2] and types.tolist() == [0, 1, 2]
    ids, types = context().place(np.array([3, 0, 4, 5, 1]), GANG)
    # 3 takes one v100, so 0 (4 GPUs) fits no type; 4 goes to its fastest, p100; 5 takes
    # two more v100s; 1 (2 GPUs) finds one v100 and one p100 left, so k80
    assert ids.tolist() == [3, 4, 5, 1] and types.tolist() == [0, 1, 0, 2]


def test_placement_follows_the_runnable_mask():
    runnable = ALL.copy()
    runnable[1, 1] = False  # job 1 cannot run on p100
    ids, types = context(runnable, (0, 2, 2)).place(np.array([1, 5]), GANG)
    assert ids.tolist() == [1, 5] and types.tolist() == [2, 1]
    assert context(np.zeros((6, 3), bool)).place(np.arange(6), GANG)[0].tolist() == []


def test_placement_on_one_type_is_pack_in_order():
    rng = np.random.default_rng(4)
    gang = rng.choice([1, 2, 4, 8], size=30)
    for _ in range(50):
        order = rng.permutation(30)[: rng.integers(0, 31)]
        gpus = int(rng.integers(1, 40))
        ids, types = TypeContext((gpus,), np.ones((30, 1), bool), np.ones((30, 1))).place(order, gang)
        assert ids.tolist() == pack_in_order(order, gang, gpus).tolist()
        assert not types.any()


def _view_and_slots(max_jobs=8):
    """A view-like object with the six jobs active, and a slot map seated on it."""
    view = SimpleNamespace(
        num_jobs=6, num_arrived=6, num_active=6, gang=GANG, active_job_ids=np.arange(6),
        is_active=np.ones(6, bool),
    )
    slots = SlotMap(max_jobs)
    slots.reset(6)
    slots.update(view)
    return view, slots


def test_select_places_the_set_by_arrival_and_counts_what_fits_nowhere():
    view, slots = _view_and_slots()
    mode = TypedSelectMode(8, 3)
    bits = np.zeros(8, np.int8)
    bits[[0, 1, 2, 3, 7]] = 1  # slot 7 is empty
    ids, types, repairs = mode.place(bits, view, slots, context())
    assert ids.tolist() == [0, 1, 2] and types.tolist() == [0, 1, 2]
    assert repairs == 2  # the empty slot's bit, and job 3 which fits no type after 0, 1, 2


def test_priority_packs_by_score_then_queue_each_on_its_fastest_free_type():
    view, slots = _view_and_slots(max_jobs=4)  # jobs 4 and 5 queue
    assert slots.queue.tolist() == [4, 5]
    mode = TypedPriorityMode(4, 3)
    scores = np.array([-1.0, 0.5, 0.5, 1.0], np.float32)  # 3 first, then 1, 2 (ties: arrival), then 0
    ids, types, repairs = mode.place(scores, view, slots, context())
    # 3 -> v100 (3 left), 1 -> v100 (1 left), 2 -> p100, 0 (4) fits nowhere, 4 -> v100, 5 -> k80
    assert ids.tolist() == [3, 1, 2, 4, 5] and types.tolist() == [0, 0, 1, 0, 2] and repairs == 0
    with pytest.raises(InvalidActionError, match="finite"):
        mode.place(np.array([np.nan, 0, 0, 0], np.float32), view, slots, context())


def test_sequential_layout_is_type_major_and_its_mask_is_exact():
    view, slots = _view_and_slots()
    runnable = ALL.copy()
    runnable[3, 2] = False  # job 3 cannot run on k80
    ctx = context(runnable)
    mode = TypedSequentialMode(8, 3)
    assert mode.space().n == 3 * 8 + 1 and mode.end_action == 24
    mode.start_round(view, slots, ctx)
    mask = mode.masks(slots).reshape(-1)
    assert mask.shape == (25,) and mask[-1]
    grid = mask[:-1].reshape(3, 8)
    # every job fits every type it can run on, except job 0 (4 GPUs) on p100 / k80; empty slots never
    expected = np.zeros((3, 8), bool)
    expected[0, :6] = True
    expected[1, 1:6] = True
    expected[2, [1, 2, 4, 5]] = True
    assert (grid == expected).all()
    # job 0 on v100 (action 0): v100 is full, so every v100 pick becomes illegal
    assert mode.pick(np.int64(0)) == (False, False)
    grid = mode.masks(slots)[:-1].reshape(3, 8)
    assert not grid[0].any() and not grid[:, 0].any()
    # job 1 on k80 (action 2 * 8 + 1), then job 2 on p100: k80 has 0, p100 0 left -> round closes
    assert mode.pick(17) == (False, False)
    assert mode.pick(8 + 2) == (True, False)
    ids, types = mode.placed(slots)
    assert ids.tolist() == [0, 1, 2] and types.tolist() == [0, 2, 1]
    assert mode.free.tolist() == [0, 0, 0] and mode.free_gpus == 0


def test_sequential_infeasible_pick_ends_the_round_and_bad_actions_raise():
    view, slots = _view_and_slots()
    ctx = context()
    mode = TypedSequentialMode(8, 3)
    mode.start_round(view, slots, ctx)
    assert mode.pick(8 + 0) == (True, True)  # job 0 (4 GPUs) on p100 (2): infeasible
    mode.start_round(view, slots, ctx)
    assert mode.pick(6) == (True, True)  # an empty slot
    assert mode.pick(24) == (True, False)  # end round
    with pytest.raises(InvalidActionError, match="0..24"):
        mode.pick(25)
    with pytest.raises(InvalidActionError, match="one integer"):
        mode.pick(1.0)


def test_sequential_without_idle_fills_by_the_default_rule_and_forces_only_single_picks():
    view, slots = _view_and_slots()
    mode = TypedSequentialMode(8, 3, idle_allowed=False)
    mode.start_round(view, slots, context())
    assert not mode.masks(slots)[-1]  # "end round" is illegal
    assert not mode.forced_picks()  # many legal picks: nothing forced
    # "end round" anyway: illegal, so the round is filled in arrival order by the default rule
    assert mode.pick(24) == (True, True)
    ids, types = mode.placed(slots)
    assert ids.tolist() == [0, 1, 2] and types.tolist() == [0, 1, 2]  # as pack by arrival
    # a round where one pick is legal at a time is made entirely by forced picks
    capacity_one = context(capacity=(1, 0, 0))
    mode.start_round(view, slots, capacity_one)
    assert mode.forced_picks() is False  # jobs 3 and 4 (1 GPU each) both fit the one v100
    mode.pick(0 * 8 + 3)
    assert mode.forced_picks() is True and mode.placed(slots)[0].tolist() == [3]


def test_unforced_placement_only_when_every_job_fits_its_fastest_type():
    from shockwave_gym.interface.typed_actions import unforced_placement

    view, slots = _view_and_slots()
    assert unforced_placement(view, slots, context()) is None  # 12 GPUs of demand on 8
    roomy = context(capacity=(12, 8, 8))
    ids, types = unforced_placement(view, slots, roomy)
    assert ids.tolist() == list(range(6)) and types.tolist() == [0, 0, 0, 0, 1, 0]
    # any order gives that placement
    rng = np.random.default_rng(0)
    for _ in range(20):
        order = rng.permutation(6)
        placed, placed_types = roomy.place(order, GANG)
        got = dict(zip(placed.tolist(), placed_types.tolist(), strict=True))
        assert got == dict(zip(ids.tolist(), types.tolist(), strict=True))
    view4, slots4 = _view_and_slots(max_jobs=4)
    assert unforced_placement(view4, slots4, roomy, every_slotted=True) is None  # jobs 4, 5 queue
    assert unforced_placement(view4, slots4, roomy) is not None
