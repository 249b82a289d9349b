"""The three action modes (:mod:`shockwave_gym.interface.actions`) for K clusters: each
checks the batched action and gives the masks; the kernels decode ``priority`` and ``select``
(:func:`~shockwave_gym.env.vector.fused.advance`). The ``sequential`` mode's picks are built
here (:meth:`BatchSequential.choose`: a (K, jobs) bool mask of the rounds that close, which
rows close, the repair counts), with the single mode's rules row by row.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.env.vector.slots import BatchSlotMap
from shockwave_gym.errors import InvalidActionError


def rows_error(rows: np.ndarray, what: str) -> InvalidActionError:
    return InvalidActionError(f"sub-env(s) {np.flatnonzero(rows)[:5].tolist()}: {what}")


def _selection(slots: BatchSlotMap, width: int, taken_jobs: np.ndarray, job_ids: np.ndarray) -> np.ndarray:
    """(K, width) bool with ``job_ids[taken_jobs]`` set per row."""
    sel = np.zeros((job_ids.shape[0], width), bool)
    r, c = np.nonzero(taken_jobs)
    sel[r, job_ids[r, c]] = True
    return sel


class _ModeBase:
    """What the modes share: construction, the action's shape check, no per-round state."""

    closes_every_step = True
    name = ""

    def __init__(self, num_clusters: int, max_jobs: int, *, idle_allowed: bool = True):
        self.max_jobs = max_jobs
        self.idle_allowed = idle_allowed

    def _shaped(self, action, shape: tuple) -> np.ndarray:
        array = np.asarray(action)
        if array.shape != shape:
            raise InvalidActionError(f"{self.name} actions must have shape {shape}, got {array.shape}")
        return array

    def start_round(self, slots, gang, gpus, rows) -> None:
        """Nothing to forget between rounds (the sequential mode overrides this)."""

    def check(self, action, slots: BatchSlotMap, rows: np.ndarray, *, finite: bool = True) -> np.ndarray:
        """``action`` in the one dtype ``choose`` reads, or InvalidActionError; changes
        nothing, so a step checks its action before it runs any pending autoreset."""
        raise NotImplementedError


class BatchSelect(_ModeBase):
    name = "select"

    def check(self, action, slots: BatchSlotMap, rows: np.ndarray, *, finite: bool = True) -> np.ndarray:
        """(K, max_jobs) C-contiguous bool: every dtype holding only 0 and 1 in every row."""
        bits = self._shaped(action, slots.slot_job.shape)
        if bits.dtype != bool:
            as_bool = bits.astype(bool) if bits.dtype.kind in "iuf" else None
            # exactly 0 or 1 <=> equal to its truth value (0.5, 2, inf and NaN all differ)
            if as_bool is None or np.count_nonzero(as_bool != bits):
                raise InvalidActionError("select actions must hold only 0 and 1 (bool, integer or float)")
            bits = as_bool
        return np.ascontiguousarray(bits)

    def masks(self, slots: BatchSlotMap) -> np.ndarray:
        out = np.ones((*slots.slot_job.shape, 2), bool)
        out[:, :, 1] = slots.valid
        return out.reshape(slots.slot_job.shape[0], -1)


class BatchPriority(_ModeBase):
    name = "priority"

    def check(self, action, slots: BatchSlotMap, rows: np.ndarray, *, finite: bool = True) -> np.ndarray:
        """(K, max_jobs) C-contiguous float64 scores (bool, integer or float: the values
        PriorityMode sorts); with ``finite``, those of the occupied slots of ``rows`` must be."""
        scores = self._shaped(action, slots.slot_job.shape)
        if scores.dtype.kind not in "biuf":
            raise InvalidActionError(f"priority scores must be numbers (integer or float), got dtype {scores.dtype}")
        scores = np.ascontiguousarray(scores, dtype=np.float64)
        if finite:
            valid = slots.valid & rows[:, None]
            bad = rows & ~(np.isfinite(scores) | ~valid).all(axis=1)  # per score: finite ones may sum to inf
            if bad.any():
                raise rows_error(bad, "priority scores must be finite")
        return scores

    def masks(self, slots: BatchSlotMap) -> np.ndarray:
        return slots.valid


class BatchSequential(_ModeBase):
    """One pick per sub-step per cluster; holds the rounds being built (numpy only: a
    sub-step is a handful of array operations)."""

    closes_every_step = False
    name = "sequential"

    def __init__(self, num_clusters: int, max_jobs: int, *, idle_allowed: bool = True):
        super().__init__(num_clusters, max_jobs, idle_allowed=idle_allowed)
        self.picked = np.zeros((num_clusters, max_jobs), bool)
        self.free_gpus = np.zeros(num_clusters, np.int64)
        self.slot_gang = np.zeros((num_clusters, max_jobs), np.int64)
        self.valid = np.zeros((num_clusters, max_jobs), bool)
        self.slot_job = np.full((num_clusters, max_jobs), -1, np.int64)

    def start_round(self, slots: BatchSlotMap, gang: np.ndarray, gpus: np.ndarray, rows: np.ndarray) -> None:
        row = rows[:, None]
        valid = slots.valid
        self.picked &= ~row
        self.free_gpus = np.where(rows, gpus, self.free_gpus)
        self.valid = np.where(row, valid, self.valid)
        slot_gang = np.where(valid, np.take_along_axis(gang, np.maximum(slots.slot_job, 0), axis=1), 0)
        self.slot_gang = np.where(row, slot_gang, self.slot_gang)
        self.slot_job = np.where(row, slots.slot_job, self.slot_job)

    def pickable(self) -> np.ndarray:
        return self.valid & ~self.picked & (self.slot_gang <= self.free_gpus[:, None])

    def check(self, action, slots: BatchSlotMap, rows: np.ndarray, *, finite: bool = True) -> np.ndarray:
        """(K,) int64 picks (any integer dtype, or bool), each of ``rows`` in 0..max_jobs."""
        value = np.asarray(action)
        if value.shape != rows.shape or not (np.issubdtype(value.dtype, np.integer) or value.dtype == bool):
            raise InvalidActionError(f"sequential actions must be {rows.size} integers, got {action!r}")
        out_of_range = rows & ((value < 0) | (value > self.max_jobs))
        if out_of_range.any():
            raise rows_error(out_of_range, f"sequential action must be in 0..{self.max_jobs}")
        return value.astype(np.int64)

    def choose(self, action, slots: BatchSlotMap, gang: np.ndarray, gpus: np.ndarray, rows: np.ndarray):
        """``action`` as :meth:`check` returns it; picks of the rows in ``rows``."""
        value = action
        end = value == self.max_jobs
        slot = np.minimum(value, self.max_jobs - 1)
        index = np.arange(rows.size)
        legal = self.pickable()[index, slot]
        if not self.idle_allowed:  # "end round" is illegal too: it fills the round
            legal &= ~end
            end = np.zeros_like(end)
        pick = rows & ~end & legal
        infeasible = rows & ~end & ~legal
        self.picked[index[pick], slot[pick]] = True
        self.free_gpus[pick] -= self.slot_gang[index[pick], slot[pick]]
        if not self.idle_allowed and infeasible.any():
            self._fill(infeasible)
        closes = rows & (end | infeasible | (pick & ~self.pickable().any(axis=1)))
        return self.selection(slots, gang.shape[1], closes), closes, infeasible.astype(np.int64)

    def selection(self, slots: BatchSlotMap, width: int, closes: np.ndarray) -> np.ndarray:
        """(K, width) bool: the picked jobs of the rows in ``closes``."""
        return _selection(slots, width, self.picked & closes[:, None], slots.slot_job)

    def _take(self, rows: np.ndarray, slot: np.ndarray) -> None:
        r = np.flatnonzero(rows)
        self.picked[r, slot[r]] = True
        self.free_gpus[r] -= self.slot_gang[r, slot[r]]

    def _fill(self, rows: np.ndarray) -> None:
        """Pick, in ``rows``, every job that still fits in arrival order (SequentialMode._fill)."""
        big = np.iinfo(np.int64).max
        while True:
            pickable = self.pickable() & rows[:, None]
            active = pickable.any(axis=1)
            if not active.any():
                return
            self._take(active, np.argmin(np.where(pickable, self.slot_job, big), axis=1))

    def forced_picks(self, rows: np.ndarray) -> np.ndarray:
        """SequentialMode.forced_picks in ``rows``; returns the rows whose round is closed."""
        closed = np.zeros(rows.size, bool)
        if self.idle_allowed:
            return closed
        active = rows.copy()
        while active.any():
            pickable = self.pickable()
            count = np.count_nonzero(pickable, axis=1)
            left = self.valid & ~self.picked
            left_gang = (self.slot_gang * left).sum(axis=1)
            none = active & (count == 0)
            all_fit = active & ~none & (left_gang <= self.free_gpus)
            single = active & ~none & ~all_fit & (count == 1)
            closed |= none | all_fit
            self.picked |= left & all_fit[:, None]
            self.free_gpus -= np.where(all_fit, left_gang, 0)
            if single.any():
                self._take(single, np.argmax(pickable, axis=1))
            active = single
        return closed

    def masks(self, slots: BatchSlotMap) -> np.ndarray:
        return np.concatenate([self.pickable(), np.full((self.picked.shape[0], 1), self.idle_allowed)], axis=1)


BATCH_MODES = {"select": BatchSelect, "priority": BatchPriority, "sequential": BatchSequential}
