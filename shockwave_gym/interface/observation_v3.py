"""Observation version 3: version 2 with each job's length belief, for every information
regime (docs/SEMANTICS.md, "Information regimes"; docs/ENV.md, "Observation Space").

Versions 1 and 2 divide progress by the trace's epochs, which the ``estimate`` and
``unknown`` regimes hide. Version 3 keeps version 2's columns, in order, with one change
and adds what a scheduler may believe of the length:

* ``epoch_progress`` is taken against the believed total epochs given the progress
  (:func:`~shockwave_gym.interface.lengths.believed_total_epochs`): the trace's epochs in
  ``exact`` (there the column equals version 2's), ``E[T | T > k]`` otherwise;
* ``predicted_remaining`` is unchanged: the predictor already works from the regime's belief;
* per job, the belief's spread: ``remaining_std`` (the standard deviation of the remaining
  run time), ``remaining_cv`` (the standard deviation of the remaining epochs over their
  mean) and ``end_hazard`` (the probability the current epoch is the job's last);
* per cluster, the regime: a one-hot of the knowledge regime and the public early-ending
  share.

Public facts only: the beliefs of :mod:`shockwave_gym.interface.lengths`, built from the
view's public length model. Later versions extend this one the same way, appending rows
(:attr:`JobFeaturesV3.num_features`) and cluster entries.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.interface.lengths import (
    EARLY_POINTS,
    ESTIMATE_POINTS,
    believed_total_epochs,
    length_belief,
)
from shockwave_gym.interface.observation import (
    CLUSTER_FEATURES_V2,
    JOB_FEATURES_V2,
    LAYOUTS,
    LOG_TIME,
    TIME_SPAN_S,
    TIME_UNIT_S,
    V2_ROWS,
    V2_SCALE_IN,
    V2_SCALE_OUT,
    JobFeaturesV2,
    Layout,
    cluster_features_v2,
)
from shockwave_gym.interface.predictor import predictor_for
from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.regimes import KNOWLEDGE_REGIMES
from shockwave_gym.view import ClusterView

_TIME = f"log1p(s / {TIME_UNIT_S:g} s) / log1p({TIME_SPAN_S:g} / {TIME_UNIT_S:g})"
#: the coefficient of variation of a job that has outlived every point of its belief (it is
#: taken to need as many epochs again as it has done, with that much spread)
PAST_BELIEF_CV = 1.0


def _v3_job_column(feature: tuple) -> tuple:
    name = feature[0]
    if name == "epoch_progress":
        return (name, 0.0, 1.0, "epochs done (with the current epoch's share) / believed total epochs "
                "(the trace's epochs in the exact regime, else E[T | T > epochs done])")
    if name == "predicted_remaining":
        return (name, 0.0, 2.0, f"{_TIME} of the core predictor's remaining run time, from the regime's belief")
    return feature


#: Version 3's per-job features, in column order: (name, low, high, meaning).
JOB_FEATURES_V3: tuple[tuple[str, float, float, str], ...] = (
    *(_v3_job_column(f) for f in JOB_FEATURES_V2),
    ("remaining_std", 0.0, 2.0, f"{_TIME} of the belief's standard deviation of the remaining run time "
     "(0 in the exact regime without early endings)"),
    ("remaining_cv", 0.0, 4.0, "the belief's standard deviation of the remaining epochs / their mean"),
    ("end_hazard", 0.0, 1.0, "probability, under the belief, that the current epoch is the job's last"),
)

#: Version 3's cluster-wide features, in order: (name, low, high, meaning).
CLUSTER_FEATURES_V3: tuple[tuple[str, float, float, str], ...] = (
    *CLUSTER_FEATURES_V2,
    *((f"length_{k}", 0.0, 1.0, f"1 in the {k!r} information regime, else 0") for k in KNOWLEDGE_REGIMES),
    ("early_share", 0.0, 1.0, "the regime's public share of jobs that end early"),
)

V3_JOB_LOW = np.array([f[1] for f in JOB_FEATURES_V3], dtype=np.float32).astype(np.float64)[V2_ROWS:, None]
V3_JOB_HIGH = np.array([f[2] for f in JOB_FEATURES_V3], dtype=np.float32).astype(np.float64)[V2_ROWS:, None]


def signature_parts() -> list[str]:
    """What :func:`~shockwave_gym.interface.observation.observation_signature` hashes for
    version 3: the tables, the scales and the beliefs' discretisation."""
    return ["v3", repr(JOB_FEATURES_V3), repr(CLUSTER_FEATURES_V3), repr(TIME_UNIT_S), repr(TIME_SPAN_S),
            V2_SCALE_IN.tobytes().hex(), V2_SCALE_OUT.tobytes().hex(),
            repr((ESTIMATE_POINTS, EARLY_POINTS, PAST_BELIEF_CV))]


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


class JobFeaturesV3(JobFeaturesV2):
    """:class:`JobFeaturesV2` for observation version 3 (:data:`JOB_FEATURES_V3`): version
    2's rows with progress against the believed total, then the belief's spread."""

    num_features = len(JOB_FEATURES_V3)

    def total_epochs(self, view: ClusterView) -> np.ndarray:
        return believed_total_epochs(view)

    def fill(self, view: ClusterView, rho_hat: np.ndarray | None = None) -> np.ndarray:
        """The features of ``view``'s current state, written into :attr:`buffer` (returned)."""
        super().fill(view, rho_hat)
        n = self._index.size
        mean, std, hazard = belief_spread(view)
        rest = 1.0 - np.asarray(view.derived_arrays.current_epoch_fraction_done, dtype=np.float64)
        epoch_s = predictor_for(view).expected_epoch_duration_s(view.derived_arrays.observed_batch_size_counts)
        extra = self.buffer[V2_ROWS:, :n]
        extra[0] = np.log1p(std * epoch_s / TIME_UNIT_S) / LOG_TIME
        left = mean + rest
        extra[1] = np.divide(std, left, out=np.zeros(n), where=left > 0)
        extra[2] = hazard
        np.minimum(extra, V3_JOB_HIGH, out=extra)
        np.maximum(extra, V3_JOB_LOW, out=extra)
        return self.buffer


def regime_features(view: ClusterView) -> tuple[float, ...]:
    """The regime's cluster entries: the knowledge one-hot and the early-ending share."""
    model = view.length_model
    return (*(float(model.knowledge == k) for k in KNOWLEDGE_REGIMES), float(model.early_share))


def cluster_features_v3(view: ClusterView, slots: SlotMap, free_gpus=None) -> np.ndarray:
    """(len(CLUSTER_FEATURES_V3),) float32 version-3 cluster features, clipped."""
    extra = np.clip(np.array(regime_features(view), dtype=np.float32), 0.0, 1.0)
    return np.concatenate([cluster_features_v2(view, slots, free_gpus), extra])


LAYOUTS[3] = Layout(JOB_FEATURES_V3, CLUSTER_FEATURES_V3, signature_parts, JobFeaturesV3, cluster_features_v3)
