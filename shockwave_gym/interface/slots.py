"""The slot map: which of a fixed number of slots each active job occupies.

Observations and actions of fixed size address jobs by slot. Every active job holds one of
``max_jobs`` slots from the boundary after its arrival until it completes; a freed slot goes
to the oldest waiting job. Jobs that find no free slot wait in a queue, in arrival order.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.config import require_positive_int
from shockwave_gym.view import ClusterView


class SlotMap:
    """Stable job -> slot assignment with an arrival-ordered overflow queue.

    ``slot_job[s]`` is the job id in slot ``s`` (-1 when empty); ``queue`` holds the ids of
    active jobs without a slot, oldest first. Call :meth:`update` once per round boundary.
    """

    __slots__ = ("max_jobs", "slot_job", "job_slot", "queue", "demand_gpus", "_seen", "_gather", "_valid", "_valid_int8", "_by_job", "_jobs_by_id")

    def __init__(self, max_jobs: int, num_jobs: int = 0):
        self.max_jobs = require_positive_int(max_jobs, "max_jobs")
        self.reset(num_jobs)

    def reset(self, num_jobs: int) -> None:
        """Empty every slot for a trace of ``num_jobs`` jobs (call at every episode start)."""
        self.slot_job = np.full(self.max_jobs, -1, dtype=np.int64)
        self.job_slot = np.full(num_jobs, -1, dtype=np.int64)
        self.queue = np.zeros(0, dtype=np.int64)
        self.demand_gpus = 0  # sum of the active jobs' gangs, slotted or queued
        self._seen: tuple[int, int, int] | None = None
        self._gather: np.ndarray | None = None
        self._valid: np.ndarray | None = None
        self._valid_int8: np.ndarray | None = None
        self._jobs_by_id: np.ndarray | None = None
        self._by_job: np.ndarray | None = None

    @property
    def valid(self) -> np.ndarray:
        """Boolean per slot: holds a job."""
        return self.slot_job >= 0

    def update(self, view: ClusterView) -> None:
        """Free the slots of completed jobs, then seat waiting jobs in arrival order."""
        if self.job_slot.size != view.num_jobs:
            self.reset(view.num_jobs)
        # Arrivals are a prefix of the trace and completions never revert, so for the same
        # view, equal counts of arrived and of active jobs mean the same active set.
        seen = (id(view), view.num_arrived, view.num_active)
        if seen == self._seen:
            return
        self._seen = seen
        self._gather = self._by_job = self._jobs_by_id = None
        active = view.active_job_ids
        self.demand_gpus = int(np.add.reduce(view.gang[active]))
        slot_job = self.slot_job
        occupied = slot_job >= 0
        gone = occupied & ~view.is_active[np.maximum(slot_job, 0)]
        if np.count_nonzero(gone):
            self.job_slot[slot_job[gone]] = -1
            slot_job[gone] = -1
        waiting = active[self.job_slot[active] < 0]  # ascending id = arrival order
        if waiting.size:
            free = (slot_job < 0).nonzero()[0][: waiting.size]
            seated = waiting[: free.size]
            slot_job[free] = seated
            self.job_slot[seated] = free
            self.queue = waiting[free.size:]
        elif self.queue.size:
            self.queue = self.queue[:0]

    def seated_elsewhere(self, view: ClusterView, num_arrived: int, num_active: int, queue: np.ndarray,
                         demand_gpus: int) -> None:
        """Take the seating a compiled step made in place on ``slot_job`` / ``job_slot`` for
        ``view`` at ``num_arrived`` arrived and ``num_active`` active jobs, with its queue and
        demand: the next :meth:`update` of that state is then a no-op, and the derived indexes
        are rebuilt on demand."""
        self.queue, self.demand_gpus = queue, demand_gpus
        self._seen = (id(view), num_arrived, num_active)
        self._gather = self._by_job = self._jobs_by_id = None

    def gather_index(self) -> np.ndarray:
        """(max_jobs,) int64: each slot's job id, ``num_jobs`` for an empty slot (an index
        into per-job arrays padded with one trailing entry). Read-only; cached until the
        next change."""
        if self._gather is None:
            valid = self.slot_job >= 0
            gather = self.slot_job.copy()
            np.putmask(gather, ~valid, self.job_slot.size)
            gather.flags.writeable = valid.flags.writeable = False
            self._gather, self._valid, self._valid_int8 = gather, valid, valid.view(np.int8)
        return self._gather

    def occupied(self) -> np.ndarray:
        """(max_jobs,) bool, read-only: where the slot holds a job (cached :attr:`valid`)."""
        if self._gather is None:
            self.gather_index()
        return self._valid

    def valid_int8(self) -> np.ndarray:
        """A fresh (max_jobs,) int8 array: 1 where the slot holds a job."""
        if self._gather is None:
            self.gather_index()
        return self._valid_int8.copy()

    def slots_by_job(self) -> np.ndarray:
        """The occupied slots in ascending order of their job ids (= arrival order).
        Read-only; cached until the next change."""
        if self._by_job is None:
            occupied = (self.slot_job >= 0).nonzero()[0]
            by_job = occupied[self.slot_job[occupied].argsort(kind="stable")]
            by_job.flags.writeable = False
            self._by_job = by_job
        return self._by_job

    def jobs_by_id(self) -> np.ndarray:
        """The slotted job ids, ascending (``slot_job[slots_by_job()]``). Read-only;
        cached until the next change."""
        if self._jobs_by_id is None:
            jobs = self.slot_job[self.slots_by_job()]
            jobs.flags.writeable = False
            self._jobs_by_id = jobs
        return self._jobs_by_id

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state):
        for name, value in state.items():
            setattr(self, name, value)
