"""Gavel: max-min fairness over the Gavel round mechanism.

Rule (homogeneous case): maximise ``min_j sf_j x_j / w_j`` subject to ``0 <= x_j <= 1`` and
``sum_j sf_j x_j <= G`` (``sf`` = gang size, ``w`` = priority weight, 1 in every trace we
know); rates play no part with one GPU type. The optimum level is
``t* = min(min_j sf_j / w_j, G / sum_j w_j)`` and ``x_j = t* w_j / sf_j``.

Source: Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads" (Gavel, OSDI '20). Authors' policy key: ``max_min_fairness``.

Deliberate difference: the authors solve the LP with cvxpy/ECOS. When ``G/N <= min sf`` the
optimum is unique and equals this closed form; otherwise it is degenerate (1-GPU jobs get 1,
multi-GPU jobs whatever the solver returns) and the closed form picks ``x_j = 1/sf_j``.
The closed form was measured within 0.05% JCT of the authors' runs (docs/SEMANTICS.md).
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.gavel.mechanism import GavelRoundAgent
from shockwave_gym.view import ClusterView


def max_min_fair_allocation(gang: np.ndarray, gpus: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Closed-form max-min fair shares ``x_j = t* w_j / sf_j`` (see module docstring)."""
    gang = np.asarray(gang, dtype=np.float64)
    if gang.size == 0:
        return np.zeros(0)
    weights = np.ones_like(gang) if weights is None else np.asarray(weights, dtype=np.float64)
    level = min(float(np.min(gang / weights)), gpus / float(weights.sum()))
    return np.minimum(level * weights / gang, 1.0)


class GavelAgent(GavelRoundAgent):
    """Max-min fair allocation (Gavel) turned into rounds by the shared mechanism."""

    name = "gavel"

    def compute_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        return max_min_fair_allocation(view.gang[job_ids], view.gpus, view.priority[job_ids])
