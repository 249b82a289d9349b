"""Observations: no future information, stable slots, the overflow queue, bounds, and the
env's observation equal to the public builder's (learned agents rebuild it from the view)."""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_gym.adaptation import register_mode
from shockwave_gym.env import ClusterEnv
from shockwave_gym.interface.ftf import ftf_estimate
from shockwave_gym.interface.observation import (
    CLUSTER_FEATURE_NAMES,
    JOB_FEATURE_NAMES,
    build_observation,
)
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.jobs import JobSpec
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.traces import Trace

# Two adaptation modes with the same public facts (reachable sizes {b, 2b}) whose hidden
# schedules differ: the batch size doubles at epoch 2 in one and at epoch 6 in the other.
for _name, _switch in (("probe-early", 2), ("probe-late", 6)):
    register_mode(
        _name,
        lambda spec, epoch, at=_switch: spec.initial_batch_size * (2 if epoch >= at else 1),
        reachable=lambda spec: (spec.initial_batch_size, 2 * spec.initial_batch_size),
        overwrite=True,
    )


def _probe_trace(mode: str) -> Trace:
    jobs = [
        JobSpec(0, "ResNet-50", 16, 6250 * 10, 1, mode, 0.0),  # 10 epochs of ~590 s at b=16
        JobSpec(1, "LM", 20, 20_000, 1, "static", 0.0),
        JobSpec(2, "Transformer", 32, 9_000, 2, "static", 300.0),
        JobSpec(3, "ResNet-18", 64, 30_000, 1, "static", 700.0),
    ]
    return Trace("probe-" + mode, tuple(jobs))


def _obs_equal(a: dict, b: dict) -> bool:
    return all(np.array_equal(a[k], b[k]) for k in a)


def test_observations_carry_no_future_batch_sizes():
    early = ClusterEnv(trace=_probe_trace("probe-early"), gpus=2, action_mode="priority")
    late = ClusterEnv(trace=_probe_trace("probe-late"), gpus=2, action_mode="priority")
    obs_e, _ = early.reset(seed=0)
    obs_l, _ = late.reset(seed=0)
    action = np.linspace(1, -1, early.max_jobs, dtype=np.float32)  # job 0 always first
    changed_at = None
    for step in range(200):
        sizes_differ = early.view.current_batch_size[0] != late.view.current_batch_size[0]
        if sizes_differ:
            changed_at = step
            break
        assert _obs_equal(obs_e, obs_l), f"observations differ at step {step}, before the change"
        obs_e, *_ = early.step(action)
        obs_l, *_ = late.step(action)
    assert changed_at is not None and changed_at >= 8, changed_at
    # once the change is visible, the observation does show it
    assert not _obs_equal(obs_e, obs_l)


def test_slots_are_stable_and_overflow_queues_in_arrival_order():
    env = ClusterEnv(trace="canonical-analogue-120", max_jobs=16, action_mode="select")
    obs, info = env.reset(seed=0)
    rng = np.random.default_rng(1)
    seat: dict[int, int] = {}
    saw_queue = False
    for _ in range(400):
        slots = info["slot_job_ids"]
        queued = info["queued_job_ids"]
        active = set(env.view.active_job_ids.tolist())
        seated = {int(j): s for s, j in enumerate(slots) if j >= 0}
        assert set(seated) | set(queued) == active and not set(seated) & set(queued)
        assert list(queued) == sorted(queued)
        if queued:
            saw_queue = True
            assert len(seated) == 16  # nobody queues while a slot is free
            assert max(seated) < min(queued)  # a freed slot goes to the oldest waiting job
        for job, slot in seated.items():
            if job in seat:
                assert seat[job] == slot, f"job {job} moved from slot {seat[job]} to {slot}"
        seat = {j: s for j, s in seat.items() if j in active} | seated
        assert info["queue_length"] == len(queued)
        assert obs["cluster"][CLUSTER_FEATURE_NAMES.index("queued_jobs")] == pytest.approx(len(queued) / 16)
        np.testing.assert_array_equal(obs["job_valid"], (slots >= 0).astype(np.int8))
        obs, _, terminated, truncated, info = env.step((rng.random(16) < 0.7).astype(np.int8))
        if terminated or truncated:
            break
    assert saw_queue


def test_waiting_jobs_take_the_oldest_free_slot_first():
    env = ClusterEnv(trace="canonical-analogue-120", max_jobs=4, action_mode="select")
    env.reset(seed=0)
    while env.slots.queue.size == 0:
        env.step(np.zeros(4, np.int8))
    before_queue = env.slots.queue.copy()
    seated = env.slots.slot_job.copy()
    for _ in range(200):  # run every seated job until one completes
        _, _, terminated, _, info = env.step(np.ones(4, np.int8))
        if not set(seated.tolist()) <= set(env.view.active_job_ids.tolist()):
            break
    finished = [s for s, j in enumerate(seated) if not env.view.is_active[j]]
    assert finished
    for slot in finished:
        assert env.slots.slot_job[slot] in before_queue[: len(finished)]


@pytest.mark.parametrize("mode", ["priority", "select", "sequential"])
def test_env_observation_equals_the_public_builder(mode):
    env = ClusterEnv(trace="teaching-12", action_mode=mode)
    obs, _ = env.reset(seed=0)
    outside = SlotMap(env.max_jobs)  # a learned agent's own slot map, fed only the view
    outside.update(env.view)
    rng = np.random.default_rng(0)
    for _ in range(40):
        picked = env._mode.picked if mode == "sequential" else None
        free = env._mode.free_gpus if mode == "sequential" else None
        rebuilt = build_observation(env.view, outside, picked=picked, free_gpus=free)
        for key in obs:
            np.testing.assert_array_equal(obs[key], rebuilt[key], err_msg=key)
        assert env.observation_space.contains(obs)
        mask = env.action_masks()
        if mode == "sequential":
            action = int(rng.choice(np.flatnonzero(mask)))
        else:
            action = env.action_space.sample()
        obs, _, terminated, _, info = env.step(action)
        if info["round_closed"]:
            outside.update(env.view)
        if terminated:
            break


def test_features_have_documented_meaning():
    sim = Simulator(_probe_trace("probe-early").jobs, SimConfig(gpus=2))
    slots = SlotMap(8)
    slots.update(sim.view)
    obs = build_observation(sim.view, slots)
    col = {name: i for i, name in enumerate(JOB_FEATURE_NAMES)}
    jobs = obs["jobs"]
    assert obs["job_valid"].tolist() == [1, 1, 0, 0, 0, 0, 0, 0]  # jobs 2, 3 arrive later
    assert jobs[0, col["gang"]] == pytest.approx(0.5)
    assert jobs[0, col["epoch_progress"]] == 0.0
    assert jobs[0, col["batch_size_growth"]] == 0.0
    assert jobs[0, col["ftf_estimate"]] == pytest.approx(1.0)  # rho-hat = 1 on arrival
    assert not jobs[2:].any()
    for _ in range(12):
        sim.step([0])
    slots.update(sim.view)
    obs = build_observation(sim.view, slots)
    assert obs["jobs"][0, col["batch_size_growth"]] == pytest.approx(0.25)  # doubled
    assert obs["jobs"][0, col["ran_last_round"]] == 1.0
    rho = ftf_estimate(sim.view, sim.view.active_job_ids)
    waiting = sim.view.active_job_ids[1:]
    assert (rho[1:] > 1.0).all() and rho[0] < rho[1:].min()  # job 0 got service, others waited
    assert sim.view.active_job_ids[0] == 0 and waiting.size == 3


def test_observation_does_not_touch_the_oracle():
    # a non-oracle view raises on isolated_time_s and the schedule; building works without
    sim = Simulator(_probe_trace("probe-late").jobs, SimConfig(gpus=2), oracle=False)
    slots = SlotMap(4)
    slots.update(sim.view)
    build_observation(sim.view, slots)
