"""Bayesian remaining-runtime predictor, built from public inputs only.

Semantics: docs/SEMANTICS.md, "Remaining-time predictor". For each job, a Dirichlet
distribution over the batch sizes its adaptation mode can *reach* (public: the view's
``reachable_sizes``). The prior weight is E/|sizes| per size; every completed epoch adds 1 to
its size's weight (the view's ``observed_batch_size_counts``). The expected share of each
size, applied to the epochs that remain, times the epoch duration at that size (dataset /
size / table throughput) gives the expected remaining time. The current epoch, whose batch
size is observed, is counted at its own observed duration.

In the ``estimate`` and ``unknown`` information regimes the epochs are not known: ``E`` is
the belief's mean epochs and the epochs that remain are the belief's expectation given the
completed ones (:mod:`shockwave_gym.interface.lengths`); the ``exact`` regime's arithmetic
is unchanged.

Everything is computed for all jobs at once. :func:`predicted_remaining_s` is the default
estimate, cached per view state.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.interface.lengths import expected_future_epochs, expected_total_epochs
from shockwave_gym.interface.per_view import once_per_view
from shockwave_gym.jobs import DATASET_SIZES
from shockwave_gym.view import ClusterView

# 0-d constants: numpy combines them with arrays faster than Python scalars, same values
_ONE = np.array(1.0)
_ZERO_INT, _ONE_INT = np.array(0, dtype=np.int64), np.array(1, dtype=np.int64)


class RemainingTimePredictor:
    """Vectorised Dirichlet predictor over reachable batch sizes of ``view``'s jobs.

    Attributes (per job ``j``, padded to the view's width, ``size_valid`` masks them):
    ``sizes[j, s]``, ``duration_at_s[j, s]`` (epoch duration at that size per the table),
    ``prior[j, s]`` (Dirichlet prior weight). Built from the view's public facts: reachable
    sizes, epochs, model and gang, and the throughput table.
    """

    def __init__(self, view: ClusterView):
        self.sizes = np.asarray(view.reachable_sizes)
        self.size_valid = np.asarray(view.reachable_valid)
        self.duration_at_s = np.zeros(self.sizes.shape)
        table = view.throughputs
        for j in range(view.num_jobs):
            spec = view.spec(j)
            dataset = DATASET_SIZES[spec.model]
            for s in np.flatnonzero(self.size_valid[j]).tolist():
                size = int(self.sizes[j, s])
                self.duration_at_s[j, s] = dataset / size / table.rate(spec.model, size, spec.gang)
        counts = self.size_valid.sum(axis=1)
        self.exact = view.length_regime == "exact"
        epochs = view.num_epochs if self.exact else expected_total_epochs(view)
        self.prior = np.where(self.size_valid, (epochs / counts)[:, None], 0.0)
        self._cached_version = -1
        self._cached = np.zeros(0)

    def expected_epoch_duration_s(
        self, observed_counts: np.ndarray, duration_scale: np.ndarray | None = None
    ) -> np.ndarray:
        """Posterior-mean duration of one future epoch, per job, given the completed epochs
        per reachable size (``view.observed_batch_size_counts``)."""
        durations = self.duration_at_s if duration_scale is None else self.duration_at_s * duration_scale[:, None]
        # weighted durations and weights side by side: both sums in one reduction
        terms = np.empty((2, *self.prior.shape))
        weights = np.add(self.prior, observed_counts, out=terms[1])
        np.multiply(weights, durations, out=terms[0])
        weighted, total = np.add.reduce(terms, axis=2)
        return weighted / total

    def predict(
        self,
        epochs_done: np.ndarray,
        current_epoch_fraction_left: np.ndarray,
        current_epoch_duration_s: np.ndarray,
        num_epochs: np.ndarray,
        observed_counts: np.ndarray,
        duration_scale: np.ndarray | None = None,
    ) -> np.ndarray:
        """Expected remaining seconds of isolated run time, for every job (0 when done).

        ``current_epoch_fraction_left`` is the share of the current epoch still to run;
        ``duration_scale`` optionally multiplies every table duration (per job), which is
        how drift recalibration and noise studies plug in.
        """
        future_epochs = np.maximum(num_epochs - epochs_done - 1, 0)
        expected = self.expected_epoch_duration_s(observed_counts, duration_scale)
        current = current_epoch_fraction_left * current_epoch_duration_s
        if duration_scale is not None:
            current = current * duration_scale
        remaining = current + future_epochs * expected
        return np.where(epochs_done >= num_epochs, 0.0, remaining)

    def remaining_s(self, view: ClusterView) -> np.ndarray:
        """The default estimate for ``view``'s current state (read-only, cached per state):
        the observed rest of the current epoch plus the expected future epochs."""
        if self._cached_version == view.version:
            return self._cached
        derived = view.derived_arrays
        if self.exact:
            future_epochs = view.num_epochs - derived.epochs_done
            future_epochs -= _ONE_INT
            np.maximum(future_epochs, _ZERO_INT, out=future_epochs)
        else:
            future_epochs = expected_future_epochs(view)
        remaining = _ONE - derived.current_epoch_fraction_done
        remaining *= derived.current_epoch_duration_s
        remaining += future_epochs * self.expected_epoch_duration_s(derived.observed_batch_size_counts)
        remaining.flags.writeable = False
        self._cached, self._cached_version = remaining, view.version
        return remaining


@once_per_view
def predictor_for(view: ClusterView) -> RemainingTimePredictor:
    """The predictor of ``view``'s jobs, built on first use and kept as long as the view."""
    return RemainingTimePredictor(view)


def predicted_remaining_s(view: ClusterView) -> np.ndarray:
    """Expected remaining isolated run time of every job (0 when done), read-only, computed
    at most once per state. The estimate SRTF, the observation and FTF estimates use."""
    return predictor_for(view).remaining_s(view)
