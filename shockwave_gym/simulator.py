"""Round-based GPU-cluster simulator (docs/SEMANTICS.md, "Round rules (R1–R5)"), with state
held as arrays (:mod:`shockwave_gym.state`).

Progress is tracked in *isolated seconds of work*: a job's epoch durations depend only on its
own batch-size schedule, so one number per job says how far it is. A scheduled round adds
(run time - restart overhead) to it, and the job completes when work reaches its isolated time.
Current epoch and batch size are one ``searchsorted`` over all jobs' cumulative epoch ends,
flattened with per-job offsets, so a round costs a handful of vector operations whatever the
number of jobs.

The simulator knows nothing of Gymnasium or of agents: ``step(job_ids)`` runs one round for the
given set, and :attr:`view` is the read-only window agents may look through.

:meth:`Simulator.run_round` is the one implementation of the round. What a cluster of several
GPU types changes in it (each job's type, progress counted in time on that type, "ran last
round" meaning "on the same type") goes through five hooks (:meth:`~Simulator.place_round`,
:meth:`~Simulator.to_type_time`, :meth:`~Simulator.stayed_on_type`,
:meth:`~Simulator.to_reference_work`, :meth:`~Simulator.record_types`), the identity here on a
cluster of one type; :class:`~shockwave_gym.hetero_simulator.HeteroSimulator` implements them
for a typed cluster.
"""

from __future__ import annotations

import copy
from bisect import bisect_right
from collections.abc import Iterable, Sequence

import numpy as np

from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError, InvalidActionError
from shockwave_gym.jobs import JobSpec
from shockwave_gym.placement import rigid_action
from shockwave_gym.state import (
    ACTIVE,
    DONE,
    EPOCH_END_SLACK_S,
    PENDING,
    RoundRecord,
    build_static_arrays,
)
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.view import ClusterView

__all__ = ["ACTIVE", "DONE", "PENDING", "ColumnHooks", "RoundRecord", "SimConfig", "Simulator"]


class Simulator:
    """Deterministic round-based simulation of one trace on ``config.gpus`` GPUs.

    Usage::

        sim = Simulator(trace.jobs, SimConfig(gpus=32))
        while not sim.done:
            sim.step(my_choice(sim.view))
        result = sim.result()

    The simulator holds no randomness: given the trace and the agent's choices it is fully
    deterministic. It can be deep-copied and pickled.
    """

    def __init__(
        self,
        jobs: Sequence[JobSpec],
        config: SimConfig,
        throughputs: ThroughputTable | None = None,
        *,
        trace_name: str = "",
        oracle: bool = False,
    ):
        if len(jobs) == 0:
            raise InputError("a simulation needs at least one job")
        ids = [spec.job_id for spec in jobs]
        if ids != list(range(len(jobs))):
            raise InputError("job ids must be 0..N-1 in order (as Trace.jobs provides)")
        arrivals = [spec.arrival_s for spec in jobs]
        if any(b < a for a, b in zip(arrivals, arrivals[1:], strict=False)):
            raise InputError("jobs must be sorted by arrival (as Trace.jobs provides)")
        too_big = [spec.job_id for spec in jobs if spec.gang > config.gpus]
        if too_big:
            raise InputError(
                f"job(s) {too_big[:5]} need more GPUs than the cluster's {config.gpus}"
            )
        self.config = config
        self.throughputs = throughputs if throughputs is not None else ThroughputTable.builtin_v100()
        self.trace_name = trace_name
        self.static = build_static_arrays(jobs, self.throughputs)
        # round length, restart threshold (R3) and overhead as 0-d arrays: same values,
        # cheaper for numpy to combine with arrays than Python floats
        self._round_constants = tuple(
            np.array(v) for v in (config.round_s, config.restart_threshold_s, config.restart_overhead_s)
        )
        self._arrivals = self.static.arrival_s.tolist()
        self._oracle = oracle
        self._reset_dynamic()

    # --- state -----------------------------------------------------------------------------

    def _reset_dynamic(self) -> None:
        n = len(self.static.arrival_s)
        self.time_s = 0.0
        self.round_index = 0
        self.status = np.full(n, PENDING, dtype=np.int8)
        self.work_done_s = np.zeros(n)
        self.completion_s = np.full(n, np.nan)
        self.run_time_s = np.zeros(n)
        self.rounds_run = np.zeros(n, dtype=np.int64)
        self.last_run_s = np.zeros(n)
        self.last_overhead_s = np.zeros(n)
        self.ran_last_round = np.zeros(n, dtype=bool)
        self.epoch_pos = self._epoch_position(self.static.job_base_s, self.work_done_s)
        self.history: list[RoundRecord] = []
        self._next_arrival = 0
        self._num_done = 0
        self._active_cache: np.ndarray | None = None
        # never restart at 0: a view cached before reset() must not look fresh
        self._version = getattr(self, "_version", 0) + 1
        no_jobs = np.zeros(0, dtype=np.int64)
        self.record_types(no_jobs, no_jobs)
        self._admit_and_skip_idle()

    def _epoch_position(self, job_base_s: np.ndarray, work_s: np.ndarray) -> np.ndarray:
        """Flat index (into the static per-epoch arrays) of the first epoch not completed
        after ``work_s`` of work, for jobs with base offsets ``job_base_s``: one past the
        job's last epoch once it is done. An epoch whose end is reached up to float rounding
        (1 us of slack) counts as completed."""
        query = job_base_s + work_s
        query += EPOCH_END_SLACK_S
        return self.static.epoch_end_global_s.searchsorted(query, side="right")

    def reset(self) -> None:
        """Back to time 0 with nothing run."""
        self._reset_dynamic()

    @property
    def num_jobs(self) -> int:
        return len(self.static.arrival_s)

    @property
    def num_arrived(self) -> int:
        """Jobs admitted so far (arrivals are admitted in trace order: a prefix of ids)."""
        return self._next_arrival

    @property
    def num_done(self) -> int:
        return self._num_done

    @property
    def done(self) -> bool:
        return self._num_done == self.num_jobs

    @property
    def version(self) -> int:
        """Increases at every state change; lets views cache per-round derived arrays."""
        return self._version

    def active_job_ids(self) -> np.ndarray:
        if self._active_cache is None:
            self._active_cache = np.flatnonzero(self.status == ACTIVE)
        return self._active_cache

    @property
    def view(self) -> ClusterView:
        """The read-only window agents look through (one per simulator)."""
        view = self.__dict__.get("_view")
        if view is None:
            view = ClusterView(self, oracle=self._oracle)
            self.__dict__["_view"] = view
        return view

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_view", None)
        return state

    def copy(self) -> Simulator:
        return copy.deepcopy(self)

    # --- dynamics --------------------------------------------------------------------------

    def _admit_and_skip_idle(self) -> None:
        """Admit arrivals up to now; when nothing is runnable, jump to the next arrival (R1)."""
        arrival = self._arrivals  # the sorted arrival times as Python floats: bisect is cheap
        n = len(arrival)
        while True:
            end = bisect_right(arrival, self.time_s, lo=self._next_arrival)
            if end > self._next_arrival:
                self.status[self._next_arrival:end] = ACTIVE
                self._next_arrival = end
                self._active_cache = None
            any_active = self._num_done < self._next_arrival  # done jobs have all arrived
            if any_active or self._next_arrival >= n:
                break
            self.time_s = arrival[self._next_arrival]
        self._version += 1

    def validate_selection(self, job_ids: Iterable[int]) -> np.ndarray:
        """Return ``job_ids`` as a sorted int array, or raise :class:`InvalidActionError`.

        Accepts any iterable of integer ids (list, tuple, set, generator, int array). A
        boolean mask is rejected rather than misread as ids; so are fractional ids.
        """
        ids = self.checked_ids(job_ids)
        if ids.size == 0:
            return ids
        used = int(self.static.gang[ids].sum())
        if used > self.config.gpus:
            raise InvalidActionError(f"selection needs {used} GPUs; the cluster has {self.config.gpus}")
        return ids

    def checked_ids(self, job_ids: Iterable[int]) -> np.ndarray:
        """:meth:`validate_selection` without the GPU count: well-formed, unique, active
        job ids, sorted (an elastic run checks GPUs against the counts it gives)."""
        if job_ids is None:
            raise InvalidActionError("a selection of job ids is required (use [] to idle)")
        raw = job_ids if isinstance(job_ids, np.ndarray) else np.array(list(job_ids))
        if raw.size and raw.dtype == bool:
            raise InvalidActionError(
                "got a boolean mask, expected job ids; convert it with np.flatnonzero(mask)"
            )
        if raw.size and raw.dtype.kind not in "iuf":
            raise InvalidActionError(f"job ids must be integers, got {raw.tolist()!r}")
        if raw.size and raw.dtype.kind == "f" and not np.all(np.isfinite(raw) & (raw == np.round(raw))):
            raise InvalidActionError(f"job ids must be integers, got {raw.tolist()!r}")
        ids = raw.astype(np.int64, copy=False).ravel()
        if ids.size == 0:
            return ids
        ids = np.sort(ids)
        if ids[0] < 0 or ids[-1] >= self.num_jobs:
            raise InvalidActionError(f"job ids must be in 0..{self.num_jobs - 1}, got {ids.tolist()}")
        if ids.size > 1 and np.any(ids[1:] == ids[:-1]):
            raise InvalidActionError(f"duplicate job ids in {ids.tolist()}")
        not_active = ids[self.status[ids] != ACTIVE]
        if not_active.size:
            raise InvalidActionError(f"job(s) {not_active.tolist()} are not active at t={self.time_s}")
        return ids

    def validate_placement(self, action: Iterable[int]) -> tuple[np.ndarray, np.ndarray | None]:
        """``action`` as ``(ids, types)`` for :meth:`run_round`: on a cluster of one type the
        checked selection (:meth:`validate_selection`) and no types. An
        :class:`~shockwave_gym.placement.Allocation` must give each job its gang."""
        return self.validate_selection(rigid_action(action, self.static.gang)), None

    def step(self, action: Iterable[int]) -> RoundRecord:
        """Run one round with the jobs of ``action`` (R2-R4), then admit arrivals (R1)."""
        if self.done:
            raise InvalidActionError("the episode is over: every job has completed")
        return self.run_round(*self.validate_placement(action))

    # --- the round's GPU-type hooks --------------------------------------------------------
    # The round (run_round) is written once. What depends on the GPU types goes through these
    # five hooks; on a cluster of one type they are the identity, and a simulator of several
    # types (shockwave_gym.hetero_simulator) overrides them.

    def place_round(self, ids: np.ndarray, types: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """The round's jobs and the type each runs on, from what :meth:`run_round` was given.
        One type: ``ids`` as given, and no types (the round record's ``gpu_types`` is None)."""
        return ids, None

    def to_type_time(self, ids, types, work_s: np.ndarray, isolated_s: np.ndarray):
        """``(time done, total time)`` of jobs ``ids`` on their round's types, from reference
        work ``work_s`` (a copy the round may change in place) and isolated times
        ``isolated_s``. One type: progress is counted in that type's time already."""
        return work_s, isolated_s

    def stayed_on_type(self, ids, types) -> np.ndarray:
        """Which of ``ids`` ran last round on the type they run on now (R3: those pay no
        restart). One type: the jobs that ran last round."""
        return self.ran_last_round[ids]

    def to_reference_work(self, ids, types, time_s: np.ndarray) -> np.ndarray:
        """Inverse of :meth:`to_type_time`: reference work at time ``time_s`` on the types."""
        return time_s

    def record_types(self, ids, types) -> None:
        """Remember the types the round's jobs ran on (called with no jobs at reset)."""

    # --- the round -------------------------------------------------------------------------

    def run_round(self, ids: np.ndarray, types: np.ndarray | None = None) -> RoundRecord:
        """:meth:`step` for an action already checked: ``(ids, types)`` as
        :meth:`validate_placement` returns them, or ids as :meth:`validate_selection` returns
        them (sorted, unique, active int64 job ids whose gangs fit the cluster; the env's
        action modes build such sets) with ``types=None`` (placed by :meth:`place_round`).
        Nothing is checked again; the simulator keeps ``ids`` (in the round record), so do
        not modify it afterwards."""
        if self._num_done == self.num_jobs:
            raise InvalidActionError("the episode is over: every job has completed")
        ids, types = self.place_round(ids, types)
        iso = self.static.isolated_time_s[ids]
        tau, total = self.to_type_time(ids, types, self.work_done_s[ids], iso)
        overhead, finish_offset = self._restart_overhead(ids, types, total - tau)
        finishes = finish_offset <= self._round_constants[0]
        num_finishing = int(np.count_nonzero(finishes))
        if ids.size and num_finishing == ids.size:
            round_len = float(finish_offset.max())
        else:
            round_len = self.config.round_s
        # finishing jobs run to their finish, the others the whole round
        run_s = np.minimum(finish_offset, round_len)
        start = self.time_s

        tau += run_s - overhead
        work = self.to_reference_work(ids, types, tau)
        if num_finishing:
            work[finishes] = iso[finishes]
        self.work_done_s[ids] = work
        # only the jobs that ran move on in their epochs
        self.epoch_pos[ids] = self._epoch_position(self.static.job_base_s[ids], work)
        if num_finishing:
            done_ids = self._complete(ids[finishes], start + finish_offset[finishes])
        else:
            done_ids = ids[:0]
        self._book_run(ids, types, run_s, overhead)
        record = RoundRecord(
            index=self.round_index,
            start_s=start,
            end_s=start + round_len,
            job_ids=ids,
            run_s=run_s,
            overhead_s=overhead,
            completed_ids=done_ids,
            gpus_busy=int(np.add.reduce(self.static.gang[ids])),
            gpu_types=types,
        )
        self._close_round(record)
        return record

    def _restart_overhead(self, ids: np.ndarray, types, remaining: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(overhead, finish offset)`` of the round's jobs with ``remaining`` time to run:
        a job pays the restart unless it ran last round on the same type or runs too briefly
        (R3; nobody pays in the first round); it finishes ``overhead + remaining`` into it."""
        if self.round_index >= 1:
            round_s, threshold_s, restart_s = self._round_constants
            pays = np.minimum(round_s, remaining) > threshold_s
            overhead = np.greater(pays, self.stayed_on_type(ids, types)) * restart_s
            return overhead, overhead + remaining
        return np.zeros(ids.size), 0.0 + remaining

    def _complete(self, done_ids: np.ndarray, completion_s: np.ndarray) -> np.ndarray:
        """Mark ``done_ids`` completed at ``completion_s`` (R4); returns ``done_ids``."""
        self.completion_s[done_ids] = completion_s
        self.status[done_ids] = DONE
        self._num_done += int(done_ids.size)
        self._active_cache = None
        return done_ids

    def _book_run(self, ids: np.ndarray, types, run_s: np.ndarray, overhead: np.ndarray) -> None:
        """Per-job totals and last-round arrays of the jobs ``ids`` that ran this round."""
        run_time = self.run_time_s[ids]
        run_time += run_s
        self.run_time_s[ids] = run_time
        rounds_run = self.rounds_run[ids]
        rounds_run += 1
        self.rounds_run[ids] = rounds_run
        # only the previous round's jobs hold non-zero entries: filling is the same reset
        self.last_run_s.fill(0.0)
        self.last_run_s[ids] = run_s
        self.last_overhead_s.fill(0.0)
        self.last_overhead_s[ids] = overhead
        self.ran_last_round.fill(False)
        self.ran_last_round[ids] = True
        self.record_types(ids, types)

    def _close_round(self, record: RoundRecord) -> None:
        """Keep ``record``, move the clock to its end and admit arrivals (R1)."""
        self.history.append(record)
        self.time_s = record.end_s
        self.round_index += 1
        if not self.done:
            self._admit_and_skip_idle()
        else:
            self._version += 1

    def _commit_round(self, record: RoundRecord, time_s: float, next_arrival: int, num_done: int) -> None:
        """The bookkeeping of :meth:`run_round` for a round whose per-job arrays a compiled
        step (:mod:`shockwave_gym.env.vector.single`) has already updated in place, with the
        arrivals admitted up to the next decision time ``time_s``."""
        self.history.append(record)
        self.time_s = time_s
        self.round_index += 1
        self._next_arrival = next_arrival
        self._num_done = num_done
        self._active_cache = None
        self._version += 1

    def commit_round(self, record: RoundRecord, time_s: float, next_arrival: int, num_done: int) -> None:
        """Public form of :meth:`_commit_round`: record a round whose per-job arrays a compiled
        step has already updated in place (the env's kernels call this, not the private one)."""
        self._commit_round(record, time_s, next_arrival, num_done)

    # --- results -----------------------------------------------------------------------------

    def result(self):
        from shockwave_gym.metrics import EpisodeResult

        return EpisodeResult.from_simulator(self)


class ColumnHooks:
    """Four of the round's GPU-type hooks over the columns of a
    :class:`~shockwave_gym.hetero_state.TypedJobArrays`: GPU types in
    :class:`~shockwave_gym.hetero_simulator.HeteroSimulator`, (type, count) configurations in
    :class:`~shockwave_gym.elastic.ElasticSimulator`. Mixed in before :class:`Simulator`; a
    subclass sets the arrays (``column_arrays``) and, per job, the column it ran in last round
    (``last_column``, -1: none; set before the first reset)."""

    def to_type_time(self, ids, types, work_s, isolated_s):
        """Time done and total time in each job's column, mapped epoch by epoch
        (:meth:`~shockwave_gym.hetero_state.TypedJobArrays.to_type_time`; the identity where
        the column's epochs last as the reference's)."""
        return self.column_arrays.to_type_time(self.static, ids, types, work_s, self.epoch_pos[ids])

    def stayed_on_type(self, ids, types):
        """A job "ran last round" only if it ran in the same column (a move pays the restart)."""
        return self.ran_last_round[ids] & (self.last_column[ids] == types)

    def to_reference_work(self, ids, types, time_s):
        return self.column_arrays.to_reference_work(self.static, ids, types, time_s)

    def record_types(self, ids, types) -> None:
        last = self.last_column
        last.fill(-1)
        last[ids] = types
