"""``check_env``: the checks every registered environment id must pass.

For each action mode it runs Gymnasium's own env checker (with its warnings promoted to
errors), a seeded determinism rollout (two rollouts with the same seed and the same seeded
random valid actions give the same digest; another seed gives another) and a pickle round
trip mid-episode (the copy and the original continue identically). Usage::

    from shockwave_gym.testing import check_env
    check_env("shockwave_gym/Teaching-v0")

Gymnasium is imported here, not at package import: the rest of ``shockwave_gym.testing``
works without it.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shockwave_gym.interface.actions import ACTION_MODES


class EnvCheckError(Exception):
    """The environment failed one of :func:`check_env`'s checks; the message says which."""


@dataclass(frozen=True)
class EnvReport:
    env_id: str
    action_modes: tuple[str, ...]
    rollout_steps: int

    def summary(self) -> str:
        return (
            f"{self.env_id}: Gymnasium's checker, a seeded determinism rollout of {self.rollout_steps} "
            f"steps and a pickle round trip pass in action modes {', '.join(self.action_modes)}"
        )


def random_valid_action(env, rng: np.random.Generator, mode: str):
    """A random action that the env's current mask allows, drawn from ``rng``."""
    mask = env.unwrapped.action_masks()
    if mode == "priority":
        return rng.uniform(-1.0, 1.0, size=mask.shape).astype(np.float32)
    if mode == "select":
        nvec = getattr(env.unwrapped.action_space, "nvec", None)
        if nvec is not None:  # a count per slot (elastic jobs): an allowed entry per slot
            rows = mask.reshape(nvec.size, -1)
            return np.array([rng.choice(np.flatnonzero(row)) for row in rows], dtype=np.int64)
        return (rng.random(mask.size // 2) < 0.5).astype(np.int8) * mask[1::2]
    legal = np.flatnonzero(mask)
    return int(legal[rng.integers(legal.size)])


def rollout_digest(env_id: str, mode: str, seed: int, steps: int = 60, **make_kwargs) -> str:
    """SHA-256 over observations, rewards, flags, info and final metrics of a rollout with
    random valid actions (their RNG seeded with ``seed`` too); resets when an episode ends."""
    import gymnasium as gym

    env = gym.make(env_id, action_mode=mode, **make_kwargs)
    rng = np.random.default_rng(seed)
    digest = hashlib.sha256()

    def add_obs(obs):
        for key in sorted(obs):
            digest.update(np.ascontiguousarray(obs[key]).tobytes())

    obs, info = env.reset(seed=seed)
    add_obs(obs)
    for _ in range(steps):
        obs, reward, terminated, truncated, info = env.step(random_valid_action(env, rng, mode))
        add_obs(obs)
        digest.update(np.float64(reward).tobytes())
        digest.update(bytes([terminated, truncated]))
        digest.update(repr((info["round_index"], info["time_s"], info["queued_job_ids"])).encode())
        if terminated or truncated:
            digest.update(json.dumps(info["metrics"], sort_keys=True).encode())
            obs, info = env.reset()
            add_obs(obs)
    env.close()
    return digest.hexdigest()


def _check_pickle(env_id: str, mode: str, make_kwargs: dict) -> None:
    import gymnasium as gym

    env = gym.make(env_id, action_mode=mode, **make_kwargs)
    rng = np.random.default_rng(0)
    env.reset(seed=1)
    for _ in range(5):
        env.step(random_valid_action(env, rng, mode))
    clone = pickle.loads(pickle.dumps(env))
    rng_a, rng_b = np.random.default_rng(9), np.random.default_rng(9)
    for step in range(8):
        out_a = env.step(random_valid_action(env, rng_a, mode))
        out_b = clone.step(random_valid_action(clone, rng_b, mode))
        same_obs = all(np.array_equal(out_a[0][key], out_b[0][key]) for key in out_a[0])
        if not same_obs or out_a[1:4] != out_b[1:4]:
            raise EnvCheckError(f"{env_id} ({mode}): a pickled copy diverged {step + 1} step(s) after the copy")
        if out_a[2] or out_a[3]:
            break


def check_env(
    env_id: str,
    *,
    action_modes: Sequence[str] = ACTION_MODES,
    seed: int = 3,
    steps: int = 60,
    **make_kwargs,
) -> EnvReport:
    """Run ``env_id`` (a registered id, any ``gym.make`` keywords in ``make_kwargs``)
    through the checks above in every mode of ``action_modes``; raise
    :class:`EnvCheckError` naming the check and the mode on the first failure."""
    import gymnasium as gym
    from gymnasium.utils.env_checker import check_env as gym_check_env

    for mode in action_modes:
        for render_mode in (None, "ansi"):
            env = gym.make(env_id, action_mode=mode, render_mode=render_mode, **make_kwargs)
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # Gymnasium's advice counts as a failure
                try:
                    gym_check_env(env.unwrapped, skip_render_check=render_mode is None)
                except (AssertionError, UserWarning) as exc:
                    raise EnvCheckError(f"{env_id} ({mode}): Gymnasium's env checker: {exc}") from exc
            env.close()
        first = rollout_digest(env_id, mode, seed, steps, **make_kwargs)
        if rollout_digest(env_id, mode, seed, steps, **make_kwargs) != first:
            raise EnvCheckError(f"{env_id} ({mode}): two rollouts with seed {seed} differ")
        if rollout_digest(env_id, mode, seed + 1, steps, **make_kwargs) == first:
            raise EnvCheckError(f"{env_id} ({mode}): seeds {seed} and {seed + 1} gave identical rollouts")
        _check_pickle(env_id, mode, make_kwargs)
    return EnvReport(env_id=env_id, action_modes=tuple(action_modes), rollout_steps=steps)
