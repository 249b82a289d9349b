"""The round rules (docs/SEMANTICS.md, "Round rules (R1–R5)") for K clusters at once.

:class:`BatchSimulator` holds K independent clusters as padded (clusters x jobs) arrays and
runs one round in every cluster that steps with a handful of whole-batch numpy operations.
Each cluster has its own trace, configuration, clock, idle jumps and early round ends; the
arithmetic is the single :class:`~shockwave_gym.simulator.Simulator`'s, operation for
operation, so every cluster's state equals that of a simulator given the same job sets.

Job ``j`` of cluster ``k`` is entry ``[k, j]``; a cluster with fewer jobs than the widest is
padded with jobs that never arrive. A job's current epoch is tracked as a flat index into the
:class:`~shockwave_gym.batch.bank.EpochBank`: work only grows, so after a round the index is
found by a binary search from where it was (the single view's ``searchsorted`` gives the same
index, since a job's epoch ends are sorted and never interleave with other jobs').
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import NamedTuple

import numpy as np

from shockwave_gym.batch import jit
from shockwave_gym.batch.bank import EpochBank
from shockwave_gym.batch.sums import pairwise_row_sums
from shockwave_gym.config import SimConfig
from shockwave_gym.metrics import EpisodeResult
from shockwave_gym.state import ACTIVE, DONE, PENDING, StaticJobArrays

#: Per-job static arrays: name -> (dtype, padding value).
_STATIC = {
    "valid": (bool, False), "arrival_s": (np.float64, np.inf), "gang": (np.int64, 0),
    "num_epochs": (np.int64, 1), "initial_batch_size": (np.int64, 1), "isolated_time_s": (np.float64, 0.0),
    "job_base_s": (np.float64, 0.0), "first": (np.int64, 0), "seg_end": (np.int64, 0), "span": (np.int64, 1),
}
#: Per-job dynamic arrays: name -> (dtype, value at reset).
_DYNAMIC = {
    "status": (np.int8, PENDING), "work_done_s": (np.float64, 0.0), "completion_s": (np.float64, np.nan),
    "run_time_s": (np.float64, 0.0), "rounds_run": (np.int64, 0), "last_run_s": (np.float64, 0.0),
    "last_overhead_s": (np.float64, 0.0), "ran_last_round": (bool, False), "pos": (np.int64, 0),
}


class SimArrays(NamedTuple):
    """The arrays (and the one flag) of a :class:`BatchSimulator` that the compiled kernels
    read and write, by name: (K,) per cluster, (K, jobs) per job, (K, rounds) per round
    record, and the bank's per-epoch ``end_global`` and ``packed``
    (:class:`~shockwave_gym.batch.bank.EpochBank`). Built by :attr:`BatchSimulator.arrays`."""

    num_jobs: np.ndarray
    gpus: np.ndarray
    round_s: np.ndarray
    restart_overhead_s: np.ndarray
    restart_threshold_s: np.ndarray
    exact_overhead: bool
    time_s: np.ndarray
    round_index: np.ndarray
    next_arrival: np.ndarray
    num_done: np.ndarray
    overhead_gpu_s: np.ndarray
    round_start_s: np.ndarray
    round_end_s: np.ndarray
    round_gpus_busy: np.ndarray
    arrival_s: np.ndarray
    gang: np.ndarray
    num_epochs: np.ndarray
    initial_batch_size: np.ndarray
    isolated_time_s: np.ndarray
    job_base_s: np.ndarray
    first: np.ndarray
    seg_end: np.ndarray
    span: np.ndarray
    status: np.ndarray
    work_done_s: np.ndarray
    completion_s: np.ndarray
    run_time_s: np.ndarray
    rounds_run: np.ndarray
    last_run_s: np.ndarray
    last_overhead_s: np.ndarray
    ran_last_round: np.ndarray
    pos: np.ndarray
    end_global: np.ndarray
    packed: np.ndarray


class BatchSimulator:
    """K clusters stepped together; load a trace into a cluster with :meth:`load`."""

    def __init__(self, num_clusters: int, *, compiled: bool | None = None):
        """``compiled``: run the numba loops (default: when numba is installed) or numpy."""
        if compiled and not jit.AVAILABLE:
            from shockwave_gym.errors import InputError

            raise InputError("the compiled vector-env backend needs numba: pip install numba")
        self.compiled = jit.AVAILABLE if compiled is None else bool(compiled)
        k = num_clusters
        self.num_clusters = k
        self.width = 0
        self.bank = EpochBank()
        self.statics: list[StaticJobArrays | None] = [None] * k
        self.configs: list[SimConfig | None] = [None] * k
        self.trace_names = [""] * k
        self.num_jobs = np.zeros(k, np.int64)
        self.gpus = np.ones(k, np.int64)
        self.round_s = np.ones(k)
        self.restart_overhead_s = np.zeros(k)
        self.restart_threshold_s = np.zeros(k)
        self.time_s = np.zeros(k)
        self.round_index = np.zeros(k, np.int64)
        self.next_arrival = np.zeros(k, np.int64)
        self.num_done = np.zeros(k, np.int64)
        self.overhead_gpu_s = np.zeros(k)
        # per cluster and round index: start, end, GPUs busy (grown by doubling)
        self.round_start_s = np.zeros((k, 64))
        self.round_end_s = np.zeros((k, 64))
        self.round_gpus_busy = np.zeros((k, 64), np.int64)
        for name, (dtype, fill) in {**_STATIC, **_DYNAMIC}.items():
            setattr(self, name, np.full((k, 0), fill, dtype))
        self.exact_overhead = True
        self._arrays: SimArrays | None = None
        self._boxed: tuple | None = None

    def __getstate__(self):
        # the boxed struct (a numba object) does not pickle: it is built again on first use
        return {**self.__dict__, "_boxed": None}

    @property
    def arrays(self) -> SimArrays:
        """The kernels' view of this simulator's arrays (the same objects, not copies); built
        again after any of them is replaced (a wider trace, more round records, a load)."""
        arrays = self._arrays
        if arrays is None:
            bank = self.bank
            self._arrays = arrays = SimArrays(**{
                name: getattr(self, name) for name in SimArrays._fields if name not in ("end_global", "packed")
            }, end_global=bank.end_global, packed=bank.packed)
        return arrays

    @property
    def boxed(self):
        """:attr:`arrays` as the compiled kernels take them (jit.box), kept while they hold."""
        arrays = self.arrays
        if self._boxed is None or self._boxed[0] is not arrays:
            self._boxed = (arrays, jit.box(arrays))
        return self._boxed[1]

    # --- loading ---------------------------------------------------------------------------

    def _widen(self, width: int) -> None:
        for name, (dtype, fill) in {**_STATIC, **_DYNAMIC}.items():
            old = getattr(self, name)
            new = np.full((self.num_clusters, width), fill, dtype)
            new[:, : old.shape[1]] = old
            setattr(self, name, new)
        self.width = width
        self._arrays = None

    def load(self, k: int, static: StaticJobArrays, config: SimConfig, trace_name: str = "") -> None:
        """Put a trace in cluster ``k`` and reset it (time 0, arrivals admitted, R1)."""
        n = int(static.arrival_s.size)
        if n > self.width:
            self._widen(n)
        self.statics[k], self.configs[k], self.trace_names[k] = static, config, trace_name
        shifts = self.bank.compact([s for s in self.statics if s is not None], incoming=static)
        for row, other in enumerate(self.statics):
            shift = shifts.get(id(other), 0) if other is not None and row != k else 0
            if shift:
                used = self.valid[row]
                for name in ("first", "seg_end", "pos"):
                    getattr(self, name)[row, used] += shift
        start = self.bank.start_of(static)
        for name, (_, fill) in _STATIC.items():
            getattr(self, name)[k] = fill
        self.valid[k, :n] = True
        for name in ("arrival_s", "gang", "num_epochs", "initial_batch_size", "isolated_time_s", "job_base_s"):
            getattr(self, name)[k, :n] = getattr(static, name)
        self.first[k, :n] = static.first_epoch_index + start
        self.seg_end[k, :n] = static.first_epoch_index + static.num_epochs + start
        # a round adds at most round_s of work, so crosses at most round_s / shortest epoch ends
        shortest = np.minimum.reduceat(static.epoch_duration_s, static.epoch_offset[:-1])
        self.span[k, :n] = (config.round_s // shortest).astype(np.int64) + 2
        self.num_jobs[k] = n
        self.gpus[k] = config.gpus
        self.round_s[k] = config.round_s
        self.restart_overhead_s[k] = config.restart_overhead_s
        self.restart_threshold_s[k] = config.restart_threshold_s
        self.exact_overhead = self._exact_overhead()  # changes only when a trace is loaded
        self._arrays = None  # the bank may have grown, the flag changed
        self.restart(k)

    def share_dynamic(self, arrays: dict[str, np.ndarray]) -> None:
        """Take ``arrays`` (name -> (K, jobs) array of this simulator's shape and dtype) as
        the per-job dynamic arrays: the kernels then write them in place (the single env's
        driver hands its Simulator's own arrays, as (1, jobs) views)."""
        for name, array in arrays.items():
            old = getattr(self, name)
            if name not in _DYNAMIC or array.shape != old.shape or array.dtype != old.dtype:
                raise ValueError(f"cannot share {name}: {array.dtype}{array.shape} for {old.dtype}{old.shape}")
            setattr(self, name, array)
        self._arrays = None

    def restart(self, k: int) -> None:
        """Cluster ``k`` back to time 0 with nothing run (its trace kept)."""
        for name, (_, fill) in _DYNAMIC.items():
            getattr(self, name)[k] = fill
        self.pos[k] = self.first[k]
        self.time_s[k] = 0.0
        self.round_index[k] = 0
        self.next_arrival[k] = 0
        self.num_done[k] = 0
        self.overhead_gpu_s[k] = 0.0
        rows = np.zeros(self.num_clusters, bool)
        rows[k] = True
        if self.compiled:  # the loop the compiled step admits with
            jit.admit_rows(rows, self.boxed)
        else:
            self._admit_and_skip_idle(rows)

    # --- dynamics --------------------------------------------------------------------------

    @property
    def done(self) -> np.ndarray:
        return self.num_done == self.num_jobs

    def _admit_and_skip_idle(self, rows: np.ndarray) -> None:
        """Admit arrivals up to now in ``rows``; jump idle clusters to their next arrival (R1)."""
        self._arrays = None  # the numpy path replaces arrays
        column = np.arange(self.width)
        while True:
            arrived = np.count_nonzero(self.arrival_s <= self.time_s[:, None], axis=1)
            newly = (column >= self.next_arrival[:, None]) & (column < arrived[:, None]) & rows[:, None]
            self.status[newly] = ACTIVE
            self.next_arrival = np.where(rows, np.maximum(self.next_arrival, arrived), self.next_arrival)
            jump = rows & (self.num_done >= self.next_arrival) & (self.next_arrival < self.num_jobs)
            if not jump.any():
                return
            index = np.flatnonzero(jump)
            self.time_s[index] = self.arrival_s[index, self.next_arrival[index]]

    def step(self, selected: np.ndarray, rows: np.ndarray) -> SimpleNamespace:
        """One round (R2-R4) in every cluster of ``rows`` ((K,) bool) with the job sets
        ``selected`` ((K, jobs) bool, valid active jobs fitting the GPUs, False outside
        ``rows``), then admit arrivals (R1). Returns the rounds' start, end and GPUs busy."""
        if self.compiled:
            return self._step_compiled(selected, rows)
        self._arrays = None  # the numpy path replaces arrays
        sel = selected
        round_s = self.round_s[:, None]
        remaining = self.isolated_time_s - self.work_done_s
        pays = (
            (self.round_index >= 1)[:, None]
            & ~self.ran_last_round
            & (np.minimum(round_s, remaining) > self.restart_threshold_s[:, None])
        )
        overhead = np.where(pays & sel, self.restart_overhead_s[:, None], 0.0)
        finish_offset = overhead + remaining
        finishes = finish_offset <= round_s
        all_finish = sel.any(axis=1) & (finishes | ~sel).all(axis=1)
        longest = np.where(sel, finish_offset, -np.inf).max(axis=1, initial=-np.inf)
        round_len = np.where(all_finish, longest, self.round_s)
        run_s = np.where(finishes, finish_offset, round_len[:, None])
        start = self.time_s.copy()

        self.work_done_s = np.where(sel, self.work_done_s + (run_s - overhead), self.work_done_s)
        done = sel & finishes
        self.work_done_s[done] = self.isolated_time_s[done]
        self.completion_s = np.where(done, start[:, None] + finish_offset, self.completion_s)
        self.status[done] = DONE
        self.num_done += np.count_nonzero(done, axis=1)
        self.run_time_s = np.where(sel, self.run_time_s + run_s, self.run_time_s)
        self.rounds_run += sel
        row = rows[:, None]
        ran = self.ran_last_round
        self.last_run_s = np.where(row, np.where(sel, run_s, np.where(ran, 0.0, self.last_run_s)), self.last_run_s)
        self.last_overhead_s = np.where(
            row, np.where(sel, overhead, np.where(ran, 0.0, self.last_overhead_s)), self.last_overhead_s
        )
        self.ran_last_round = np.where(row, sel, ran)

        end = start + round_len
        busy = (self.gang * sel).sum(axis=1)
        self.overhead_gpu_s += self._round_overhead_gpu_s(sel, overhead)
        self._record(rows, start, end, busy, self.round_index)
        self.time_s = np.where(rows, end, self.time_s)
        self.round_index += rows
        self._advance_epochs(sel)
        self._admit_and_skip_idle(rows & ~self.done)
        return SimpleNamespace(start_s=start, end_s=end, gpus_busy=busy)

    def _step_compiled(self, sel: np.ndarray, rows: np.ndarray) -> SimpleNamespace:
        k = self.num_clusters
        start, end, busy = np.zeros(k), np.zeros(k), np.zeros(k, np.int64)
        jit.step_rows(rows, sel, self.boxed, start, end, busy)
        self._record(rows, start, end, busy, self.round_index - 1)  # the loop counted the round
        jit.admit_rows(rows & ~self.done, self.boxed)
        return SimpleNamespace(start_s=start, end_s=end, gpus_busy=busy)

    def _record(self, rows: np.ndarray, start: np.ndarray, end: np.ndarray, busy: np.ndarray, at: np.ndarray) -> None:
        """Store the rounds just run, at round indices ``at``."""
        self.reserve_rounds(int(at.max()) + 1)
        index = np.flatnonzero(rows)
        at = at[index]
        self.round_start_s[index, at] = start[index]
        self.round_end_s[index, at] = end[index]
        self.round_gpus_busy[index, at] = busy[index]

    def reserve_rounds(self, rounds: int) -> None:
        """Room for ``rounds`` round records per cluster (doubling the capacity as needed)."""
        capacity = self.round_start_s.shape[1]
        if rounds > capacity:
            while rounds > capacity:
                capacity *= 2
            for name in ("round_start_s", "round_end_s", "round_gpus_busy"):
                old = getattr(self, name)
                grown = np.zeros((old.shape[0], capacity), old.dtype)
                grown[:, : old.shape[1]] = old
                setattr(self, name, grown)
            self._arrays = None

    def _exact_overhead(self) -> bool:
        """Integral restart losses: their GPU-second sums are exact in any order."""
        o = self.restart_overhead_s
        return bool(np.all((o == np.floor(o)) & (o * self.gpus < 2.0**52)))

    def _round_overhead_gpu_s(self, sel: np.ndarray, overhead: np.ndarray) -> np.ndarray:
        """Per cluster, the round's restart loss in GPU-seconds, summed over its job ids in
        ascending order as the metrics do (a 1-D pairwise sum of the selected entries)."""
        paid = self.gang * overhead
        if self.exact_overhead:
            return paid.sum(axis=1)
        counts = np.count_nonzero(sel, axis=1)
        order = np.argsort(~sel, axis=1, kind="stable")  # selected ids first, ascending
        return pairwise_row_sums(np.take_along_axis(paid, order, axis=1), counts)

    def _advance_epochs(self, sel: np.ndarray) -> None:
        """Move the current-epoch index of the jobs that ran: the first epoch end beyond
        base + work + 1 us (the view's slack), by binary search over the reachable span."""
        rows, cols = np.nonzero(sel)
        if rows.size == 0:
            return
        target = self.job_base_s[rows, cols] + self.work_done_s[rows, cols] + 1e-6
        lo = self.pos[rows, cols]
        hi = np.minimum(self.seg_end[rows, cols], lo + self.span[rows, cols])
        ends = self.bank.end_global
        while True:
            open_ = lo < hi
            if not open_.any():
                break
            mid = (lo + hi) >> 1
            right = open_ & (ends[np.where(open_, mid, 0)] <= target)
            lo = np.where(right, mid + 1, lo)
            hi = np.where(open_ & ~right, mid, hi)
        self.pos[rows, cols] = lo

    # --- results -------------------------------------------------------------------------

    def result(self, k: int) -> EpisodeResult:
        """Cluster ``k``'s episode so far, for :func:`~shockwave_gym.metrics.compute_metrics`.
        Per-round job sets are not kept: the restart loss they sum to is :attr:`overhead_gpu_s`."""
        n = int(self.num_jobs[k])
        rounds = int(self.round_index[k])
        return EpisodeResult(
            trace_name=self.trace_names[k],
            gpus=int(self.gpus[k]),
            round_s=float(self.round_s[k]),
            arrival_s=self.arrival_s[k, :n].copy(),
            completion_s=self.completion_s[k, :n].copy(),
            isolated_time_s=self.isolated_time_s[k, :n].copy(),
            gang=self.gang[k, :n].copy(),
            run_time_s=self.run_time_s[k, :n].copy(),
            round_start_s=self.round_start_s[k, :rounds].copy(),
            round_end_s=self.round_end_s[k, :rounds].copy(),
            round_gpus_busy=self.round_gpus_busy[k, :rounds].copy(),
            round_job_ids=(),
            round_run_s=(),
            round_overhead_s=(),
            end_time_s=float(self.time_s[k]),
        )
