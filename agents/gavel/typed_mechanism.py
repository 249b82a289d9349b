"""Gavel's round mechanism over GPU types: turn a per-type allocation ``X[j, t]`` into one
placement per round (docs/HETEROGENEOUS.md, "Agents").

``X[j, t]`` in [0, 1] is the share of rounds job ``j`` should spend on type ``t``
(``sum_t X[j, t] <= 1``). The homogeneous mechanism (:mod:`.mechanism`, M1-M4) is generalised
pair by pair, as Gavel's heterogeneous scheduler does:

- **M1 recompute**: unchanged (stale after an arrival or completion, at most every 1000 s).
- **M2 reset / credits**: each tracked job holds a credit ``T[j, t]`` per type (starting at
  half a round) and each type a total ``W[t]``; after a round the job's executed seconds are
  added to ``T[j, t]`` and ``W[t]`` of the type it ran on. At a reset the deficit
  ``D[j, t] += X[j, t] (now - t_r) - (T[j, t] - credit)`` and the credits start again.
- **M3 priority** ``p[j, t] = X[j, t] / (T[j, t] / W[t])``: the allocation divided by the share
  of type ``t``'s time the job has received.
- **M4 selection**: every (job, type) pair with ``X > 0`` sorted by ``(p, D, X)`` descending
  (ties: job id, then type order); scanned greedily, a pair is taken when the job is not placed
  yet and the type has room for its whole gang. Jobs left over (``X = 0`` everywhere, or no
  allocation yet) are then placed in id order by the default rule (fastest type with room);
  one without an allocation takes its GPUs without running when ``hold_unallocated_gpus``
  (the homogeneous mechanism's fidelity rule, kept so both variants idle alike).

Our generalisation; Gavel's paper gives the per-type priority, the rest follows M1-M4.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.options import flag
from shockwave_gym.interface import Placement, pack_typed_in_order


class TypedGavelMechanism:
    """Per-(job, type) credits, deficits and priorities, and the pair-greedy selection."""

    def __init__(
        self,
        num_jobs: int,
        type_gpus: np.ndarray,
        *,
        min_recompute_interval_s: float,
        initial_credit_s: float,
        hold_unallocated_gpus: bool = True,
    ):
        self.type_gpus = np.asarray(type_gpus, dtype=np.int64)
        num_types = self.type_gpus.size
        self.min_recompute_interval_s = float(min_recompute_interval_s)
        self.initial_credit_s = float(initial_credit_s)
        self.hold_unallocated_gpus = flag("hold_unallocated_gpus", hold_unallocated_gpus)
        self.tracked = np.zeros(num_jobs, dtype=bool)
        self.time_so_far_s = np.zeros((num_jobs, num_types))
        self.deficit_s = np.zeros((num_jobs, num_types))
        self.allocation = np.zeros((num_jobs, num_types))
        self.has_allocation = np.zeros(num_jobs, dtype=bool)
        self.worker_time_s = np.zeros(num_types)
        self.last_reset_s = 0.0
        self.stale = False

    def tracked_ids(self) -> np.ndarray:
        return np.flatnonzero(self.tracked)

    def record_run(self, job_ids: np.ndarray, types: np.ndarray, executed_s: np.ndarray) -> None:
        for job_id, t, seconds in zip(job_ids.tolist(), types.tolist(), executed_s.tolist(), strict=True):
            if self.tracked[job_id]:
                self.time_so_far_s[job_id, t] += seconds
            self.worker_time_s[t] += seconds

    def retire(self, job_ids: np.ndarray) -> None:
        if job_ids.size:
            self.tracked[job_ids] = False
            self.has_allocation[job_ids] = False
            self.stale = True

    def admit(self, job_ids: np.ndarray) -> None:
        if job_ids.size:
            self.tracked[job_ids] = True
            self.time_so_far_s[job_ids] = self.initial_credit_s
            self.deficit_s[job_ids] = 0.0
            self.has_allocation[job_ids] = False
            self.allocation[job_ids] = 0.0
            self.stale = True

    def should_recompute(self, now_s: float) -> bool:
        if not self.stale:
            return False
        return (now_s - self.last_reset_s) >= self.min_recompute_interval_s or self.last_reset_s == 0

    def reset(self, now_s: float) -> None:
        elapsed_s = now_s - self.last_reset_s
        ids = self.tracked_ids()
        received = self.time_so_far_s[ids] - self.initial_credit_s
        should = np.where(self.has_allocation[ids, None], self.allocation[ids] * elapsed_s, 0.0)
        self.deficit_s[ids] += should - received
        self.time_so_far_s[ids] = self.initial_credit_s
        self.worker_time_s[:] = self.initial_credit_s * ids.size
        self.last_reset_s = now_s

    def set_allocation(self, job_ids: np.ndarray, allocation: np.ndarray) -> None:
        allocation = np.asarray(allocation, dtype=np.float64)
        if allocation.shape != (job_ids.size, self.type_gpus.size):
            raise ValueError(f"allocation shape {allocation.shape} != ({job_ids.size}, {self.type_gpus.size})")
        if not np.all(np.isfinite(allocation)):
            raise ValueError("allocation must be finite")
        self.has_allocation[:] = False
        self.allocation[:] = 0.0
        self.allocation[job_ids] = np.clip(allocation, 0.0, 1.0)
        self.has_allocation[job_ids] = True
        self.stale = False

    def priorities(self, job_ids: np.ndarray) -> np.ndarray:
        """(len(job_ids), T) priorities ``X / (T / W)``; 0 where X is 0 or absent."""
        x = self.allocation[job_ids]
        with np.errstate(divide="ignore", invalid="ignore"):
            fraction = np.where(self.worker_time_s > 0.0, self.time_so_far_s[job_ids] / self.worker_time_s, 0.0)
            priority = np.where(fraction > 0.0, x / fraction, x * 1e9)
        return np.where(self.has_allocation[job_ids, None] & (x != 0.0), priority, 0.0)

    def select(self, view) -> Placement:
        """M4 over (job, type) pairs; then the leftover jobs by the default rule."""
        ids = self.tracked_ids()
        gang = np.asarray(view.gang)
        runnable = np.asarray(view.runnable)
        free = self.type_gpus.copy()
        placed_ids: list[int] = []
        placed_types: list[int] = []
        placed = np.zeros(gang.size, dtype=bool)
        if ids.size:
            p = self.priorities(ids)
            x = self.allocation[ids]
            d = self.deficit_s[ids]
            rows, cols = np.nonzero((x > 0.0) & self.has_allocation[ids, None] & runnable[ids])
            # lexsort: last key first; stable, so ascending (row, col) order breaks ties
            order = np.lexsort((-x[rows, cols], -d[rows, cols], -p[rows, cols]))
            for k in order.tolist():
                j, t = int(ids[rows[k]]), int(cols[k])
                if placed[j] or free[t] < gang[j]:
                    continue
                free[t] -= gang[j]
                placed[j] = True
                placed_ids.append(j)
                placed_types.append(t)
        rest = ids[~placed[ids]]
        if rest.size and free.max() > 0:
            holds = ~self.has_allocation[rest] if self.hold_unallocated_gpus else None
            if not self.hold_unallocated_gpus:
                rest = rest[self.has_allocation[rest]]
            capacity = free
            leftover = pack_typed_in_order(rest, _Capacity(view, capacity), holds=holds)
            placed_ids += leftover.job_ids.tolist()
            placed_types += leftover.gpu_types.tolist()
        return Placement(np.asarray(placed_ids, dtype=np.int64), np.asarray(placed_types, dtype=np.int64))


class _Capacity:
    """A view with only ``capacity`` GPUs free per type (for packing the leftover jobs)."""

    def __init__(self, view, capacity: np.ndarray):
        self.gang, self.throughput_by_type, self.runnable = view.gang, view.throughput_by_type, view.runnable
        self.type_gpus = capacity
