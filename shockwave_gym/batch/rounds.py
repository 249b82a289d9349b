"""The round rules (docs/SEMANTICS.md, "Round rules (R1–R5)") for K clusters at once.

:class:`BatchSimulator` holds K independent clusters as padded (clusters x jobs) arrays,
named for the compiled kernels by :class:`SimArrays`; the kernels of :mod:`~shockwave_gym.batch.jit`
(``step_one``, ``admit_one``) run the rounds on them. Each cluster has its own trace,
configuration, clock, idle jumps and early round ends; the arithmetic is the single
:class:`~shockwave_gym.simulator.Simulator`'s, operation for operation, so every cluster's
state equals that of a simulator given the same job sets.

Job ``j`` of cluster ``k`` is entry ``[k, j]``; a cluster with fewer jobs than the widest is
padded with jobs that never arrive. A job's current epoch is tracked as a flat index into the
:class:`~shockwave_gym.batch.bank.EpochBank`: work only grows, so after a round the index is
found by a binary search from where it was (the single view's ``searchsorted`` gives the same
index, since a job's epoch ends are sorted and never interleave with other jobs').

A cluster of several GPU types (``SimConfig(cluster=...)``) is loaded with its per-type
arrays (:class:`~shockwave_gym.hetero_state.TypedJobArrays`): the round's jobs then run on
the types written in ``job_type`` (by :func:`~shockwave_gym.batch.jit.place_one`, the
default rule, or by the caller), progress mapped epoch by epoch as the reference's
:class:`~shockwave_gym.hetero_simulator.HeteroSimulator` maps it, and ``last_type`` keeps the
type each job ran on last round (-1: none; a job moving type pays the restart).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from shockwave_gym.batch import jit
from shockwave_gym.batch.bank import MAX_TYPES, EpochBank
from shockwave_gym.cluster import TYPE_ORDER
from shockwave_gym.config import SimConfig
from shockwave_gym.metrics import EpisodeResult
from shockwave_gym.state import PENDING, StaticJobArrays

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
    "last_type": (np.int64, -1), "job_type": (np.int64, -1),
}
#: Per-(job, GPU type) static arrays of a typed cluster: name -> (dtype, padding value, field
#: of TypedJobArrays).
_TYPED = {
    "type_iso_s": (np.float64, np.inf, "isolated_time_s"), "type_base_s": (np.float64, 0.0, "job_base_s"),
    "type_identity": (bool, True, "identity"), "type_runnable": (bool, False, "runnable"),
}


class SimArrays(NamedTuple):
    """The arrays (and the one flag) of a :class:`BatchSimulator` that the compiled kernels
    read and write, by name: (K,) per cluster, (K, jobs) per job, (K, rounds) per round
    record, (K, jobs, types) per job and GPU type, and the bank's per-epoch ``end_global``,
    ``packed`` and ``typed`` (:class:`~shockwave_gym.batch.bank.EpochBank`). Built by
    :attr:`BatchSimulator.arrays`."""

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
    num_types: np.ndarray
    type_capacity: np.ndarray
    type_column: np.ndarray
    type_iso_s: np.ndarray
    type_base_s: np.ndarray
    type_identity: np.ndarray
    type_runnable: np.ndarray
    type_gpu_s: np.ndarray
    last_type: np.ndarray
    job_type: np.ndarray
    end_global: np.ndarray
    packed: np.ndarray
    typed: np.ndarray


class BatchSimulator:
    """K clusters stepped together; load a trace into a cluster with :meth:`load`."""

    def __init__(self, num_clusters: int):
        if not jit.AVAILABLE:
            from shockwave_gym.errors import InputError

            raise InputError("the batched rounds are compiled kernels, which need numba: pip install numba")
        k = num_clusters
        self.num_clusters = k
        self.width = 0
        self.bank = EpochBank()
        self.statics: list[StaticJobArrays | None] = [None] * k
        self.typeds: list = [None] * k  # each cluster's TypedJobArrays (None: one type)
        self.num_types = np.zeros(k, np.int64)  # 0: a cluster of one type
        self.type_capacity = np.zeros((k, MAX_TYPES), np.int64)
        self.type_column = np.zeros((k, MAX_TYPES), np.int64)  # each type's column of TYPE_ORDER
        self.type_gpu_s = np.zeros((k, 2, MAX_TYPES))  # per type: GPU-s held, held minus overhead
        self._fair_work: dict[int, tuple] = {}  # id(typed) -> (typed, its fair_work_s)
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
        for name, (dtype, fill, _) in _TYPED.items():
            setattr(self, name, np.full((k, 0, MAX_TYPES), fill, dtype))
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
                name: getattr(self, name) for name in SimArrays._fields if name not in ("end_global", "packed", "typed")
            }, end_global=bank.end_global, packed=bank.packed, typed=bank.typed)
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
        for name, (dtype, fill, _) in _TYPED.items():
            old = getattr(self, name)
            new = np.full((self.num_clusters, width, MAX_TYPES), fill, dtype)
            new[:, : old.shape[1]] = old
            setattr(self, name, new)
        self.width = width
        self._arrays = None

    def load(self, k: int, static: StaticJobArrays, config: SimConfig, trace_name: str = "", typed=None) -> None:
        """Put a trace in cluster ``k`` and reset it (time 0, arrivals admitted, R1);
        ``typed``: its :class:`~shockwave_gym.hetero_state.TypedJobArrays` on a cluster of
        several GPU types (``config.cluster``), None on one type."""
        n = int(static.arrival_s.size)
        if n > self.width:
            self._widen(n)
        self.statics[k], self.typeds[k], self.configs[k], self.trace_names[k] = static, typed, config, trace_name
        sources = [t if t is not None else s for s, t in zip(self.statics, self.typeds, strict=True)]
        shifts = self.bank.compact([s for s in sources if s is not None], incoming=sources[k])
        for row, other in enumerate(sources):
            shift = shifts.get(id(other), 0) if other is not None and row != k else 0
            if shift:
                used = self.valid[row]
                for name in ("first", "seg_end", "pos"):
                    getattr(self, name)[row, used] += shift
        start = self.bank.start_of(static, typed)
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
        self._load_types(k, n, typed)
        self.num_jobs[k] = n
        self.gpus[k] = config.gpus
        self.round_s[k] = config.round_s
        self.restart_overhead_s[k] = config.restart_overhead_s
        self.restart_threshold_s[k] = config.restart_threshold_s
        self.exact_overhead = self._exact_overhead()  # changes only when a trace is loaded
        self._arrays = None  # the bank may have grown, the flag changed
        self.restart(k)

    def _load_types(self, k: int, n: int, typed) -> None:
        """Cluster ``k``'s per-type arrays (none on one type)."""
        for name, (_, fill, _) in _TYPED.items():
            getattr(self, name)[k] = fill
        self.type_capacity[k] = 0
        self.num_types[k] = 0 if typed is None else typed.capacity.size
        if typed is None:
            return
        num_types = typed.capacity.size
        self.type_capacity[k, :num_types] = typed.capacity
        self.type_column[k, :num_types] = [TYPE_ORDER.index(name) for name in typed.cluster.types]
        for name, (_, _, field) in _TYPED.items():
            getattr(self, name)[k, :n, :num_types] = getattr(typed, field)
        # a type faster than the reference moves more reference work than round_s a round
        self.span[k, :n] = self.seg_end[k, :n] - self.first[k, :n] + 1

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
        self.type_gpu_s[k] = 0.0
        rows = np.zeros(self.num_clusters, bool)
        rows[k] = True
        jit.admit_rows(rows, self.boxed)

    # --- dynamics --------------------------------------------------------------------------

    @property
    def done(self) -> np.ndarray:
        return self.num_done == self.num_jobs

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
            **self._typed_result(k),
        )

    def _typed_result(self, k: int) -> dict:
        """The heterogeneous fields of cluster ``k``'s EpisodeResult (none on one type)."""
        typed = self.typeds[k]
        if typed is None:
            return {}
        from shockwave_gym.fair_reference import typed_reference_work_s

        cached = self._fair_work.get(id(typed))
        if cached is None or cached[0] is not typed:
            self._fair_work = {key: value for key, value in self._fair_work.items() if any(value[0] is t for t in self.typeds)}
            cached = self._fair_work[id(typed)] = (typed, typed_reference_work_s(self.statics[k], typed))
        num_types = typed.capacity.size
        return dict(gpu_types=tuple(typed.cluster.types), type_gpus=tuple(typed.cluster.counts),
                    fair_isolated_time_s=typed.fair_isolated_time_s.copy(), fair_work_s=cached[1].copy(),
                    type_gpu_s=self.type_gpu_s[k, :, :num_types].copy())
