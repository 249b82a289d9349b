"""Per-type remaining times and speeds for Shockwave on a heterogeneous cluster (ours).

The homogeneous predictor (:mod:`.predictor`) estimates a job's remaining time on the one GPU
type there is. On a cluster of several types the planner needs it on every type:
:class:`TypeSpeeds` holds, per job, reachable batch size and type, the epoch duration the
public throughput table of that type gives (dataset / size / iterations per second; 0 rate =
cannot run), and :meth:`TypeSpeeds.estimate` combines them with the Dirichlet posterior over
batch sizes (the core predictor's prior plus the observed epochs per size):

- the remaining time on type k is the rest of the current epoch at its observed size plus
  the future epochs at the posterior-mean duration on k, over the sizes k can run (weights
  renormalised there; with ``whole_epochs``, the authors' estimate, only the future epochs);
- the job's *reference* type is the one where that is shortest; remaining time, mean epoch
  duration (remaining time / epochs left) and work done are in reference-type seconds;
- ``speed[j, k]`` = remaining time on the reference / remaining time on k (1 on the
  reference, 0 where the job cannot run now: its current size has no rate on k, or its
  gang does not fit k). A round on type k gives the planner ``speed`` reference rounds of
  work: the job's type-k throughput at its predicted batch sizes.

Everything is computed from public facts (the view's reachable sizes, observed batch-size
counts, epoch progress, and the per-type throughput tables). No drift recalibration: the
simulator's durations come from the same tables, so measured and table time agree.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shockwave_gym.interface import believed_total_epochs, predictor_for
from shockwave_gym.jobs import DATASET_SIZES


@dataclass
class TypedEstimates:
    """Per-job estimates for the ids asked for (same order), in reference-type seconds."""

    job_ids: np.ndarray
    remaining_s: np.ndarray
    mean_epoch_s: np.ndarray
    work_done_s: np.ndarray
    speed: np.ndarray  # (n, K), 0 where the job cannot run now
    remaining_by_type_s: np.ndarray  # (n, K), inf where it cannot run


class TypeSpeeds:
    """Epoch durations per job, reachable size and type, built once per episode from the
    view's jobs and one throughput table per type (in the cluster's type order)."""

    def __init__(self, view, tables, capacity):
        core = predictor_for(view)
        self.sizes = np.asarray(core.sizes)
        self.valid = np.asarray(core.size_valid)
        self.prior = np.asarray(core.prior)
        self.capacity = np.asarray(capacity, dtype=np.int64)
        n, width = self.sizes.shape
        self.duration_s = np.zeros((len(tables), n, width))  # 0 = no rate on that type
        for j in range(view.num_jobs):
            spec = view.spec(j)
            dataset = DATASET_SIZES[spec.model]
            for s in np.flatnonzero(self.valid[j]).tolist():
                size = int(self.sizes[j, s])
                for k, table in enumerate(tables):
                    if table.has(spec.model, size, spec.gang):
                        self.duration_s[k, j, s] = dataset / size / table.rate(spec.model, size, spec.gang)
        self.gang = np.asarray(view.gang, dtype=np.int64)

    def estimate(self, view, job_ids: np.ndarray, *, whole_epochs: bool = False) -> TypedEstimates:
        job_ids = np.asarray(job_ids, dtype=np.int64)
        dur = self.duration_s[:, job_ids, :]  # (K, n, W)
        runs = dur > 0
        weights = (self.prior[job_ids] + view.observed_batch_size_counts[job_ids])[None, :, :] * runs
        total = weights.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            expected = np.where(total > 0, (weights * dur).sum(axis=2) / total, np.inf)  # (K, n)
        sizes = self.sizes[job_ids]
        slot = np.argmax(sizes == view.current_batch_size[job_ids][:, None], axis=1)
        current = dur[:, np.arange(job_ids.size), slot]  # (K, n), 0 = cannot run now
        done = view.epochs_done[job_ids].astype(np.float64)
        epochs = believed_total_epochs(view)[job_ids].astype(np.float64)
        future = np.maximum(epochs - done - 1.0, 0.0)
        left_in_current = 0.0 if whole_epochs else 1.0 - view.current_epoch_fraction_done[job_ids]
        with np.errstate(invalid="ignore"):
            remaining = left_in_current * current + future * expected
        finished = done >= epochs
        runnable = (current > 0) & np.isfinite(remaining) & (self.gang[job_ids][None, :] <= self.capacity[:, None])
        remaining = np.where(runnable, np.where(finished, 0.0, remaining), np.inf)
        reference = np.argmin(remaining, axis=0)
        columns = np.arange(job_ids.size)
        best = remaining[reference, columns]
        best = np.where(np.isfinite(best), best, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            speed = np.where(runnable, np.where(remaining > 0, best[None, :] / remaining, 1.0), 0.0).T
        epochs_left = np.maximum(epochs - view.epoch_progress[job_ids], 1e-9)
        mean_epoch = np.where(best > 0, best / epochs_left, current[reference, columns])
        mean_epoch = np.where(mean_epoch > 0, mean_epoch, 1.0)
        counts = view.observed_batch_size_counts[job_ids]
        ref_dur = dur[reference, columns, :]
        partial = view.epoch_progress[job_ids] - done
        work_done = (counts * ref_dur).sum(axis=1) + partial * current[reference, columns]
        return TypedEstimates(job_ids, best, mean_epoch, work_done, speed, remaining.T)

