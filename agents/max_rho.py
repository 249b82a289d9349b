"""Max-rho first: run the jobs furthest behind their fair share, by an online estimate of
their finish-time ratio from public information only.

Estimate, for each active job ``j`` at time ``t`` (all public: arrival ``a_j``, gang ``g_j``,
the isolated work observed so far ``W_j`` (:attr:`ClusterView.work_done_s`), the predictor's
remaining isolated time ``R_j`` (:func:`shockwave_gym.interface.predicted_remaining_s`), the
number of active jobs ``n`` and the cluster's ``G`` GPUs)::

    rho_hat_j = (t - a_j + R_j) / T_fair_j,     T_fair_j = (W_j + R_j) * max(1, n g_j / G)

The numerator is the job's completion time from arrival if it ran without a break from now
on: a lower bound on its JCT. The denominator estimates its completion time under an equal
share: its predicted isolated duration, stretched by the slowdown a rigid gang of ``g_j``
would see if the ``G`` GPUs were split evenly among the ``n`` active jobs (it then runs at
``min(1, G / (n g_j))`` of its isolated rate: Gavel's isolated share,
``scheduler/policies/isolated.py``, Narayanan et al., OSDI '20), with the contention of now
taken as that of the job's whole life. ``rho_hat`` is therefore an optimistic projection of
the job's finish-time fairness ratio (Themis, Mahajan et al., NSDI '20), gang-aware: a job
served at its fair share stays near ``1 / max(1, n g_j / G)``, one that waits rises.

Rule: at every round, order the active jobs by ``rho_hat`` descending (ties by arrival, i.e.
job id) and take them while their gangs fit, smaller ones backfilling GPUs a larger one cannot
use. Greedy: it serves the largest projected ratio first, without looking ahead. Ours, not in
the Shockwave authors' simulator.

On a heterogeneous cluster ``W`` and ``R`` are reference-type seconds, ``G`` counts all GPUs,
and the order is placed on the fastest type with room for each job
(:func:`shockwave_gym.interface.pack_for_cluster`; docs/HETEROGENEOUS.md).
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import QueueOrderAgent
from shockwave_gym.interface import predicted_remaining_s
from shockwave_gym.view import ClusterView

_TINY_S = 1e-9


def rho_estimate(view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
    """``rho_hat`` of ``job_ids`` (active jobs; module docstring)."""
    job_ids = np.asarray(job_ids, dtype=np.int64)
    remaining_s = predicted_remaining_s(view)[job_ids]
    gang = np.asarray(view.gang, dtype=np.float64)[job_ids]
    slowdown = np.maximum(1.0, view.num_active * gang / view.gpus)
    fair_s = (np.asarray(view.work_done_s)[job_ids] + remaining_s) * slowdown
    return (view.time_s - np.asarray(view.arrival_s)[job_ids] + remaining_s) / np.maximum(fair_s, _TINY_S)


class MaxRhoAgent(QueueOrderAgent):
    name = "max-rho"

    def sort_key(self, view: ClusterView, active: np.ndarray) -> np.ndarray:
        return -rho_estimate(view, active)  # largest projected rho first
