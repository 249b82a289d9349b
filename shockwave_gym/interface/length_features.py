"""What observation version 3 adds to version 2: each job's length belief and the run's
information regime (docs/ENV.md, "Observation Space"; docs/SEMANTICS.md, "Information
regimes"). :mod:`shockwave_gym.interface.observation` composes the layout from version 2's
columns and these.

Versions 1 and 2 divide progress by the trace's epochs, which the ``estimate`` and
``unknown`` regimes hide. Version 3 keeps version 2's columns, in order, with progress taken
against the believed total epochs given the progress
(:func:`~shockwave_gym.interface.lengths.believed_total_epochs`: the trace's epochs in
``exact``, ``E[T | T > k]`` otherwise), and appends:

* per job, the belief's spread (:data:`BELIEF_JOB_FEATURES`): ``remaining_std`` (the
  standard deviation of the remaining run time), ``remaining_cv`` (the standard deviation of
  the remaining epochs over their mean) and ``end_hazard`` (the probability the current epoch
  is the job's last);
* per cluster, the regime (:data:`REGIME_CLUSTER_FEATURES`): a one-hot of the knowledge
  regime and the public early-ending share.

Public facts only: the beliefs of :mod:`shockwave_gym.interface.lengths`, built from the
view's public length model, and the remaining-time predictor's expected epoch duration.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.interface.lengths import EARLY_POINTS, ESTIMATE_POINTS, length_belief
from shockwave_gym.interface.predictor import predictor_for
from shockwave_gym.regimes import KNOWLEDGE_REGIMES
from shockwave_gym.view import ClusterView

#: The coefficient of variation of a job that has outlived every point of its belief (it is
#: taken to need as many epochs again as it has done, with that much spread).
PAST_BELIEF_CV = 1.0

#: Per-job belief features appended by version 3: (name, low, high, meaning); ``{T}`` stands
#: for version 2's time transform.
BELIEF_JOB_FEATURES: tuple[tuple[str, float, float, str], ...] = (
    ("remaining_std", 0.0, 2.0, "{T} of the belief's standard deviation of the remaining run time "
     "(0 in the exact regime without early endings)"),
    ("remaining_cv", 0.0, 4.0, "the belief's standard deviation of the remaining epochs / their mean"),
    ("end_hazard", 0.0, 1.0, "probability, under the belief, that the current epoch is the job's last"),
)

#: Cluster features appended by version 3: (name, low, high, meaning).
REGIME_CLUSTER_FEATURES: tuple[tuple[str, float, float, str], ...] = (
    *((f"length_{k}", 0.0, 1.0, f"1 in the {k!r} information regime, else 0") for k in KNOWLEDGE_REGIMES),
    ("early_share", 0.0, 1.0, "the regime's public share of jobs that end early"),
)

#: What the belief features depend on beyond their tables (hashed into the signature).
BELIEF_CONSTANTS = (ESTIMATE_POINTS, EARLY_POINTS, PAST_BELIEF_CV)


def belief_spread(view: ClusterView) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(mean, standard deviation, end hazard) of each job's remaining epochs after the
    current one, ``T - k - 1`` given ``T > k`` (``k`` completed epochs), under its belief;
    the hazard is ``P(T = k + 1 | T > k)``. A job past every point of its belief: mean
    ``k``, standard deviation :data:`PAST_BELIEF_CV` x mean, hazard 0. All 0 for a finished
    job."""
    belief = length_belief(view)
    done = np.asarray(view.epochs_done, dtype=np.float64)[:, None]
    alive = np.where(belief.support > done, belief.weights, 0.0)
    mass = alive.sum(axis=1)
    future = belief.support - done - 1.0
    has = mass > 0
    safe = np.where(has, mass, 1.0)
    mean = (alive * future).sum(axis=1) / safe
    second = (alive * future * future).sum(axis=1) / safe
    std = np.sqrt(np.maximum(second - mean * mean, 0.0))
    hazard = np.where(future == 0.0, alive, 0.0).sum(axis=1) / safe
    mean = np.where(has, mean, done[:, 0])
    std = np.where(has, std, PAST_BELIEF_CV * done[:, 0])
    finished = np.asarray(view.is_done)
    return tuple(np.where(finished, 0.0, a) for a in (mean, std, np.where(has, hazard, 0.0)))


def fill_belief_rows(view: ClusterView, rows: np.ndarray, time_unit_s: float, log_time: float) -> None:
    """Write :data:`BELIEF_JOB_FEATURES` of every job into ``rows`` (3, num_jobs), unclipped:
    the standard deviation of the remaining run time through the time transform
    ``log1p(s / time_unit_s) / log_time`` (seconds: epochs times the predictor's expected
    epoch duration), the coefficient of variation of the remaining epochs (the current
    epoch's rest included), the end hazard."""
    mean, std, hazard = belief_spread(view)
    derived = view.derived_arrays
    epoch_s = predictor_for(view).expected_epoch_duration_s(derived.observed_batch_size_counts)
    rows[0] = np.log1p(std * epoch_s / time_unit_s) / log_time
    left = mean + (1.0 - np.asarray(derived.current_epoch_fraction_done, dtype=np.float64))
    rows[1] = np.divide(std, left, out=np.zeros(left.shape), where=left > 0)
    rows[2] = hazard


def regime_features(view: ClusterView) -> tuple[float, ...]:
    """:data:`REGIME_CLUSTER_FEATURES` of ``view``: the knowledge one-hot and the early share."""
    model = view.length_model
    return (*(float(model.knowledge == k) for k in KNOWLEDGE_REGIMES), float(model.early_share))
