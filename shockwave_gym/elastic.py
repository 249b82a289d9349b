"""Elastic jobs: the scheduler chooses each job's GPU count every round (docs/SEMANTICS.md,
"Elastic jobs").

A trace line with ``"gangs": [...]`` declares a job elastic. Each round the scheduler gives
it one count from its *allowed set* (the declared counts at which the throughput table has a
positive rate for every batch size the job can reach) or none; on a cluster of several GPU
types it chooses a count and a type together. A rigid job keeps its gang.

The round is :meth:`Simulator.run_round <shockwave_gym.simulator.Simulator.run_round>`,
written once, with the GPU-type hooks of a typed cluster applied to *configurations*: a
configuration is a pair (type, count), column ``t * len(COUNTS) + k`` for type ``t`` and
count ``COUNTS[k]``. Progress stays in isolated seconds of reference work (the job's gang on
the reference V100 table, as for a rigid job); in configuration ``c`` epoch ``e`` lasts
``(dataset / b_e) / rate_c(b_e)`` and the map between reference work and time in the
configuration is the epoch-by-epoch line of :mod:`shockwave_gym.hetero_state`. A job that
runs in another configuration than last round (count or type changed) pays the restart
overhead, as a resumed job does (R3); no further rescale cost is charged.

:class:`Allocation` is the action that gives counts; job ids alone run every job at its
reference count (its trace ``gang``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.hetero_state import (
    TypedJobArrays,
    build_typed_arrays,
    column_rates_and_durations,
    cumulate_columns,
)
from shockwave_gym.jobs import GANG_SIZES, JobSpec
from shockwave_gym.placement import Allocation, Placement, place_in_order
from shockwave_gym.simulator import ColumnHooks, Simulator
from shockwave_gym.throughput import TypedThroughputs

#: The GPU counts a configuration may have (the throughput tables measure these).
COUNTS: tuple[int, ...] = GANG_SIZES
_NUM_COUNTS = len(COUNTS)
_COUNT_INDEX = {c: k for k, c in enumerate(COUNTS)}


def is_elastic_trace(jobs: Sequence[JobSpec]) -> bool:
    """Whether any job of ``jobs`` is elastic (then :class:`ElasticSimulator` runs them)."""
    return any(job.gangs for job in jobs)


def column_of(type_index, count) -> np.ndarray:
    """Configuration column of ``(type index, count)`` (arrays or scalars)."""
    count_index = np.searchsorted(np.asarray(COUNTS), count)
    return np.asarray(type_index, dtype=np.int64) * _NUM_COUNTS + count_index


def build_config_arrays(static, cluster, throughputs: TypedThroughputs) -> TypedJobArrays:
    """Per-configuration arrays (columns (type, count), see the module doc): a job may use a
    column when the count is one it may take and the type's table has a positive rate for
    every reachable batch size at that count, and the type has that many GPUs."""
    columns = [(throughputs.table(name), count) for name in cluster.types for count in COUNTS]
    rates, durations, runnable, identity = column_rates_and_durations(static, columns)
    capacity = np.repeat(np.asarray(cluster.counts, dtype=np.int64), _NUM_COUNTS)
    runnable &= np.tile(np.asarray(COUNTS), cluster.num_types)[None, :] <= capacity[None, :]
    return TypedJobArrays(
        cluster=cluster, capacity=capacity, runnable=runnable, epoch_rate=rates, identity=identity,
        fair_isolated_time_s=static.isolated_time_s, **cumulate_columns(static, durations, runnable),
    )


class ElasticSimulator(ColumnHooks, Simulator):
    """The round simulator for a trace with elastic jobs, on ``config.gpus`` V100s or on
    ``config.cluster`` (see the module doc). Actions: job ids (reference counts, placed by
    the default rule on a typed cluster), an :class:`Allocation`, or a mapping
    ``{job_id: count}`` / ``{job_id: (type, count)}`` (type a name or an index)."""

    def __init__(self, jobs: Sequence[JobSpec], config: SimConfig, throughputs=None, *,
                 trace_name: str = "", oracle: bool = False):
        if len(jobs) == 0:
            raise InputError("a simulation needs at least one job")
        self.cluster = config.cluster_spec
        self.typed_throughputs = TypedThroughputs.resolve(throughputs, self.cluster.types)
        self.last_column = np.full(len(jobs), -1, dtype=np.int64)
        super().__init__(jobs, config, self.typed_throughputs.reference, trace_name=trace_name, oracle=oracle)
        self.configs = build_config_arrays(self.static, self.cluster, self.typed_throughputs)
        self.column_arrays = self.configs
        if config.heterogeneous:  # the rigid facts metrics and the view's per-type API read
            self.typed = build_typed_arrays(self.static, self.cluster, self.typed_throughputs)
        stuck = np.flatnonzero(~self.configs.runnable.any(axis=1))
        if stuck.size:
            spec = jobs[int(stuck[0])]
            raise InputError(f"job {spec.job_id} ({spec.model}, counts {spec.gangs or (spec.gang,)}) can run in no "
                             f"configuration of cluster {self.cluster} ({stuck.size} such job(s))")
        self.reference_column = column_of(0, self.static.gang)

    def _reset_dynamic(self) -> None:
        self.gpu_time_s = np.zeros(len(self.last_column))
        super()._reset_dynamic()

    @property
    def last_type(self) -> np.ndarray:
        """(N,) type index each job ran on last round; -1 if it did not run."""
        return np.where(self.last_column >= 0, self.last_column // _NUM_COUNTS, -1)

    # --- actions -------------------------------------------------------------------------

    def validate_placement(self, action) -> tuple[np.ndarray, np.ndarray]:
        """``(ids ascending, configuration column per id)``, every rule checked."""
        if action is None:
            raise InvalidActionError("an action is required (use [] to idle)")
        ids, types, counts = self._requested(action)
        if ids.size == 0:
            return ids, ids.copy()
        columns = self._checked_columns(ids, types, counts)
        sort = np.argsort(ids, kind="stable")
        return ids[sort], columns[sort]

    def _requested(self, action):
        """``(ids, type indices (-1: default), counts)`` an action asks for, in its order
        (the default rule places in that order), the ids checked."""
        types = counts = None
        if isinstance(action, Allocation):
            ids, counts, types = action.job_ids, action.counts, action.gpu_types
        elif isinstance(action, Placement):
            ids, types = action.job_ids, action.gpu_types
        elif isinstance(action, Mapping):
            triples = [(j, *self._type_and_count(j, value)) for j, value in action.items()]
            ids = np.array([t[0] for t in triples])
            types = np.array([t[1] for t in triples], dtype=np.int64)
            counts = np.array([t[2] for t in triples], dtype=np.int64)
        else:
            ids = action if isinstance(action, np.ndarray) else np.array(list(action))
        self.checked_ids(ids)  # well-formed, unique, active (raises otherwise)
        ids = np.asarray(ids).astype(np.int64, copy=False).ravel()
        if counts is None:
            counts = self.static.gang[ids]
        if types is None:
            types = np.full(ids.size, -1, np.int64)
        return ids, types, counts

    def _type_and_count(self, job_id, value) -> tuple[int, int]:
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return self._type_index(value[0], job_id), self._count(value[1], job_id)
        if isinstance(value, str):
            return self._type_index(value, job_id), int(self.static.gang[job_id])
        return -1, self._count(value, job_id)

    def _count(self, value, job_id) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) not in _COUNT_INDEX:
            raise InvalidActionError(f"job {job_id}: a GPU count must be one of {list(COUNTS)}, got {value!r}")
        return int(value)

    def _type_index(self, value, job_id) -> int:
        types = self.cluster.types
        if isinstance(value, str) and value in types:
            return types.index(value)
        if not isinstance(value, (str, bool)) and isinstance(value, (int, np.integer)) and 0 <= int(value) < len(types):
            return int(value)
        raise InvalidActionError(f"job {job_id}: GPU type must be one of {', '.join(types)} "
                                 f"or an index 0..{len(types) - 1}, got {value!r}")

    def _checked_columns(self, ids, types, counts) -> np.ndarray:
        """Configuration columns of the request: counts allowed, default types placed,
        no type given more GPUs than it has."""
        bad = np.array([int(c) not in _COUNT_INDEX for c in counts.tolist()], dtype=bool)
        if bad.any():
            raise InvalidActionError(f"job {int(ids[bad][0])}: a GPU count must be one of {list(COUNTS)}, "
                                     f"got {int(counts[bad][0])}")
        types = types.copy()
        explicit = types >= 0
        used = np.bincount(types[explicit], weights=counts[explicit], minlength=self.cluster.num_types)
        for i in np.flatnonzero(~explicit).tolist():  # default rule, in the order given
            types[i] = self._fastest_with_room(int(ids[i]), int(counts[i]), used)
            used[types[i]] += counts[i]
        columns = column_of(types, counts)
        not_allowed = ~self.configs.runnable[ids, columns]
        if not_allowed.any():
            j, c = int(ids[not_allowed][0]), int(columns[not_allowed][0])
            raise InvalidActionError(
                f"job {j} cannot run on {COUNTS[c % _NUM_COUNTS]} {self.cluster.types[c // _NUM_COUNTS]} GPU(s): "
                f"its allowed counts there are {self.allowed_counts(j, c // _NUM_COUNTS)}")
        over = np.flatnonzero(used > np.asarray(self.cluster.counts))
        if over.size:
            t = int(over[0])
            raise InvalidActionError(f"allocation needs {int(used[t])} {self.cluster.types[t]} GPUs; "
                                     f"the cluster has {self.cluster.counts[t]}")
        return columns

    def allowed_counts(self, job_id: int, type_index: int | None = None) -> tuple[int, ...]:
        """Counts job ``job_id`` may run on (on type ``type_index``, or on any type)."""
        allowed = self.configs.runnable[job_id].reshape(self.cluster.num_types, _NUM_COUNTS)
        row = allowed.any(axis=0) if type_index is None else allowed[type_index]
        return tuple(c for c, ok in zip(COUNTS, row.tolist(), strict=True) if ok)

    def _fastest_with_room(self, job_id: int, count: int, used: np.ndarray) -> int:
        """Default type of a job at ``count``: the fastest type (current batch size) whose
        configuration it may use and that has room (the placement rule; first type if none)."""
        if self.cluster.num_types == 1:
            return 0
        k = _COUNT_INDEX[count]
        cols = np.arange(self.cluster.num_types) * _NUM_COUNTS + k
        current = min(int(self.epoch_pos[job_id]), int(self.static.last_epoch_index[job_id]))
        rates = np.where(self.configs.runnable[job_id, cols], self.configs.epoch_rate[current, cols], 0.0)
        room = (used + count) <= np.asarray(self.cluster.counts)
        order = np.argsort(-np.where(room, rates, -1.0), kind="stable")
        return int(order[0])

    # --- the round's hooks (Simulator.run_round), on configuration columns ------------------

    def place_round(self, ids, types):
        """Ids with their columns as given; or (``types=None``, job ids from an env's action
        mode) every job at its reference count, placed by the default rule."""
        ids = np.asarray(ids, dtype=np.int64)
        if types is not None:
            return ids, types
        if self.cluster.num_types == 1:
            return ids, self.reference_column[ids]
        placed = place_in_order(ids, self.static.gang, self.view.throughput_by_type, self.typed.runnable,
                                self.typed.capacity, strict=True, type_names=self.cluster.types)
        sort = np.argsort(placed.job_ids, kind="stable")
        return placed.job_ids[sort], column_of(placed.gpu_types[sort], self.static.gang[placed.job_ids[sort]])

    def _book_run(self, ids, types, run_s, overhead) -> None:
        super()._book_run(ids, types, run_s, overhead)
        self.gpu_time_s[ids] += run_s * np.asarray(COUNTS)[types % _NUM_COUNTS]

    def _close_round(self, record) -> None:
        """The round record in GPU terms: counts per job, busy GPUs, and type indices on a
        typed cluster (``None`` on one type, as on the homogeneous path)."""
        columns = record.gpu_types
        record.gpu_counts = np.asarray(COUNTS)[columns % _NUM_COUNTS] if columns.size else columns.copy()
        record.gpus_busy = int(record.gpu_counts.sum())
        record.gpu_types = columns // _NUM_COUNTS if self.config.heterogeneous else None
        super()._close_round(record)
