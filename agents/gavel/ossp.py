"""OSSP: minimum total duration (the smallest makespan bound every job can meet).

Rule, at each recompute: bisect ``T`` on ``[100, 10^6]`` s while ``1.05 lo < hi`` (moving to
``[10^6, 10^7]`` and so on if nothing is feasible), where ``T`` is feasible when some ``x``
satisfies ``0 <= x_j <= 1``, ``sum_j sf_j x_j <= G`` and ``thr_j x_j >= rem_j / T``. The
allocation is the solver's point for the last feasible ``T``. That LP is degenerate, so the
point matters: only ECOS's interior point reproduces the authors' runs (the analytic centre
is +4.1% JCT away), so the final LP is solved through cvxpy with ECOS, jobs in ascending id
order, in the authors' matrix form.

Source: the ``min_total_duration`` policy of Gavel (Narayanan et al., OSDI '20), used as the
OSSP baseline by Shockwave. Authors' policy key: ``min_total_duration``.

Heterogeneous form (Gavel's min-total-duration policy over types; docs/HETEROGENEOUS.md): the
same bisection over ``T`` with the rate ``sum_t tput[j, t] X[j, t]`` and per-type capacity
``sum_j sf_j X[j, t] <= G_t``. Feasibility is decided against the optimal bound ``T*``, found
by one LP (HiGHS: maximise ``s`` with ``sum_t tput X >= rem s``; ``T* = 1/s*``), and the point
is ECOS's at the last feasible ``T``, as on one type.

Deliberate difference (speed only): the authors ask ECOS about every bisection step. The
feasibility of a ``T`` is decided here in closed form (``T >= max_j rem_j/thr_j`` and
``T >= sum_j sf_j rem_j/thr_j / G``); ECOS is asked only when ``T`` lies within a relative
1e-6 of that bound, where its answer could differ, and for the final point. The bisection
therefore visits the same ``T`` values and ends at the same ``T``.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.gavel.mechanism import (
    GavelRoundAgent,
    check_remaining_source,
    remaining_iterations,
)
from shockwave_agents.gavel.typed_lp import typed_blocks
from shockwave_gym.view import ClusterView

MIN_T_S, MAX_T_S, BISECTION_RATIO = 100.0, 1e6, 1.05
#: Relative distance from the feasibility bound inside which ECOS decides.
AMBIGUOUS_REL = 1e-6


def solve_min_duration_lp(throughput: np.ndarray, gang: np.ndarray, remaining: np.ndarray, gpus: int, bound_s: float):
    """Solve the feasibility LP at ``T = bound_s`` with ECOS; ``(status, x or None)``."""
    import cvxpy as cp

    m = throughput.size
    thr = throughput.reshape(m, 1)
    x = cp.Variable((m, 1))
    constraints = [
        x >= 0,
        cp.sum(cp.multiply(gang.reshape(m, 1).astype(np.float64), x), axis=0) <= [gpus],
        cp.sum(x, axis=1) <= 1,
        cp.sum(cp.multiply(thr, x), axis=1) >= remaining / bound_s,
    ]
    problem = cp.Problem(cp.Maximize(1), constraints)
    try:
        problem.solve(solver=cp.ECOS)
    except cp.error.SolverError:
        return "solver_error", None
    value = None if x.value is None else x.value.reshape(m)
    return problem.status, value


def bisect_duration_bound(is_feasible, min_s: float = MIN_T_S, max_s: float = MAX_T_S) -> float:
    """The authors' bisection: the last feasible ``T`` visited (see module docstring)."""
    last_max = max_s
    last_feasible = None
    while last_feasible is None:
        while BISECTION_RATIO * min_s < max_s:
            bound = (min_s + max_s) / 2.0
            if is_feasible(bound):
                last_feasible = bound
                max_s = bound
            else:
                min_s = bound
        max_s, min_s = last_max * 10.0, last_max
        last_max *= 10.0
    return last_feasible


def _point_at_last_feasible(is_feasible, solve) -> np.ndarray:
    """ECOS's point (clipped to [0, 1]) at the last feasible ``T`` of the bisection, with
    ``solve(T) -> (status, x or None)``. If ECOS has no point there (it cannot happen away
    from the bound), the bisection is redone with ECOS deciding every step."""
    bound_s = bisect_duration_bound(is_feasible)
    status, x = solve(bound_s)
    if status != "optimal" or x is None:
        bound_s = bisect_duration_bound(lambda b: solve(b)[0] == "optimal")
        status, x = solve(bound_s)
    return np.clip(x, 0.0, 1.0)


def min_total_duration_allocation(throughput: np.ndarray, gang: np.ndarray, remaining: np.ndarray, gpus: int) -> np.ndarray:
    """OSSP's ``x`` for jobs in ascending id order."""
    throughput = np.asarray(throughput, dtype=np.float64)
    gang = np.asarray(gang, dtype=np.float64)
    remaining = np.asarray(remaining, dtype=np.float64)
    if throughput.size == 0:
        return np.zeros(0)
    isolated_s = remaining / throughput
    need_s = max(float(isolated_s.max()), float((gang * isolated_s).sum()) / gpus)

    def is_feasible(bound_s: float) -> bool:
        if abs(bound_s - need_s) > AMBIGUOUS_REL * need_s:
            return bound_s > need_s
        return solve_min_duration_lp(throughput, gang, remaining, gpus, bound_s)[0] == "optimal"

    return _point_at_last_feasible(is_feasible, lambda b: solve_min_duration_lp(throughput, gang, remaining, gpus, b))


def _typed_duration_lp(throughput, gang, remaining, type_gpus, bound_s):
    """ECOS's feasibility point at ``T = bound_s`` over types; ``(status, X or None)``."""
    import cvxpy as cp

    m, num_types = throughput.shape
    x = cp.Variable((m, num_types))
    constraints = [
        x >= 0,
        cp.sum(cp.multiply(gang.reshape(m, 1), x), axis=0) <= type_gpus,
        cp.sum(x, axis=1) <= 1,
        cp.sum(cp.multiply(throughput, x), axis=1) >= remaining / bound_s,
    ]
    blocked = throughput <= 0
    if blocked.any():
        constraints.append(cp.multiply(blocked.astype(np.float64), x) == 0)
    problem = cp.Problem(cp.Maximize(1), constraints)
    try:
        problem.solve(solver=cp.ECOS)
    except cp.error.SolverError:
        return "solver_error", None
    return problem.status, x.value


def hetero_min_duration_bound(throughput: np.ndarray, gang: np.ndarray, remaining: np.ndarray, type_gpus: np.ndarray) -> float:
    """``T*``: the smallest bound every job can meet over types (one HiGHS LP)."""
    from scipy.optimize import linprog

    m, num_types = throughput.shape
    n = m * num_types
    meet = np.zeros((m, n + 1))  # rem_j s - sum_t tput X <= 0
    for j in range(m):
        meet[j, j * num_types:(j + 1) * num_types] = -throughput[j]
        meet[j, n] = remaining[j]
    capacity, rows, bounds = typed_blocks(throughput, gang, extra=1)
    cost = np.zeros(n + 1)
    cost[n] = -1.0
    result = linprog(cost, A_ub=np.vstack([meet, capacity, rows]),
                     b_ub=np.concatenate([np.zeros(m), type_gpus, np.ones(m)]), bounds=bounds, method="highs")
    if result.status != 0 or result.x[n] <= 0:
        raise RuntimeError(f"heterogeneous min-total-duration LP failed: {result.message}")
    return 1.0 / float(result.x[n])


def hetero_min_total_duration_allocation(throughput, gang, remaining, type_gpus) -> np.ndarray:
    """OSSP's ``X`` (m, T) over types (module docstring)."""
    throughput = np.asarray(throughput, dtype=np.float64)
    gang = np.asarray(gang, dtype=np.float64)
    remaining = np.asarray(remaining, dtype=np.float64)
    type_gpus = np.asarray(type_gpus, dtype=np.float64)
    if throughput.shape[0] == 0:
        return np.zeros(throughput.shape)
    need_s = hetero_min_duration_bound(throughput, gang, remaining, type_gpus)

    def is_feasible(bound_s: float) -> bool:
        if abs(bound_s - need_s) > AMBIGUOUS_REL * need_s:
            return bound_s > need_s
        return _typed_duration_lp(throughput, gang, remaining, type_gpus, bound_s)[0] == "optimal"

    return _point_at_last_feasible(is_feasible, lambda b: _typed_duration_lp(throughput, gang, remaining, type_gpus, b))


class OsspAgent(GavelRoundAgent):
    """Min-total-duration allocation (OSSP) turned into rounds by the shared mechanism."""

    name = "ossp"

    def __init__(self, remaining: str = "current_rate", **mechanism_options):
        super().__init__(**mechanism_options)
        self.remaining = check_remaining_source(remaining)

    def compute_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        return min_total_duration_allocation(
            view.current_throughput[job_ids], view.gang[job_ids],
            remaining_iterations(view, job_ids, self.remaining), view.gpus,
        )

    def compute_typed_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        throughput = np.where(view.runnable[job_ids], view.throughput_by_type[job_ids], 0.0)
        return hetero_min_total_duration_allocation(
            throughput, view.gang[job_ids], remaining_iterations(view, job_ids, self.remaining), view.type_gpus,
        )
