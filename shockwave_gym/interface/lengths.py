"""What a scheduler may believe about job lengths, in every information regime, and the
Gittins index built on it (docs/SEMANTICS.md, "Information regimes").

For each job, a discrete belief over the epochs ``T`` it runs (:class:`LengthBelief`), from
public facts only (the view's :attr:`~shockwave_gym.view.ClusterView.length_model`, the
job's public spec and the throughput table):

* ``exact``: the trace's ``N`` epochs;
* ``estimate``: ``N = ceil(round(E * a) / I)`` for ``a`` at :data:`ESTIMATE_POINTS` evenly
  spaced midpoints of the estimate model's accuracy range, equal weights (``E`` the
  estimated iterations, ``I`` the iterations per epoch at the initial batch size): the
  posterior of the length given the estimate;
* ``unknown``: ``N = ceil(max(1, round(d * rate)) / I)`` for each duration ``d`` of the
  prior, with its probability (``rate``: the table's iterations/s at the job's initial batch
  size and gang, the generator's rule for ``total_iterations``).

With an early-ending share ``p``, each point ``N`` keeps ``1 - p`` of its weight and spreads
``p`` over :data:`EARLY_POINTS` points ``ceil((i + 1/2) / EARLY_POINTS * N)``: the uniform
early end of :mod:`shockwave_gym.regimes`, discretised.

From observed progress (``k`` completed epochs), a job still running is believed to run
``E[T | T > k]`` epochs in all (:func:`believed_total_epochs`, the length a planner such as
Shockwave's uses) and to need ``E[T - k - 1 | T > k]`` epochs after the current one
(:func:`expected_future_epochs`, the remaining-time predictor's); in the ``exact`` regime both
are the trace's ``N``, as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shockwave_gym.interface.per_view import once_per_view
from shockwave_gym.view import ClusterView

#: Points of the accuracy range in the ``estimate`` regime's posterior.
ESTIMATE_POINTS = 20
#: Points of the uniform early end in a belief with early endings.
EARLY_POINTS = 8


@dataclass(frozen=True)
class LengthBelief:
    """``support[j]`` (ascending epochs) and ``weights[j]`` (summing to 1) of each job;
    rows are padded with the row's largest point at weight 0."""

    support: np.ndarray
    weights: np.ndarray


def _iterations_per_epoch(view: ClusterView) -> np.ndarray:
    specs = [view.spec(j) for j in range(view.num_jobs)]
    return np.array([math.ceil(s.dataset_size / s.initial_batch_size) for s in specs], dtype=np.float64)


def _nominal(view: ClusterView) -> tuple[np.ndarray, np.ndarray]:
    """(J, K) nominal epochs and weights, before early endings."""
    model = view.length_model
    per_epoch = _iterations_per_epoch(view)[:, None]
    if model.knowledge == "exact":
        return np.asarray(view.num_epochs, dtype=np.float64)[:, None], np.ones((view.num_jobs, 1))
    if model.knowledge == "estimate":
        low, high = model.estimate.low, model.estimate.high
        accuracy = low + (high - low) * (np.arange(ESTIMATE_POINTS) + 0.5) / ESTIMATE_POINTS
        estimate = np.array([view.spec(j).estimated_iterations for j in range(view.num_jobs)], dtype=np.float64)
        iterations = np.maximum(1.0, np.round(estimate[:, None] * accuracy[None, :]))
        return np.ceil(iterations / per_epoch), np.full(iterations.shape, 1.0 / ESTIMATE_POINTS)
    table = view.throughputs
    rate = np.array([table.rate(s.model, s.initial_batch_size, s.gang)
                     for s in (view.spec(j) for j in range(view.num_jobs))], dtype=np.float64)
    durations = np.asarray(model.prior.durations_s, dtype=np.float64)
    iterations = np.maximum(1.0, np.round(rate[:, None] * durations[None, :]))
    probs = np.broadcast_to(np.asarray(model.prior.probs, dtype=np.float64), iterations.shape)
    return np.ceil(iterations / per_epoch), probs.copy()


def build_belief(view: ClusterView) -> LengthBelief:
    """Every job's belief (module docstring), sorted per row."""
    support, weights = _nominal(view)
    share = view.length_model.early_share
    if share > 0:
        fractions = (np.arange(EARLY_POINTS) + 0.5) / EARLY_POINTS
        early = np.ceil(support[:, :, None] * fractions[None, None, :]).reshape(support.shape[0], -1)
        early_w = np.repeat(weights * (share / EARLY_POINTS), EARLY_POINTS, axis=1)
        support = np.concatenate([support, early], axis=1)
        weights = np.concatenate([weights * (1.0 - share), early_w], axis=1)
    order = np.argsort(support, axis=1, kind="stable")
    return LengthBelief(np.take_along_axis(support, order, axis=1), np.take_along_axis(weights, order, axis=1))


@once_per_view
def length_belief(view: ClusterView) -> LengthBelief:
    """``view``'s beliefs, built on first use and kept as long as the view."""
    return build_belief(view)


def expected_total_epochs(view: ClusterView) -> np.ndarray:
    """Each job's expected epochs before any progress (the belief's mean)."""
    belief = length_belief(view)
    return (belief.support * belief.weights).sum(axis=1)


def expected_future_epochs(view: ClusterView) -> np.ndarray:
    """Expected epochs after the current one, given the completed epochs ``k``:
    ``E[T - k - 1 | T > k]`` (0 for a finished job). A job that has outlived every point
    of its belief is taken to need as many epochs again as it has completed."""
    belief = length_belief(view)
    done = np.asarray(view.epochs_done, dtype=np.float64)[:, None]
    alive = np.where(belief.support > done, belief.weights, 0.0)
    mass = alive.sum(axis=1)
    future = (alive * (belief.support - done - 1.0)).sum(axis=1)
    expected = np.divide(future, mass, out=done[:, 0].copy(), where=mass > 0)
    return np.where(view.is_done, 0.0, expected)


def believed_total_epochs(view: ClusterView) -> np.ndarray:
    """Each job's believed total epochs given its progress: ``view.num_epochs`` itself in the
    ``exact`` regime; otherwise the belief's ``E[T | T > k]`` given the ``k`` completed epochs
    (the belief's points are whole epochs, so for a job still running ``T > epoch_progress``
    is ``T > k``), that is ``k + 1 +`` :func:`expected_future_epochs`; ``k`` for a finished
    job. A job past every point of its belief is believed to run ``2k + 1`` epochs. Minus
    ``epoch_progress``, it is :func:`expected_epochs_left`."""
    if view.length_regime == "exact":
        return view.num_epochs
    done = np.asarray(view.epochs_done, dtype=np.float64)
    return np.where(view.is_done, done, done + 1.0 + expected_future_epochs(view))


def expected_epochs_left(view: ClusterView) -> np.ndarray:
    """Expected epochs still to run, the current one's unfinished share included:
    ``num_epochs - epoch_progress`` in the ``exact`` regime, else the rest of the current
    epoch plus :func:`expected_future_epochs` (0 for a finished job)."""
    if view.length_regime == "exact":
        return view.num_epochs - view.epoch_progress
    left = 1.0 - np.asarray(view.current_epoch_fraction_done, dtype=np.float64) + expected_future_epochs(view)
    return np.where(view.is_done, 0.0, left)


def gittins_index_per_epoch(view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
    """The Gittins index of each job in ``job_ids`` in epochs of service, given its attained
    epochs ``a`` (:attr:`~shockwave_gym.view.ClusterView.epoch_progress`)::

        G(a) = max over D > 0 of P(T - a <= D | T > a) / E[min(T - a, D) | T > a]

    the maximum taken over the belief's points (where it lies for a discrete law). A job past
    every point of its belief gets ``1 / max(a, 1)`` (it needs as much again as it attained).
    """
    belief = length_belief(view)
    attained = np.asarray(view.epoch_progress, dtype=np.float64)[job_ids][:, None]
    left = belief.support[job_ids] - attained
    weights = np.where(left > 1e-9, belief.weights[job_ids], 0.0)
    left = np.maximum(left, 0.0)
    mass = np.cumsum(weights, axis=1)
    total = mass[:, -1:]
    service = np.cumsum(weights * left, axis=1) + left * (total - mass)
    ratio = np.divide(mass, service, out=np.zeros_like(mass), where=(service > 0) & (weights > 0))
    index = ratio.max(axis=1, initial=0.0)
    fallback = 1.0 / np.maximum(attained[:, 0], 1.0)
    return np.where(total[:, 0] > 0, index, fallback)
