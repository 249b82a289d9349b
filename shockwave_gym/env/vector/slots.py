"""The slot map of K clusters at once (:class:`~shockwave_gym.interface.slots.SlotMap`'s rule).

Every active job holds one of ``max_jobs`` slots from the boundary after its arrival until it
completes; freed slots go to waiting jobs in arrival order, lowest free slot first; jobs that
find none wait in an arrival-ordered queue.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from shockwave_gym.batch import jit as core_jit
from shockwave_gym.env.vector import jit


class SlotArrays(NamedTuple):
    """A :class:`BatchSlotMap`'s arrays as the compiled kernels read and write them."""

    slot_job: np.ndarray
    job_slot: np.ndarray
    queued: np.ndarray
    demand_gpus: np.ndarray
    queue_count: np.ndarray


class BatchSlotMap:
    """``slot_job`` (K, max_jobs) job id per slot (-1 empty), ``job_slot`` (K, jobs) slot per
    job (-1 none), ``queued`` (K, jobs) bool, ``demand_gpus`` (K,) sum of active gangs."""

    def __init__(self, num_clusters: int, max_jobs: int):
        self.max_jobs = max_jobs
        self.slot_job = np.full((num_clusters, max_jobs), -1, np.int64)
        self.job_slot = np.full((num_clusters, 0), -1, np.int64)
        self.queued = np.zeros((num_clusters, 0), bool)
        self.demand_gpus = np.zeros(num_clusters, np.int64)
        #: the queue length per cluster, kept by the kernels' slot update
        self.queue_count = np.zeros(num_clusters, np.int64)
        self._arrays: SlotArrays | None = None
        self._boxed: tuple | None = None

    def __getstate__(self):
        # the boxed struct (a numba object) does not pickle: it is built again on first use
        return {**self.__dict__, "_boxed": None}

    @property
    def arrays(self) -> SlotArrays:
        """The kernels' view of the arrays (the same objects), built again after a widening."""
        if self._arrays is None:
            self._arrays = SlotArrays(self.slot_job, self.job_slot, self.queued, self.demand_gpus, self.queue_count)
        return self._arrays

    @property
    def boxed(self):
        """:attr:`arrays` as the compiled kernels take them (batch.jit.box), kept while they hold."""
        arrays = self.arrays
        if self._boxed is None or self._boxed[0] is not arrays:
            self._boxed = (arrays, core_jit.box(arrays))
        return self._boxed[1]

    def widen(self, width: int) -> None:
        extra = width - self.job_slot.shape[1]
        if extra > 0:
            k = self.slot_job.shape[0]
            self.job_slot = np.concatenate([self.job_slot, np.full((k, extra), -1, np.int64)], axis=1)
            self.queued = np.concatenate([self.queued, np.zeros((k, extra), bool)], axis=1)
            self._arrays = None

    def share(self, slot_job: np.ndarray, job_slot: np.ndarray) -> None:
        """Take ``slot_job`` and ``job_slot`` (this map's shapes) as its own: the kernels
        then seat jobs in them (the single env's driver hands its SlotMap's, as views)."""
        if slot_job.shape != self.slot_job.shape or job_slot.shape != self.job_slot.shape:
            raise ValueError(f"cannot share slot arrays of shapes {slot_job.shape} and {job_slot.shape}")
        self.slot_job, self.job_slot = slot_job, job_slot
        self._arrays = None

    def reset(self, k: int) -> None:
        self.slot_job[k] = -1
        self.job_slot[k] = -1
        self.queued[k] = False
        self.demand_gpus[k] = 0
        self.queue_count[k] = 0

    @property
    def valid(self) -> np.ndarray:
        return self.slot_job >= 0

    @property
    def queue_length(self) -> np.ndarray:
        return self.queue_count.copy()

    def update(self, sim, rows: np.ndarray) -> None:
        """Free the slots of jobs no longer active, then seat waiting jobs, in ``rows``
        (jit.update_slots)."""
        jit.update_slots(rows, sim.boxed, self.boxed)
