"""Checkers shipped with the package, in the manner of PettingZoo's API tests: use them
on your own agents, environments and trace files.

* :func:`check_agent` - valid choices every round (by the simulator's own validation),
  determinism under a seed, and an episode that finishes;
* :func:`check_env` - Gymnasium's env checker, a seeded determinism rollout and a pickle
  round trip for a registered environment id (imports gymnasium when called);
* :func:`check_trace` - the loader's full validation and the simulator's acceptance of a
  trace file.
"""

from shockwave_gym.testing.agent import AgentCheckError, AgentReport, check_agent
from shockwave_gym.testing.env import EnvCheckError, EnvReport, check_env
from shockwave_gym.testing.trace import TraceCheckError, TraceReport, check_trace

__all__ = [
    "AgentCheckError",
    "AgentReport",
    "EnvCheckError",
    "EnvReport",
    "TraceCheckError",
    "TraceReport",
    "check_agent",
    "check_env",
    "check_trace",
]
