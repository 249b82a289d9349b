"""The one agent interface every scheduler implements.

An agent is called once per round boundary with the read-only
:class:`~shockwave_gym.view.ClusterView` (its members: docs/VIEW.md) and returns the jobs to
run this round, a :data:`Decision`: job ids, or on a heterogeneous cluster a placement. The
set must fit (sum of gangs <= GPUs, per type on a heterogeneous cluster) and contain only
active jobs; the simulator rejects anything else with
:class:`~shockwave_gym.errors.InvalidActionError`.

- Planners (Gavel-family baselines, Shockwave) read the view directly.
- Learned policies read the *observation*, which the env builds from the same view
  (``shockwave_gym.interface.observation``); the adapters in
  ``shockwave_agents.learned`` wrap an SB3 model that way.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import TypeAlias

import numpy as np

from shockwave_agents.options import flag
from shockwave_gym.interface.packing import pack_in_order
from shockwave_gym.interface.placement import pack_for_cluster
from shockwave_gym.placement import Allocation, Placement
from shockwave_gym.view import ClusterView

__all__ = ["Agent", "Decision", "QueueOrderAgent", "pack_in_order"]

#: What :meth:`Agent.act` returns for one round: job ids (a sequence of ints or an integer
#: array), a :class:`~shockwave_gym.placement.Placement` (each job id with the index of its
#: GPU type), or a mapping ``{job_id: type}`` (a type name such as ``"v100"`` or an index
#: into ``view.cluster.types``). The last two place jobs on a heterogeneous cluster
#: (docs/HETEROGENEOUS.md, "Placement"); elsewhere only their job ids count. On a trace with
#: elastic jobs (docs/SEMANTICS.md, "Elastic jobs") an :class:`~shockwave_gym.placement.Allocation`
#: gives each job its GPU count (and type), as does a mapping ``{job_id: count}`` or
#: ``{job_id: (type, count)}``; job ids alone run every job on its gang.
Decision: TypeAlias = Sequence[int] | np.ndarray | Placement | Allocation | Mapping[int, str | int | tuple]


class Agent(ABC):
    """Base class. Subclasses set ``name`` and implement :meth:`act`."""

    name: str = "agent"

    def reset(self, view: ClusterView, seed: int | None = None) -> None:  # noqa: B027 - optional hook
        """Called once before the first round of an episode. Clear per-episode state here."""

    @abstractmethod
    def act(self, view: ClusterView) -> Decision:
        """The jobs to run in the round starting at ``view.time_s`` (a :data:`Decision`).

        - Job ids (a sequence of ints or an integer array): on a homogeneous cluster their
          order does not matter; on a heterogeneous one the simulator places them in the
          order given, each on the fastest type with room for its gang
          (:func:`~shockwave_gym.placement.place_in_order`).
        - A :class:`~shockwave_gym.placement.Placement`, or a mapping ``{job_id: type}``
          (a type name or an index into ``view.cluster.types``): an explicit placement on a
          heterogeneous cluster; on a homogeneous one only the job ids count.
        - With elastic jobs (``view.elastic``): an :class:`~shockwave_gym.placement.Allocation`
          or a mapping ``{job_id: count}`` / ``{job_id: (type, count)}`` giving each job one
          of ``view.allowed_counts(job_id)``.

        An empty selection idles the cluster for the round.
        """

    def stats(self) -> dict:
        """Agent-specific statistics for the run's JSON output (e.g. ``planner_stats``)."""
        return {}


class QueueOrderAgent(Agent):
    """A queue order: every round, the active jobs in ascending :meth:`sort_key` (a stable
    sort over ascending ids, so ties go by arrival), packed in that order
    (:func:`~shockwave_gym.interface.packing.pack_for_cluster`; ``backfill`` lets a later job
    take GPUs an earlier one cannot use)."""

    def __init__(self, backfill: bool = True):
        self.backfill = flag("backfill", backfill)

    @abstractmethod
    def sort_key(self, view: ClusterView, active: np.ndarray) -> np.ndarray:
        """One key per job of ``active``; lower runs first."""

    def act(self, view: ClusterView) -> np.ndarray:
        active = view.active_job_ids
        order = active[np.argsort(self.sort_key(view, active), kind="stable")]
        return pack_for_cluster(order, view, backfill=self.backfill)
