"""The native vector env's per-cluster set-up: one :class:`~shockwave_gym.env.ClusterEnv`
template per distinct sub-env (checked to agree on what the spaces depend on), the reward
tables of the fused step, the estimates a state carries, and small helpers for clusters whose
traces or tables differ."""

from __future__ import annotations

import numpy as np

from shockwave_gym.env.cluster_env import ClusterEnv
from shockwave_gym.env.vector.rewards import BatchReward, term_codes
from shockwave_gym.errors import InputError

#: What every sub-env must share (the spaces depend on it).
SHARED = ("action_mode", "max_jobs", "obs_version", "skip_trivial", "idle_allowed")


def make_templates(env_kwargs: list[dict]) -> list[ClusterEnv]:
    """One ClusterEnv per cluster (one per distinct dict: equal sources share traces), checked
    to agree on what the spaces depend on."""
    templates: dict[int, ClusterEnv] = {}
    for kw in env_kwargs:
        if id(kw) not in templates:
            templates[id(kw)] = ClusterEnv(**kw)
    out = [templates[id(kw)] for kw in env_kwargs]
    for t in out:  # gym.make_vec takes the fallback for these (fallback.needs_fallback)
        if not t.regime.is_default or t.obs_version == 3:
            raise InputError(f"the native vector env batches the default regime with obs_version 1 or 2, got regime "
                             f"{t.regime.describe()} and obs_version={t.obs_version}; use gym.make_vec (the fallback)")
    for name in SHARED:
        values = {getattr(t, name) for t in out}
        if len(values) > 1:
            raise InputError(f"every sub-env needs the same {name} (the spaces must agree), got {sorted(values)}")
    return out


def reward_tables_of(templates: list[ClusterEnv]) -> tuple[list, np.ndarray, np.ndarray]:
    """([(BatchReward, clusters mask)], term codes (K, terms), weights (K, terms)): clusters
    with the same reward terms (the exact terms, not their rounded repr) are computed together;
    the codes and weights are the fused step's reward tables."""
    groups: dict[tuple, list[int]] = {}
    for i, t in enumerate(templates):
        groups.setdefault(tuple((name, weight) for name, _, weight in t.reward_fn.terms), []).append(i)
    rewards = []
    terms = max(len(t.reward_fn.terms) for t in templates)
    term_code = np.full((len(templates), terms), -1, np.int64)
    term_weight = np.zeros((len(templates), terms))
    for rows in groups.values():
        mask = np.zeros(len(templates), bool)
        mask[rows] = True
        reward = BatchReward(templates[rows[0]].reward_fn)
        rewards.append((reward, mask))
        codes, weights = term_codes(reward)
        term_code[rows, : len(codes)] = codes
        term_weight[rows, : len(codes)] = weights
    return rewards, term_code, term_weight


class EstimateState:
    """One state's per-job estimates; ``extra`` holds (mean epoch duration, batch size,
    throughput), which only the observation reads."""

    __slots__ = ("progress", "active", "num_active", "remaining", "rho", "extra", "est", "derived")

    def __init__(self, progress, active, num_active, remaining, rho, extra):
        self.progress, self.active, self.num_active = progress, active, num_active
        self.remaining, self.rho, self.extra = remaining, rho, extra
        #: compiled path: the same arrays as the kernels' Estimates (state.py), and its
        #: ``derived`` flags (cleared for a cluster that resets)
        self.est = self.derived = None


def widened(active: np.ndarray, width: int) -> np.ndarray:
    """``active`` (K, jobs) with False columns up to ``width`` jobs (the jobs a narrower trace
    does not have were not active)."""
    out = np.zeros((active.shape[0], width), bool)
    out[:, : active.shape[1]] = active
    return out


def same_table(a, b) -> bool:
    """Whether two throughput tables give the same rates (the simulator's per-epoch arrays
    come from them, so clusters share those only when they agree)."""
    return a is b or dict(a.items()) == dict(b.items())
