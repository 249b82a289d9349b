"""shockwave-gym: a Gymnasium GPU-cluster scheduling environment (after Shockwave, NSDI '23).

Data flows one way: trace -> job specs -> simulator state -> observation -> agent -> action
-> simulator -> metrics. Importing this package registers the Gymnasium ids
(``shockwave_gym/Cluster-v0`` and friends).
"""

from __future__ import annotations

__version__ = "0.1.0"

from shockwave_gym.errors import InputError, InvalidActionError, TraceError
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.throughput import ThroughputTable

__all__ = [
    "InputError",
    "InvalidActionError",
    "SimConfig",
    "Simulator",
    "ThroughputTable",
    "TraceError",
    "__version__",
    "evaluate",
]


def __getattr__(name: str):
    # The harness pulls in pandas and matplotlib; load it only when asked for.
    if name == "evaluate":
        from shockwave_gym.harness import evaluate

        return evaluate
    if name == "ClusterEnv":
        from shockwave_gym.env.cluster_env import ClusterEnv

        return ClusterEnv
    raise AttributeError(f"module 'shockwave_gym' has no attribute {name!r}")


# --- Gymnasium registration (kept last: it imports the env package) ---------------------
# String entry points: the env class itself is imported by gym.make, not here.
from shockwave_gym.env.registration import register_envs  # noqa: E402

register_envs()
__all__ += ["ClusterEnv"]
