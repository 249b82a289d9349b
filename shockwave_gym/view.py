"""The read-only view of the simulator state that agents may use.

It shows what a scheduler may know: each job's public trace facts
(:class:`~shockwave_gym.jobs.PublicJobSpec`: model, gang, arrival, total epochs, initial batch
size, mode; the length, a user's estimate of it or nothing, by the run's information regime:
:attr:`ClusterView.length_regime`, docs/SEMANTICS.md, "Information regimes"), the batch sizes its mode can reach, the throughput table, and the batch sizes and
epoch durations observed so far. Estimates built from these (the remaining-time predictor,
FTF estimates) live on the agents' side, in :mod:`shockwave_gym.interface`. Quantities
derived from the hidden future schedule (isolated time, true remaining time, the batch-size
schedule itself) raise :class:`OracleAccessError` unless the view was made with
``oracle=True`` (for ablations only). See docs/SEMANTICS.md, "Remaining-time predictor".

Per-job arrays are indexed by job id (0..N-1, trace order sorted by arrival) and cover every
job, arrived or not; use :attr:`active_job_ids` or :attr:`is_active` to select. All arrays are
read-only. Derived arrays are computed at most once per simulator state.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.jobs import GANG_SIZES, EstimatedJobSpec, PublicJobSpec, UnknownLengthJobSpec
from shockwave_gym.regimes import LengthModel, default_length_model, length_model_of
from shockwave_gym.state import ACTIVE, DONE, PENDING
from shockwave_gym.throughput import REFERENCE_GPU_TYPE, TypedThroughputs

_DONE = np.array(DONE, dtype=np.int8)  # 0-d: numpy compares with it faster than with an int


class OracleAccessError(AttributeError):
    """Raised when an agent asks a non-oracle view for hidden future information."""


class HiddenLengthError(OracleAccessError):
    """Raised when an agent asks for a length fact its information regime hides."""


def _read_only(array: np.ndarray) -> np.ndarray:
    view = array.view()
    view.flags.writeable = False
    return view


class ClusterView:
    """Read-only window on a :class:`~shockwave_gym.simulator.Simulator`."""

    __slots__ = ("_sim", "_oracle", "_cache", "_cache_version", "_static_ro", "_public_specs",
                 "_typed_cache", "_typed_version", "_typed_static", "_lengths", "_length_hidden", "_estimated",
                 "_count_cache", "_count_version", "_elastic", "__weakref__")

    def __init__(self, simulator, *, oracle: bool = False):
        self._sim = simulator
        self._oracle = bool(oracle)
        self._cache = None
        self._cache_version = -1
        s = simulator.static
        self._lengths = length_model_of(s.specs)
        #: num_epochs refused: a regime other than exact, on a non-oracle view (set once, as
        #: num_epochs is read on the env's and the planner's hot paths)
        self._length_hidden = self._lengths is not None and self._lengths.knowledge != "exact" and not oracle
        self._estimated: np.ndarray | None = None
        # the trace's epochs; the simulated ones differ for jobs that end early (hidden)
        nominal = s.num_epochs if self._lengths is None else np.array([j.num_epochs for j in s.specs], dtype=np.int64)
        self._static_ro = SimpleNamespace(
            arrival_s=_read_only(s.arrival_s),
            gang=_read_only(s.gang),
            num_epochs=_read_only(nominal),
            initial_batch_size=_read_only(s.initial_batch_size),
            priority=_read_only(s.priority),
            reachable_sizes=_read_only(s.reachable_sizes),
            reachable_valid=_read_only(s.reachable_valid),
        )
        self._public_specs: tuple[PublicJobSpec, ...] | None = None
        self._typed_cache = None
        self._typed_version = -1
        self._typed_static = None
        self._count_cache = None
        self._count_version = -1
        self._elastic: np.ndarray | None = None

    # --- cluster -------------------------------------------------------------------------

    @property
    def oracle(self) -> bool:
        return self._oracle

    @property
    def gpus(self) -> int:
        return self._sim.config.gpus

    @property
    def round_s(self) -> float:
        return self._sim.config.round_s

    @property
    def restart_overhead_s(self) -> float:
        return self._sim.config.restart_overhead_s

    @property
    def time_s(self) -> float:
        return self._sim.time_s

    @property
    def version(self) -> int:
        """A number that changes whenever the state does: estimates derived from the view
        may be cached under it."""
        return self._sim.version

    @property
    def round_index(self) -> int:
        """Rounds executed so far (the index of the round about to be chosen)."""
        return self._sim.round_index

    @property
    def num_jobs(self) -> int:
        """Jobs in the whole trace (arrived or not): the N of static-contention FTF."""
        return self._sim.num_jobs

    @property
    def throughputs(self):
        return self._sim.throughputs

    @property
    def active_job_ids(self) -> np.ndarray:
        """Arrived, unfinished jobs, ascending id (= arrival order)."""
        return _read_only(self._sim.active_job_ids())

    @property
    def num_active(self) -> int:
        return int(self._sim.active_job_ids().size)

    @property
    def num_arrived(self) -> int:
        return self._sim.num_arrived

    @property
    def done(self) -> bool:
        return self._sim.done

    # --- per-job facts from the trace ----------------------------------------------------

    @property
    def arrival_s(self) -> np.ndarray:
        return self._static_ro.arrival_s

    @property
    def gang(self) -> np.ndarray:
        return self._static_ro.gang

    @property
    def num_epochs(self) -> np.ndarray:
        """The trace's epochs per job (nominal: a job may end early, hidden). Only in the
        ``exact`` regime (or with ``oracle=True``); see :attr:`length_regime`."""
        if self._length_hidden:
            raise HiddenLengthError(
                f"num_epochs is hidden in the {self.length_regime!r} information regime "
                "(docs/SEMANTICS.md, \"Information regimes\"); use "
                "shockwave_gym.interface.expected_future_epochs(view) or view.length_model"
            )
        return self._static_ro.num_epochs

    @property
    def length_regime(self) -> str:
        """What schedulers know of job lengths: ``exact``, ``estimate`` or ``unknown``."""
        return "exact" if self._lengths is None else self._lengths.knowledge

    @property
    def length_model(self) -> LengthModel:
        """The regime's public facts: knowledge, early-ending share, estimate model, prior."""
        return default_length_model() if self._lengths is None else self._lengths

    @property
    def estimated_epochs(self) -> np.ndarray:
        """The user's estimate of each job's epochs (``estimate`` regime only)."""
        if self.length_regime != "estimate":
            raise HiddenLengthError(f"estimated_epochs exists only in the 'estimate' regime, not {self.length_regime!r}")
        if self._estimated is None:
            estimates = np.array([self.spec(j).estimated_epochs for j in range(self.num_jobs)], dtype=np.int64)
            self._estimated = _read_only(estimates)
        return self._estimated

    @property
    def initial_batch_size(self) -> np.ndarray:
        return self._static_ro.initial_batch_size

    @property
    def priority(self) -> np.ndarray:
        return self._static_ro.priority

    def spec(self, job_id: int) -> PublicJobSpec | EstimatedJobSpec | UnknownLengthJobSpec:
        """What the trace says of ``job_id`` that a scheduler may know: its length, the
        user's estimate or no length, by :attr:`length_regime`."""
        if self._public_specs is None:
            self._public_specs = tuple(spec.public() for spec in self._sim.static.specs)
        return self._public_specs[job_id]

    @property
    def reachable_sizes(self) -> np.ndarray:
        """(N, W) batch sizes each job's adaptation mode can reach, ascending, 0-padded;
        the columns of :attr:`observed_batch_size_counts`."""
        return self._static_ro.reachable_sizes

    @property
    def reachable_valid(self) -> np.ndarray:
        """(N, W) bool: which entries of :attr:`reachable_sizes` are real sizes."""
        return self._static_ro.reachable_valid

    def reachable_batch_sizes(self, job_id: int) -> tuple[int, ...]:
        row = self._static_ro.reachable_sizes[job_id]
        return tuple(int(b) for b in row[self._static_ro.reachable_valid[job_id]])

    # --- per-job observed state ----------------------------------------------------------

    @property
    def derived_arrays(self) -> _Derived:
        """Every derived per-job array of the current state at once (the properties
        ``epochs_done`` to ``attained_service_gpu_s`` below, as attributes of one object):
        one call for code that reads several of them per state."""
        return self._derived()

    @property
    def is_active(self) -> np.ndarray:
        return self._sim.status == ACTIVE

    @property
    def is_done(self) -> np.ndarray:
        return self._sim.status == DONE

    @property
    def has_arrived(self) -> np.ndarray:
        return self._sim.status != PENDING

    @property
    def completion_s(self) -> np.ndarray:
        return _read_only(self._sim.completion_s)

    @property
    def run_time_s(self) -> np.ndarray:
        """Wall seconds each job has held its GPUs (restart overhead included)."""
        return _read_only(self._sim.run_time_s)

    @property
    def attained_service_gpu_s(self) -> np.ndarray:
        """GPU-seconds received so far (run time x gang, or x the count of each round for an
        elastic run), as in Tiresias' LAS."""
        held = getattr(self._sim, "gpu_time_s", None)
        return self._derived().attained_service_gpu_s if held is None else _read_only(held)

    @property
    def rounds_run(self) -> np.ndarray:
        return _read_only(self._sim.rounds_run)

    @property
    def ran_last_round(self) -> np.ndarray:
        return _read_only(self._sim.ran_last_round)

    @property
    def busy_gpus_last_round(self) -> int:
        """GPUs held by the jobs that ran in the previous round (0 before the first)."""
        history = self._sim.history
        return history[-1].gpus_busy if history else 0

    @property
    def last_run_s(self) -> np.ndarray:
        """Seconds each job held its GPUs in the last round (0 if it did not run)."""
        return _read_only(self._sim.last_run_s)

    @property
    def last_overhead_s(self) -> np.ndarray:
        """Restart overhead each job paid in the last round (0 if none or it did not run)."""
        return _read_only(self._sim.last_overhead_s)

    @property
    def work_done_s(self) -> np.ndarray:
        """Isolated seconds of work done per job: the observed durations of its completed
        epochs plus the finished share of the current one (all observed, nothing hidden)."""
        return _read_only(self._sim.work_done_s)

    @property
    def epochs_done(self) -> np.ndarray:
        """Completed epochs per job."""
        return self._derived().epochs_done

    @property
    def epoch_progress(self) -> np.ndarray:
        """Completed epochs plus the finished share of the current epoch (float)."""
        return self._derived().epoch_progress

    @property
    def current_epoch_fraction_done(self) -> np.ndarray:
        """Share of the current epoch done, in [0, 1] (1 for completed jobs)."""
        return self._derived().current_epoch_fraction_done

    @property
    def current_batch_size(self) -> np.ndarray:
        return self._derived().current_batch_size

    @property
    def current_throughput(self) -> np.ndarray:
        """Iterations/s of the whole gang at the current batch size."""
        return self._derived().current_throughput

    @property
    def current_epoch_duration_s(self) -> np.ndarray:
        return self._derived().current_epoch_duration_s

    @property
    def mean_epoch_duration_s(self) -> np.ndarray:
        """Mean duration of the epochs completed so far (NaN before the first one)."""
        return self._derived().mean_epoch_duration_s

    @property
    def observed_batch_size_counts(self) -> np.ndarray:
        """(N, W) completed epochs per reachable size, columns as :attr:`reachable_sizes`."""
        return self._derived().observed_batch_size_counts

    # --- oracle-only ---------------------------------------------------------------------

    def _require_oracle(self, what: str) -> None:
        if not self._oracle:
            raise OracleAccessError(
                f"{what} is derived from the hidden future schedule; build the view with "
                "oracle=True (ablations only) to read it"
            )

    @property
    def isolated_time_s(self) -> np.ndarray:
        self._require_oracle("isolated_time_s")
        return _read_only(self._sim.static.isolated_time_s)

    @property
    def remaining_s(self) -> np.ndarray:
        """True remaining isolated run time (oracle only)."""
        self._require_oracle("remaining_s")
        return _read_only(self._sim.static.isolated_time_s - self._sim.work_done_s)

    def batch_size_schedule(self, job_id: int) -> np.ndarray:
        self._require_oracle("batch_size_schedule")
        s = self._sim.static
        return _read_only(s.epoch_batch_size[s.epoch_offset[job_id] : s.epoch_offset[job_id + 1]])

    # --- per-type API (docs/HETEROGENEOUS.md, "For agents and envs") -----------------------
    #
    # The same on both paths: a homogeneous ``--gpus N`` run is a cluster of one type (v100),
    # every job runnable on it, its per-type throughput the current throughput.

    @property
    def cluster(self) -> ClusterSpec:
        """The cluster: GPU types (v100, p100, k80 order) and counts; ``--gpus N`` is
        ``ClusterSpec.homogeneous(N)``. Column ``t`` of every per-type array is
        ``cluster.types[t]``."""
        return self._sim.config.cluster_spec

    @property
    def heterogeneous(self) -> bool:
        """True on the heterogeneous path (``--cluster``), even with one type."""
        return self._sim.config.heterogeneous

    @property
    def type_gpus(self) -> np.ndarray:
        """(T,) GPUs per type: the capacity of each type in every round."""
        return self._typed_parts()[0]

    @property
    def runnable(self) -> np.ndarray:
        """(N, T) bool: the type's table has a positive rate for every batch size the job can
        reach (a job may only be placed on such a type)."""
        return self._typed_parts()[1]

    @property
    def throughputs_by_type(self) -> TypedThroughputs:
        """The per-type throughput tables (one per cluster type, plus the V100 reference)."""
        sim = self._sim
        bundle = getattr(sim, "typed_throughputs", None)
        return bundle if bundle is not None else TypedThroughputs({REFERENCE_GPU_TYPE: sim.throughputs})

    @property
    def throughput_by_type(self) -> np.ndarray:
        """(N, T) iterations/s of each job's whole gang at its current batch size on each
        type (0 where it cannot run). Column of v100 = :attr:`current_throughput`."""
        return self._typed_dynamic()[0]

    @property
    def epoch_duration_by_type_s(self) -> np.ndarray:
        """(N, T) seconds the current epoch takes, whole, on each type (inf where the job
        cannot run). Column of v100 = :attr:`current_epoch_duration_s`."""
        return self._typed_dynamic()[1]

    @property
    def last_type(self) -> np.ndarray:
        """(N,) type index each job ran on last round; -1 if it did not run."""
        return self._typed_dynamic()[2]

    @property
    def busy_gpus_by_type_last_round(self) -> np.ndarray:
        """(T,) GPUs of each type held in the previous round (zeros before the first)."""
        return self._typed_dynamic()[3]

    # --- elastic jobs (docs/SEMANTICS.md, "Elastic jobs") -----------------------------------
    #
    # Count axis ``k`` is ``gpu_counts[k]`` (1, 2, 4, 8) everywhere. On a run without elastic
    # jobs every job may use its gang only, so the same code reads both kinds of run.

    @property
    def gpu_counts(self) -> tuple[int, ...]:
        """The GPU counts a job may be given (the count axis of the per-count arrays)."""
        return GANG_SIZES

    @property
    def elastic(self) -> np.ndarray:
        """(N,) bool: the scheduler chooses the job's GPU count each round (else its gang)."""
        if self._elastic is None:
            self._elastic = _read_only(np.array([bool(spec.gangs) for spec in self._sim.static.specs], dtype=bool))
        return self._elastic

    def allowed_counts(self, job_id: int, gpu_type: int | None = None) -> tuple[int, ...]:
        """Counts job ``job_id`` may run on, on type index ``gpu_type`` or on any type: for an
        elastic job the declared counts the table measures with a positive rate for every
        batch size it can reach (and the type has that many GPUs); for a rigid job its gang."""
        allowed = self.count_allowed[job_id]
        row = allowed.any(axis=0) if gpu_type is None else allowed[gpu_type]
        return tuple(c for c, ok in zip(GANG_SIZES, row.tolist(), strict=True) if ok)

    @property
    def count_allowed(self) -> np.ndarray:
        """(N, T, C) bool: job ``j`` may run on ``gpu_counts[k]`` GPUs of type ``t``."""
        return self._count_arrays()[0]

    @property
    def throughput_by_count(self) -> np.ndarray:
        """(N, T, C) iterations/s of job ``j`` on ``gpu_counts[k]`` GPUs of type ``t`` at its
        current batch size, as the table measures it (0 where it may not run): the public
        facts for choosing a count. An epoch at any count is (samples / b) / this rate."""
        return self._count_arrays()[1]

    @property
    def last_count(self) -> np.ndarray:
        """(N,) GPUs each job ran on last round; 0 if it did not run."""
        sim = self._sim
        counts = np.zeros(sim.num_jobs, dtype=np.int64)
        if sim.history and sim.ran_last_round.any():
            record = sim.history[-1]
            counts[record.job_ids] = sim.static.gang[record.job_ids] if record.gpu_counts is None else record.gpu_counts
        return _read_only(counts)

    def _count_arrays(self):
        """(allowed, rates) of :attr:`count_allowed` / :attr:`throughput_by_count`, built once per
        state :attr:`version`."""
        sim = self._sim
        if self._count_version == sim.version:
            return self._count_cache
        configs = getattr(sim, "configs", None)
        num_types = self.type_gpus.size
        shape = (sim.num_jobs, num_types, len(GANG_SIZES))
        if configs is not None:
            current = np.minimum(sim.epoch_pos, sim.static.last_epoch_index)
            allowed = configs.runnable.reshape(shape)
            rates = np.where(allowed, configs.epoch_rate[current].reshape(shape), 0.0)
        else:
            column = np.searchsorted(np.asarray(GANG_SIZES), sim.static.gang)
            allowed = np.zeros(shape, dtype=bool)
            allowed[np.arange(sim.num_jobs), :, column] = self.runnable
            rates = np.zeros(shape)
            rates[np.arange(sim.num_jobs), :, column] = self.throughput_by_type
        self._count_cache, self._count_version = (_read_only(allowed), _read_only(rates)), sim.version
        return self._count_cache

    def _typed_parts(self):
        if self._typed_static is None:
            typed = getattr(self._sim, "typed", None)
            if typed is None:
                capacity = np.array([self._sim.config.gpus], dtype=np.int64)
                runnable = np.ones((self._sim.num_jobs, 1), dtype=bool)
            else:
                capacity, runnable = typed.capacity, typed.runnable
            self._typed_static = (_read_only(capacity), _read_only(runnable))
        return self._typed_static

    def _typed_dynamic(self):
        sim = self._sim
        if self._typed_version == sim.version:
            return self._typed_cache
        typed = getattr(sim, "typed", None)
        if typed is None:
            derived = self._derived()
            rates = derived.current_throughput[:, None].copy()
            durations = derived.current_epoch_duration_s[:, None].copy()
            last = np.where(sim.ran_last_round, 0, -1).astype(np.int64)
            busy = np.array([sim.history[-1].gpus_busy if sim.history else 0], dtype=np.int64)
        else:
            current = np.minimum(sim.epoch_pos, sim.static.last_epoch_index)
            rates = typed.epoch_rate[current]
            durations = typed.epoch_duration_s[current]
            last = sim.last_type.copy()
            busy = np.zeros(typed.capacity.size, dtype=np.int64)
            if sim.history:
                record = sim.history[-1]
                held = sim.static.gang[record.job_ids] if record.gpu_counts is None else record.gpu_counts
                np.add.at(busy, record.gpu_types, held)
        parts = tuple(_read_only(a) for a in (rates, durations, last, busy))
        self._typed_cache, self._typed_version = parts, sim.version
        return parts

    # --- derived arrays, computed once per state -----------------------------------------

    def _derived(self) -> _Derived:
        """Per-job observed quantities for the current state, computed once per state.

        Everything follows from each job's epoch position (kept by the simulator) and work
        done, by a few gathers from the static tables (:meth:`StaticJobArrays.state_rows`).
        This is the env's hot path.
        """
        sim = self._sim
        if self._cache_version == sim.version:
            return self._cache
        rows = sim.static.state_rows(sim.epoch_pos, sim.work_done_s, sim.status == _DONE, sim.run_time_s)
        derived = _Derived(*rows)
        self._cache, self._cache_version = derived, sim.version
        return derived


class _Derived:
    """The per-state derived arrays of :meth:`ClusterView._derived` (read-only)."""

    __slots__ = (
        "_rows",
        "epochs_done",
        "epoch_progress",
        "current_epoch_fraction_done",
        "current_batch_size",
        "current_throughput",
        "current_epoch_duration_s",
        "mean_epoch_duration_s",
        "observed_batch_size_counts",
        "attained_service_gpu_s",
    )

    def __init__(self, rows: np.ndarray, epochs_done: np.ndarray, batch_size: np.ndarray, counts: np.ndarray):
        for array in (rows, epochs_done, batch_size, counts):
            array.flags.writeable = False  # and so every row view taken from now on
        self._rows = rows
        self.current_epoch_duration_s, self.mean_epoch_duration_s, self.current_throughput = rows[:3]
        self.current_epoch_fraction_done, self.epoch_progress, self.attained_service_gpu_s = rows[4:]
        self.epochs_done = epochs_done
        self.current_batch_size = batch_size
        self.observed_batch_size_counts = counts
