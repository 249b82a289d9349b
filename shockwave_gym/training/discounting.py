"""Semi-MDP discounting for PPO and MaskablePPO: discount by the rounds a step covered.

With ``skip_trivial`` one env step runs the agent's round and every following round no
action could change, so a step covers 1..k rounds (and, in ``sequential`` mode, a pick that
does not close a round covers 0). The env reports the count in ``info["rounds_elapsed"]``.
Discounting by ``gamma`` per env step would make a decision that skips ten rounds count as
one round away; here the discount between decision k and k + 1 is ``gamma ** n_k``, with
``n_k`` the rounds closed by step k:

    G_k = r_k + gamma ** n_k * G_{k+1}

and GAE uses the same per-step discount: ``delta_k = r_k + gamma ** n_k * V(s_{k+1}) -
V(s_k)``, ``A_k = delta_k + gamma ** n_k * lambda * A_{k+1}`` (lambda stays per decision).
``r_k`` is the step's reward as the env returns it (the sum of the rounds' rewards). A
time-limit truncation is bootstrapped with ``gamma ** n_k * V(terminal observation)``.

Use :class:`RoundDiscountedPPO` / :class:`RoundDiscountedMaskablePPO` in place of SB3's
``PPO`` / sb3-contrib's ``MaskablePPO`` (same arguments); they pick the matching rollout
buffer (:func:`round_discount_buffer`) and feed it each step's discounts from the infos. Any
VecEnv whose infos carry ``rounds_elapsed`` works: ``DummyVecEnv`` / ``SubprocVecEnv`` over
the cluster env, or :class:`~shockwave_gym.training.vec_adapter.NativeVecEnv`.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.buffers import MaskableDictRolloutBuffer, MaskableRolloutBuffer
from stable_baselines3 import PPO
from stable_baselines3.common.buffers import DictRolloutBuffer, RolloutBuffer

from shockwave_gym.errors import InputError

#: ``rounds``: gamma per round a step covered (semi-MDP); ``steps``: gamma per env step.
DISCOUNTS = ("rounds", "steps")


def check_discount(discount: str) -> str:
    """``discount`` if it is one of :data:`DISCOUNTS`, else one clear :class:`InputError`."""
    if discount not in DISCOUNTS:
        raise InputError(f"discount must be one of {', '.join(DISCOUNTS)}, got {discount!r}")
    return discount


def step_discounts(infos: list[dict], gamma: float) -> np.ndarray:
    """``gamma ** info["rounds_elapsed"]`` per env (float32)."""
    try:
        rounds = np.array([info["rounds_elapsed"] for info in infos], dtype=np.float64)
    except KeyError:
        raise InputError("discounting by rounds needs info['rounds_elapsed'] from every env step "
                         "(the cluster env's); use discount='steps' (plain PPO) for other envs") from None
    if np.any(rounds < 0):
        raise InputError(f"info['rounds_elapsed'] must be >= 0, got {rounds.tolist()}")
    return (float(gamma) ** rounds).astype(np.float32)


class _RoundDiscountBuffer:
    """Rollout-buffer mixin: per-step discounts, noted before each ``add``, used by GAE."""

    def reset(self) -> None:
        super().reset()
        self.discounts = np.ones((self.buffer_size, self.n_envs), dtype=np.float32)
        self._noted = None

    def note_step(self, discounts: np.ndarray, raw_rewards: np.ndarray) -> None:
        """The next ``add``'s per-env discounts and the rewards as the env returned them."""
        self._noted = (np.asarray(discounts, np.float32), np.array(raw_rewards, np.float32))

    def add(self, obs, action, reward, episode_start, value, log_prob, **kwargs) -> None:
        if self._noted is None:
            raise RuntimeError("a round-discount buffer needs each step's discounts: train with "
                               "RoundDiscountedPPO or RoundDiscountedMaskablePPO (shockwave_gym.training.discounting)")
        discounts, raw = self._noted
        self._noted = None
        reward = np.asarray(reward, np.float32)
        # SB3 bootstraps a time-limit truncation with gamma * V(terminal); rescale it to gamma ** n
        reward = raw + (discounts / np.float32(self.gamma)) * (reward - raw)
        self.discounts[self.pos] = discounts
        super().add(obs, action, reward, episode_start, value, log_prob, **kwargs)

    def compute_returns_and_advantage(self, last_values, dones: np.ndarray) -> None:
        """GAE with the per-step discounts (the module docstring's formula)."""
        last_values = last_values.clone().cpu().numpy().flatten()
        last_gae_lam = 0
        for step in reversed(range(self.buffer_size)):
            if step == self.buffer_size - 1:
                next_non_terminal = 1.0 - dones.astype(np.float32)
                next_values = last_values
            else:
                next_non_terminal = 1.0 - self.episode_starts[step + 1]
                next_values = self.values[step + 1]
            discount = self.discounts[step]
            delta = self.rewards[step] + discount * next_values * next_non_terminal - self.values[step]
            last_gae_lam = delta + discount * self.gae_lambda * next_non_terminal * last_gae_lam
            self.advantages[step] = last_gae_lam
        self.returns = self.advantages + self.values


class RoundDiscountRolloutBuffer(_RoundDiscountBuffer, RolloutBuffer):
    """SB3's ``RolloutBuffer`` with per-step discounts."""


class RoundDiscountDictRolloutBuffer(_RoundDiscountBuffer, DictRolloutBuffer):
    """SB3's ``DictRolloutBuffer`` (the cluster env's observations) with per-step discounts."""


class RoundDiscountMaskableRolloutBuffer(_RoundDiscountBuffer, MaskableRolloutBuffer):
    """sb3-contrib's ``MaskableRolloutBuffer`` with per-step discounts."""


class RoundDiscountMaskableDictRolloutBuffer(_RoundDiscountBuffer, MaskableDictRolloutBuffer):
    """sb3-contrib's ``MaskableDictRolloutBuffer`` with per-step discounts."""


def round_discount_buffer(observation_space: spaces.Space, *, maskable: bool) -> type:
    """The round-discount buffer class for an observation space and algorithm."""
    dict_obs = isinstance(observation_space, spaces.Dict)
    if maskable:
        return RoundDiscountMaskableDictRolloutBuffer if dict_obs else RoundDiscountMaskableRolloutBuffer
    return RoundDiscountDictRolloutBuffer if dict_obs else RoundDiscountRolloutBuffer


class _StepDiscounts:
    """Wraps the algorithm's callback during a rollout: on each step, notes the step's
    discounts and raw rewards in the buffer (before SB3 bootstraps truncations), then
    passes every call on."""

    def __init__(self, inner, buffer: _RoundDiscountBuffer, gamma: float):
        self.inner, self.buffer, self.gamma = inner, buffer, gamma
        self._locals: dict = {}

    def on_rollout_start(self) -> None:
        self.inner.on_rollout_start()

    def update_locals(self, locals_: dict) -> None:
        self._locals = locals_
        self.inner.update_locals(locals_)

    def on_step(self) -> bool:
        self.buffer.note_step(step_discounts(self._locals["infos"], self.gamma), self._locals["rewards"])
        return self.inner.on_step()

    def on_rollout_end(self) -> None:
        self.inner.on_rollout_end()


class _RoundDiscountAlgorithm:
    """Algorithm mixin: the round-discount buffer, fed by :class:`_StepDiscounts`."""

    _maskable = False

    def _setup_model(self) -> None:
        if not 0.0 < self.gamma <= 1.0:
            raise InputError(f"discounting by rounds needs 0 < gamma <= 1, got {self.gamma}")
        if self.rollout_buffer_class is None:
            self.rollout_buffer_class = round_discount_buffer(self.observation_space, maskable=self._maskable)
        if not issubclass(self.rollout_buffer_class, _RoundDiscountBuffer):
            raise InputError(f"{type(self).__name__} needs a round-discount rollout buffer, got {self.rollout_buffer_class.__name__}")
        super()._setup_model()

    def collect_rollouts(self, env, callback, rollout_buffer, n_rollout_steps, *args, **kwargs) -> bool:
        wrapped = _StepDiscounts(callback, rollout_buffer, self.gamma)
        return super().collect_rollouts(env, wrapped, rollout_buffer, n_rollout_steps, *args, **kwargs)


class RoundDiscountedPPO(_RoundDiscountAlgorithm, PPO):
    """SB3's ``PPO``, discounting by the rounds each step covered (module docstring)."""


class RoundDiscountedMaskablePPO(_RoundDiscountAlgorithm, MaskablePPO):
    """sb3-contrib's ``MaskablePPO``, discounting by the rounds each step covered."""

    _maskable = True


def algorithm_class(algo: str, discount: str) -> type:
    """The SB3 algorithm class for ``algo`` (``ppo`` / ``maskable_ppo``) and ``discount``."""
    check_discount(discount)
    if discount == "rounds":
        return RoundDiscountedPPO if algo == "ppo" else RoundDiscountedMaskablePPO
    return PPO if algo == "ppo" else MaskablePPO
