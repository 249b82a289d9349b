"""Elastic traces on the compiled kernels (docs/ENV.md, "Elastic jobs"): on one GPU type the
single env runs its rounds on the compiled round rules (batch/elastic.py), decodes the
``priority`` and ``select`` counts and builds the ``elastic`` entry compiled (env/vector/elastic.py); every
trajectory equals the reference path's (``_compiled_allowed = False``: the plain
ElasticSimulator and the interface's rules) bit for bit, in every mode, observation version
and skip setting, and so do the vector entry point's sub-envs."""

import copy
import dataclasses
import pickle
import re

import numpy as np
import pytest
from helpers.vector import assert_same

import shockwave_gym  # noqa: F401 - registers the ids
from shockwave_gym.batch import jit
from shockwave_gym.batch.elastic import CompiledElasticSimulator
from shockwave_gym.elastic import ElasticSimulator
from shockwave_gym.env.cluster_env import ClusterEnv
from shockwave_gym.env.vector.elastic import (
    CompiledElasticPriorityMode,
    CompiledElasticSelectMode,
    elastic_rows,
)
from shockwave_gym.env.vector.fallback import make_vector_env
from shockwave_gym.interface.elastic_actions import ElasticPriorityMode, ElasticSelectMode
from shockwave_gym.interface.elastic_features import elastic_features
from shockwave_gym.testing.env import random_valid_action
from shockwave_gym.traces import GeneratedTraceSource, GeneratorConfig, load_trace

pytestmark = pytest.mark.skipif(not jit.AVAILABLE, reason="the compiled kernels need numba")

MODES = ("priority", "select", "sequential")


def _small_elastic():
    trace = load_trace("teaching-12")
    jobs = tuple(dataclasses.replace(job, gangs=(1, 2, 4, 8)) if job.job_id % 3 else job for job in trace.jobs)
    return dataclasses.replace(trace, jobs=jobs, name="teaching-12-elastic")


def _generated():
    config = GeneratorConfig(num_jobs=10, seed=5, elastic_share=0.6, min_duration_h=0.2, max_duration_h=0.6)
    return GeneratedTraceSource(config, num_jobs_range=(5, 10))


def _pair(**kwargs):
    """(env on the kernels, env on the reference path) of the same arguments."""
    fast, slow = ClusterEnv(**kwargs), ClusterEnv(**kwargs)
    slow._compiled_allowed = False
    return fast, slow


def _action(env, rng):
    """A random action, priority's scores and preferences often tied (the tie rules matter)."""
    if env.action_mode == "priority":
        return rng.choice(np.array([-1.0, -0.25, 0.0, 0.5, 1.0], np.float32), size=2 * env.max_jobs)
    return random_valid_action(env, rng, env.action_mode)


def _same_rollouts(fast, slow, seed, steps):
    rng = np.random.default_rng(seed)
    assert_same(fast.reset(seed=seed), slow.reset(seed=seed), "reset")
    assert isinstance(fast.simulator, CompiledElasticSimulator)
    assert type(slow.simulator) is ElasticSimulator
    episodes = 0
    for step in range(steps):
        assert_same(fast.action_masks(), slow.action_masks(), f"masks {step}")
        action = _action(fast, rng)
        out = fast.step(action)
        assert_same(out, slow.step(action), f"step {step}")
        if out[2] or out[3]:
            episodes += 1
            a, b = fast.simulator.result(), slow.simulator.result()
            for name in ("completion_s", "gpu_time_s", "round_gpu_counts", "round_job_ids", "round_run_s",
                         "round_overhead_s", "round_gpus_busy", "round_end_s"):
                assert_same(getattr(a, name), getattr(b, name), name)
            assert_same(fast.reset(), slow.reset(), "autoreset")
    return episodes


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("obs_version", [1, 2, 3])
@pytest.mark.parametrize("mode", MODES)
def test_the_kernel_path_equals_the_reference_path(mode, obs_version, skip):
    fast, slow = _pair(trace=_small_elastic(), gpus=8, action_mode=mode, obs_version=obs_version, skip_trivial=skip,
                       reward={"jct": 0.5, "makespan": 2.0, "ftf_excess": 1.0})
    steps = 160 if mode == "sequential" else 60
    assert _same_rollouts(fast, slow, 3, steps) >= 1  # episodes end: the records and results compared


@pytest.mark.parametrize("mode", MODES)
def test_generated_elastic_traces_and_the_bundled_one(mode):
    fast, slow = _pair(trace=_generated(), gpus=8, action_mode=mode)
    assert _same_rollouts(fast, slow, 1, 200 if mode == "sequential" else 80) >= 1
    fast, slow = _pair(trace="elastic-120", action_mode=mode, reward="default")
    _same_rollouts(fast, slow, 2, 80 if mode == "sequential" else 25)


def test_the_priority_decoder_and_elastic_entry_equal_the_reference_on_random_states():
    env = ClusterEnv(trace="elastic-120", action_mode="priority")
    env.reset(seed=4)
    rng = np.random.default_rng(0)
    reference, compiled = ElasticPriorityMode(env.max_jobs, 4), CompiledElasticPriorityMode(env.max_jobs, 4)
    picked_counts = set()
    for _ in range(30):
        view = env.simulator.view
        assert_same(elastic_rows(view, env.slots), elastic_features(view, env.slots), "elastic entry")
        for _ in range(5):
            action = rng.uniform(-1.5, 1.5, 2 * env.max_jobs)  # out of the box: clipped by the rule
            action[rng.random(action.size) < 0.3] = 0.0
            expected = reference.place(action, view, env.slots)
            assert_same(compiled.place(action, view, env.slots), expected, "placement")
            picked_counts.update(expected[1].tolist())
        env.step(action.astype(np.float32))
    assert picked_counts == {0, 1, 2, 3}  # every count was decoded



def test_the_select_decoder_equals_the_reference_on_random_states():
    env = ClusterEnv(trace="elastic-120", action_mode="select", max_jobs=48)
    env.reset(seed=5)
    rng = np.random.default_rng(1)
    reference, compiled = ElasticSelectMode(env.max_jobs, 4), CompiledElasticSelectMode(env.max_jobs, 4)
    repairs = 0
    for _ in range(30):
        view = env.simulator.view
        reference.start_round(view, env.slots)
        compiled.start_round(view, env.slots)
        for _ in range(5):
            action = rng.integers(0, 5, env.max_jobs)  # any entry: empty slots and disallowed counts too
            expected = reference.place(action, view, env.slots)
            assert_same(compiled.place(action, view, env.slots), expected, "placement")
            repairs += expected[2]
        env.step(action)
    assert repairs > 0  # the repair rule was exercised

def test_refused_actions_are_refused_alike():
    fast, slow = _pair(trace=_small_elastic(), gpus=8, action_mode="priority")
    fast.reset(seed=0)
    slow.reset(seed=0)
    for bad in (np.zeros(fast.max_jobs), np.full(2 * fast.max_jobs, np.nan), np.array(["a"] * 2 * fast.max_jobs)):
        with pytest.raises(Exception) as expected:
            slow.step(bad)
        with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
            fast.step(bad)
    fast, slow = _pair(trace=_small_elastic(), gpus=8, action_mode="select")
    fast.reset(seed=0)
    slow.reset(seed=0)
    for bad in (np.full(fast.max_jobs, 5), np.full(fast.max_jobs, -1), np.zeros(fast.max_jobs, bool), np.zeros(3, int)):
        with pytest.raises(Exception) as expected:
            slow.step(bad)
        with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
            fast.step(bad)


def test_a_copy_or_pickle_continues_the_same_episode():
    env = ClusterEnv(trace=_small_elastic(), gpus=8, action_mode="select")
    env.reset(seed=1)
    rng = np.random.default_rng(2)
    for _ in range(5):
        env.step(random_valid_action(env, rng, "select"))
    twins = [copy.deepcopy(env), pickle.loads(pickle.dumps(env))]
    for _ in range(15):
        action = random_valid_action(env, rng, "select")
        out = env.step(action)
        for twin in twins:
            assert_same(twin.step(action), out, "copy")


@pytest.mark.parametrize("mode", MODES)
def test_the_vector_entry_point_sub_envs_equal_the_reference(mode):
    vec = make_vector_env(3, trace=_generated(), gpus=8, action_mode=mode, max_episode_steps=15)
    ref = make_vector_env(3, trace=_generated(), gpus=8, action_mode=mode, max_episode_steps=15)
    for env in ref.envs:
        env.unwrapped._compiled_allowed = False
    assert_same(vec.reset(seed=9), ref.reset(seed=9), "reset")
    assert all(isinstance(env.unwrapped.simulator, CompiledElasticSimulator) for env in vec.envs)
    rng = np.random.default_rng(3)
    for step in range(40):
        masks = vec.action_masks()
        assert_same(masks, ref.action_masks(), "masks")
        if mode == "priority":
            action = rng.uniform(-1, 1, (3, 2 * vec.envs[0].unwrapped.max_jobs)).astype(np.float32)
        else:
            action = np.stack([random_valid_action(env.unwrapped, rng, mode) for env in vec.envs])
        assert_same(vec.step(action), ref.step(action), f"step {step}")
    vec.close()
    ref.close()


@pytest.mark.parametrize("mode", ["priority", "select"])
def test_a_regime_with_early_endings_runs_the_same_on_the_kernels(mode):
    fast, slow = _pair(trace=_generated(), gpus=8, action_mode=mode, regime="unknown", early_endings=0.5,
                       obs_version=3)
    assert _same_rollouts(fast, slow, 4, 80) >= 1
