"""An SB3 ``VecEnv`` over the native vector env: K clusters in one process, one batched step.

PPO and MaskablePPO see an ordinary ``VecEnv``: ``step_wait`` runs every cluster's round in
one pass of :class:`~shockwave_gym.env.vector.vector_env.ClusterVectorEnv` (same-step
autoreset, SB3's convention: a finished cluster's last observation is in its info's
``terminal_observation`` and the returned one starts the next episode), so the policy's
forward pass is batched over all K clusters. ``env_method("action_masks")`` returns the
batched masks row by row, which is how sb3-contrib asks for them. The clusters are rows of
one vector env, not separate env objects: ``get_attr`` and other ``env_method`` calls read
the vector env's own attribute or method (the same for every index), and ``set_attr`` is
refused unless it addresses every cluster.

Per-cluster infos carry ``TimeLimit.truncated``, the step's ``rounds_elapsed`` and
``elapsed_s`` (the rounds and simulated seconds it covered, what discounting by rounds reads:
:mod:`~shockwave_gym.training.discounting`) and, when an episode ends,
``terminal_observation`` and ``metrics`` (all that SB3 and the training monitor read).
"""

from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv

from shockwave_gym.env.vector.vector_env import ClusterVectorEnv


class NativeVecEnv(VecEnv):
    """SB3 ``VecEnv`` stepping a :class:`ClusterVectorEnv` (built in same-step autoreset)."""

    def __init__(self, num_envs: int, *, venv: ClusterVectorEnv | None = None, **env_kwargs):
        if venv is None:
            venv = ClusterVectorEnv(num_envs, autoreset_mode=AutoresetMode.SAME_STEP, **env_kwargs)
        self.venv = venv
        super().__init__(num_envs, self.venv.single_observation_space, self.venv.single_action_space)
        self._actions = None

    @classmethod
    def from_env_kwargs(cls, env_kwargs: list[dict], *, max_episode_steps: int | None = None,
                        prefetch: bool | str = False) -> NativeVecEnv:
        """One cluster per dict of env arguments (cluster sizes and trace sources may differ:
        a run over several suites). ``prefetch``: draw the next episodes' traces and build
        their tables in a worker process (True, False or ``"auto"``: when two CPUs are
        usable; env/vector/prefetch.py); the episodes are the same either way."""
        venv = ClusterVectorEnv.from_env_kwargs(env_kwargs, max_episode_steps=max_episode_steps,
                                                autoreset_mode=AutoresetMode.SAME_STEP, prefetch=prefetch)
        return cls(venv.num_envs, venv=venv)

    def reset(self):
        seeds = self._seeds
        obs, _ = self.venv.reset(seed=None if all(s is None for s in seeds) else list(seeds))
        self._reset_seeds()
        self._reset_options()
        return obs

    def seed(self, seed: int | None = None):
        """SB3's seeding (each cluster ``seed + i`` at the next reset); also tells the vector
        env, whose prefetching worker can start on those episodes at once."""
        seeds = super().seed(seed)
        self.venv.announce_seeds(list(seeds))
        return seeds

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self):
        obs, rewards, terminated, truncated, infos = self.venv.step(self._actions)
        dones = terminated | truncated
        time_limit = (truncated & ~terminated).tolist()
        rounds, elapsed = infos["rounds_elapsed"], infos["elapsed_s"]
        if dones.any():  # an ended cluster's row of the step's infos is in final_info
            final = infos["final_info"]
            rounds = np.where(dones, final["rounds_elapsed"], rounds)
            elapsed = np.where(dones, final["elapsed_s"], elapsed)
        out = [{"TimeLimit.truncated": t, "rounds_elapsed": n, "elapsed_s": s}
               for t, n, s in zip(time_limit, rounds.tolist(), elapsed.tolist(), strict=True)]
        if dones.any():
            final_obs = infos["final_obs"]
            metrics = final.get("metrics", {})
            has_metrics = final.get("_metrics", np.zeros(self.num_envs, bool))
            for i in np.flatnonzero(dones).tolist():
                out[i]["terminal_observation"] = final_obs[i]
                if has_metrics[i]:
                    out[i]["metrics"] = {key: value[i].item() for key, value in metrics.items() if not key.startswith("_")}
        return obs, rewards.astype(np.float32), dones, out

    def close(self) -> None:
        self.venv.close()

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list:
        rows = list(self._get_indices(indices))
        if method_name == "action_masks":
            masks = self.venv.action_masks()
            return [masks[i] for i in rows]
        return [getattr(self.venv, method_name)(*method_args, **method_kwargs) for _ in rows]

    def get_attr(self, attr_name: str, indices=None) -> list:
        rows = list(self._get_indices(indices))
        return [getattr(self.venv, attr_name) for _ in rows]

    def set_attr(self, attr_name: str, value, indices=None) -> None:
        """Set an attribute of the vector env, which every cluster shares: only for all
        clusters at once (``indices`` None or every index), never silently for more than
        asked."""
        rows = sorted(set(self._get_indices(indices)))
        if rows != list(range(self.num_envs)):
            raise ValueError(f"set_attr({attr_name!r}) for clusters {rows}: the {self.num_envs} clusters share one "
                             "native vector env, so its attributes can only be set for all of them (indices=None)")
        setattr(self.venv, attr_name, value)

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._get_indices(indices)]
