"""The fast paths of the env's step against plain reference computations.

The simulator keeps each job's epoch position (searched again only for the jobs that ran),
the view derives its arrays from table gathers, the observation reuses one feature buffer
and packing stops early.
Each reference below recomputes the same quantity from the raw simulator state in the most
direct way (one searchsorted over all jobs, per-job loops), sharing none of that code.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from shockwave_gym.interface.ftf import ftf_estimate
from shockwave_gym.interface.observation import JOB_FEATURES, TIME_SCALE_S
from shockwave_gym.interface.packing import pack_in_order
from shockwave_gym.interface.predictor import predicted_remaining_s
from shockwave_gym.simulator import DONE, SimConfig, Simulator
from shockwave_gym.traces import load_trace


def reference_derived(sim: Simulator) -> dict[str, np.ndarray]:
    s, work = sim.static, sim.work_done_s
    pos = np.searchsorted(s.epoch_end_global_s, s.job_base_s + work + 1e-6, side="right")
    current = np.minimum(pos, s.last_epoch_index)
    done = np.minimum(pos - s.first_epoch_index, s.num_epochs)
    duration = s.epoch_duration_s[current]
    fraction = np.clip((work - s.epoch_start_within_s[current]) / duration, 0.0, 1.0)
    fraction[sim.status == DONE] = 1.0
    counts = np.zeros(s.reachable_sizes.shape, dtype=np.int64)
    mean = np.full(done.size, np.nan)
    for j in range(done.size):
        sizes = s.epoch_batch_size[s.first_epoch_index[j] : s.first_epoch_index[j] + done[j]]
        counts[j] = [np.count_nonzero(sizes == size) for size in s.reachable_sizes[j]] * s.reachable_valid[j]
        if done[j]:
            mean[j] = s.epoch_end_within_s[pos[j] - 1] / done[j]
    return {
        "epochs_done": done,
        "epoch_progress": (current - s.first_epoch_index) + fraction,
        "current_epoch_fraction_done": fraction,
        "current_batch_size": s.epoch_batch_size[current],
        "current_throughput": s.epoch_rate[current],
        "current_epoch_duration_s": duration,
        "mean_epoch_duration_s": mean,
        "observed_batch_size_counts": counts,
        "attained_service_gpu_s": sim.run_time_s * s.gang,
    }


def reference_features(view) -> np.ndarray:
    """Feature-major (F, N) job features, one plain expression per feature."""
    mean = view.mean_epoch_duration_s
    mean = np.where(np.isnan(mean), view.current_epoch_duration_s, mean)
    raw = [
        view.gang / view.gpus,
        view.epoch_progress / view.num_epochs,
        np.log2(view.current_batch_size / view.initial_batch_size) * 0.25,
        np.log1p(np.maximum(view.current_throughput * view.current_batch_size, 0.0)) / (6 * math.log(10)),
        np.log1p(np.maximum(mean / view.round_s, 0.0)) * 0.25,
        np.log1p(np.maximum(predicted_remaining_s(view) / TIME_SCALE_S, 0.0)) / 3,
        np.log1p(np.maximum((view.time_s - view.arrival_s) / TIME_SCALE_S, 0.0)) / 3,
        np.log1p(np.maximum(view.attained_service_gpu_s / TIME_SCALE_S, 0.0)) / 3,
        np.log1p(view.ran_last_round * (math.e - 1)),
        np.log1p(np.maximum(ftf_estimate(view), 0.0)) / math.log(2),
    ]
    low = np.array([f[1] for f in JOB_FEATURES])[:, None]
    high = np.array([f[2] for f in JOB_FEATURES])[:, None]
    return np.clip(np.array(raw), low, high)


@pytest.mark.parametrize("trace_name, gpus, rounds", [("teaching-12", 4, 400), ("canonical-analogue-120", 32, 120)])
def test_view_and_observation_match_plain_recomputation(trace_name, gpus, rounds):
    import gymnasium as gym

    import shockwave_gym  # noqa: F401  registers the ids

    env = gym.make("shockwave_gym/Cluster-v0", trace=trace_name, gpus=gpus, obs_version=1).unwrapped  # v1 formulas below
    rng = np.random.default_rng(7)
    obs, _ = env.reset(seed=0)
    sim, view = env.simulator, env.simulator.view
    handed_out = []  # arrays of earlier states must never change
    for step in range(rounds):
        if step % 5 != 3:  # some rounds unread: the view must still catch up
            expected = reference_derived(sim)
            for name, value in expected.items():
                got = getattr(view, name)
                assert got.dtype == value.dtype and not got.flags.writeable, name
                np.testing.assert_array_equal(got, value, err_msg=name)
            handed_out.append((view.epoch_progress, view.epoch_progress.copy()))
            features = reference_features(view)
            slot_job = env.slots.slot_job
            want = np.zeros_like(obs["jobs"])
            want[slot_job >= 0] = features[:, slot_job[slot_job >= 0]].T
            np.testing.assert_array_equal(obs["jobs"], want)
        obs, _, terminated, truncated, _ = env.step(rng.random(env.max_jobs, dtype=np.float32) * 2 - 1)
        if terminated or truncated:
            break
    for array, saved in handed_out:
        np.testing.assert_array_equal(array, saved)


def reference_pack(order, gang, gpus):
    chosen, free = [], gpus
    for job in order:
        if gang[job] <= free:
            chosen.append(job)
            free -= gang[job]
    return chosen


def test_packing_matches_plain_greedy_scan():
    rng = np.random.default_rng(3)
    for _ in range(300):
        n = int(rng.integers(0, 40))
        gang = rng.choice([1, 2, 4, 8], size=n, p=[0.2, 0.2, 0.3, 0.3])
        order = rng.permutation(n)
        gpus = int(rng.integers(1, 33))
        assert pack_in_order(order, gang, gpus).tolist() == reference_pack(order.tolist(), gang.tolist(), gpus)


def test_simulator_copy_and_reset_recompute_derived_arrays():
    sim = Simulator(load_trace("teaching-12", gpus=4).jobs, SimConfig(gpus=4))
    for _ in range(6):
        sim.step(pack_in_order(sim.view.active_job_ids, sim.static.gang, 4))
    clone = sim.copy()
    np.testing.assert_array_equal(clone.view.epochs_done, reference_derived(sim)["epochs_done"])
    sim.reset()
    np.testing.assert_array_equal(sim.view.epoch_progress, np.zeros(sim.num_jobs))
    clone.step(pack_in_order(clone.view.active_job_ids, clone.static.gang, 4))
    np.testing.assert_array_equal(clone.view.epoch_progress, reference_derived(clone)["epoch_progress"])
