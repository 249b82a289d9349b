"""The native vector env's per-cluster set-up: one :class:`~shockwave_gym.env.ClusterEnv`
template per distinct sub-env (checked to agree on what the spaces depend on), the reward
tables of the kernels, and whether clusters may share a trace's tables."""

from __future__ import annotations

import numpy as np

from shockwave_gym.env.cluster_env import ClusterEnv
from shockwave_gym.env.rewards import REWARDS
from shockwave_gym.env.vector.fused import TERM_CODES, reward_codes
from shockwave_gym.errors import InputError

#: The reward terms the kernels pay.
BATCHED = tuple(TERM_CODES)

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
        if t.cluster is not None and t.action_mode == "sequential":
            raise InputError(f"the native vector env batches the sequential mode on one GPU type, got cluster "
                             f"{t.cluster}; use gym.make_vec (the fallback)")
    for name in SHARED:
        values = {getattr(t, name) for t in out}
        if len(values) > 1:
            raise InputError(f"every sub-env needs the same {name} (the spaces must agree), got {sorted(values)}")
    return out


def reward_tables_of(templates: list[ClusterEnv]) -> tuple[np.ndarray, np.ndarray]:
    """(term codes (K, terms), weights (K, terms)) of the clusters' rewards, as the kernels
    pay them (fused.reward_codes; -1 ends a cluster's list); InputError for a term they do
    not pay."""
    terms = max(len(t.reward_fn.terms) for t in templates)
    term_code = np.full((len(templates), terms), -1, np.int64)
    term_weight = np.zeros((len(templates), terms))
    for row, template in enumerate(templates):
        codes = reward_codes(template.reward_fn)
        if codes is None:
            raise unbatched(template.reward_fn)
        term_code[row, : len(codes[0])] = codes[0]
        term_weight[row, : len(codes[1])] = codes[1]
    return term_code, term_weight


def unbatched(reward_fn) -> InputError:
    """The error for a reward the kernels do not pay: a built-in term they lack, or a callable."""
    for name, fn, _ in getattr(reward_fn, "terms", ()):
        if name in REWARDS and REWARDS[name] is fn and name not in BATCHED:
            return InputError(f"reward term {name!r} is not batched in the vector env; use the single env or "
                              f"vectorization_mode='sync' (batched terms: {', '.join(BATCHED)})")
        if name not in BATCHED or REWARDS.get(name) is not fn:
            return InputError(f"reward term {name!r} is a custom callable, which the vector env cannot batch; "
                              f"use built-in rewards ({', '.join(REWARDS)}) or vectorization_mode='sync'")
    return InputError(f"reward {reward_fn!r} is not a weighted sum of built-in terms, which the vector env "
                      f"cannot batch; use vectorization_mode='sync'")


def same_table(a, b) -> bool:
    """Whether two throughput tables give the same rates (the simulator's per-epoch arrays
    come from them, so clusters share those only when they agree)."""
    return a is b or dict(a.items()) == dict(b.items())
