"""Every id's ``vector_entry_point``: the native vector env, or a clean fallback for what
it does not batch.

The native :class:`~shockwave_gym.env.vector.vector_env.ClusterVectorEnv` runs the compiled
kernels (numba) over clusters of one GPU type or several (``cluster=``: typed placement in
the ``priority`` and ``select`` modes) in the default information regime, with observation
version 1 or 2 and batched reward terms. When numba is missing (or ``compiled=False``), the
``sequential`` mode runs on a heterogeneous cluster (a ``cluster=`` with more than one type,
or any type but V100: its (job, type) picks are not batched), or the arguments ask for a
regime other than the default, ``obs_version=3`` or the ``fair_share`` reward term (a
``task`` that has it) or elastic jobs, :func:`make_vector_env` returns :class:`SyncClusterVectorEnv` instead
(each single env then runs its reference path where the kernels do not serve it): Gymnasium's
``SyncVectorEnv`` over K :class:`~shockwave_gym.env.cluster_env.ClusterEnv` (each in a
``TimeLimit`` when ``max_episode_steps`` is set), with the native env's ``action_masks()``
(K, mask length) and ``max_episode_steps``. It steps the clusters one after another, so it
is as fast as K single envs, and gives exactly their trajectories (sub-env ``i`` is
``gym.make(id, **kwargs)`` reset with seed ``seed + i``), autoreset following Gymnasium 1.x.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv

from shockwave_gym.errors import InputError


def is_heterogeneous(cluster) -> bool:
    """Whether a ``cluster=`` argument takes the heterogeneous path (anything but V100s only:
    :func:`~shockwave_gym.env.cluster_env.resolve_cluster`)."""
    from shockwave_gym.env.options import resolve_cluster

    return resolve_cluster(cluster) is not None


def needs_fallback(kwargs: dict) -> bool:
    """Whether env arguments ``kwargs`` take the fallback: the ``sequential`` mode on a
    heterogeneous cluster, or what :func:`~shockwave_gym.env.options.needs_single_envs` names."""
    from shockwave_gym.env.options import needs_single_envs

    typed_picks = kwargs.get("action_mode", "priority") == "sequential" and is_heterogeneous(kwargs.get("cluster"))
    return typed_picks or needs_single_envs(kwargs) is not None


class SyncClusterVectorEnv(SyncVectorEnv):
    """K single :class:`ClusterEnv`, stepped in turn (the fallback)."""

    def __init__(self, env_fns, *, max_episode_steps: int | None = None,
                 autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP):
        super().__init__(env_fns, autoreset_mode=autoreset_mode)
        self.max_episode_steps = max_episode_steps

    def action_masks(self) -> np.ndarray:
        """(K, mask length) bool: each cluster's ``ClusterEnv.action_masks()``."""
        return np.stack([env.unwrapped.action_masks() for env in self.envs])


def make_vector_env(num_envs: int = 1, *, max_episode_steps: int | None = None,
                    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
                    compiled: bool | None = None, env_factory=None, **kwargs):
    """The vector env of K clusters built by ``env_factory(**kwargs)`` (default
    :class:`ClusterEnv`): native when the kernels can batch them (numba installed,
    ``compiled`` not False, not :func:`needs_fallback`), else the fallback. ``compiled=True``
    insists on the native env (InputError without numba)."""
    from shockwave_gym.batch import jit

    if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
        raise InputError(f"num_envs must be a positive integer, got {num_envs!r}")
    if compiled and not jit.AVAILABLE:
        raise InputError("compiled=True needs numba (pip install numba): the native vector env runs compiled kernels")
    if compiled is not False and jit.AVAILABLE and not needs_fallback(kwargs):
        from shockwave_gym.env.vector.vector_env import ClusterVectorEnv

        return ClusterVectorEnv(num_envs, max_episode_steps=max_episode_steps, autoreset_mode=autoreset_mode,
                                **kwargs)
    if kwargs.get("render_mode") is not None:
        raise InputError("the vector env does not render; render a single env (gym.make) instead")
    if env_factory is None:
        from shockwave_gym.env.cluster_env import ClusterEnv as env_factory

    def make_one():
        env = env_factory(**kwargs)
        return gym.wrappers.TimeLimit(env, max_episode_steps) if max_episode_steps is not None else env

    return SyncClusterVectorEnv([make_one] * num_envs, max_episode_steps=max_episode_steps,
                                autoreset_mode=autoreset_mode)
