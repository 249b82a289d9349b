"""The Gymnasium environment and its parts (one concept per module).

* :mod:`~shockwave_gym.env.cluster_env` - :class:`ClusterEnv` (its docstring is the spec);
* :mod:`~shockwave_gym.env.rewards` - named reward functions and their combination;
* :mod:`~shockwave_gym.env.render` - the ANSI table (rgb_array draws :mod:`shockwave_gym.gantt`);
* :mod:`~shockwave_gym.env.wrappers` - wrappers for SB3 and mask-in-observation users;
* :mod:`~shockwave_gym.env.registration` - every Gymnasium id.

Observation features, the slot map and the action modes' decoding are shared with agents, so
they live in :mod:`shockwave_gym.interface`; the env composes them.
"""

from __future__ import annotations

import importlib

# Names load on first use, so that registering the ids at ``import shockwave_gym`` does not
# import the env class (the CLI's start-up time counts in the baselines' speed targets).
_LAZY = {
    "ClusterEnv": "shockwave_gym.env.cluster_env",
    "ENV_IDS": "shockwave_gym.env.registration",
    "register_envs": "shockwave_gym.env.registration",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'shockwave_gym.env' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
