"""Bayesian remaining-runtime predictor (SPEC.md "Remaining runtime prediction").

For each job we keep a Dirichlet distribution over the batch sizes its adaptation mode can
*reach* (public knowledge; the authors' prior peeked at the sizes that will actually occur).
The prior weight is E/|sizes| per size; every completed epoch adds 1 to its size's weight.
The expected share of each size, applied to the epochs that remain, times the epoch duration
at that size (dataset / size / table throughput) gives the expected remaining time. The
current epoch, whose batch size is observed, is counted at its own duration.

Everything here is computed for all jobs at once from flat arrays; see ``predict``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shockwave_gym.adaptation import get_mode
from shockwave_gym.errors import InputError
from shockwave_gym.jobs import JobSpec


class RemainingTimePredictor:
    """Vectorised Dirichlet predictor over reachable batch sizes.

    Attributes (per job ``j``, padded to ``max_sizes`` columns, ``size_valid`` masks them):
    ``sizes[j, s]``, ``duration_at_s[j, s]`` (epoch duration at that size),
    ``prior[j, s]`` (Dirichlet prior weight).
    """

    def __init__(self, specs: Sequence[JobSpec], static, throughputs):
        reachable = [get_mode(spec.mode).reachable(spec) for spec in specs]
        width = max(len(r) for r in reachable)
        n = len(specs)
        self.sizes = np.zeros((n, width), dtype=np.int64)
        self.size_valid = np.zeros((n, width), dtype=bool)
        self.duration_at_s = np.zeros((n, width))
        for j, (spec, sizes) in enumerate(zip(specs, reachable, strict=True)):
            for s, size in enumerate(sizes):
                self.sizes[j, s] = size
                self.size_valid[j, s] = True
                rate = throughputs.rate(spec.model, size, spec.gang)
                self.duration_at_s[j, s] = spec.dataset_size / size / rate
        counts = self.size_valid.sum(axis=1)
        self.prior = np.where(self.size_valid, (static.num_epochs / counts)[:, None], 0.0)

        # Slot of each flat epoch's batch size among its job's reachable sizes, and running
        # counts of completed epochs per slot, so observed counts are one gather.
        job_of_epoch = np.repeat(np.arange(n), static.num_epochs)
        flat_sizes = static.epoch_batch_size
        match = self.sizes[job_of_epoch] == flat_sizes[:, None]
        if not match.any(axis=1).all():
            bad = int(job_of_epoch[~match.any(axis=1)][0])
            raise InputError(
                f"job {bad}: its adaptation mode {specs[bad].mode!r} schedules a batch size "
                "outside the sizes it declares reachable"
            )
        one_hot = match.astype(np.int32)
        cum = np.cumsum(one_hot, axis=0)
        starts = static.epoch_offset[:-1]
        before = np.zeros_like(cum)
        # subtract the running total at each job's start so counts restart per job
        start_totals = np.vstack([np.zeros((1, width), np.int32), cum])[starts]
        before = start_totals[job_of_epoch]
        self._cum_counts = cum - before  # (flat epochs, width): counts up to and incl. epoch
        self._epoch_offset = static.epoch_offset
        # Posterior-mean future epoch duration while a job is in each of its epochs (i.e.
        # after that many completed epochs). It depends only on what has been observed by
        # then, so it is tabulated once and the hot path is a gather.
        weights = self.prior[job_of_epoch] + (self._cum_counts - one_hot)
        self.expected_epoch_in_epoch_s = (weights * self.duration_at_s[job_of_epoch]).sum(axis=1) / weights.sum(axis=1)

    def observed_counts(self, epochs_done: np.ndarray) -> np.ndarray:
        """(J, width) completed epochs per reachable size, given completed epochs per job."""
        idx = self._epoch_offset[:-1] + epochs_done - 1
        counts = self._cum_counts[np.maximum(idx, 0)]
        counts[epochs_done <= 0] = 0
        return counts

    def expected_epoch_duration_s(
        self,
        epochs_done: np.ndarray,
        duration_scale: np.ndarray | None = None,
        observed_counts: np.ndarray | None = None,
    ) -> np.ndarray:
        """Posterior-mean duration of one future epoch, per job."""
        if observed_counts is None:
            observed_counts = self.observed_counts(epochs_done)
        weights = self.prior + observed_counts
        durations = self.duration_at_s if duration_scale is None else self.duration_at_s * duration_scale[:, None]
        return (weights * durations).sum(axis=1) / weights.sum(axis=1)

    def predict(
        self,
        epochs_done: np.ndarray,
        current_epoch_fraction_left: np.ndarray,
        current_epoch_duration_s: np.ndarray,
        num_epochs: np.ndarray,
        duration_scale: np.ndarray | None = None,
        observed_counts: np.ndarray | None = None,
    ) -> np.ndarray:
        """Expected remaining seconds of isolated run time, for every job (0 when done).

        ``current_epoch_fraction_left`` is the share of the current epoch still to run;
        ``duration_scale`` optionally multiplies every table duration (per job), which is
        how Shockwave's drift recalibration and noise studies plug in. ``observed_counts``
        (from :meth:`observed_counts`) may be passed to avoid recomputing it.
        """
        future_epochs = np.maximum(num_epochs - epochs_done - 1, 0)
        expected = self.expected_epoch_duration_s(epochs_done, duration_scale, observed_counts)
        current = current_epoch_fraction_left * current_epoch_duration_s
        if duration_scale is not None:
            current = current * duration_scale
        remaining = current + future_epochs * expected
        return np.where(epochs_done >= num_epochs, 0.0, remaining)
