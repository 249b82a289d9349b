"""The one agent interface every scheduler implements.

An agent is called once per round boundary with the read-only
:class:`~shockwave_gym.view.ClusterView` and returns the ids of the jobs to run this round.
The set must fit (sum of gangs <= GPUs) and contain only active jobs; the simulator rejects
anything else with :class:`~shockwave_gym.errors.InvalidActionError`.

- Planners (Gavel-family baselines, Shockwave) read the view directly.
- Learned policies read the *observation*, which the env builds from the same view
  (``shockwave_gym.env.observation``); the adapters in
  ``shockwave_agents.learned`` wrap an SB3 model that way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class Agent(ABC):
    """Base class. Subclasses set ``name`` and implement :meth:`act`."""

    name: str = "agent"

    def reset(self, view, seed: int | None = None) -> None:  # noqa: B027 - optional hook
        """Called once before the first round of an episode. Clear per-episode state here."""

    @abstractmethod
    def act(self, view) -> Sequence[int] | np.ndarray:
        """Job ids to run in the round starting at ``view.time_s``."""

    def stats(self) -> dict:
        """Agent-specific statistics for the run's JSON output (e.g. ``planner_stats``)."""
        return {}


def pack_in_order(order: np.ndarray, gang: np.ndarray, gpus: int, *, backfill: bool = True) -> np.ndarray:
    """Take jobs in ``order`` while their gangs fit in ``gpus``.

    With ``backfill`` a job that does not fit is skipped and smaller ones behind it may run;
    without it, selection stops at the first job that does not fit (strict order).
    """
    free = gpus
    chosen = []
    for job_id, size in zip(order.tolist(), gang[order].tolist(), strict=True):
        if size <= free:
            chosen.append(job_id)
            free -= size
            if free == 0:
                break
        elif not backfill:
            break
    return np.asarray(chosen, dtype=np.int64)
