"""The one agent interface every scheduler implements.

An agent is called once per round boundary with the read-only
:class:`~shockwave_gym.view.ClusterView` and returns the ids of the jobs to run this round.
The set must fit (sum of gangs <= GPUs) and contain only active jobs; the simulator rejects
anything else with :class:`~shockwave_gym.errors.InvalidActionError`.

- Planners (Gavel-family baselines, Shockwave) read the view directly.
- Learned policies read the *observation*, which the env builds from the same view
  (``shockwave_gym.interface.observation``); the adapters in
  ``shockwave_agents.learned`` wrap an SB3 model that way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from shockwave_gym.interface.packing import pack_in_order
from shockwave_gym.view import ClusterView

__all__ = ["Agent", "pack_in_order"]


class Agent(ABC):
    """Base class. Subclasses set ``name`` and implement :meth:`act`."""

    name: str = "agent"

    def reset(self, view: ClusterView, seed: int | None = None) -> None:  # noqa: B027 - optional hook
        """Called once before the first round of an episode. Clear per-episode state here."""

    @abstractmethod
    def act(self, view: ClusterView) -> Sequence[int] | np.ndarray:
        """Job ids to run in the round starting at ``view.time_s``."""

    def stats(self) -> dict:
        """Agent-specific statistics for the run's JSON output (e.g. ``planner_stats``)."""
        return {}
