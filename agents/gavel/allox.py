"""AlloX: min-cost assignment of the oldest waiting jobs to (GPU, position) slots.

Rule, at each recompute (``alpha = 0.2``):

1. ``A`` = jobs whose previous ``x`` is exactly 1; ``n = G - |A|`` GPUs are free to assign.
2. The other active jobs ``U``, oldest first (ties by id), are cut to the first
   ``K = max(floor(alpha |U|), n)``.
3. Job ``i`` in position ``q`` (1 = last to run) on a GPU costs ``q rem_i / thr_i`` plus its
   time since arrival (a per-job constant, kept for identical tie-breaking); the min-cost
   assignment over ``K x (n K)`` slots is solved with ``scipy.optimize.linear_sum_assignment``.
4. The job that runs first on each GPU (the highest position) gets ``x = 1 / sf``; every
   other job keeps its previous ``x`` (0 for new jobs).

With ``K <= n`` this is FIFO. ``rem`` and ``thr`` are remaining iterations and iterations/s
at the current batch size (see :func:`~shockwave_agents.gavel.mechanism.remaining_iterations`).

Source: Le et al., "AlloX: Compute Allocation in Hybrid Clusters" (EuroSys '20), as
implemented in the Gavel/Shockwave authors' code (``AlloX_Perf``). Authors' policy key:
``allox``.

No deliberate difference from the authors' code: its state (previous ``x``) carries over
between recomputes exactly as theirs does.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.gavel.mechanism import (
    GavelRoundAgent,
    check_remaining_source,
    remaining_iterations,
)
from shockwave_agents.options import number
from shockwave_gym.view import ClusterView

#: Largest cost matrix (entries) built in the authors' full form; beyond it only the
#: ``ceil(K/n)`` positions any optimal assignment uses are offered (same optimum, and a
#: memory bound at scale; tie-breaks among equal-cost assignments may then differ).
FULL_COST_MATRIX_ENTRIES = 2_000_000


def allox_assignment(processing_s: np.ndarray, waited_s: np.ndarray, free_gpus: int) -> np.ndarray:
    """Indices of the jobs that run first on each of ``free_gpus`` GPUs (fewer when there
    are fewer jobs), for jobs with isolated processing times ``processing_s`` > 0.

    ``processing_s`` / ``waited_s`` are per job, in priority order (oldest first).
    """
    num_jobs = processing_s.size
    if num_jobs == 0 or free_gpus <= 0:
        return np.zeros(0, dtype=np.int64)
    if num_jobs <= free_gpus:
        # every job alone in position 1 on its own GPU is the unique optimum (cost p + d
        # beats 2p + d): each job runs first; no solver needed
        return np.arange(num_jobs, dtype=np.int64)
    from scipy.optimize import linear_sum_assignment

    blocks = num_jobs
    if num_jobs * num_jobs * free_gpus > FULL_COST_MATRIX_ENTRIES:
        blocks = -(-num_jobs // free_gpus)
    positions = np.arange(1, blocks + 1, dtype=np.float64)
    # column block k holds position k+1 on every GPU: cost (k+1) p_i + d_i
    cost = positions[None, :, None] * processing_s[:, None, None] + waited_s[:, None, None]
    cost = np.broadcast_to(cost, (num_jobs, blocks, free_gpus)).reshape(num_jobs, blocks * free_gpus)
    rows, cols = linear_sum_assignment(cost)
    gpu = cols % free_gpus
    block = cols // free_gpus
    first = []
    for g in np.unique(gpu).tolist():
        on_gpu = gpu == g
        first.append(int(rows[on_gpu][np.argmax(block[on_gpu])]))
    return np.asarray(first, dtype=np.int64)


class AlloxAgent(GavelRoundAgent):
    """AlloX's assignment-based allocation turned into rounds by the shared mechanism."""

    name = "allox"

    def __init__(self, alpha: float = 0.2, remaining: str = "current_rate", **mechanism_options):
        super().__init__(**mechanism_options)
        self.alpha = number("alpha", alpha, low=0.0, high=1.0)
        self.remaining = check_remaining_source(remaining)

    def reset_rule(self) -> None:
        self._previous: dict[int, float] = {}

    def compute_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        gang = view.gang[job_ids]
        previous = np.array([self._previous.get(j, np.nan) for j in job_ids.tolist()])
        already = previous == 1.0
        free_gpus = view.gpus - int(already.sum())
        waiting = np.flatnonzero(~already)
        waited_s = view.time_s - view.arrival_s[job_ids[waiting]]
        # oldest first; a stable sort keeps ascending id among equal arrivals
        waiting = waiting[np.argsort(-waited_s, kind="stable")]
        waiting = waiting[: max(int(self.alpha * waiting.size), free_gpus)]
        thr = view.current_throughput[job_ids[waiting]]
        rem = remaining_iterations(view, job_ids[waiting], self.remaining)
        processing_s = rem / np.where(thr == 0.0, 1e-10, thr)
        first = waiting[allox_assignment(processing_s, view.time_s - view.arrival_s[job_ids[waiting]], free_gpus)]
        allocation = np.where(np.isnan(previous), 0.0, previous)
        allocation[first] = 1.0 / gang[first]
        self._previous = dict(zip(job_ids.tolist(), allocation.tolist(), strict=True))
        return allocation
