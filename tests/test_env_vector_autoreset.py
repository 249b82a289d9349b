"""The native vector env across autoresets onto traces of other sizes, refused actions and
action dtypes.

* An autoreset may load a trace with more jobs than any cluster ran so far, which widens
  every per-job array; each mode, with every built-in
  reward, must go on giving exactly the single envs' trajectories.
* An action refused on a step with pending autoresets changes nothing: no cluster resets,
  no RNG draws, no state moves; the next accepted step is the one a never-refused env takes.
* Every action dtype the batched action space's ``contains`` accepts, plus float16/32/64,
  int8-64 and bool where the mode allows, gives the same step as the canonical dtype.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from test_env_vector import BACKENDS, ENV_ID, assert_same, random_actions

import shockwave_gym  # noqa: F401  (registers the ids)
from shockwave_gym.env.vector.vector_env import ClusterVectorEnv
from shockwave_gym.errors import InvalidActionError
from shockwave_gym.interface.actions import ACTION_MODES
from shockwave_gym.traces import GeneratedTraceSource, GeneratorConfig

MAX_JOBS = 8

#: The reward of every cluster in a test (None: the env's default, jct + ftf).
REWARD_CASES = {  # "mixed" holds every term (jct and makespan alone add nothing it lacks)
    "default": None,
    "ftf": "ftf",
    "ftf_excess": "ftf_excess",
    "mixed": {"jct": 1.0, "makespan": 0.1, "ftf": 0.2, "ftf_excess": 0.5},
}


def short_episodes(seed: int) -> GeneratedTraceSource:
    """Episodes of 3-14 short jobs: each autoreset may load a wider trace than any before."""
    return GeneratedTraceSource(
        GeneratorConfig(num_jobs=14, seed=seed, max_duration_h=0.3, arrival_rate_per_hour=60.0, name="short"),
        num_jobs_range=(3, 14),
    )


def cluster_kwargs(mode: str, reward) -> list[dict]:
    extra = {} if reward is None else {"reward": reward}
    return [{"trace": short_episodes(s), "gpus": g, "max_jobs": MAX_JOBS, "action_mode": mode, **extra}
            for s, g in ((1, 8), (2, 10), (3, 12))]


def rollout_against_single_envs(kwargs, mode, compiled, steps, *, autoreset_mode=AutoresetMode.NEXT_STEP,
                                seed=0) -> tuple[int, int, int]:
    """Step the native env and K single envs alike; (episodes ended, first width, last width)."""
    reference = SyncVectorEnv([lambda kw=kw: gym.make(ENV_ID, **kw) for kw in kwargs], autoreset_mode=autoreset_mode)
    native = ClusterVectorEnv.from_env_kwargs(kwargs, max_episode_steps=100_000, autoreset_mode=autoreset_mode)
    assert_same(native.reset(seed=seed), reference.reset(seed=seed), "reset")
    first_width = native.sim.pos.shape[1]
    rng = np.random.default_rng(seed)
    ended = 0
    for t in range(steps):
        actions = random_actions(mode, native.action_masks(), rng)
        got, want = native.step(actions), reference.step(actions)
        assert_same(got, want, f"step {t}")
        ended += int(np.count_nonzero(got[2] | got[3]))
    last_width = native.sim.pos.shape[1]
    native.close()
    reference.close()
    return ended, first_width, last_width


@pytest.mark.parametrize("reward", sorted(REWARD_CASES))
@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_autoreset_onto_wider_traces_matches_single_envs(mode, compiled, reward):
    steps = 600 if mode == "sequential" else 250
    ended, first, last = rollout_against_single_envs(cluster_kwargs(mode, REWARD_CASES[reward]), mode, compiled, steps)
    assert ended >= 6
    assert last > first, (first, last)  # some autoreset loaded a wider trace than any before


@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_same_step_autoreset_onto_wider_traces_matches_single_envs(mode, compiled):
    steps = 600 if mode == "sequential" else 250
    ended, first, last = rollout_against_single_envs(cluster_kwargs(mode, "ftf_excess"), mode, compiled, steps,
                                                     autoreset_mode=AutoresetMode.SAME_STEP)
    assert ended >= 6 and last > first


@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_generated_v0_survives_autoresets(mode, compiled):
    """The registered id, as a user makes it (the issue's reproduction): episodes of 20-40
    jobs; the rollouts cross autoresets and match K single ``Generated-v0`` envs."""
    kwargs = {"action_mode": mode, "reward": "ftf"}
    native = gym.make_vec("shockwave_gym/Generated-v0", num_envs=2, vectorization_mode="vector_entry_point",
                          **kwargs)
    reference = SyncVectorEnv([lambda: gym.make("shockwave_gym/Generated-v0", **kwargs)] * 2)
    assert_same(native.reset(seed=0), reference.reset(seed=0), "reset")
    rng = np.random.default_rng(0)
    ended = 0
    for t in range(4000):
        actions = random_actions(mode, native.action_masks(), rng)
        got, want = native.step(actions), reference.step(actions)
        assert_same(got, want, f"step {t}")
        ended += int(np.count_nonzero(got[2] | got[3]))
        if ended >= 3:
            break
    assert ended >= 3


def _snapshot(envs: ClusterVectorEnv) -> dict:
    """Every array and RNG state the env, its simulator, slots and mode hold."""
    out = {}
    for owner_name, owner in (("env", envs), ("sim", envs.sim), ("bank", envs.sim.bank), ("slots", envs.slots),
                              ("mode", envs.mode)):
        for key, value in vars(owner).items():
            if isinstance(value, np.ndarray) and value.dtype != object:
                out[f"{owner_name}.{key}"] = value.copy()
    out["rng"] = [None if rng is None else copy.deepcopy(rng.bit_generator.state) for rng in envs._np_random]
    out["tables"] = [None if t is None else id(t[0]) for t in envs._tables]
    return out


def _bad_actions(mode: str, envs: ClusterVectorEnv, acting: np.ndarray) -> list[np.ndarray]:
    k = envs.num_envs
    if mode == "priority":
        scores = np.zeros((k, MAX_JOBS), np.float32)
        row = int(np.flatnonzero(acting & envs.slots.valid.any(axis=1))[0])
        scores[row, int(np.flatnonzero(envs.slots.valid[row])[0])] = np.nan
        return [scores, np.zeros((k, MAX_JOBS + 1), np.float32), np.full((k, MAX_JOBS), "x")]
    if mode == "select":
        return [np.full((k, MAX_JOBS), 2, np.int64), np.full((k, MAX_JOBS), 0.5), np.zeros((k, 3), bool)]
    return [np.where(acting, MAX_JOBS + 1, 0).astype(np.int64), np.where(acting, -1, 0).astype(np.int64),
            np.zeros(k, np.float64), np.zeros((k, 2), np.int64)]


@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_refused_actions_with_pending_autoresets_change_nothing(mode, compiled):
    """Step until some cluster's episode ended (its reset is pending), send refused actions:
    every array and RNG is as before; then the rollout goes on exactly as the single envs'."""
    kwargs = cluster_kwargs(mode, None)
    reference = SyncVectorEnv([lambda kw=kw: gym.make(ENV_ID, **kw) for kw in kwargs])
    native = ClusterVectorEnv.from_env_kwargs(kwargs, max_episode_steps=100_000)
    assert_same(native.reset(seed=4), reference.reset(seed=4), "reset")
    rng = np.random.default_rng(4)
    refused_with_pending = 0
    for t in range(800):
        pending = native._autoreset.copy()
        if pending.any() and refused_with_pending < 4:
            before = _snapshot(native)
            for bad in _bad_actions(mode, native, ~pending):
                with pytest.raises(InvalidActionError):
                    native.step(bad)
                assert_same(_snapshot(native), before, f"step {t}: state after a refused action")
            refused_with_pending += 1
        actions = random_actions(mode, native.action_masks(), rng)
        assert_same(native.step(actions), reference.step(actions), f"step {t}")
    assert refused_with_pending >= 3


def _canonical(mode: str, masks: np.ndarray, rng) -> np.ndarray:
    """Actions whose values every dtype below holds exactly."""
    if mode == "priority":
        return rng.integers(-3, 4, (masks.shape[0], MAX_JOBS)).astype(np.float64) / 4  # multiples of 1/4
    return random_actions(mode, masks, rng).astype(np.int64)


DTYPES = {
    "select": [bool, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
               np.float16, np.float32, np.float64],
    "priority": [np.float16, np.float32, np.float64],
    "sequential": [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64],
}


@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_every_action_dtype_steps_alike(mode, compiled):
    """One env per dtype, stepped with the same values across autoresets: identical steps.
    Integer and bool priority scores are numbers too (checked against the single env below)."""
    kwargs = cluster_kwargs(mode, None)
    envs = {np.dtype(d).name: ClusterVectorEnv.from_env_kwargs(kwargs, max_episode_steps=100_000)
            for d in DTYPES[mode]}
    for envs_one in envs.values():
        envs_one.reset(seed=1)
    first = next(iter(envs.values()))
    rng = np.random.default_rng(1)
    for t in range(200 if mode == "sequential" else 80):
        actions = _canonical(mode, first.action_masks(), rng)
        results = {name: env.step(actions.astype(name)) for name, env in envs.items()}
        base = next(iter(results.values()))
        for name, got in results.items():
            assert_same(got, base, f"step {t} dtype {name}")


@pytest.mark.parametrize("compiled", BACKENDS)
@pytest.mark.parametrize("mode", ACTION_MODES)
def test_every_dtype_the_action_space_contains_matches_the_single_envs(mode, compiled):
    """Whatever ``action_space.contains`` accepts is stepped as the single envs step it."""
    kwargs = cluster_kwargs(mode, None)
    native = ClusterVectorEnv.from_env_kwargs(kwargs, max_episode_steps=100_000)
    reference = SyncVectorEnv([lambda kw=kw: gym.make(ENV_ID, **kw) for kw in kwargs])
    assert_same(native.reset(seed=2), reference.reset(seed=2), "reset")
    names = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
             "float32", "float64"]
    rng = np.random.default_rng(2)
    contained, stepped = set(), set()
    for t in range(150):
        name = names[t % len(names)]
        masks = native.action_masks()
        if mode == "sequential":
            actions = random_actions(mode, masks, rng)
        else:  # 0 and 1: values every dtype holds
            actions = (rng.random((len(kwargs), MAX_JOBS)) < 0.5).astype(np.int8)
        cast = actions.astype(name)
        if native.action_space.contains(cast):
            contained.add(name)
        elif name not in ("float16", "float32", "float64") or mode == "sequential":
            if mode == "sequential" and name.startswith("float"):
                with pytest.raises(InvalidActionError, match="integers"):
                    native.step(cast)
            continue
        stepped.add(name)
        assert_same(native.step(cast), reference.step(cast), f"step {t} dtype {name}")
    assert contained <= stepped and "bool" in stepped
    if mode != "sequential":
        assert {"float16", "float32", "float64"} <= stepped
