"""shockwave-gym: a Gymnasium GPU-cluster scheduling environment (after Shockwave, NSDI '23).

Data flows one way: trace -> job specs -> simulator state -> observation -> agent -> action
-> simulator -> metrics. The core (simulator, view, traces, metrics, runner) needs neither
Gymnasium nor the env; when Gymnasium is installed, importing this package registers the
Gymnasium ids (``shockwave_gym/Cluster-v0`` and friends), which imports gymnasium and
nothing else of the env.
"""

from __future__ import annotations

from shockwave_gym._version import __version__
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError, InvalidActionError, TraceError
from shockwave_gym.regimes import Regime
from shockwave_gym.simulator import Simulator
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.view import ClusterView, HiddenLengthError, OracleAccessError

__all__ = [
    "ClusterView",
    "HiddenLengthError",
    "InputError",
    "InvalidActionError",
    "OracleAccessError",
    "Regime",
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


# --- Gymnasium registration (kept last) -------------------------------------------------
# Only when gymnasium is installed: the core works without it. String entry points: the env
# class itself is imported by gym.make, not here.
def _register_if_gymnasium() -> None:
    from importlib.util import find_spec

    if find_spec("gymnasium") is None:
        return
    from shockwave_gym.env.registration import register_envs

    register_envs()
    __all__.append("ClusterEnv")


_register_if_gymnasium()
