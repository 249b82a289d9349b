"""Observation features and the observation builder, as functions of a ClusterView.

Nothing here knows the environment object, so a learned agent can rebuild exactly the
observation it was trained on from the view it gets in ``act(view)``::

    slots = SlotMap(max_jobs=64)
    slots.reset(view.num_jobs)
    ...
    slots.update(view)                  # once per round boundary
    obs = build_observation(view, slots)

Jobs are addressed by slot (:class:`~shockwave_gym.interface.slots.SlotMap`).

**Versions.** Three layouts exist (:data:`OBSERVATION_VERSIONS`). Version 2 (the env's
default, ``obs_version=2``) is scale-free: counts are relative to the cluster's GPUs, the gang
is given both absolutely (log-scaled) and relative to the GPUs, times use one logarithmic
scale with resolution from a minute to a day, constant and duplicate features are gone, and
per-type features (:data:`~shockwave_gym.cluster.TYPE_ORDER`) let one layout serve
heterogeneous clusters. Version 1 is kept, frozen, for the weights trained on it: the
module-level names :data:`JOB_FEATURES`, :data:`CLUSTER_FEATURES`, ... and the ``version``
defaults of the functions below stay those of version 1 until the shipped weights are
retrained (``agents/learned`` calls them without a version); new code passes ``version``.
Version 3 is version 2 with length beliefs (:mod:`~shockwave_gym.interface.length_features`):
progress against the believed total epochs, the belief's spread, and the regime, so it works
in every information regime; versions 1 and 2 read each job's length and work in ``exact``
only.

**No future information.** Every feature comes from the trace's public fields, the batch
sizes and epoch durations observed so far, and the remaining-time predictor. The isolated time and
the hidden batch-size schedule are never read (the view would refuse them anyway).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from shockwave_gym.cluster import TYPE_ORDER
from shockwave_gym.errors import InputError
from shockwave_gym.interface.elastic_features import elastic_space
from shockwave_gym.interface.ftf import ftf_estimate
from shockwave_gym.interface.length_features import (
    BELIEF_CONSTANTS,
    BELIEF_JOB_FEATURES,
    REGIME_CLUSTER_FEATURES,
    fill_belief_rows,
    regime_features,
)
from shockwave_gym.interface.lengths import believed_total_epochs
from shockwave_gym.interface.per_view import once_per_view
from shockwave_gym.interface.predictor import predicted_remaining_s
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.jobs import GANG_SIZES
from shockwave_gym.view import ClusterView

#: The observation layouts; :data:`DEFAULT_OBSERVATION_VERSION` is the env's default.
OBSERVATION_VERSIONS = (1, 2, 3)
DEFAULT_OBSERVATION_VERSION = 2


#: Time scale of version 1's logarithmic time features (seconds).
TIME_SCALE_S = 3600.0

#: Per-job features, in column order: (name, low, high, meaning).
JOB_FEATURES: tuple[tuple[str, float, float, str], ...] = (
    ("gang", 0.0, 1.0, "gang size / cluster GPUs"),
    ("epoch_progress", 0.0, 1.0, "epochs done (with the current epoch's share) / total epochs"),
    ("batch_size_growth", -2.0, 2.0, "log2(current batch size / initial batch size) / 4"),
    ("throughput", 0.0, 2.0, "log10(1 + samples/s at the current batch size) / 6"),
    ("mean_epoch_duration", 0.0, 4.0,
     "log1p(observed mean epoch duration / round length) / 4; the current epoch's duration "
     "before the first epoch completes"),
    ("predicted_remaining", 0.0, 4.0, "log1p(core predictor's remaining run time / 1 h) / 3"),
    ("age", 0.0, 4.0, "log1p(time since arrival / 1 h) / 3"),
    ("attained_service", 0.0, 4.0, "log1p(GPU-seconds received / 1 h) / 3"),
    ("ran_last_round", 0.0, 1.0, "1 if the job ran in the previous round (no restart cost)"),
    ("ftf_estimate", 0.0, 4.0, "log2(1 + projected finish-time fairness rho-hat), see ftf_estimate"),
)

#: Cluster-wide features, in order: (name, low, high, meaning).
CLUSTER_FEATURES: tuple[tuple[str, float, float, str], ...] = (
    ("free_gpus", 0.0, 1.0, "GPUs not yet allocated in this decision / cluster GPUs"),
    ("busy_last_round", 0.0, 1.0, "GPUs held by the jobs that ran in the previous round / GPUs"),
    ("active_jobs", 0.0, 8.0, "active (arrived, unfinished) jobs / max_jobs, queued included"),
    ("queued_jobs", 0.0, 8.0, "active jobs without a slot / max_jobs"),
    ("demand", 0.0, 16.0, "sum of active jobs' gangs / cluster GPUs"),
    ("time", 0.0, 4.0, "log1p(simulated time / 1 h) / 3"),
    ("round_index", 0.0, 4.0, "log1p(rounds run x round length / 1 h) / 3"),
    ("gpus", 0.0, 2.0, "log2(cluster GPUs) / 8"),
)

JOB_FEATURE_NAMES = tuple(f[0] for f in JOB_FEATURES)
CLUSTER_FEATURE_NAMES = tuple(f[0] for f in CLUSTER_FEATURES)
_JOB_LOW = np.array([f[1] for f in JOB_FEATURES], dtype=np.float32)
_JOB_HIGH = np.array([f[2] for f in JOB_FEATURES], dtype=np.float32)
_CLUSTER_LOW = np.array([f[1] for f in CLUSTER_FEATURES], dtype=np.float32)
_CLUSTER_HIGH = np.array([f[2] for f in CLUSTER_FEATURES], dtype=np.float32)
_CLUSTER_BOUNDS = tuple((f[1], f[2]) for f in CLUSTER_FEATURES)

#: Version 2's time features: log1p(t / TIME_UNIT_S) / log1p(TIME_SPAN_S / TIME_UNIT_S), so a
#: minute reads 0.10, ten minutes 0.33, an hour 0.56, a day 1 (bounds allow up to ~2 days^2).
TIME_UNIT_S = 60.0
TIME_SPAN_S = 86400.0
LOG_TIME = math.log1p(TIME_SPAN_S / TIME_UNIT_S)
_TIME = f"log1p(s / {TIME_UNIT_S:g} s) / log1p({TIME_SPAN_S:g} / {TIME_UNIT_S:g})"

#: Version 2's per-job features, in column order: (name, low, high, meaning).
JOB_FEATURES_V2: tuple[tuple[str, float, float, str], ...] = (
    ("gang_share", 0.0, 1.0, "gang size / cluster GPUs"),
    ("epoch_progress", 0.0, 1.0, "epochs done (with the current epoch's share) / total epochs"),
    ("gang", 0.0, 2.0, "log2(gang size) / 3 (1 GPU: 0, 8 GPUs: 1)"),
    ("batch_size_growth", -2.0, 2.0, "log2(current batch size / initial batch size) / 4"),
    ("throughput", 0.0, 2.0, "log10(1 + samples/s at the current batch size) / 4"),
    ("mean_epoch_duration", 0.0, 2.0,
     f"{_TIME} of the observed mean epoch duration (the current epoch's before the first completes)"),
    ("predicted_remaining", 0.0, 2.0, f"{_TIME} of the core predictor's remaining run time"),
    ("age", 0.0, 2.0, f"{_TIME} of the time since arrival"),
    ("attained_service", 0.0, 2.0, f"{_TIME} of the GPU-seconds received"),
    ("ran_last_round", 0.0, 1.0, "1 if the job ran in the previous round (no restart cost)"),
    ("ftf_estimate", 0.0, 4.0, "log2(1 + projected finish-time fairness rho-hat), see ftf_estimate"),
    *((f"throughput_{t}", 0.0, 4.0,
       f"built-in {t.upper()} table's rate at the current batch size / built-in V100 rate (0: cannot run)")
      for t in TYPE_ORDER),
)

#: Version 2's cluster-wide features, in order: (name, low, high, meaning).
CLUSTER_FEATURES_V2: tuple[tuple[str, float, float, str], ...] = (
    *((f"free_{t}", 0.0, 1.0, f"{t.upper()} GPUs not yet allocated in this decision / cluster GPUs")
      for t in TYPE_ORDER),
    ("busy_last_round", 0.0, 1.0, "GPUs held by the jobs that ran in the previous round / GPUs"),
    ("active_jobs", 0.0, 6.0, "log2(1 + active (arrived, unfinished) jobs / GPUs), queued included"),
    ("queued_jobs", 0.0, 6.0, "log2(1 + active jobs without a slot / GPUs)"),
    ("demand", 0.0, 6.0, "log2(1 + sum of active jobs' gangs / GPUs)"),
    ("time", 0.0, 3.0, f"{_TIME} of the simulated time"),
)

#: Version 2's transform per job feature row: rows 2-3 log2(raw) x V2_SCALE_OUT, rows 4-10
#: log1p(max(0, raw x V2_SCALE_IN)) x V2_SCALE_OUT, the others raw (x 1); then clipping.
V2_LOG2_ROWS = slice(2, 4)
V2_LOG1P_ROWS = slice(4, 11)
V2_SCALE_IN = np.array([1.0, 1 / TIME_UNIT_S, 1 / TIME_UNIT_S, 1 / TIME_UNIT_S, 1 / TIME_UNIT_S, math.e - 1, 1.0])
V2_SCALE_OUT = np.array([1.0, 1.0, 1 / 3, 0.25, 1 / (4 * math.log(10)), *([1 / LOG_TIME] * 4), 1.0, 1 / math.log(2),
                         *([1.0] * len(TYPE_ORDER))])
V2_JOB_LOW = np.array([f[1] for f in JOB_FEATURES_V2], dtype=np.float32).astype(np.float64)
V2_JOB_HIGH = np.array([f[2] for f in JOB_FEATURES_V2], dtype=np.float32).astype(np.float64)
V2_ROWS = len(JOB_FEATURES_V2)
V2_CLUSTER_LOW = np.array([f[1] for f in CLUSTER_FEATURES_V2])
V2_CLUSTER_HIGH = np.array([f[2] for f in CLUSTER_FEATURES_V2])

#: Version 3's columns redefined from version 2's (the others keep version 2's meaning).
_V3_MEANINGS = {
    "epoch_progress": "epochs done (with the current epoch's share) / believed total epochs (the trace's "
                      "epochs in the exact regime, else E[T | T > epochs done])",
    "predicted_remaining": f"{_TIME} of the core predictor's remaining run time, from the regime's belief",
}
#: Version 3's per-job features (version 2's, then the length belief's), in column order.
JOB_FEATURES_V3: tuple[tuple[str, float, float, str], ...] = (
    *((name, low, high, _V3_MEANINGS.get(name, meaning)) for name, low, high, meaning in JOB_FEATURES_V2),
    *((name, low, high, meaning.format(T=_TIME)) for name, low, high, meaning in BELIEF_JOB_FEATURES),
)
#: Version 3's cluster-wide features: version 2's, then the regime's.
CLUSTER_FEATURES_V3: tuple[tuple[str, float, float, str], ...] = (*CLUSTER_FEATURES_V2, *REGIME_CLUSTER_FEATURES)
V3_BELIEF_LOW = np.array([f[1] for f in BELIEF_JOB_FEATURES], dtype=np.float32).astype(np.float64)[:, None]
V3_BELIEF_HIGH = np.array([f[2] for f in BELIEF_JOB_FEATURES], dtype=np.float32).astype(np.float64)[:, None]


def check_version(version) -> int:
    """``version`` if it is one of :data:`OBSERVATION_VERSIONS`, else :class:`InputError`."""
    if isinstance(version, bool) or version not in OBSERVATION_VERSIONS:
        raise InputError(f"obs_version must be one of {', '.join(map(str, OBSERVATION_VERSIONS))}, got {version!r}")
    return int(version)


def feature_tables(version: int = 1) -> tuple[tuple, tuple]:
    """(job features, cluster features) of ``version``: (name, low, high, meaning) each."""
    version = check_version(version)
    if version == 1:
        return JOB_FEATURES, CLUSTER_FEATURES
    if version == 3:
        return JOB_FEATURES_V3, CLUSTER_FEATURES_V3
    return JOB_FEATURES_V2, CLUSTER_FEATURES_V2


def feature_names(version: int = 1) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(job feature names, cluster feature names) of ``version``, in column order."""
    jobs, cluster = feature_tables(version)
    return tuple(f[0] for f in jobs), tuple(f[0] for f in cluster)


def observation_signature(version: int = 1) -> str:
    """A short hash of every feature's name, bounds, meaning and scaling constants.

    Saved policies record it; loading one trained on a different observation fails loudly
    instead of silently degrading. Any change to the features changes the signature.
    Version 1's signature is the one the shipped weights record.
    """
    import hashlib

    version = check_version(version)
    if version == 1:
        parts = [repr(JOB_FEATURES), repr(CLUSTER_FEATURES), repr(TIME_SCALE_S),
                 np.asarray(LOG_SCALE_IN).tobytes().hex(), np.asarray(LOG_SCALE_OUT).tobytes().hex()]
    else:
        parts = ["v2", repr(JOB_FEATURES_V2), repr(CLUSTER_FEATURES_V2), repr(TIME_UNIT_S), repr(TIME_SPAN_S),
                 repr(TYPE_ORDER), V2_SCALE_IN.tobytes().hex(), V2_SCALE_OUT.tobytes().hex()]
        if version == 3:
            parts = ["v3", repr(JOB_FEATURES_V3), repr(CLUSTER_FEATURES_V3), repr(BELIEF_CONSTANTS), *parts[3:]]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def observation_space(max_jobs: int, version: int = 1, *, elastic: bool = False, elastic_types: int = 1):
    """The ``gymnasium.spaces.Dict`` of :func:`build_observation` for ``max_jobs`` slots;
    ``elastic``: with the ``elastic`` entry (:mod:`~shockwave_gym.interface.elastic_features`)
    for ``elastic_types`` GPU types."""
    from gymnasium import spaces  # only learners and the env need spaces

    jobs, cluster = feature_tables(version)
    job_low = np.array([f[1] for f in jobs], dtype=np.float32)
    job_high = np.array([f[2] for f in jobs], dtype=np.float32)
    extra = {"elastic": elastic_space(max_jobs, len(GANG_SIZES), elastic_types)} if elastic else {}
    return spaces.Dict(
        {
            "jobs": spaces.Box(
                np.broadcast_to(job_low, (max_jobs, len(jobs))).copy(),
                np.broadcast_to(job_high, (max_jobs, len(jobs))).copy(),
                dtype=np.float32,
            ),
            "job_valid": spaces.MultiBinary(max_jobs),
            "picked": spaces.MultiBinary(max_jobs),
            "cluster": spaces.Box(np.array([f[1] for f in cluster], dtype=np.float32),
                                  np.array([f[2] for f in cluster], dtype=np.float32), dtype=np.float32),
            **extra,
        }
    )


# Features 3-9 share one transform, scale_out * log1p(max(0, x * scale_in)): throughput,
# mean epoch duration, predicted remaining, age, attained service, ran_last_round
# (log1p(x (e - 1)) maps {0, 1} to {0, 1}) and rho-hat.
LOG_SCALE_IN = np.array([1.0, 1.0, 1 / TIME_SCALE_S, 1 / TIME_SCALE_S, 1 / TIME_SCALE_S, math.e - 1, 1.0])[:, None]
LOG_SCALE_OUT = np.array([1 / (6 * math.log(10)), 0.25, 1 / 3, 1 / 3, 1 / 3, 1.0, 1 / math.log(2)])[:, None]
_JOB_LOW_COLUMN = _JOB_LOW.astype(np.float64)[:, None]
_ZERO, _QUARTER = np.array(0.0), np.array(0.25)  # 0-d: faster than Python scalars in ufuncs
_JOB_HIGH_COLUMN = _JOB_HIGH.astype(np.float64)[:, None]


def job_feature_matrix(view: ClusterView, rho_hat: np.ndarray | None = None) -> np.ndarray:
    """Features of every job, feature-major: shape (len(JOB_FEATURES), num_jobs), float64,
    clipped to the bounds. Columns of jobs that are not active are meaningless.

    ``rho_hat`` (from :func:`ftf_estimate`) is computed when not given. Feature-major
    because each feature is one row operation; :func:`slot_jobs` transposes while gathering.
    """
    return JobFeatures(view, padded=False).fill(view, rho_hat)


class JobFeatures:
    """A reusable buffer of :func:`job_feature_matrix` for one trace (``view``'s jobs and
    cluster): the rows are set up once, the trace's static feature (gang share) is computed
    once, and :meth:`fill` recomputes the rest for each state. With ``padded`` the buffer
    has one extra zero column that stands for the empty slots in :meth:`slot_features`
    (every bound brackets 0, so clipping keeps it zero)."""

    def __init__(self, view: ClusterView, *, padded: bool = True):
        self.buffer = np.zeros((len(JOB_FEATURES), view.num_jobs + int(padded)))
        self.__setstate__({"buffer": self.buffer, "num_jobs": view.num_jobs})
        np.divide(view.gang, view.gpus, out=self._rows[0])

    def __getstate__(self):  # the rows are views of the buffer: rebuilt, not copied
        return {"buffer": self.buffer, "num_jobs": len(self._rows[0])}

    def __setstate__(self, state):
        self.buffer = state["buffer"]
        self._rows = tuple(self.buffer[:, : state["num_jobs"]])

    def fill(self, view: ClusterView, rho_hat: np.ndarray | None = None) -> np.ndarray:
        """The features of ``view``'s current state (a view of the same jobs and cluster as
        at construction), written into :attr:`buffer`, which is returned."""
        if rho_hat is None:
            rho_hat = ftf_estimate(view)
        d = view.derived_arrays
        batch = d.current_batch_size
        _, progress, growth, samples, mean_epoch_s, remaining, age, service, ran, rho = self._rows
        np.divide(d.epoch_progress, view.num_epochs, out=progress)
        np.divide(batch, view.initial_batch_size, out=growth)
        np.log2(growth, out=growth)
        growth *= _QUARTER
        np.multiply(d.current_throughput, batch, out=samples)  # samples/s
        # before its first epoch completes, a job's current epoch stands in for the mean
        mean_epoch_s[:] = d.mean_epoch_duration_s
        np.copyto(mean_epoch_s, d.current_epoch_duration_s, where=np.isnan(mean_epoch_s))
        mean_epoch_s /= np.array(view.round_s)
        remaining[:] = predicted_remaining_s(view)
        np.subtract(view.time_s, view.arrival_s, out=age)  # negative before arrival: clipped to 0
        service[:] = d.attained_service_gpu_s
        ran[:] = view.ran_last_round
        rho[:] = rho_hat
        out = self.buffer
        logged = out[3:]
        logged *= LOG_SCALE_IN
        np.maximum(logged, _ZERO, out=logged)
        np.log1p(logged, out=logged)
        logged *= LOG_SCALE_OUT
        np.minimum(out, _JOB_HIGH_COLUMN, out=out)
        return np.maximum(out, _JOB_LOW_COLUMN, out=out)

    def slot_features(self, slots: SlotMap) -> np.ndarray:
        """:func:`slot_jobs` of the last :meth:`fill` (padded buffer): each slot's job,
        zeros for empty slots, as a fresh C-ordered (max_jobs, F) float32 array."""
        return self.buffer[:, slots.gather_index()].T.astype(np.float32, order="C")


def cluster_features(view: ClusterView, slots: SlotMap, free_gpus: int | None = None) -> np.ndarray:
    """(len(CLUSTER_FEATURES),) float32 cluster features, clipped to the bounds.

    ``slots`` must have been updated for this state (it carries the queue and the demand).
    """
    gpus = view.gpus
    max_jobs = slots.max_jobs
    values = (
        (gpus if free_gpus is None else free_gpus) / gpus,
        view.busy_gpus_last_round / gpus,
        view.num_active / max_jobs,
        slots.queue.size / max_jobs,
        slots.demand_gpus / gpus,
        math.log1p(view.time_s / TIME_SCALE_S) / 3.0,
        math.log1p(view.round_index * view.round_s / TIME_SCALE_S) / 3.0,
        math.log2(gpus) / 8.0,
    )
    # min(max(v, low), high), NaN passing through
    return np.array(
        [high if v > high else (low if v < low else v) for v, (low, high) in zip(values, _CLUSTER_BOUNDS, strict=True)],
        dtype=np.float32,
    )


# --- version 2 ---------------------------------------------------------------------------


@functools.cache
def _builtin_tables() -> tuple:
    from shockwave_gym.throughput import ThroughputTable

    return tuple(ThroughputTable.builtin(t) for t in TYPE_ORDER)


@once_per_view
def type_throughput_table(view: ClusterView) -> tuple[np.ndarray, np.ndarray]:
    """(sizes (N, W) int64, relative (N, W, len(TYPE_ORDER)) float64), read-only, built once
    per view: for each job and each batch size it can reach (``view.reachable_sizes``; -1
    pads), the built-in table's rate of every type over the built-in V100 rate for the job's
    model and gang; 0 where a type has no positive rate (it cannot run the job), all 0 when
    the V100 table has none. Public facts only (model, gang, reachable sizes)."""
    tables = _builtin_tables()
    sizes = np.where(view.reachable_valid, view.reachable_sizes, -1).astype(np.int64)
    relative = np.zeros((*sizes.shape, len(TYPE_ORDER)))
    for j in range(view.num_jobs):
        spec = view.spec(j)
        for w in np.flatnonzero(sizes[j] >= 0).tolist():
            size = int(sizes[j, w])
            if not tables[0].has(spec.model, size, spec.gang):
                continue
            base = tables[0].rate(spec.model, size, spec.gang)
            for t, table in enumerate(tables):
                if table.has(spec.model, size, spec.gang):
                    relative[j, w, t] = table.rate(spec.model, size, spec.gang) / base
    sizes.flags.writeable = relative.flags.writeable = False
    return sizes, relative


def free_capacity_by_type(view: ClusterView, free_gpus=None) -> tuple[float, ...]:
    """Free GPUs of each type of :data:`~shockwave_gym.cluster.TYPE_ORDER` / the cluster's
    GPUs (``free_gpus`` not yet allocated in this decision; all by default). The one place
    the observation reads the cluster's make-up: a homogeneous cluster is all
    :data:`~shockwave_gym.cluster.DEFAULT_TYPE` (V100 = the free fraction, the others 0).
    On a heterogeneous view (``view.heterogeneous``) ``free_gpus`` is per cluster type
    (``view.cluster.types`` order, e.g. the typed sequential mode's ``free``; default
    ``view.type_gpus``), and a type the cluster lacks reads 0."""
    gpus = view.gpus
    if not view.heterogeneous:
        free = (gpus if free_gpus is None else free_gpus) / gpus
        return (free,) + (0.0,) * (len(TYPE_ORDER) - 1)
    free = np.asarray(view.type_gpus if free_gpus is None else free_gpus)
    if free.shape != (view.cluster.num_types,):
        raise InputError(f"free_gpus must give one count per cluster type {view.cluster.types}, got {free_gpus!r}")
    by_type = dict(zip(view.cluster.types, free.tolist(), strict=True))
    return tuple(by_type.get(t, 0) / gpus for t in TYPE_ORDER)


class JobFeaturesV2:
    """:class:`JobFeatures` for observation version 2 (:data:`JOB_FEATURES_V2`): a reusable
    feature-major buffer for one trace, with one zero padding column for empty slots."""

    #: feature rows of the buffer (a later version appends its own rows after version 2's)
    num_features = len(JOB_FEATURES_V2)

    def __init__(self, view: ClusterView, *, padded: bool = True):
        n = view.num_jobs
        self.buffer = np.zeros((self.num_features, n + int(padded)))
        self._rows = tuple(self.buffer[:, :n])
        self._gang_share = view.gang / view.gpus
        self._gang = view.gang.astype(np.float64)
        self._sizes, self._relative = type_throughput_table(view)
        self._index = np.arange(n)

    def __getstate__(self):  # the rows are views of the buffer: rebuilt, not copied
        return {key: value for key, value in self.__dict__.items() if key != "_rows"}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._rows = tuple(self.buffer[:, : self._index.size])

    def fill(self, view: ClusterView, rho_hat: np.ndarray | None = None) -> np.ndarray:
        """The features of ``view``'s current state, written into :attr:`buffer` (returned)."""
        if rho_hat is None:
            rho_hat = ftf_estimate(view)
        d = view.derived_arrays
        batch = d.current_batch_size
        rows = self._rows
        share, progress, gang, growth, samples, mean_epoch_s, remaining, age, service, ran, rho = rows[:11]
        share[:] = self._gang_share
        np.divide(d.epoch_progress, self.total_epochs(view), out=progress)
        gang[:] = self._gang
        np.divide(batch, view.initial_batch_size, out=growth)
        np.multiply(d.current_throughput, batch, out=samples)  # samples/s
        mean_epoch_s[:] = d.mean_epoch_duration_s
        np.copyto(mean_epoch_s, d.current_epoch_duration_s, where=np.isnan(mean_epoch_s))
        remaining[:] = predicted_remaining_s(view)
        np.subtract(view.time_s, view.arrival_s, out=age)
        service[:] = d.attained_service_gpu_s
        ran[:] = view.ran_last_round
        rho[:] = rho_hat
        match = self._sizes == batch[:, None]
        at = match.argmax(axis=1)
        relative = self._relative[self._index, at]  # (N, types)
        relative *= match[self._index, at][:, None]
        if view.heterogeneous:  # the cluster's own tables and placement rules
            _cluster_type_rates(view, d.current_throughput, relative)
        self.buffer[11:V2_ROWS, : self._index.size] = relative.T
        transform_v2(self.buffer[:V2_ROWS], self._index.size)
        return self.buffer

    def total_epochs(self, view: ClusterView) -> np.ndarray:
        """The denominator of ``epoch_progress``: the trace's epochs (``view.num_epochs``)."""
        return view.num_epochs

    def slot_features(self, slots: SlotMap) -> np.ndarray:
        """Each slot's job, zeros for empty slots: a fresh (max_jobs, F) float32 array."""
        return self.buffer[:, slots.gather_index()].T.astype(np.float32, order="C")


def _cluster_type_rates(view: ClusterView, reference_rate: np.ndarray, relative: np.ndarray) -> None:
    """On a heterogeneous view, overwrite the columns of ``relative`` (N, len(TYPE_ORDER))
    for the cluster's types with the view's per-type rates over the reference (V100) rate:
    the simulator's own tables, 0 where the job may not be placed on the type
    (``view.runnable``), so the features agree with the action masks. Types the cluster
    lacks keep the built-in tables' values."""
    rates = view.throughput_by_type
    for t, name in enumerate(view.cluster.types):
        column = relative[:, TYPE_ORDER.index(name)]
        column[:] = 0.0
        np.divide(rates[:, t], reference_rate, out=column, where=reference_rate > 0)


def transform_v2(raw: np.ndarray, columns: int | None = None) -> np.ndarray:
    """Version 2's logarithms, scales and clipping, in place, on raw feature rows (F, n);
    the log2 rows only over the first ``columns`` (the others are zero padding)."""
    for row in range(V2_LOG2_ROWS.start, V2_LOG2_ROWS.stop):
        logged = raw[row, :columns]
        np.log2(logged, out=logged)
    logged = raw[V2_LOG1P_ROWS]
    logged *= V2_SCALE_IN[:, None]
    np.maximum(logged, _ZERO, out=logged)
    np.log1p(logged, out=logged)
    raw *= V2_SCALE_OUT[:, None]
    np.minimum(raw, V2_JOB_HIGH[:, None], out=raw)
    return np.maximum(raw, V2_JOB_LOW[:, None], out=raw)


def cluster_features_v2(view: ClusterView, slots: SlotMap, free_gpus: int | None = None) -> np.ndarray:
    """(len(CLUSTER_FEATURES_V2),) float32 version-2 cluster features, clipped."""
    gpus = view.gpus
    values = (
        *free_capacity_by_type(view, free_gpus),
        view.busy_gpus_last_round / gpus,
        math.log2(1.0 + view.num_active / gpus),
        math.log2(1.0 + slots.queue.size / gpus),
        math.log2(1.0 + slots.demand_gpus / gpus),
        math.log1p(view.time_s / TIME_UNIT_S) / LOG_TIME,
    )
    bounds = zip(V2_CLUSTER_LOW.tolist(), V2_CLUSTER_HIGH.tolist(), strict=True)
    return np.array([high if v > high else (low if v < low else v) for v, (low, high) in zip(values, bounds, strict=True)],
                    dtype=np.float32)


class JobFeaturesV3(JobFeaturesV2):
    """:class:`JobFeaturesV2` for observation version 3 (:data:`JOB_FEATURES_V3`): version
    2's rows with progress against the believed total epochs, then the length belief's rows
    (:mod:`~shockwave_gym.interface.length_features`). A later version extends this one the
    same way: its rows after these."""

    num_features = len(JOB_FEATURES_V3)

    def total_epochs(self, view: ClusterView) -> np.ndarray:
        return believed_total_epochs(view)

    def fill(self, view: ClusterView, rho_hat: np.ndarray | None = None) -> np.ndarray:
        """The features of ``view``'s current state, written into :attr:`buffer` (returned)."""
        super().fill(view, rho_hat)
        belief = self.buffer[V2_ROWS:len(JOB_FEATURES_V3), : self._index.size]
        fill_belief_rows(view, belief, TIME_UNIT_S, LOG_TIME)
        np.minimum(belief, V3_BELIEF_HIGH, out=belief)
        np.maximum(belief, V3_BELIEF_LOW, out=belief)
        return self.buffer


def cluster_features_v3(view: ClusterView, slots: SlotMap, free_gpus=None) -> np.ndarray:
    """(len(CLUSTER_FEATURES_V3),) float32 version-3 cluster features, clipped."""
    regime = np.clip(np.array(regime_features(view), dtype=np.float32), 0.0, 1.0)
    return np.concatenate([cluster_features_v2(view, slots, free_gpus), regime])


def job_features_for(view: ClusterView, version: int = 1, *, padded: bool = True):
    """The reusable job-feature buffer of ``version`` for ``view``'s trace."""
    version = check_version(version)
    if version == 3:
        return JobFeaturesV3(view, padded=padded)
    return JobFeatures(view, padded=padded) if version == 1 else JobFeaturesV2(view, padded=padded)


def cluster_features_for(view: ClusterView, slots: SlotMap, free_gpus: int | None = None, version: int = 1):
    """The cluster features of ``version``."""
    version = check_version(version)
    if version == 1:
        return cluster_features(view, slots, free_gpus)
    if version == 3:
        return cluster_features_v3(view, slots, free_gpus)
    return cluster_features_v2(view, slots, free_gpus)


def slot_jobs(slots: SlotMap, features: np.ndarray) -> np.ndarray:
    """(max_jobs, F) float32 from feature-major ``features`` (F, num_jobs): each slot's job,
    zeros for empty slots."""
    out = np.zeros((slots.max_jobs, features.shape[0]), dtype=np.float32)
    valid = slots.slot_job >= 0
    out[valid] = features[:, slots.slot_job[valid]].T
    return out


def build_observation(
    view: ClusterView,
    slots: SlotMap,
    *,
    picked: np.ndarray | None = None,
    free_gpus: int | None = None,
    rho_hat: np.ndarray | None = None,
    version: int = 1,
    features=None,
) -> dict[str, np.ndarray]:
    """The observation of ``view`` in the layout of :func:`observation_space` (``version``).

    ``slots`` must have been updated for this state. ``picked`` (bool per slot) and
    ``free_gpus`` describe a partly built round (sequential mode); by default nothing is
    picked and every GPU is free. ``rho_hat`` may pass :func:`ftf_estimate` already
    computed for this state. Empty slots are all zeros. Fresh arrays every call.

    ``features`` may pass the feature buffer of an earlier call on the same episode
    (``job_features_for(view, version, padded=False)``, built once per trace): building it
    costs a per-type throughput lookup for every job and batch size, far more than a fill.
    """
    if features is None:
        features = job_features_for(view, version, padded=False)
    features = features.fill(view, rho_hat)
    return {
        "jobs": slot_jobs(slots, features),
        "job_valid": (slots.slot_job >= 0).view(np.int8),
        "picked": np.zeros(slots.max_jobs, np.int8) if picked is None else picked.astype(np.int8),
        "cluster": cluster_features_for(view, slots, free_gpus, version),
    }
