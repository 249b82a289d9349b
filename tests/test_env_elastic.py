"""The env on elastic traces (docs/ENV.md, "Elastic jobs"): count actions in every mode with
exact masks, the observation's elastic entry, Gymnasium's checker, determinism, the Python
path, and the vector entry point's fallback giving the single envs' trajectories."""

import copy
import dataclasses

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from helpers.vector import assert_same, step_with_single_envs

import shockwave_gym  # noqa: F401 - registers the ids
from shockwave_gym.elastic import ElasticSimulator
from shockwave_gym.env.cluster_env import ClusterEnv
from shockwave_gym.env.options import needs_single_envs
from shockwave_gym.env.vector.fallback import SyncClusterVectorEnv
from shockwave_gym.interface.actions import ACTION_MODES
from shockwave_gym.jobs import JobSpec
from shockwave_gym.testing.env import random_valid_action
from shockwave_gym.traces import Trace, load_trace

MODES = list(ACTION_MODES)
C = 4


def _small_elastic() -> Trace:
    trace = load_trace("teaching-12")
    jobs = tuple(dataclasses.replace(job, gangs=(1, 2, 4)) if job.job_id % 2 == 0 else job for job in trace.jobs)
    return dataclasses.replace(trace, jobs=jobs, name="teaching-12-elastic")


def _env(mode: str, **kwargs) -> ClusterEnv:
    return ClusterEnv(trace=_small_elastic(), gpus=4, action_mode=mode, **kwargs)


@pytest.mark.parametrize("mode", MODES)
def test_gymnasium_checker_and_spaces(mode):
    env = _env(mode)
    check_env(env, skip_render_check=True)
    expected = {"select": gym.spaces.MultiDiscrete, "priority": gym.spaces.Box, "sequential": gym.spaces.Discrete}
    assert isinstance(env.action_space, expected[mode])
    obs, _ = env.reset(seed=0)
    assert obs["elastic"].shape == (env.max_jobs, 2 * C)
    assert env._compiled_step() is None  # not the rigid jobs' compiled step (tests/test_elastic_kernels.py)
    assert isinstance(env.simulator, ElasticSimulator)


def _rollout(env, seed: int, steps: int):
    rng = np.random.default_rng(seed)
    out = [env.reset(seed=seed)]
    for _ in range(steps):
        out.append(env.step(random_valid_action(env, rng, env.action_mode)))
        if out[-1][2] or out[-1][3]:
            out.append(env.reset())
    return out


@pytest.mark.parametrize("mode", MODES)
def test_determinism(mode):
    a, b = _rollout(_env(mode), 5, 40), _rollout(_env(mode), 5, 40)
    assert_same(a, b, mode)


@pytest.mark.parametrize("mode", MODES)
def test_vector_entry_point_falls_back_and_equals_single_envs(mode):
    kwargs = dict(action_mode=mode, max_jobs=16)
    vec = gym.make_vec("shockwave_gym/Elastic-v0", num_envs=2, **kwargs)
    assert isinstance(vec, SyncClusterVectorEnv)
    singles = [gym.make("shockwave_gym/Elastic-v0", **kwargs) for _ in range(2)]
    step_with_single_envs(vec, singles, mode, 12)
    vec.close()


def test_the_native_vector_env_declines_elastic_sources():
    assert needs_single_envs({"trace": "elastic-120"}) == "elastic jobs"
    assert needs_single_envs({"trace": _small_elastic(), "gpus": 4}) == "elastic jobs"
    assert needs_single_envs({"trace": "canonical-analogue-120"}) is None


def test_sequential_mask_is_exact():
    env = _env("sequential")
    env.reset(seed=0)
    for _ in range(6):
        mask = env.action_masks()
        assert mask.shape == (env.max_jobs * C + 1,)
        for action in range(mask.size - 1):
            trial = copy.deepcopy(env)
            _, _, _, _, info = trial.step(action)
            assert (info["action_repairs"] == 0) == bool(mask[action]), action
        env.step(int(np.flatnonzero(mask)[0]))


def test_select_counts_reach_the_simulator_and_masks_allow_exactly_the_allowed_counts():
    env = _env("select")
    env.reset(seed=0)
    view = env.simulator.view
    mask = env.action_masks().reshape(env.max_jobs, C + 1)
    for slot, job in enumerate(env.slots.slot_job.tolist()):
        allowed = [False] * C if job < 0 else [c in view.allowed_counts(job) for c in view.gpu_counts]
        assert mask[slot].tolist() == [True, *allowed]
    action = np.zeros(env.max_jobs, dtype=np.int64)
    job0 = int(env.slots.slot_job[0])
    assert view.elastic[job0]
    action[0] = 3  # count index 2: 4 GPUs
    env.step(action)
    record = env.simulator.history[-1]
    assert record.job_ids.tolist() == [job0] and record.gpu_counts.tolist() == [4]


def test_observation_marginals_per_added_gpu():
    # LM at batch size 5 on a V100: 133.84 it/s on 1 GPU, 125.63 on 2, 198.88 on 4, 199.28 on 8
    job = JobSpec(job_id=0, model="LM", initial_batch_size=5, total_iterations=50_000, gang=1, mode="static",
                  arrival_s=0.0, gangs=(1, 2, 4, 8))
    env = ClusterEnv(trace=Trace.from_jobs("lm", [job], "test"), gpus=8, action_mode="select")
    obs, _ = env.reset(seed=0)
    rates = np.array([133.8379591, 125.631579, 198.8836124, 199.282077]) / 133.8379591
    marginal = [rates[0], rates[1] - rates[0], (rates[2] - rates[1]) / 2, (rates[3] - rates[2]) / 4]
    assert obs["elastic"][0, :C].tolist() == [1, 1, 1, 1]
    assert obs["elastic"][0, C:] == pytest.approx(marginal, rel=1e-6)
    assert obs["elastic"][0, C + 1] < 0  # 2 GPUs are slower than 1
    assert not obs["elastic"][1:].any()


def test_the_elastic_suite_gives_count_actions_and_its_vector_env_the_fallback():
    env = gym.make("shockwave_gym/Suite-elastic-nominal-v0", action_mode="sequential")
    assert env.unwrapped._elastic and env.action_space.n == env.unwrapped.max_jobs * C + 1
    vec = gym.make_vec("shockwave_gym/Suite-elastic-nominal-v0", num_envs=2)
    assert isinstance(vec, SyncClusterVectorEnv)
    obs, _ = vec.reset(seed=0)
    assert obs["elastic"].shape == (2, vec.envs[0].unwrapped.max_jobs, 2 * C)
    vec.close()


def test_a_regime_suite_vector_env_takes_the_fallback_with_its_regime():
    """The suite's own arguments decide the fallback (a regime suite's vector env runs its
    regime, observation version 3, not the native env on the default trace)."""
    vec = gym.make_vec("shockwave_gym/Suite-canonical-unknown-v0", num_envs=2)
    assert isinstance(vec, SyncClusterVectorEnv)
    assert vec.envs[0].unwrapped.obs_version == 3
    vec.close()


@pytest.mark.parametrize("env_id", ["shockwave_gym/Elastic-v0", "shockwave_gym/Elastic-Hetero-v0"])
def test_flattened_observation_ends_with_the_elastic_entry(env_id):
    """SB3's MlpPolicy path: the flat vector is the rigid layout, then the elastic entry."""
    from shockwave_gym.env.wrappers import FlattenClusterObservation

    env = gym.make(env_id, action_mode="priority")
    flat = FlattenClusterObservation(env)
    obs, _ = env.reset(seed=2)
    vector, _ = flat.reset(seed=2)
    assert flat.observation_space.contains(vector)
    elastic = np.asarray(obs["elastic"], dtype=np.float32).ravel()
    assert vector.size == sum(np.asarray(obs[k]).size for k in FlattenClusterObservation.KEYS) + elastic.size
    np.testing.assert_array_equal(vector[-elastic.size:], elastic)
    assert elastic.any()  # some job has allowed counts: the entry is not all zero
