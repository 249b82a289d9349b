"""Observation features and the observation builder, as functions of a ClusterView.

Nothing here knows the environment object, so a learned agent can rebuild exactly the
observation it was trained on from the view it gets in ``act(view)``::

    slots = SlotMap(max_jobs=64)
    slots.reset(view.num_jobs)
    ...
    slots.update(view)                  # once per round boundary
    obs = build_observation(view, slots)

Jobs are addressed by slot (:class:`~shockwave_gym.interface.slots.SlotMap`).

**No future information.** Every feature comes from the trace's public fields, the batch
sizes and epoch durations observed so far, and the remaining-time predictor. The isolated time and
the hidden batch-size schedule are never read (the view would refuse them anyway).
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_gym.interface.ftf import ftf_estimate
from shockwave_gym.interface.predictor import predicted_remaining_s
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.view import ClusterView

#: Time scale of the logarithmic time features (seconds).
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


def observation_signature() -> str:
    """A short hash of every feature's name, bounds, meaning and scaling constants.

    Saved policies record it; loading one trained on a different observation fails loudly
    instead of silently degrading. Any change to the features changes the signature.
    """
    import hashlib

    parts = [repr(JOB_FEATURES), repr(CLUSTER_FEATURES), repr(TIME_SCALE_S),
             np.asarray(_LOG_SCALE_IN).tobytes().hex(), np.asarray(_LOG_SCALE_OUT).tobytes().hex()]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def observation_space(max_jobs: int):
    """The ``gymnasium.spaces.Dict`` of :func:`build_observation` for ``max_jobs`` slots."""
    from gymnasium import spaces  # only learners and the env need spaces

    return spaces.Dict(
        {
            "jobs": spaces.Box(
                np.broadcast_to(_JOB_LOW, (max_jobs, len(JOB_FEATURES))).copy(),
                np.broadcast_to(_JOB_HIGH, (max_jobs, len(JOB_FEATURES))).copy(),
                dtype=np.float32,
            ),
            "job_valid": spaces.MultiBinary(max_jobs),
            "picked": spaces.MultiBinary(max_jobs),
            "cluster": spaces.Box(_CLUSTER_LOW.copy(), _CLUSTER_HIGH.copy(), dtype=np.float32),
        }
    )


# Features 3-9 share one transform, scale_out * log1p(max(0, x * scale_in)): throughput,
# mean epoch duration, predicted remaining, age, attained service, ran_last_round
# (log1p(x (e - 1)) maps {0, 1} to {0, 1}) and rho-hat.
_LOG_SCALE_IN = np.array([1.0, 1.0, 1 / TIME_SCALE_S, 1 / TIME_SCALE_S, 1 / TIME_SCALE_S, math.e - 1, 1.0])[:, None]
_LOG_SCALE_OUT = np.array([1 / (6 * math.log(10)), 0.25, 1 / 3, 1 / 3, 1 / 3, 1.0, 1 / math.log(2)])[:, None]
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
        logged *= _LOG_SCALE_IN
        np.maximum(logged, _ZERO, out=logged)
        np.log1p(logged, out=logged)
        logged *= _LOG_SCALE_OUT
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
) -> dict[str, np.ndarray]:
    """The observation of ``view`` in the layout of :func:`observation_space`.

    ``slots`` must have been updated for this state. ``picked`` (bool per slot) and
    ``free_gpus`` describe a partly built round (sequential mode); by default nothing is
    picked and every GPU is free. ``rho_hat`` may pass :func:`ftf_estimate` already
    computed for this state. Empty slots are all zeros. Fresh arrays every call.
    """
    return {
        "jobs": slot_jobs(slots, job_feature_matrix(view, rho_hat)),
        "job_valid": (slots.slot_job >= 0).view(np.int8),
        "picked": np.zeros(slots.max_jobs, np.int8) if picked is None else picked.astype(np.int8),
        "cluster": cluster_features(view, slots, free_gpus),
    }
