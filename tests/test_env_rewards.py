"""Rewards: the exact `jct` identity (idle jumps and queued jobs included), the `makespan`
sum, the `nsw` and `ftf` terms, weights and user callables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shockwave_gym.env import ClusterEnv
from shockwave_gym.env.rewards import DEFAULT_REWARD, REWARDS, RoundTransition, make_reward
from shockwave_gym.errors import InputError
from shockwave_gym.traces import GeneratorConfig, generate_trace


def _play(env: ClusterEnv, seed: int = 0, max_steps: int = 50_000):
    """Random scores (priority) / random valid bits (select) until the episode ends."""
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    rewards, infos = [], [info]
    for _ in range(max_steps):
        if env.action_mode == "priority":
            action = rng.uniform(-1, 1, env.max_jobs).astype(np.float32)
        else:
            action = (rng.random(env.max_jobs) < 0.6).astype(np.int8)
        obs, reward, terminated, truncated, info = env.step(action)
        rewards.append(reward)
        infos.append(info)
        if terminated or truncated:
            return rewards, infos, terminated
    raise AssertionError("episode did not end")


def _sparse_trace():
    # ~4 arrivals per hour on 4 GPUs with short jobs: the cluster empties between arrivals,
    # so time jumps to the next arrival (R1) inside the reward's interval
    return generate_trace(
        GeneratorConfig(num_jobs=15, seed=4, arrival_rate_per_hour=4.0, max_duration_h=0.5,
                        gang_mix={1: 0.7, 2: 0.3})
    )


JCT_CASES = {
    "teaching-select": dict(trace="teaching-12", action_mode="select"),
    # 8 slots for 120 jobs on 32 GPUs: most active jobs wait in the queue
    "canonical-queue": dict(trace="canonical-analogue-120", max_jobs=8, action_mode="priority"),
    "sparse-idle-jumps": dict(trace=_sparse_trace(), gpus=4, action_mode="priority"),
}


@pytest.mark.parametrize("case", sorted(JCT_CASES))
def test_jct_rewards_sum_to_minus_total_jct(case):
    env = ClusterEnv(reward="jct", **JCT_CASES[case])
    rewards, infos, terminated = _play(env)
    assert terminated
    result = env.simulator.result()
    total_jct = float(np.sum(result.jct_s))
    assert math.fsum(rewards) == pytest.approx(-total_jct / env.jct_normaliser_s, rel=1e-9)
    if case == "canonical-queue":
        assert max(i["queue_length"] for i in infos) > 50
    if case == "sparse-idle-jumps":
        starts, ends = result.round_start_s, result.round_end_s
        assert np.any(starts[1:] > ends[:-1]), "the trace should make the cluster idle"


def test_makespan_rewards_sum_to_minus_makespan():
    env = ClusterEnv(trace=_sparse_trace(), gpus=4, reward="makespan")
    rewards, infos, _ = _play(env, seed=2)
    makespan = infos[-1]["metrics"]["makespan_s"]
    first_arrival = env.trace.jobs[0].arrival_s
    assert math.fsum(rewards) == pytest.approx(-(makespan - first_arrival) / env.sim_config.round_s, rel=1e-9)


def test_nsw_rewards_the_growth_of_log_progress():
    env = ClusterEnv(trace="teaching-12", reward="nsw", action_mode="select")
    env.reset(seed=0)
    idle = np.zeros(env.max_jobs, np.int8)
    assert env.step(idle)[1] == 0.0  # nobody progresses: no welfare gain
    _, reward, *_ = env.step(np.ones(env.max_jobs, np.int8))
    assert reward > 0


def test_ftf_penalises_waiting_jobs_more_over_time():
    env = ClusterEnv(trace="canonical-analogue-120", reward="ftf", action_mode="select")
    env.reset(seed=0)
    idle = np.zeros(env.max_jobs, np.int8)
    penalties = [env.step(idle)[1] for _ in range(6)]
    assert all(p <= 0 for p in penalties)
    assert penalties[-1] < penalties[1] < 0  # rho-hat of starving jobs keeps growing


def test_default_weights_and_user_callables():
    assert make_reward(None).terms == make_reward("default").terms
    assert [(name, w) for name, _, w in make_reward(None).terms] == list(DEFAULT_REWARD.items())
    seen = []

    def rounds_run(t: RoundTransition) -> float:
        seen.append(t.record.index)
        return float(t.record.job_ids.size)

    env = ClusterEnv(trace="teaching-12", reward={"jct": 2.0, rounds_run: 0.5})
    base = ClusterEnv(trace="teaching-12", reward="jct")
    env.reset(seed=0)
    base.reset(seed=0)
    action = np.linspace(1, -1, env.max_jobs, dtype=np.float32)
    for k in range(3):
        _, r, *_ = env.step(action)
        _, r_jct, *_ = base.step(action)
        ran = env.simulator.history[-1].job_ids.size
        assert r == pytest.approx(2.0 * r_jct + 0.5 * ran)
        assert seen[-1] == k
    assert ClusterEnv(trace="teaching-12", reward=lambda t: 1.0).reset(seed=0)


@pytest.mark.parametrize("bad", ["speed", {"jct": float("nan")}, {}, 3])
def test_bad_reward_specs_are_input_errors(bad):
    with pytest.raises(InputError):
        make_reward(bad)


def test_every_builtin_is_finite_on_a_full_episode():
    env = ClusterEnv(trace="teaching-12", reward={name: 1.0 for name in REWARDS}, action_mode="select")
    rewards, _, terminated = _play(env, seed=5)
    assert terminated and np.isfinite(rewards).all()
