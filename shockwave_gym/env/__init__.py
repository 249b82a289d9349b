"""The Gymnasium environment and its parts (one concept per module).

* :mod:`~shockwave_gym.env.cluster_env` - :class:`ClusterEnv` (its docstring is the spec);
* :mod:`~shockwave_gym.env.observation` - slot map and observation builder (view -> obs);
* :mod:`~shockwave_gym.env.actions` - the ``select``, ``priority`` and ``sequential`` modes;
* :mod:`~shockwave_gym.env.rewards` - named reward functions and their combination;
* :mod:`~shockwave_gym.env.render` - ANSI table and Gantt chart;
* :mod:`~shockwave_gym.env.wrappers` - wrappers for SB3 and mask-in-observation users;
* :mod:`~shockwave_gym.env.registration` - every Gymnasium id.
"""

from shockwave_gym.env.cluster_env import ClusterEnv
from shockwave_gym.env.observation import SlotMap, build_observation, observation_space
from shockwave_gym.env.registration import ENV_IDS, register_envs

__all__ = ["ENV_IDS", "ClusterEnv", "SlotMap", "build_observation", "observation_space", "register_envs"]
