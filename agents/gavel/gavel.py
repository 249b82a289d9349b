"""Gavel: max-min fairness over the Gavel round mechanism.

Rule (homogeneous case): maximise ``min_j sf_j x_j / w_j`` subject to ``0 <= x_j <= 1`` and
``sum_j sf_j x_j <= G`` (``sf`` = gang size, ``w`` = priority weight, 1 in every trace we
know); rates play no part with one GPU type. The optimum level is
``t* = min(min_j sf_j / w_j, G / sum_j w_j)`` and ``x_j = t* w_j / sf_j``.

Source: Narayanan et al., "Heterogeneity-Aware Cluster Scheduling Policies for Deep Learning
Workloads" (Gavel, OSDI '20). Authors' policy key: ``max_min_fairness``.

Heterogeneous form (Gavel's own, OSDI '20 section 4.1; docs/HETEROGENEOUS.md, "Agents"): over
an allocation ``X[j, t]`` (share of rounds on type ``t``), maximise
``min_j (sum_t X[j, t] tput[j, t] / eq_j) / w_j`` subject to ``sum_j sf_j X[j, t] <= G_t``,
``sum_t X[j, t] <= 1``, ``X >= 0`` and ``X[j, t] = 0`` where ``j`` cannot run on ``t``;
``tput`` is iterations/s at the current batch size on each type and ``eq_j`` the job's
equal-share throughput (:func:`shockwave_gym.interface.equal_share_throughput`: ``G_t / m``
GPUs of every type). Solved as an LP with HiGHS (scipy), then, keeping every job at the
optimal level, a second LP maximises the sum of the normalised throughputs so that capacity
the bottleneck jobs cannot use is not left idle (the max-min optimum is degenerate). The
per-type mechanism (:mod:`.typed_mechanism`) turns ``X`` into rounds. ``gavel-blind`` is the
same agent with ``heterogeneity_aware=False``: the homogeneous allocation as if every GPU
were a V100, placed by the default rule.

Deliberate difference: the authors solve the LP with cvxpy/ECOS. When ``G/N <= min sf`` the
optimum is unique and equals this closed form; otherwise it is degenerate (1-GPU jobs get 1,
multi-GPU jobs whatever the solver returns) and the closed form picks ``x_j = 1/sf_j``.
The closed form was measured within 0.05% JCT of the authors' runs (docs/SEMANTICS.md).
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.gavel.mechanism import GavelRoundAgent
from shockwave_agents.gavel.typed_lp import typed_blocks
from shockwave_gym.interface import equal_share_throughput
from shockwave_gym.view import ClusterView


def max_min_fair_allocation(gang: np.ndarray, gpus: int, weights: np.ndarray | None = None) -> np.ndarray:
    """Closed-form max-min fair shares ``x_j = t* w_j / sf_j`` (see module docstring)."""
    gang = np.asarray(gang, dtype=np.float64)
    if gang.size == 0:
        return np.zeros(0)
    weights = np.ones_like(gang) if weights is None else np.asarray(weights, dtype=np.float64)
    level = min(float(np.min(gang / weights)), gpus / float(weights.sum()))
    return np.minimum(level * weights / gang, 1.0)


def hetero_max_min_allocation(
    throughput: np.ndarray,
    gang: np.ndarray,
    type_gpus: np.ndarray,
    equal_share: np.ndarray,
    weights: np.ndarray | None = None,
    *,
    refine: bool = True,
) -> tuple[float, np.ndarray]:
    """``(level, X)``: the heterogeneous max-min fair optimum (module docstring).

    ``throughput`` (m, T) iterations/s (0 where a job cannot run), ``gang`` (m,), ``type_gpus``
    (T,), ``equal_share`` (m,) positive reference throughputs. ``level`` is the optimal
    ``min_j ratio_j / w_j``; with ``refine`` the returned ``X`` also maximises the sum of ratios
    among the allocations that reach ``level`` for every job.
    """
    from scipy.optimize import linprog

    throughput = np.asarray(throughput, dtype=np.float64)
    m, num_types = throughput.shape
    if m == 0:
        return 0.0, np.zeros((0, num_types))
    gang = np.asarray(gang, dtype=np.float64)
    weights = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)
    ratio = throughput / np.asarray(equal_share, dtype=np.float64)[:, None]  # a[j, t]
    n = m * num_types
    # variables: X flattened row-major (job j, type t at j * T + t), then the level z
    fair = np.zeros((m, n + 1))
    for j in range(m):
        fair[j, j * num_types:(j + 1) * num_types] = -ratio[j]
        fair[j, n] = weights[j]
    capacity, rows, bounds = typed_blocks(throughput, gang, extra=1)
    a_ub = np.vstack([fair, capacity, rows])
    b_ub = np.concatenate([np.zeros(m), np.asarray(type_gpus, dtype=np.float64), np.ones(m)])
    cost = np.zeros(n + 1)
    cost[n] = -1.0
    first = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if first.status != 0:
        raise RuntimeError(f"heterogeneous max-min LP failed: {first.message}")
    level = float(first.x[n])
    x = first.x[:n]
    if refine:
        # keep every job at the level (up to a relative 1e-9), then use what is left
        bounds[n] = (level * (1.0 - 1e-9), level * (1.0 - 1e-9))
        cost = np.concatenate([-(ratio / weights[:, None]).ravel(), [0.0]])
        second = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")
        if second.status == 0:
            x = second.x[:n]
    return level, np.clip(x.reshape(m, num_types), 0.0, 1.0)


class GavelAgent(GavelRoundAgent):
    """Max-min fair allocation (Gavel) turned into rounds by the shared mechanism."""

    name = "gavel"

    def compute_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        return max_min_fair_allocation(view.gang[job_ids], view.gpus, view.priority[job_ids])

    def compute_typed_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        throughput = np.where(view.runnable[job_ids], view.throughput_by_type[job_ids], 0.0)
        _, x = hetero_max_min_allocation(
            throughput, view.gang[job_ids], view.type_gpus, equal_share_throughput(view, job_ids),
            view.priority[job_ids],
        )
        return x


def make_gavel_blind(**options) -> GavelAgent:
    """Gavel blind to GPU types (``heterogeneity_aware=False``): the homogeneous allocation as
    if every GPU were a V100, placed by the default rule. The baseline of the heterogeneity
    experiment (docs/HETEROGENEOUS.md)."""
    agent = GavelAgent(heterogeneity_aware=False, **options)
    agent.name = "gavel-blind"
    return agent
