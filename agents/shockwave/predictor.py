"""Shockwave's view of remaining run time: the core predictor plus drift recalibration and
a noise option (docs/SEMANTICS.md, "Remaining-time predictor").

- **Base**: the Dirichlet predictor (:func:`shockwave_gym.interface.predictor_for`), called through its
  ``predict(..., duration_scale=)`` hook; the core predictor is never modified.
- **Drift recalibration**: a job's *expected* run time for the progress it has made is the
  throughput table's duration of each observed epoch (plus the share of the current one);
  its *measured* run time is the wall time it has held its GPUs. When
  ``|expected / measured - 1|`` exceeds ``drift_threshold`` (0.4, the authors' value), every
  table duration of the job is scaled by ``measured / expected``; otherwise by 1.
- **Noise** (robustness study, RQ3): each prediction is multiplied by ``1 + noise * s``, with
  ``s`` a fresh random sign per job and call (``noise_mode="sign"``, the authors' scheme),
  fresh and uniform in [-1, 1] (``"uniform"``), or a random sign drawn once per job and kept
  for the episode (``"job"``: a persistently biased predictor); predictions are kept >= 1 s.
- With an oracle view (ablations), the true remaining time replaces the Bayesian estimate
  (noise still applies).

Everything is vectorised over the jobs asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shockwave_agents.shockwave.numerics import whole_epoch_estimates, whole_epoch_mean_s
from shockwave_gym.interface import believed_total_epochs, predicted_remaining_s, predictor_for
from shockwave_gym.view import ClusterView

#: Smallest prediction kept when noise is on (the authors clip at 1 s).
MIN_NOISY_PREDICTION_S = 1.0


@dataclass
class JobEstimates:
    """Per-job estimates for the ids asked for (same order). Seconds of isolated run time."""

    job_ids: np.ndarray
    remaining_s: np.ndarray
    mean_epoch_s: np.ndarray  # d_j: mean duration of the epochs so far, current one included
    work_done_s: np.ndarray  # isolated run time done so far
    duration_scale: np.ndarray  # drift recalibration factor (1 = table is right)


def measured_versus_table(view: ClusterView, job_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(expected run time per the throughput table for the progress made, measured run time)."""
    core = predictor_for(view)
    counts = view.observed_batch_size_counts[job_ids]
    table_s = core.duration_at_s[job_ids]
    partial = view.epoch_progress[job_ids] - view.epochs_done[job_ids]
    slot = np.argmax(core.sizes[job_ids] == view.current_batch_size[job_ids][:, None], axis=1)
    current_table_s = table_s[np.arange(job_ids.size), slot]
    expected = (counts * table_s).sum(axis=1) + partial * current_table_s
    return expected, view.run_time_s[job_ids].astype(np.float64)


def drift_scale(view: ClusterView, job_ids: np.ndarray, threshold: float) -> np.ndarray:
    """Per-job factor applied to table durations (1 unless drift exceeds ``threshold``)."""
    expected, measured = measured_versus_table(view, job_ids)
    scale = np.ones(job_ids.size)
    valid = (expected > 0) & (measured > 0)
    drift = np.zeros(job_ids.size)
    drift[valid] = np.abs(expected[valid] / measured[valid] - 1.0)
    recalibrate = valid & (drift > threshold)
    scale[recalibrate] = measured[recalibrate] / expected[recalibrate]
    return scale


def apply_noise(values_s: np.ndarray, noise: float, mode: str, rng: np.random.Generator) -> np.ndarray:
    """``values_s * (1 + noise * s)`` with s a random sign or U(-1, 1); at least 1 s."""
    if noise <= 0 or values_s.size == 0:
        return values_s
    if mode == "sign":
        s = rng.choice(np.array([-1.0, 1.0]), size=values_s.size)
    else:
        s = rng.uniform(-1.0, 1.0, size=values_s.size)
    return np.maximum(values_s * (1.0 + noise * s), MIN_NOISY_PREDICTION_S)


class ShockwavePredictor:
    """Remaining-time estimates for the planner; holds the noise RNG (seeded per episode)."""

    def __init__(self, noise: float = 0.0, noise_mode: str = "sign", drift_threshold: float = 0.4, seed: int | None = 0):
        self.noise = float(noise)
        self.noise_mode = noise_mode
        self.drift_threshold = float(drift_threshold)
        self.reseed(seed)

    def reseed(self, seed: int | None) -> None:
        self.rng = np.random.default_rng(seed)
        self._job_sign: dict[int, float] = {}

    def noisy(self, job_ids: np.ndarray, values_s: np.ndarray) -> np.ndarray:
        """``values_s`` (predictions for ``job_ids``) with the configured noise applied."""
        return self._noisy(job_ids, values_s)

    def _noisy(self, job_ids: np.ndarray, values_s: np.ndarray) -> np.ndarray:
        if self.noise_mode != "job" or self.noise <= 0:
            return apply_noise(values_s, self.noise, self.noise_mode, self.rng)
        for job in job_ids.tolist():
            if job not in self._job_sign:
                self._job_sign[job] = float(self.rng.choice([-1.0, 1.0]))
        signs = np.array([self._job_sign[j] for j in job_ids.tolist()])
        return np.maximum(values_s * (1.0 + self.noise * signs), MIN_NOISY_PREDICTION_S)

    def estimate(
        self, view: ClusterView, job_ids: np.ndarray, *, whole_epochs: bool = False,
        duration_scale: np.ndarray | None = None, durations_s: np.ndarray | None = None,
    ) -> JobEstimates:
        """Estimates for ``job_ids`` (active jobs) from the view alone. ``whole_epochs``: the
        authors' estimates instead (:func:`.numerics.whole_epoch_estimates`).
        ``duration_scale``: per-job recalibration factors to use instead of the drift rule
        (the authors' round-clock calibration, :class:`.numerics.RoundClockCalibration`);
        ``durations_s``: with ``whole_epochs``, the (jobs, reachable sizes) epoch durations
        the estimates use instead of the throughput table's (:func:`.numerics.profile_durations_s`)."""
        job_ids = np.asarray(job_ids, dtype=np.int64)
        if duration_scale is None:
            scale = drift_scale(view, job_ids, self.drift_threshold)
        else:
            scale = np.asarray(duration_scale, dtype=np.float64)
        done = view.epochs_done.astype(np.float64)
        progress = view.epoch_progress
        current_s = view.current_epoch_duration_s
        completed_s = np.nan_to_num(view.mean_epoch_duration_s[job_ids]) * done[job_ids]
        mean_epoch = (completed_s + current_s[job_ids]) / (done[job_ids] + 1.0) * scale
        if whole_epochs and durations_s is not None:
            remaining, work_done = whole_epoch_estimates(view, job_ids, scale, durations_s)
            mean_epoch = whole_epoch_mean_s(view, job_ids, scale, durations_s)
        elif whole_epochs:
            remaining, work_done = whole_epoch_estimates(view, job_ids, scale)
        else:
            remaining = _faithful_remaining_s(view, job_ids, scale)
            work_done = (completed_s + (progress[job_ids] - done[job_ids]) * current_s[job_ids]) * scale
        remaining = self._noisy(job_ids, remaining)
        return JobEstimates(job_ids, remaining, mean_epoch, work_done, scale)


def _faithful_remaining_s(view: ClusterView, job_ids: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Predicted remaining run time of ``job_ids`` (the true one with an oracle view), with
    each job's durations rescaled by its drift factor ``scale``."""
    if view.oracle:
        return np.asarray(view.remaining_s, dtype=np.float64)[job_ids] * scale
    if np.all(scale == 1.0):
        return np.asarray(predicted_remaining_s(view), dtype=np.float64)[job_ids]  # cached per state
    full_scale = np.ones(view.num_jobs)
    full_scale[job_ids] = scale
    done = view.epochs_done.astype(np.float64)
    return predictor_for(view).predict(
        view.epochs_done, 1.0 - (view.epoch_progress - done), view.current_epoch_duration_s, believed_total_epochs(view),
        view.observed_batch_size_counts, duration_scale=full_scale,
    )[job_ids]
