"""Observations: no future information, stable slots, the overflow queue, bounds, and the
env's observation equal to the public builder's (learned agents rebuild it from the view)."""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_gym.adaptation import register_mode
from shockwave_gym.cluster import TYPE_ORDER
from shockwave_gym.env import ClusterEnv
from shockwave_gym.interface.ftf import ftf_estimate
from shockwave_gym.interface.observation import (
    CLUSTER_FEATURE_NAMES,
    JOB_FEATURE_NAMES,
    build_observation,
    feature_names,
    free_capacity_by_type,
    observation_signature,
)
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.jobs import JobSpec
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.throughput import ThroughputTable
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
        queued_feature = obs["cluster"][feature_names(2)[1].index("queued_jobs")]
        assert queued_feature == pytest.approx(np.log2(1 + len(queued) / env.gpus), rel=1e-6)
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


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("mode", ["priority", "select", "sequential"])
def test_env_observation_equals_the_public_builder(mode, version):
    env = ClusterEnv(trace="teaching-12", action_mode=mode, obs_version=version)
    obs, _ = env.reset(seed=0)
    outside = SlotMap(env.max_jobs)  # a learned agent's own slot map, fed only the view
    outside.update(env.view)
    rng = np.random.default_rng(0)
    for _ in range(40):
        picked = env._mode.picked if mode == "sequential" else None
        free = env._mode.free_gpus if mode == "sequential" else None
        rebuilt = build_observation(env.view, outside, picked=picked, free_gpus=free, version=version)
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


def test_v1_stays_the_layout_of_the_shipped_weights():
    assert observation_signature(1) == observation_signature() == "5954812550e21bd5"
    assert observation_signature(2) != observation_signature(1)
    assert feature_names(1) == (JOB_FEATURE_NAMES, CLUSTER_FEATURE_NAMES)
    env = ClusterEnv(trace="teaching-12", obs_version=1)
    assert env.observation_space["jobs"].shape == (12, len(JOB_FEATURE_NAMES))


def test_v2_features_have_documented_meaning():
    sim = Simulator(_probe_trace("probe-early").jobs, SimConfig(gpus=2))
    slots = SlotMap(8)
    slots.update(sim.view)
    obs = build_observation(sim.view, slots, version=2)
    job_names, cluster_names = feature_names(2)
    col = {name: i for i, name in enumerate(job_names)}
    jobs = obs["jobs"]
    assert jobs[0, col["gang_share"]] == pytest.approx(0.5)
    assert jobs[0, col["gang"]] == 0.0  # log2(1) / 3
    assert jobs[0, col["ftf_estimate"]] == pytest.approx(1.0)
    # per-type throughput relative to V100 at the current batch size, from the built-in tables
    spec = sim.view.spec(0)
    v100 = ThroughputTable.builtin("v100").rate(spec.model, 16, spec.gang)
    for t in TYPE_ORDER:
        expected = ThroughputTable.builtin(t).rate(spec.model, 16, spec.gang) / v100
        assert jobs[0, col[f"throughput_{t}"]] == pytest.approx(expected, rel=1e-6)
    assert jobs[0, col["throughput_v100"]] == 1.0
    assert 0 < jobs[0, col["throughput_k80"]] < jobs[0, col["throughput_p100"]] < 1.0
    # remaining time on a log scale with resolution: ~5900 s reads log1p(98) / log1p(1440)
    remaining = float(sim.view.derived_arrays.current_epoch_duration_s[0]) * 10
    assert jobs[0, col["predicted_remaining"]] == pytest.approx(np.log1p(remaining / 60) / np.log1p(1440), rel=0.05)
    cluster = dict(zip(cluster_names, obs["cluster"].tolist(), strict=True))
    assert cluster["free_v100"] == 1.0 and cluster["free_p100"] == 0.0 and cluster["free_k80"] == 0.0
    assert cluster["active_jobs"] == pytest.approx(np.log2(1 + 2 / 2))
    assert free_capacity_by_type(sim.view, 1) == (0.5, 0.0, 0.0)
    for _ in range(12):
        sim.step([0])
    slots.update(sim.view)
    obs = build_observation(sim.view, slots, version=2)
    assert obs["jobs"][0, col["batch_size_growth"]] == pytest.approx(0.25)  # doubled
    v100_32 = ThroughputTable.builtin("v100").rate(spec.model, 32, spec.gang)
    p100_32 = ThroughputTable.builtin("p100").rate(spec.model, 32, spec.gang)
    assert obs["jobs"][0, col["throughput_p100"]] == pytest.approx(p100_32 / v100_32, rel=1e-6)


def test_v2_is_scale_free_and_has_no_constant_features():
    """The same FIFO schedule with 16 and 40 slots gives the same job rows and cluster
    features (v1's counts were divided by max_jobs); no feature is constant over an episode
    except the per-type ones that only a heterogeneous cluster varies."""
    streams = []
    for max_jobs in (16, 40):
        env = ClusterEnv(trace="canonical-analogue-120", max_jobs=max_jobs, action_mode="priority", gpus=32)
        obs, info = env.reset(seed=0)
        rows, clusters = [], []
        for _ in range(150):
            ids = info["slot_job_ids"]
            by_job = {int(j): obs["jobs"][s].tobytes() for s, j in enumerate(ids) if j >= 0}
            rows.append(by_job)
            clusters.append(obs["cluster"].copy())
            scores = np.where(ids >= 0, 1.0 - ids / 200.0, -1.0).astype(np.float32)
            obs, _, terminated, _, info = env.step(scores)
            if terminated:
                break
        streams.append((rows, np.array(clusters)))
    (rows16, c16), (rows40, c40) = streams
    job_names, cluster_names = feature_names(2)
    queued = cluster_names.index("queued_jobs")  # the one count that is about the slots
    assert c16[:, queued].max() > c40[:, queued].max()
    np.testing.assert_array_equal(np.delete(c16, queued, axis=1), np.delete(c40, queued, axis=1))
    for a, b in zip(rows16, rows40, strict=True):
        shared = set(a) & set(b)
        assert shared and all(a[j] == b[j] for j in shared)
    varying = {name for name, column in zip(cluster_names, c40.T, strict=True) if np.ptp(column) > 0}
    assert varying == set(cluster_names) - {"free_v100", "free_p100", "free_k80"}


def test_observation_does_not_touch_the_oracle():
    # a non-oracle view raises on isolated_time_s and the schedule; building works without
    sim = Simulator(_probe_trace("probe-late").jobs, SimConfig(gpus=2), oracle=False)
    slots = SlotMap(4)
    slots.update(sim.view)
    build_observation(sim.view, slots)


def _reference_v2(view) -> np.ndarray:
    """Version 2's job features recomputed per job from the view, in the most direct way."""
    from shockwave_gym.interface.predictor import predicted_remaining_s

    tables = {t: ThroughputTable.builtin(t) for t in TYPE_ORDER}
    remaining = predicted_remaining_s(view)
    rho = ftf_estimate(view)
    unit, span = 60.0, np.log1p(86400.0 / 60.0)
    rows = []
    for j in range(view.num_jobs):
        batch = int(view.current_batch_size[j])
        mean = view.mean_epoch_duration_s[j]
        if np.isnan(mean):
            mean = view.current_epoch_duration_s[j]
        spec = view.spec(j)
        base = tables["v100"].rate(spec.model, batch, spec.gang) if tables["v100"].has(spec.model, batch, spec.gang) else 0
        relative = [tables[t].rate(spec.model, batch, spec.gang) / base if base and tables[t].has(spec.model, batch, spec.gang)
                    else 0.0 for t in TYPE_ORDER]
        rows.append([
            view.gang[j] / view.gpus,
            view.epoch_progress[j] / view.num_epochs[j],
            np.log2(view.gang[j]) / 3,
            np.log2(batch / view.initial_batch_size[j]) / 4,
            np.log10(1 + view.current_throughput[j] * batch) / 4,
            np.log1p(max(mean, 0) / unit) / span,
            np.log1p(max(remaining[j], 0) / unit) / span,
            np.log1p(max(view.time_s - view.arrival_s[j], 0) / unit) / span,
            np.log1p(max(view.attained_service_gpu_s[j], 0) / unit) / span,
            float(view.ran_last_round[j]),
            np.log2(1 + max(rho[j], 0)),
            *relative,
        ])
    low = np.array([f[1] for f in feature_tables_v2()[0]])
    high = np.array([f[2] for f in feature_tables_v2()[0]])
    return np.clip(np.array(rows), low, high)


def feature_tables_v2():
    from shockwave_gym.interface.observation import feature_tables

    return feature_tables(2)


@pytest.mark.parametrize("trace_name, gpus", [("teaching-12", 4), ("canonical-analogue-120", 32)])
def test_v2_job_features_match_a_plain_recomputation(trace_name, gpus):
    env = ClusterEnv(trace=trace_name, gpus=gpus, action_mode="priority")
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(5)
    for _ in range(60):
        slot_job = env.slots.slot_job
        want = _reference_v2(env.view)[slot_job[slot_job >= 0]]
        np.testing.assert_allclose(obs["jobs"][slot_job >= 0], want, rtol=2e-6, atol=1e-7)
        assert not obs["jobs"][slot_job < 0].any()
        obs, _, terminated, _, _ = env.step(rng.uniform(-1, 1, env.max_jobs).astype(np.float32))
        if terminated:
            break
