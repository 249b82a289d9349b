"""Gandiva-Fair: an equal time share for every job, whatever its gang.

Rule: ``x_j = min(1, G / N)`` for each of the ``N`` active jobs. No solver and no state; the
shared Gavel round mechanism turns the shares into rounds.

Source: Chaudhary et al., "Balancing Efficiency and Fairness in Heterogeneous GPU Clusters
for Deep Learning" (Gandiva-fair, EuroSys '20), as the Shockwave authors ran it (their
``GandivaFairProportional`` policy). Authors' policy key: ``gandiva_fair``.

No deliberate difference from the authors' code.

Heterogeneous form (docs/HETEROGENEOUS.md): Gandiva-fair gives every job an equal share of
*every* GPU type, ``X[j, t] = min(1, G/N) G_t / G`` (its time share, split across types in
proportion to their counts; 0 on a type it cannot run on). The paper's second step, trading
fast-GPU shares between users whose speed-ups differ, is not modelled: it needs per-user
accounts, and every trace job is its own user here.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.gavel.mechanism import GavelRoundAgent
from shockwave_gym.view import ClusterView


def equal_share_allocation(num_jobs: int, gpus: int) -> np.ndarray:
    """``min(1, G/N)`` for each of ``num_jobs`` jobs."""
    if num_jobs == 0:
        return np.zeros(0)
    return np.full(num_jobs, min(1.0, gpus / num_jobs))


class GandivaFairAgent(GavelRoundAgent):
    """Equal time shares (Gandiva-Fair) turned into rounds by the shared mechanism."""

    name = "gandiva_fair"

    def compute_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        return equal_share_allocation(job_ids.size, view.gpus)

    def compute_typed_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        share = equal_share_allocation(job_ids.size, view.gpus)
        weights = np.asarray(view.type_gpus, dtype=np.float64) / float(view.gpus)
        return np.where(view.runnable[job_ids], share[:, None] * weights[None, :], 0.0)
