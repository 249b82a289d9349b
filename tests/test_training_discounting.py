"""Semi-MDP discounting (shockwave_gym.training.discounting): the discount between decision k
and k + 1 is gamma ** n_k, n_k the rounds step k covered, in the returns and GAE advantages
the rollout buffer holds, and ``train``'s native vector env reports n_k for every step."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

pytest.importorskip("stable_baselines3")
pytest.importorskip("sb3_contrib")

from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

from shockwave_gym.errors import InputError  # noqa: E402
from shockwave_gym.training.discounting import RoundDiscountedPPO, algorithm_class  # noqa: E402

GAMMA = 0.9


class ScriptedEnv(gym.Env):
    """Episodes of fixed rewards; ``rounds[k]`` is the info's ``rounds_elapsed`` of step k.
    The observation is the step index, so the decisions (and the policy's inputs) do not
    depend on how many rounds a step skipped."""

    observation_space = gym.spaces.Box(0.0, 10.0, (1,), np.float32)
    action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def __init__(self, rewards, rounds, truncate: bool = False):
        self.rewards, self.rounds, self.truncate = list(rewards), list(rounds), truncate
        self.k = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.k = 0
        return np.zeros(1, np.float32), {}

    def step(self, action):
        reward, rounds = self.rewards[self.k], self.rounds[self.k]
        self.k += 1
        end = self.k == len(self.rewards)
        info = {"rounds_elapsed": rounds}
        return np.full(1, self.k, np.float32), float(reward), end and not self.truncate, end and self.truncate, info


class Capture(BaseCallback):
    """Copies the buffer's returns, advantages, values and rewards at the end of the rollout."""

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        buffer = self.model.rollout_buffer
        self.seen = {key: np.array(getattr(buffer, key))[:, 0] for key in ("returns", "advantages", "values", "rewards")}


def rollout(rewards, rounds, *, algo=RoundDiscountedPPO, gae_lambda=1.0, truncate=False, episodes=2):
    """One rollout of ``episodes`` whole episodes; the buffer's arrays (one env). Learning rate 0:
    the policy after learning is the one that collected the rollout."""
    torch.manual_seed(0)
    env = DummyVecEnv([lambda: ScriptedEnv(rewards, rounds, truncate)])
    n = len(rewards) * episodes
    model = algo("MlpPolicy", env, n_steps=n, batch_size=n, n_epochs=1, gamma=GAMMA, gae_lambda=gae_lambda, learning_rate=0.0,
                 seed=0, device="cpu", policy_kwargs={"net_arch": [8]})
    capture = Capture()
    model.learn(total_timesteps=n, callback=capture)
    return capture.seen, model


def semi_mdp_returns(rewards, rounds):
    """G_k = r_k + gamma ** n_k * G_{k+1}, by hand, for one whole episode."""
    out, following = [], 0.0
    for reward, n in zip(reversed(rewards), reversed(rounds), strict=True):
        following = reward + GAMMA ** n * following
        out.append(following)
    return out[::-1]


REWARDS = [-1.0, -2.0, -3.0, -0.5]


def test_same_decisions_different_skips_get_the_semi_mdp_returns():
    """Two episodes with the same rewards and decisions; the second's steps skipped more
    rounds. Each gets G_k = r_k + gamma ** n_k G_{k+1}, checked against numbers worked out
    by hand, and the GAE advantages with lambda = 1 are G_k - V(s_k)."""
    plain, skipping = [1, 1, 1, 1], [1, 4, 2, 1]
    # by hand, gamma 0.9: G_2 = -3 + 0.9 ** 2 * -0.5 = -3.405 (skipping) vs -3 + 0.9 * -0.5 = -3.45
    assert semi_mdp_returns(REWARDS, skipping)[2] == pytest.approx(-3.405)
    assert semi_mdp_returns(REWARDS, skipping)[0] == pytest.approx(-1 + 0.9 * (-2 + 0.9 ** 4 * -3.405))
    for rounds in (plain, skipping):
        seen, _ = rollout(REWARDS, rounds)
        expected = semi_mdp_returns(REWARDS, rounds) * 2  # two whole episodes in the rollout
        np.testing.assert_allclose(seen["returns"], expected, rtol=1e-5)
        np.testing.assert_allclose(seen["advantages"], np.array(expected) - seen["values"], rtol=1e-5, atol=1e-6)
    skip_returns = rollout(REWARDS, skipping)[0]["returns"]
    plain_returns = rollout(REWARDS, plain)[0]["returns"]
    assert skip_returns[0] > plain_returns[0] + 0.1  # the skipped rounds discount the later costs more


def test_a_sequential_pick_closing_no_round_is_not_discounted():
    """Sub-steps that close no round (rounds_elapsed 0) are discounted by gamma ** 0 = 1."""
    seen, _ = rollout(REWARDS, [0, 0, 1, 3])
    # G_3 = -0.5; G_2 = -3 + 0.9 * -0.5 = -3.45; G_1 = -2 + G_2; G_0 = -1 + G_1
    np.testing.assert_allclose(seen["returns"][:4], [-6.45, -5.45, -3.45, -0.5], rtol=1e-5)


def test_gae_with_lambda_uses_the_per_step_discounts():
    rounds, lam = [2, 1, 3, 1], 0.8
    seen, _ = rollout(REWARDS, rounds, gae_lambda=lam)
    values, advantages = seen["values"], np.zeros(8)
    following = 0.0
    for k in reversed(range(8)):
        last = k % 4 == 3
        discount = GAMMA ** rounds[k % 4]
        next_value = 0.0 if last else values[k + 1]
        delta = REWARDS[k % 4] + discount * next_value - values[k]
        following = delta + (0.0 if last else discount * lam * following)
        advantages[k] = following
    np.testing.assert_allclose(seen["advantages"], advantages, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(seen["returns"], advantages + values, rtol=1e-5, atol=1e-6)


def test_per_step_discounting_ignores_the_skipped_rounds():
    """discount='steps' is plain PPO: the same returns whatever the steps skipped (so the
    tests above would catch a buffer that ignored the rounds)."""
    assert algorithm_class("ppo", "steps") is PPO
    seen, _ = rollout(REWARDS, [1, 4, 2, 1], algo=PPO)
    np.testing.assert_allclose(seen["returns"], semi_mdp_returns(REWARDS, [1, 1, 1, 1]) * 2, rtol=1e-5)


def test_a_time_limit_truncation_bootstraps_with_gamma_to_the_rounds():
    rounds = [1, 1, 1, 3]
    seen, model = rollout(REWARDS, rounds, truncate=True, episodes=1)
    terminal = model.policy.obs_to_tensor(np.full(1, 4, np.float32))[0]
    with torch.no_grad():
        value = float(model.policy.predict_values(terminal)[0, 0])
    assert seen["rewards"][3] == pytest.approx(-0.5 + GAMMA ** 3 * value, rel=1e-5)


def test_missing_rounds_and_bad_discounts_are_refused():
    class NoRounds(ScriptedEnv):
        def step(self, action):
            obs, reward, terminated, truncated, _ = super().step(action)
            return obs, reward, terminated, truncated, {}

    env = DummyVecEnv([lambda: NoRounds(REWARDS, [1] * 4)])
    model = RoundDiscountedPPO("MlpPolicy", env, n_steps=4, batch_size=4, n_epochs=1, device="cpu")
    with pytest.raises(InputError, match="rounds_elapsed"):
        model.learn(total_timesteps=4)
    with pytest.raises(InputError, match="discount must be one of rounds, steps"):
        algorithm_class("ppo", "time")
    from shockwave_gym.training.train import TrainConfig

    with pytest.raises(InputError, match="discount must be"):
        TrainConfig(out="x", discount="round")
    assert TrainConfig(out="x").discount == "rounds"


def test_the_native_vector_env_reports_every_steps_rounds():
    """NativeVecEnv passes ``rounds_elapsed`` through, also on the step that ends an episode
    (where the vector env keeps it in ``final_info``): with skip_trivial some steps cover
    several rounds, and an episode's rounds add up to the steps the same scores take
    without skipping (every round a step)."""
    from shockwave_gym.training.vec_adapter import NativeVecEnv

    counts = {}
    for skip in (True, False):
        venv = NativeVecEnv.from_env_kwargs([{"trace": "teaching-12", "skip_trivial": skip}])
        venv.reset()
        per_step = []
        while True:
            venv.step_async(np.zeros((1, venv.action_space.shape[0]), np.float32))
            _, _, dones, infos = venv.step_wait()
            per_step.append(infos[0]["rounds_elapsed"])
            if dones[0]:
                break
        venv.close()
        counts[skip] = per_step
    assert set(counts[False]) == {1}
    assert max(counts[True]) > 1 and min(counts[True]) >= 1
    assert sum(counts[True]) == len(counts[False])
