"""Wrappers for common training setups. Each docstring shows its use."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium import spaces


class FlattenClusterObservation(gym.ObservationWrapper):
    """Flatten the Dict observation into one float32 vector, for SB3 ``MlpPolicy``.

    Layout: ``jobs`` row by row (slot-major), then ``job_valid``, ``picked``, ``cluster``;
    length ``max_jobs * (10 + 2) + 8`` in observation version 1; on a trace with elastic jobs
    the ``elastic`` entry follows, row by row (docs/ENV.md, "Elastic jobs"). Bounds are the
    Dict's bounds. Action masks pass
    through (``action_masks()`` is forwarded)::

        import gymnasium as gym
        import shockwave_gym
        from shockwave_gym.env.wrappers import FlattenClusterObservation
        from stable_baselines3 import PPO

        env = FlattenClusterObservation(gym.make("shockwave_gym/Teaching-v0", action_mode="priority"))
        model = PPO("MlpPolicy", env, n_steps=64, batch_size=32).learn(2_000)
    """

    KEYS = ("jobs", "job_valid", "picked", "cluster")

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, spaces.Dict) or set(space.spaces) - {"elastic"} != set(self.KEYS):
            raise TypeError("FlattenClusterObservation needs a shockwave_gym ClusterEnv observation space")
        self.keys = self.KEYS + (("elastic",) if "elastic" in space.spaces else ())
        lows, highs = [], []
        for key in self.keys:
            sub = space[key]
            if isinstance(sub, spaces.MultiBinary):
                lows.append(np.zeros(sub.n, np.float32))
                highs.append(np.ones(sub.n, np.float32))
            else:
                lows.append(sub.low.ravel())
                highs.append(sub.high.ravel())
        self.observation_space = spaces.Box(np.concatenate(lows), np.concatenate(highs), dtype=np.float32)

    def observation(self, observation: dict) -> np.ndarray:
        return np.concatenate([np.asarray(observation[key], dtype=np.float32).ravel() for key in self.keys])

    def action_masks(self) -> np.ndarray:
        return self.env.get_wrapper_attr("action_masks")()


class ActionMaskObservation(gym.ObservationWrapper):
    """Add the current ``action_masks()`` to the Dict observation as ``"action_mask"``.

    For libraries that read masks from the observation (RLlib-style, Jumanji-style) rather
    than from sb3-contrib's ``action_masks()`` method. The mask's layout follows the action
    mode (see ``ClusterEnv``: 2 * max_jobs for ``select``, max_jobs + 1 for ``sequential``,
    max_jobs for ``priority``)::

        import gymnasium as gym
        import shockwave_gym
        from shockwave_gym.env.wrappers import ActionMaskObservation

        env = ActionMaskObservation(gym.make("shockwave_gym/Teaching-v0", action_mode="sequential"))
        obs, info = env.reset(seed=0)
        legal = obs["action_mask"].astype(bool)    # sample only among legal actions
        obs, reward, terminated, truncated, info = env.step(int(legal.nonzero()[0][0]))
    """

    def __init__(self, env: gym.Env):
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, spaces.Dict):
            raise TypeError("ActionMaskObservation needs a Dict observation space")
        action_space = env.action_space
        if isinstance(action_space, spaces.Discrete):
            size = int(action_space.n)
        elif isinstance(action_space, spaces.MultiBinary):
            size = 2 * int(np.prod(action_space.shape))
        elif isinstance(action_space, spaces.MultiDiscrete):  # elastic select: nvec entries per slot
            size = int(action_space.nvec.sum())
        else:
            size = int(np.prod(action_space.shape))
        self.observation_space = spaces.Dict({**space.spaces, "action_mask": spaces.MultiBinary(size)})

    def observation(self, observation: dict) -> dict:
        mask = self.env.get_wrapper_attr("action_masks")()
        return {**observation, "action_mask": mask.astype(np.int8)}

    def action_masks(self) -> np.ndarray:
        return self.env.get_wrapper_attr("action_masks")()
