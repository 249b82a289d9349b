"""Every registered id through the same checks: the shipped :func:`shockwave_gym.testing.check_env`
(Gymnasium's checker, a seeded determinism rollout, a pickle round trip), SB3's env checker,
determinism across processes, vector envs, and ``gym.make`` in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import shockwave_gym
from shockwave_gym.env import ENV_IDS, ClusterEnv
from shockwave_gym.interface.actions import ACTION_MODES
from shockwave_gym.testing import EnvCheckError, check_env
from shockwave_gym.testing.env import rollout_digest

IDS = sorted(ENV_IDS)
CASES = [(env_id, mode) for env_id in IDS for mode in ACTION_MODES]
ROLLOUT_STEPS = 60


@pytest.mark.parametrize("env_id", IDS)
def test_every_registered_id_passes_the_shipped_checker(env_id):
    report = check_env(env_id)
    assert report.action_modes == tuple(ACTION_MODES)


class _UnseededEnv(ClusterEnv):
    """Adds noise from an unseeded generator to the reward: not reproducible."""

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        return obs, reward + float(np.random.default_rng().random()), terminated, truncated, info


def test_the_checker_catches_a_nondeterministic_env():
    gym.register("shockwave_gym_test/Unseeded-v0", entry_point=_UnseededEnv, kwargs={"trace": "teaching-12"})
    try:
        with pytest.raises(EnvCheckError, match="(?i)Unseeded-v0.*(differ|determinis)"):
            check_env("shockwave_gym_test/Unseeded-v0", action_modes=("select",), steps=10)
    finally:
        gym.registry.pop("shockwave_gym_test/Unseeded-v0")


@pytest.mark.parametrize("env_id, mode", CASES)
def test_sb3_check_env(env_id, mode):
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make(env_id, action_mode=mode, disable_env_checker=True).unwrapped
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sb3_check_env(env, warn=True)
    # The only advice SB3 gives: "jobs" is (max_jobs, features), not 1-D; that layout is
    # deliberate (slot-wise policies), and FlattenClusterObservation exists for MLPs.
    other = [str(w.message) for w in caught if "unconventional shape" not in str(w.message)]
    assert other == []


def test_determinism_across_processes():
    script = Path(__file__).resolve()
    out = subprocess.run(
        [sys.executable, str(script), "--digests"], capture_output=True, text=True, timeout=300, check=True
    )
    other = json.loads(out.stdout)
    here = {f"{env_id}|{mode}": rollout_digest(env_id, mode, seed=11, steps=25) for env_id, mode in CASES}
    assert other == here


def test_generated_traces_follow_the_seed():
    env = gym.make("shockwave_gym/Generated-v0")
    env.reset(seed=5)
    first = env.unwrapped.trace
    env.reset(seed=5)
    assert env.unwrapped.trace == first
    env.reset()  # no seed: the next trace from the same stream
    assert env.unwrapped.trace != first
    env.reset(seed=6)
    assert env.unwrapped.trace != first
    assert 20 <= env.unwrapped.trace.num_jobs <= 40


@pytest.mark.parametrize("vectorization_mode", ["sync", "async"])
def test_make_vec(vectorization_mode):
    envs = gym.make_vec("shockwave_gym/Teaching-v0", num_envs=2, vectorization_mode=vectorization_mode)
    try:
        obs, info = envs.reset(seed=[1, 2])
        assert obs["jobs"].shape == (2, 12, 14)
        done_any = False
        for _ in range(120):
            obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())
            assert reward.shape == (2,)
            if terminated.any():
                done_any = True
                finished = np.flatnonzero(terminated)[0]
                assert info["_metrics"][finished]
                assert info["metrics"]["avg_jct_s"][finished] > 0
        assert done_any
    finally:
        envs.close()


def test_record_episode_statistics_sees_the_episode():
    env = gym.wrappers.RecordEpisodeStatistics(gym.make("shockwave_gym/Teaching-v0"))
    env.reset(seed=0)
    total, steps = 0.0, 0
    while True:
        _, reward, terminated, truncated, info = env.step(env.action_space.sample())
        total += reward
        steps += 1
        if terminated or truncated:
            break
    assert info["episode"]["l"] == steps
    assert info["episode"]["r"] == pytest.approx(total)
    assert info["metrics"]["completed_jobs"] == 12


@pytest.mark.parametrize(
    "code",
    [
        "import gymnasium as gym, shockwave_gym; env = gym.make('shockwave_gym/Cluster-v0')",
        "import gymnasium as gym; env = gym.make('shockwave_gym:shockwave_gym/Cluster-v0')",
    ],
)
def test_gym_make_in_a_fresh_interpreter(code):
    check = code + "; obs, info = env.reset(seed=0); env.step(env.action_space.sample()); print(obs['jobs'].shape)"
    out = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(120, 14)"


def test_registered_ids_are_the_documented_ones():
    assert set(IDS) == {"shockwave_gym/Cluster-v0", "shockwave_gym/Teaching-v0", "shockwave_gym/Generated-v0",
                        "shockwave_gym/Hetero-v0", "shockwave_gym/Elastic-v0", "shockwave_gym/Elastic-Hetero-v0"}
    assert gym.make("shockwave_gym/Cluster-v0").unwrapped.gpus == 32
    assert gym.make("shockwave_gym/Teaching-v0").unwrapped.gpus == 4
    assert shockwave_gym.ClusterEnv is ClusterEnv


if __name__ == "__main__" and sys.argv[1:] == ["--digests"]:
    print(json.dumps({f"{e}|{m}": rollout_digest(e, m, seed=11, steps=25) for e, m in CASES}))
