"""Training smoke tests on the teaching id: MaskablePPO (sequential, select) and PPO
(priority) for 2,000 steps each, then 1,000 masked predictions per masked mode."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the rl extra (torch, SB3, sb3-contrib) is not installed")
sb3 = pytest.importorskip("stable_baselines3")
sb3_contrib = pytest.importorskip("sb3_contrib")

import shockwave_gym  # noqa: E402,F401  (registers the ids)
from shockwave_gym.env.wrappers import FlattenClusterObservation  # noqa: E402

TRAIN_STEPS = 2_000
PREDICTIONS = 1_000
PPO_KWARGS = dict(n_steps=256, batch_size=64, n_epochs=2, seed=0, device="cpu", verbose=0,
                  policy_kwargs=dict(net_arch=[64, 64]))


@pytest.fixture(autouse=True)
def _one_thread():
    torch.set_num_threads(1)


def _train_maskable(mode: str):
    env = gym.make("shockwave_gym/Teaching-v0", action_mode=mode)
    model = sb3_contrib.MaskablePPO("MultiInputPolicy", env, **PPO_KWARGS)
    model.learn(TRAIN_STEPS)
    assert model.num_timesteps >= TRAIN_STEPS
    return model, env


def test_maskable_ppo_sequential_never_picks_an_infeasible_job():
    model, env = _train_maskable("sequential")
    obs, _ = env.reset(seed=1)
    infeasible = episodes = 0
    for _ in range(PREDICTIONS):
        mask = env.unwrapped.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=False)
        infeasible += int(not mask[int(action)])
        obs, _, terminated, truncated, info = env.step(action)
        infeasible += info["action_repairs"]
        if terminated or truncated:
            episodes += 1
            assert info["metrics"]["completed_jobs"] == 12
            obs, _ = env.reset()
    assert infeasible == 0
    assert episodes >= 1


def test_maskable_ppo_select_trains_and_reports_repairs():
    model, env = _train_maskable("select")
    obs, _ = env.reset(seed=1)
    rounds = repaired_rounds = absent_bits = 0
    for _ in range(PREDICTIONS):
        mask = env.unwrapped.action_masks()
        action, _ = model.predict(obs, action_masks=mask, deterministic=False)
        absent_bits += int((np.asarray(action).astype(bool) & ~mask[1::2]).sum())
        obs, _, terminated, truncated, info = env.step(action)
        rounds += 1
        repaired_rounds += int(info["action_repairs"] > 0)
        if terminated or truncated:
            obs, _ = env.reset()
    assert absent_bits == 0  # masks keep empty slots at 0, so repairs are capacity only
    rate = repaired_rounds / rounds
    print(f"\nselect mode: repair rule fired in {repaired_rounds}/{rounds} rounds ({rate:.1%})")
    assert 0.0 <= rate <= 1.0


def test_ppo_priority_trains_and_finishes_episodes():
    env = gym.make("shockwave_gym/Teaching-v0", action_mode="priority")
    model = sb3.PPO("MultiInputPolicy", env, **PPO_KWARGS)
    model.learn(TRAIN_STEPS)
    assert model.num_timesteps >= TRAIN_STEPS
    obs, _ = env.reset(seed=2)
    for _ in range(500):
        action, _ = model.predict(obs, deterministic=True)
        obs, _, terminated, truncated, info = env.step(action)
        if terminated or truncated:
            break
    assert terminated and info["metrics"]["completed_jobs"] == 12


def test_ppo_mlp_on_the_flattened_observation():
    env = FlattenClusterObservation(gym.make("shockwave_gym/Teaching-v0", action_mode="priority"))
    obs, _ = env.reset(seed=0)
    assert obs.shape == (12 * (14 + 2) + 8,) and env.observation_space.contains(obs)
    model = sb3.PPO("MlpPolicy", env, **{**PPO_KWARGS, "n_steps": 64, "batch_size": 32})
    model.learn(256)
    assert model.num_timesteps >= 256
