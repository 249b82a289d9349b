"""What the observation and the rewards derive from a state, for K clusters at once: the
remaining-time predictor, the FTF estimate rho-hat, the per-job and the cluster features.

Same formulas, constants and operation order as :mod:`shockwave_gym.interface.predictor`,
:mod:`~shockwave_gym.interface.ftf` and :mod:`~shockwave_gym.interface.observation`; the
per-trace predictor tables come from :class:`~shockwave_gym.interface.predictor.RemainingTimePredictor`
itself. Sums over reachable batch sizes are short (< 8 terms), so numpy adds them in index
order whatever the padding, exactly as for one cluster.
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_gym.batch import BatchSimulator
from shockwave_gym.env.vector import jit
from shockwave_gym.errors import InputError
from shockwave_gym.interface.observation import (
    _LOG_SCALE_IN,
    _LOG_SCALE_OUT,
    CLUSTER_FEATURES,
    JOB_FEATURES,
    TIME_SCALE_S,
)
from shockwave_gym.interface.predictor import RemainingTimePredictor
from shockwave_gym.state import ACTIVE

_JOB_LOW = np.array([f[1] for f in JOB_FEATURES], np.float32).astype(np.float64)[:, None, None]
_JOB_HIGH = np.array([f[2] for f in JOB_FEATURES], np.float32).astype(np.float64)[:, None, None]
_SCALE_IN = _LOG_SCALE_IN[:, :, None]
_SCALE_OUT = _LOG_SCALE_OUT[:, :, None]
_CLUSTER_LOW = np.array([f[1] for f in CLUSTER_FEATURES])
_CLUSTER_HIGH = np.array([f[2] for f in CLUSTER_FEATURES])
#: numpy sums fewer than 8 terms in index order; more would change the grouping.
_MAX_SIZES = 7


class BatchPredictor:
    """Per job: epoch duration at each reachable size and the Dirichlet prior, (K, jobs, W)."""

    def __init__(self, num_clusters: int):
        self.duration_at_s = np.zeros((num_clusters, 0, 1))
        self.prior = np.zeros((num_clusters, 0, 1))

    def load(self, k: int, predictor: RemainingTimePredictor, jobs: int, sizes: int) -> None:
        n, w = predictor.prior.shape
        if sizes > _MAX_SIZES:
            raise InputError(f"the vector env supports at most {_MAX_SIZES} reachable batch sizes per job, got {sizes}")
        self.widen(jobs, sizes)
        for name, source in (("duration_at_s", predictor.duration_at_s), ("prior", predictor.prior)):
            array = getattr(self, name)
            array[k] = 0.0
            array[k, :n, :w] = source

    def widen(self, jobs: int, sizes: int) -> None:
        k, j, w = self.prior.shape
        if jobs > j or sizes > w:
            for name in ("duration_at_s", "prior"):
                grown = np.zeros((k, max(j, jobs), max(w, sizes)))
                grown[:, :j, :w] = getattr(self, name)
                setattr(self, name, grown)

    def remaining_s(self, d, num_epochs: np.ndarray) -> np.ndarray:
        """(K, jobs) expected remaining isolated run time (as ``RemainingTimePredictor.remaining_s``)."""
        weights = self.prior + d.observed_batch_size_counts
        with np.errstate(invalid="ignore", divide="ignore"):
            expected = (weights * self.duration_at_s).sum(axis=2) / weights.sum(axis=2)
        future_epochs = np.maximum(num_epochs - d.epochs_done - 1, 0)
        return (1.0 - d.current_epoch_fraction_done) * d.current_epoch_duration_s + future_epochs * expected


def ftf_estimates(sim: BatchSimulator, remaining: np.ndarray, num_active: np.ndarray) -> np.ndarray:
    """(K, jobs) rho-hat = (age + c R) / (c (W + R)), c = max(1, active / GPUs) per cluster."""
    c = np.maximum(1.0, num_active / sim.gpus)[:, None]
    age = sim.time_s[:, None] - sim.arrival_s
    with np.errstate(invalid="ignore"):
        return (age + c * remaining) / np.maximum(c * (sim.work_done_s + remaining), 1e-9)


def job_features(sim: BatchSimulator, d, remaining: np.ndarray, rho: np.ndarray) -> np.ndarray:
    """(features, K, jobs) float64, clipped: ``job_feature_matrix`` for every cluster."""
    batch = d.current_batch_size
    mean_epoch_s = d.mean_epoch_duration_s
    mean_epoch_s = np.where(np.isnan(mean_epoch_s), d.current_epoch_duration_s, mean_epoch_s)
    features = np.empty((len(JOB_FEATURES), *batch.shape))
    features[0] = sim.gang / sim.gpus[:, None]
    features[1] = d.epoch_progress / sim.num_epochs
    features[2] = np.log2(batch / sim.initial_batch_size) * 0.25
    features[3] = d.current_throughput * batch
    features[4] = mean_epoch_s / sim.round_s[:, None]
    features[5] = remaining
    features[6] = sim.time_s[:, None] - sim.arrival_s
    features[7] = d.attained_service_gpu_s
    features[8] = sim.ran_last_round
    features[9] = rho
    logged = features[3:]
    with np.errstate(invalid="ignore"):
        logged *= _SCALE_IN
        np.maximum(logged, 0.0, out=logged)
        np.log1p(logged, out=logged)
        logged *= _SCALE_OUT
        np.minimum(features, _JOB_HIGH, out=features)
        return np.maximum(features, _JOB_LOW, out=features)


def slot_features(features: np.ndarray, slot_job: np.ndarray) -> np.ndarray:
    """(K, max_jobs, features) float32: each slot's job, zeros for empty slots."""
    k = slot_job.shape[0]
    rows = np.arange(k)[:, None]
    out = features[:, rows, np.maximum(slot_job, 0)].transpose(1, 2, 0).astype(np.float32)
    out[slot_job < 0] = 0.0
    return out


def take_logarithms(raw: np.ndarray) -> np.ndarray:
    """numpy's log2 (row 2) and log1p (rows 3-9), in place, on the compiled path's raw
    (features, occupied slots) block: the same vectorised calls as ``job_features``."""
    np.log2(raw[2], out=raw[2])
    np.log1p(raw[3:], out=raw[3:])
    return raw


#: Per-feature constants of the compiled path, as flat arrays.
SCALE_IN = np.ascontiguousarray(_LOG_SCALE_IN[:, 0])
SCALE_OUT = np.ascontiguousarray(_LOG_SCALE_OUT[:, 0])
JOB_LOW = np.ascontiguousarray(_JOB_LOW[:, 0, 0])
JOB_HIGH = np.ascontiguousarray(_JOB_HIGH[:, 0, 0])


def cluster_features(sim: BatchSimulator, num_active, slots, free_gpus, max_jobs: int) -> np.ndarray:
    """(K, 8) float32 cluster features (``cluster_features`` for every cluster)."""
    gpus = sim.gpus
    if sim.compiled:
        out = np.empty((gpus.size, len(CLUSTER_FEATURES)), np.float32)
        jit.cluster_rows(gpus, sim.gang, sim.ran_last_round, sim.num_jobs, num_active, slots.queued, slots.demand_gpus,
                         np.asarray(free_gpus, np.int64), sim.time_s, sim.round_index, sim.round_s, max_jobs,
                         TIME_SCALE_S, _CLUSTER_LOW, _CLUSTER_HIGH, out)
        return out
    queue_length, demand_gpus = slots.queue_length, slots.demand_gpus
    values = np.empty((gpus.size, len(CLUSTER_FEATURES)))
    values[:, 0] = free_gpus / gpus
    values[:, 1] = (sim.gang * sim.ran_last_round).sum(axis=1) / gpus
    values[:, 2] = num_active / max_jobs
    values[:, 3] = queue_length / max_jobs
    values[:, 4] = demand_gpus / gpus
    # math.log1p, as the single observation uses: numpy's vectorised log1p may differ in the last bit
    values[:, 5] = [math.log1p(t) / 3.0 for t in (sim.time_s / TIME_SCALE_S).tolist()]
    values[:, 6] = [math.log1p(t) / 3.0 for t in (sim.round_index * sim.round_s / TIME_SCALE_S).tolist()]
    values[:, 7] = [math.log2(g) / 8.0 for g in gpus.tolist()]
    return np.minimum(np.maximum(values, _CLUSTER_LOW), _CLUSTER_HIGH).astype(np.float32)


def active_mask(sim: BatchSimulator) -> np.ndarray:
    return sim.status == ACTIVE
