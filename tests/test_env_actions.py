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
    env = ClusterEnv(trace="teaching-12", action_mode="sequential", idle_allowed=True)
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
    env = ClusterEnv(trace="teaching-12", action_mode="sequential", idle_allowed=True)
    env.reset(seed=0)
    empty_slot = int(np.flatnonzero(env.slots.slot_job < 0)[0])
    _, _, _, _, info = env.step(empty_slot)
    assert info["round_closed"] and info["action_repairs"] == 1
    assert env.simulator.history[-1].job_ids.size == 0


def _left_out_fit(env: ClusterEnv, slotted: np.ndarray) -> bool:
    """Whether a slotted job that did not run in the last round would have fit in its idle GPUs."""
    view = env.view
    ran = env.simulator.history[-1].job_ids
    idle = env.gpus - int(view.gang[ran].sum())
    left_out = np.setdiff1d(slotted, ran)
    return left_out.size > 0 and view.gang[left_out].min() <= idle


@pytest.mark.parametrize("skip", [False, True])
def test_sequential_without_idling_is_work_conserving(skip):
    """Default (idle_allowed=False): "end round" is never legal, every round closes only when
    no slotted job fits any more, and an illegal action fills the round in arrival order."""
    env = ClusterEnv(trace=generated_source(), gpus=12, max_jobs=12, action_mode="sequential", skip_trivial=skip)
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    closed = 0
    for step in range(400):
        mask = env.action_masks()
        assert not mask[-1]
        slotted = env.slots.slot_job[env.slots.slot_job >= 0].copy()
        if skip and step:  # forced picks are made by the env: a real choice remains
            assert np.count_nonzero(mask) >= 2
        illegal = step % 7 == 3
        action = env.max_jobs if illegal else int(rng.choice(np.flatnonzero(mask)))
        _, _, terminated, truncated, info = env.step(action)
        assert info["action_repairs"] == int(illegal)
        if illegal:
            assert info["round_closed"]
        if info["round_closed"]:
            closed += 1
            assert info["rounds_elapsed"] >= 1
            if info["rounds_elapsed"] == 1:
                assert not _left_out_fit(env, slotted)
        if terminated or truncated:
            break
    assert closed > 20


def test_illegal_sequential_end_fills_the_round_in_arrival_order():
    env = ClusterEnv(trace="canonical-analogue-120", action_mode="sequential", gpus=8, max_jobs=12)
    env.reset(seed=0)
    while env.slots.demand_gpus <= env.gpus + 4:  # enough jobs that not all fit
        env.step(int(np.flatnonzero(env.action_masks())[0]))
    view = env.view
    slotted = np.sort(env.slots.slot_job[env.slots.slot_job >= 0])
    _, _, _, _, info = env.step(env.max_jobs)
    assert info["round_closed"] and info["action_repairs"] == 1
    free, expected = env.gpus, []
    for job in slotted.tolist():
        if view.gang[job] <= free:
            free -= int(view.gang[job])
            expected.append(job)
    assert env.simulator.history[-1].job_ids.tolist() == expected


@pytest.mark.parametrize("mode", ["priority", "select"])
def test_skip_trivial_returns_only_real_decisions(mode):
    """With skip_trivial every decision the agent sees has jobs that do not all fit (or, in
    select mode, a queue); the rounds in between run inside one step, counted in info."""
    env = ClusterEnv(trace=generated_source(), gpus=12, max_jobs=10, action_mode=mode, skip_trivial=True)
    _, info = env.reset(seed=1)
    rng = np.random.default_rng(1)
    steps = skipped = 0
    while True:
        if steps:
            assert env.slots.demand_gpus > env.gpus or (mode == "select" and env.slots.queue.size)
        if mode == "priority":
            action = rng.uniform(-1, 1, env.max_jobs).astype(np.float32)
        else:
            action = np.ones(env.max_jobs, np.int8)
        _, _, terminated, truncated, info = env.step(action)
        steps += 1
        skipped += info["rounds_elapsed"] - 1
        assert info["elapsed_s"] > 0
        if terminated or truncated:
            break
    assert skipped > 0 and info["rounds_skipped_total"] == skipped
    assert steps + skipped == env.simulator.round_index


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
