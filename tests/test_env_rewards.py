"""Rewards: the exact `jct` identity (idle jumps, queued jobs and skipped rounds included),
its scale independent of `max_jobs`, the `makespan` sum, the `ftf` term equal to the Themis
metric's excess unfairness, the removed `nsw`, weights and user callables."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shockwave_gym.env import ClusterEnv
from shockwave_gym.env.rewards import DEFAULT_REWARD, REWARDS, RoundTransition, make_reward
from shockwave_gym.errors import InputError
from shockwave_gym.metrics import per_job_ftf
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


@pytest.mark.parametrize("skip", [False, True], ids=["every-round", "skip-trivial"])
@pytest.mark.parametrize("case", sorted(JCT_CASES))
def test_jct_rewards_sum_to_minus_total_jct(case, skip):
    env = ClusterEnv(reward="jct", skip_trivial=skip, **JCT_CASES[case])
    rewards, infos, terminated = _play(env)
    assert terminated
    result = env.simulator.result()
    total_jct = float(np.sum(result.jct_s))
    assert math.fsum(rewards) == pytest.approx(-total_jct / env.jct_normaliser_s, rel=1e-9)
    assert env.jct_normaliser_s == env.sim_config.round_s * env.gpus
    if skip:
        assert sum(i["rounds_elapsed"] for i in infos) == result.num_rounds
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


def _fifo_scores(info: dict, max_jobs: int) -> np.ndarray:
    """Priority scores that rank the slotted jobs in arrival order (FIFO)."""
    ids = info["slot_job_ids"]
    return np.where(ids >= 0, 1.0 - ids / (ids.max() + 1.0), -1.0).astype(np.float32)


def _play_fifo(env: ClusterEnv):
    obs, info = env.reset(seed=0)
    rewards = []
    while True:
        obs, reward, terminated, truncated, info = env.step(_fifo_scores(info, env.max_jobs))
        rewards.append(reward)
        if terminated or truncated:
            return rewards, info


def test_jct_reward_scale_does_not_depend_on_max_jobs():
    """The same FIFO schedule with 16 and 40 slots: same metrics, same return (it used to
    be 2.5 x larger with 16 slots)."""
    returns, jcts = [], []
    for max_jobs in (16, 40):
        env = ClusterEnv(trace="canonical-analogue-120", reward="jct", max_jobs=max_jobs)
        rewards, info = _play_fifo(env)
        returns.append(math.fsum(rewards))
        jcts.append(info["metrics"]["avg_jct_s"])
    assert jcts[0] == jcts[1]
    assert returns[0] == pytest.approx(returns[1], rel=1e-12)


def random_action(rng, max_jobs: int, mode: str) -> np.ndarray:
    """Uniform scores (priority) or bits set with probability 0.6 (select)."""
    if mode == "priority":
        return rng.uniform(-1, 1, max_jobs).astype(np.float32)
    return (rng.random(max_jobs) < 0.6).astype(np.int8)


@pytest.mark.parametrize("mode", ["priority", "select"])
def test_ftf_returns_are_the_themis_metrics(mode):
    """ftf sums to minus the number of unfair jobs (N x unfair_fraction_themis), ftf_excess
    to minus the excess unfairness; both are paid when jobs complete, never before."""
    env = ClusterEnv(trace="canonical-analogue-120", reward={"ftf": 1.0, "ftf_excess": 1.0}, action_mode=mode,
                     max_jobs=48)
    rng = np.random.default_rng(1)
    env.reset(seed=1)
    paid = []
    while True:
        action = random_action(rng, env.max_jobs, mode)
        before = env.view.active_job_ids.copy()
        _, reward, terminated, truncated, _ = env.step(action)
        done = before[~env.view.is_active[before]]
        paid.append((reward, done.size))
        if terminated or truncated:
            break
    assert terminated
    result = env.simulator.result()
    _, rho_themis = per_job_ftf(result)
    unfair = int(np.count_nonzero(rho_themis > 1.05))
    excess = float(np.maximum(rho_themis - 1.0, 0.0).sum())
    assert unfair == round(result.num_jobs * env._metrics["unfair_fraction_themis"])
    total = math.fsum(r for r, _ in paid)
    assert total == pytest.approx(-unfair - excess, rel=1e-9)
    assert all(r == 0.0 for r, completed in paid if completed == 0)  # rounds without a completion cost nothing
    assert unfair > 5 and excess > 1.0  # a random policy is unfair here
    for name, expected in (("ftf", -unfair), ("ftf_excess", -excess)):
        alone = ClusterEnv(trace="canonical-analogue-120", reward=name, action_mode=mode, max_jobs=48)
        rng = np.random.default_rng(1)
        alone.reset(seed=1)
        rewards = []
        while True:
            action = random_action(rng, alone.max_jobs, mode)
            _, reward, terminated, truncated, _ = alone.step(action)
            rewards.append(reward)
            if terminated or truncated:
                break
        assert math.fsum(rewards) == pytest.approx(expected, rel=1e-9)


def test_ftf_prefers_the_fairer_policy():
    """FIFO against random priorities on the canonical trace: FIFO leaves fewer jobs unfair
    (Themis unfair fraction 52% against 98%) and gets the larger ftf return (the old rho-hat
    term ranked them the other way round); random play, which makes many jobs a little
    late, has the smaller excess unfairness (worst FTF 3.4 against 12.0) and the larger
    ftf_excess return."""
    fifo = ClusterEnv(trace="canonical-analogue-120", reward="ftf")
    fifo_rewards, _ = _play_fifo(fifo)
    rand = ClusterEnv(trace="canonical-analogue-120", reward="ftf")
    rand_rewards, _, _ = _play(rand, seed=0)
    unfair = [e._metrics["unfair_fraction_themis"] for e in (fifo, rand)]
    assert unfair[0] < unfair[1]
    assert math.fsum(fifo_rewards) > math.fsum(rand_rewards)
    excess = [np.maximum(per_job_ftf(e.simulator.result())[1] - 1.0, 0.0).sum() for e in (fifo, rand)]
    fifo_x = ClusterEnv(trace="canonical-analogue-120", reward="ftf_excess")
    rand_x = ClusterEnv(trace="canonical-analogue-120", reward="ftf_excess")
    assert (math.fsum(_play_fifo(fifo_x)[0]) > math.fsum(_play(rand_x, seed=0)[0])) == (excess[0] < excess[1])


def test_nsw_is_removed_with_its_reason():
    with pytest.raises(InputError, match="constant independent of the policy"):
        make_reward("nsw")
    with pytest.raises(InputError, match="removed"):
        ClusterEnv(trace="teaching-12", reward={"jct": 1.0, "nsw": 0.5})


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


def _random_step_action(env, rng):
    if env.action_mode == "sequential":
        return int(rng.choice(np.flatnonzero(env.action_masks())))
    return random_action(rng, env.max_jobs, env.action_mode)


@pytest.mark.parametrize("skip", [False, True], ids=["every-round", "skip-trivial"])
@pytest.mark.parametrize("mode", ["priority", "select", "sequential"])
def test_fair_share_return_is_minus_the_sum_of_rho_minus_one(mode, skip):
    """The dense fair_share term sums to -sum_j (rho_j - 1), rho_j = JCT_j / T_fair_j, in every
    action mode (rounds skipped by the env pay their reward too)."""
    trace = _sparse_trace() if mode == "sequential" else "teaching-12"
    env = ClusterEnv(trace=trace, gpus=4, reward="fair_share", action_mode=mode, skip_trivial=skip)
    rng = np.random.default_rng(2)
    env.reset(seed=2)
    rewards = []
    while True:
        _, reward, terminated, truncated, _ = env.step(_random_step_action(env, rng))
        rewards.append(reward)
        if terminated or truncated:
            break
    assert terminated
    result = env.simulator.result()
    rho = result.jct_s / result.fair_time_s
    expected = -float((rho - 1.0).sum())
    assert math.fsum(rewards) == pytest.approx(expected, rel=1e-9, abs=1e-9)
    assert env._metrics["rho_mean"] == pytest.approx(float(rho.mean()))
    if mode != "sequential":  # sub-steps that do not close a round pay nothing
        assert any(r != 0.0 for r in rewards[:-1])  # dense: paid along the way, not only at the end


def test_fair_share_return_on_a_heterogeneous_cluster():
    env = ClusterEnv(trace="teaching-12", cluster="v100=2,p100=2", reward="fair_share", action_mode="priority")
    rng = np.random.default_rng(4)
    env.reset(seed=4)
    rewards = []
    while True:
        _, reward, terminated, truncated, _ = env.step(random_action(rng, env.max_jobs, "priority"))
        rewards.append(reward)
        if terminated or truncated:
            break
    result = env.simulator.result()
    assert math.fsum(rewards) == pytest.approx(-float((result.jct_s / result.fair_time_s - 1.0).sum()), rel=1e-9)


def test_the_vector_env_names_the_unbatched_fair_share_term():
    from shockwave_gym.env.rewards import WeightedReward
    from shockwave_gym.env.vector.vector_env import ClusterVectorEnv

    with pytest.raises(InputError, match="'fair_share' is not batched.*vectorization_mode='sync'"):
        ClusterVectorEnv(2, trace="teaching-12", reward={"jct": 1.0, "fair_share": 1.0})
    assert isinstance(make_reward("fair_share"), WeightedReward)
