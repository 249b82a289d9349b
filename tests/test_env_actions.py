"""Action modes: the select repair rule and its mask layout, priority packing (work-conserving,
queue backfill), and the exact sequential masks with sub-steps."""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_gym.env import ClusterEnv
from shockwave_gym.env.registration import generated_source
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.interface.packing import pack_in_order


def test_pack_in_order_skips_and_backfills():
    gang = np.array([4, 2, 8, 1, 1, 2])
    assert pack_in_order(np.array([0, 1, 2, 3, 4, 5]), gang, 8).tolist() == [0, 1, 3, 4]
    assert pack_in_order(np.array([2, 0]), gang, 8).tolist() == [2]
    assert pack_in_order(np.array([5, 3]), gang, 8).tolist() == [5, 3]
    assert pack_in_order(np.array([], dtype=np.int64), gang, 8).tolist() == []


def _env_with_jobs(mode: str, min_active: int, **kwargs) -> ClusterEnv:
    env = ClusterEnv(trace="canonical-analogue-120", action_mode=mode, **kwargs)
    env.reset(seed=0)
    idle = np.zeros(env.max_jobs, np.int8) if mode == "select" else None
    while env.view.num_active < min_active:
        if mode == "select":
            env.step(idle)
        elif mode == "priority":
            env.step(np.zeros(env.max_jobs, np.float32))
        else:
            env.step(env.max_jobs)  # end the round with nothing picked
    return env


def test_select_repair_rule_is_arrival_order_first_fit_and_counted():
    env = _env_with_jobs("select", 40)
    slots = env.slots.slot_job
    bits = np.ones(env.max_jobs, np.int8)  # every slot, empty ones included
    empty = int((slots < 0).sum())
    active = np.sort(slots[slots >= 0])
    expected = pack_in_order(active, env.view.gang, env.gpus)
    _, _, _, _, info = env.step(bits)
    ran = env.simulator.history[-1].job_ids
    assert ran.tolist() == expected.tolist()
    assert info["action_repairs"] == empty + (active.size - expected.size)
    assert info["rounds_repaired"] == 1 and info["action_repairs_total"] == info["action_repairs"]
    # a feasible selection is left alone
    env2 = _env_with_jobs("select", 40)
    slot_of = {int(j): s for s, j in enumerate(env2.slots.slot_job) if j >= 0}
    pick = np.zeros(env2.max_jobs, np.int8)
    pick[[slot_of[j] for j in expected[:3].tolist()]] = 1
    _, _, _, _, info = env2.step(pick)
    assert info["action_repairs"] == 0
    assert env2.simulator.history[-1].job_ids.tolist() == sorted(expected[:3].tolist())


def test_select_masks_have_sb3_contrib_layout():
    env = _env_with_jobs("select", 5)
    mask = env.action_masks()
    assert mask.shape == (2 * env.max_jobs,) and mask.dtype == bool
    pairs = mask.reshape(-1, 2)
    assert pairs[:, 0].all()  # bit = 0 is always allowed
    np.testing.assert_array_equal(pairs[:, 1], env.slots.slot_job >= 0)


def test_priority_packs_by_score_and_is_work_conserving():
    env = _env_with_jobs("priority", 60, max_jobs=24)
    assert env.slots.queue.size > 0
    slots, queue = env.slots.slot_job.copy(), env.slots.queue.copy()
    scores = np.linspace(-1, 1, env.max_jobs).astype(np.float32)  # last slot first
    env.step(scores)
    ran = set(env.simulator.history[-1].job_ids.tolist())
    order = [int(slots[s]) for s in np.argsort(-scores, kind="stable") if slots[s] >= 0] + queue.tolist()
    expected = pack_in_order(np.array(order), env.view.gang, env.gpus)
    assert ran == set(expected.tolist())
    # work-conserving: no job that stayed out would have fit in the idle GPUs
    free = env.gpus - sum(int(env.view.gang[j]) for j in ran)
    left_out = [j for j in order if j not in ran]
    assert all(env.view.gang[j] > free for j in left_out)


def test_priority_rejects_non_finite_scores_of_occupied_slots():
    env = _env_with_jobs("priority", 3)
    scores = np.zeros(env.max_jobs, np.float32)
    scores[np.flatnonzero(env.slots.slot_job >= 0)[0]] = np.nan
    with pytest.raises(InvalidActionError):
        env.step(scores)


def test_sequential_masks_are_exact_and_rounds_close_when_full():
    env = ClusterEnv(trace="teaching-12", action_mode="sequential")
    env.reset(seed=0)
    while env.view.num_active < 4:
        env.step(env.max_jobs)
    gang = env.view.gang
    slots = env.slots.slot_job
    rounds_before = env.simulator.round_index
    free = env.gpus
    picked: list[int] = []
    while True:
        mask = env.action_masks()
        assert mask[-1]  # "end round" is always legal
        expected = np.array(
            [s not in picked and slots[s] >= 0 and gang[slots[s]] <= free for s in range(env.max_jobs)]
        )
        np.testing.assert_array_equal(mask[:-1], expected)
        choice = int(np.flatnonzero(mask[:-1])[0])
        obs, reward, _, _, info = env.step(choice)
        picked.append(choice)
        free -= int(gang[slots[choice]])
        if info["round_closed"]:
            break
        assert reward == 0.0 and obs["picked"][choice] == 1
        assert env.simulator.round_index == rounds_before
    assert env.simulator.round_index == rounds_before + 1
    assert sorted(env.simulator.history[-1].job_ids.tolist()) == sorted(int(slots[s]) for s in picked)
    assert obs["picked"].sum() == 0  # a new round starts empty


def test_sequential_infeasible_pick_ends_the_round_and_is_counted():
    env = ClusterEnv(trace="teaching-12", action_mode="sequential")
    env.reset(seed=0)
    empty_slot = int(np.flatnonzero(env.slots.slot_job < 0)[0])
    _, _, _, _, info = env.step(empty_slot)
    assert info["round_closed"] and info["action_repairs"] == 1
    assert env.simulator.history[-1].job_ids.size == 0


@pytest.mark.parametrize("kwargs", [dict(action_mode="greedy"), dict(max_jobs=0), dict(trace="nope-42")])
def test_bad_arguments_are_input_errors(kwargs):
    with pytest.raises(InputError):
        ClusterEnv(**{"trace": "teaching-12", **kwargs})


def test_non_bundled_traces_need_gpus(tmp_path):
    from shockwave_gym.traces import load_trace, save_trace

    path = tmp_path / "mine.jsonl"
    save_trace(load_trace("teaching-12"), path)
    with pytest.raises(InputError, match="gpus is required"):
        ClusterEnv(trace=str(path))
    assert ClusterEnv(trace=str(path), gpus=4).reset(seed=0)


def test_step_after_the_end_is_an_error():
    env = ClusterEnv(trace="teaching-12", action_mode="priority")
    env.reset(seed=0)
    terminated = False
    while not terminated:
        terminated = env.step(np.zeros(env.max_jobs, np.float32))[2]
    with pytest.raises(InvalidActionError):
        env.step(np.zeros(env.max_jobs, np.float32))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_priority_rounds_are_work_conserving_on_generated_episodes(seed):
    env = ClusterEnv(trace=generated_source(), gpus=12, max_jobs=10, action_mode="priority")
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    terminated = False
    while not terminated:
        view = env.view
        active = view.active_job_ids.copy()
        _, _, terminated, truncated, _ = env.step(rng.uniform(-1, 1, env.max_jobs).astype(np.float32))
        ran = env.simulator.history[-1].job_ids
        idle = env.gpus - int(view.gang[ran].sum())
        left_out = np.setdiff1d(active, ran)
        assert left_out.size == 0 or view.gang[left_out].min() > idle
        assert not truncated
