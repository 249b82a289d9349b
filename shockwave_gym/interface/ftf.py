"""Finish-time-fairness estimates from what a scheduler may observe.

The metric itself (from true isolated times, after the episode) is in
:mod:`shockwave_gym.metrics`; see docs/SEMANTICS.md, "Metrics and finish-time fairness".
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.interface.predictor import predicted_remaining_s
from shockwave_gym.view import ClusterView


def contention(view: ClusterView) -> float:
    """max(1, active jobs / GPUs): the current slowdown a fair share would impose."""
    return max(1.0, view.num_active / view.gpus)


def ftf_estimate(view: ClusterView, job_ids: np.ndarray | None = None) -> np.ndarray:
    """Projected finish-time fairness rho-hat from observed data (all jobs, or ``job_ids``).

    With c = :func:`contention`, W the observed work done and R the predicted remaining
    time (:func:`~shockwave_gym.interface.predictor.predicted_remaining_s`),
    ``rho_hat = (age + c * R) / (c * (W + R))``: the job's JCT if it got a
    1/c share from now on, over the JCT it would have had with that share from arrival. It
    is 1 for a job that has been served at its fair share, above 1 for one that waited.
    Meaningful for active jobs only.
    """
    c = np.array(contention(view))
    remaining = predicted_remaining_s(view)
    rho = c * remaining
    rho += view.time_s - view.arrival_s  # + age
    fair = view.work_done_s + remaining
    fair *= c
    rho /= np.maximum(fair, _TINY, out=fair)
    return rho if job_ids is None else rho[job_ids]


_TINY = np.array(1e-9)
