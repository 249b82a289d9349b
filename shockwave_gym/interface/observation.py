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
_CLUSTER_LOW_LIST = [f[1] for f in CLUSTER_FEATURES]
_CLUSTER_HIGH_LIST = [f[2] for f in CLUSTER_FEATURES]


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
_JOB_HIGH_COLUMN = _JOB_HIGH.astype(np.float64)[:, None]


def job_feature_matrix(view: ClusterView, rho_hat: np.ndarray | None = None) -> np.ndarray:
    """Features of every job, feature-major: shape (len(JOB_FEATURES), num_jobs), float64,
    clipped to the bounds. Columns of jobs that are not active are meaningless.

    ``rho_hat`` (from :func:`ftf_estimate`) is computed when not given. Feature-major
    because stacking rows is one call; :func:`slot_jobs` transposes while gathering.
    """
    if rho_hat is None:
        rho_hat = ftf_estimate(view)
    batch = view.current_batch_size
    mean_epoch_s = view.mean_epoch_duration_s
    # before its first epoch completes, a job's current epoch stands in for the mean
    mean_epoch_s = np.where(np.isnan(mean_epoch_s), view.current_epoch_duration_s, mean_epoch_s)
    features = np.array(
        (
            view.gang / view.gpus,
            view.epoch_progress / view.num_epochs,
            np.log2(batch / view.initial_batch_size) * 0.25,
            view.current_throughput * batch,  # samples/s
            mean_epoch_s / view.round_s,
            predicted_remaining_s(view),
            view.time_s - view.arrival_s,  # negative for jobs yet to arrive: clipped to 0
            view.attained_service_gpu_s,
            view.ran_last_round,
            rho_hat,
        ),
        dtype=np.float64,
    )
    logged = features[3:]
    logged *= _LOG_SCALE_IN
    np.maximum(logged, 0.0, out=logged)
    np.log1p(logged, out=logged)
    logged *= _LOG_SCALE_OUT
    np.minimum(features, _JOB_HIGH_COLUMN, out=features)
    return np.maximum(features, _JOB_LOW_COLUMN, out=features)


def cluster_features(view: ClusterView, slots: SlotMap, free_gpus: int | None = None) -> np.ndarray:
    """(len(CLUSTER_FEATURES),) float32 cluster features, clipped to the bounds.

    ``slots`` must have been updated for this state (it carries the queue and the demand).
    """
    gpus = view.gpus
    free = gpus if free_gpus is None else free_gpus
    values = (
        free / gpus,
        float(view.gang @ view.ran_last_round) / gpus,
        view.num_active / slots.max_jobs,
        slots.queue.size / slots.max_jobs,
        slots.demand_gpus / gpus,
        math.log1p(view.time_s / TIME_SCALE_S) / 3.0,
        math.log1p(view.round_index * view.round_s / TIME_SCALE_S) / 3.0,
        math.log2(gpus) / 8.0,
    )
    bounded = [min(max(v, lo), hi) for v, lo, hi in zip(values, _CLUSTER_LOW_LIST, _CLUSTER_HIGH_LIST, strict=True)]
    return np.array(bounded, dtype=np.float32)


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
