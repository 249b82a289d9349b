"""Themis: finish-time fairness (minimise the largest predicted finish-time ratio).

Rule, at each recompute over the ``N`` active jobs: minimise ``max_j rho_j`` with

    rho_j = (t - a_j + rem_j / (thr_j x_j)) / (C_j + rem_j / iso_j),
    iso_j = thr_j * min(1, G / (N sf_j)),

subject to ``x_j >= 0``, ``sum_j sf_j x_j <= G`` and ``x_j <= 1``. ``C_j`` is the isolated
time the job has already used, carried over between recomputes as
``C_j += (rem_prev - rem) / iso_prev``. If the solver returns no point, ``x`` falls back to
the isolated share ``min(1, G / (N sf_j))``. ``rem``/``thr`` are remaining iterations and
iterations/s at the current batch size
(:func:`~shockwave_agents.gavel.mechanism.remaining_iterations`).

Heterogeneous form (Gavel's heterogeneity-aware FTF, OSDI '20; docs/HETEROGENEOUS.md): the
same program over ``X[j, t]``, with the job's rate ``sum_t tput[j, t] X[j, t]``, the isolated
rate ``eq_j`` = its equal-share throughput (``G_t / N`` GPUs of every type,
:func:`shockwave_gym.interface.equal_share_throughput`) and per-type capacity
``sum_j sf_j X[j, t] <= G_t``; the fallback is the equal share itself.

Source: Mahajan et al., "Themis: Fair and Efficient GPU Cluster Scheduling" (NSDI '20), in
the Gavel/Shockwave authors' formulation (``FinishTimeFairness_Perf``). Authors' policy key:
``finish_time_fairness``.

Deliberate differences: the optimum is degenerate and the solver's point decides the
schedule. The authors used Gurobi; we use cvxpy with ECOS (no licence; docs/SEMANTICS.md: ECOS is
within +0.7% JCT / +1.25% makespan of the authors' files), with the program written in
vectorised form (one expression over all jobs instead of one per job), which builds in
milliseconds instead of seconds. A solver *error* (the authors' code would crash) also falls
back to the isolated share.
"""

from __future__ import annotations

import warnings

import numpy as np

from shockwave_agents.gavel.mechanism import (
    GavelRoundAgent,
    check_remaining_source,
    remaining_iterations,
)
from shockwave_gym.interface import equal_share_fractions
from shockwave_gym.view import ClusterView


def isolated_share(gang: np.ndarray, gpus: int) -> np.ndarray:
    """``min(1, G / (N sf_j))``: each job's share when the cluster is split evenly."""
    gang = np.asarray(gang, dtype=np.float64)
    if gang.size == 0:
        return np.zeros(0)
    return np.minimum(1.0, gpus / (gang.size * gang))


def solve_finish_time_fairness(
    throughput: np.ndarray,
    gang: np.ndarray,
    remaining: np.ndarray,
    waited_s: np.ndarray,
    isolated_denominator_s: np.ndarray,
    gpus: int,
) -> tuple[str, np.ndarray | None]:
    """ECOS's minimiser of ``max_j rho_j`` (jobs in ascending id order).

    Returns ``(status, x)``: cvxpy's status (``"optimal"``, ``"optimal_inaccurate"``, ...),
    ``"not_dcp"`` when a denominator is not positive (the ratio is then not convex; the
    authors' code gets a ``DCPError`` there) or ``"solver_error"``; ``x`` is None when the
    solver returned no point.
    """
    import cvxpy as cp

    if not np.all(isolated_denominator_s > 0):
        return "not_dcp", None
    m = throughput.size
    x = cp.Variable((m, 1))
    rate = cp.sum(cp.multiply(throughput.reshape(m, 1), x), axis=1)
    finish_ratio = cp.multiply(
        1.0 / isolated_denominator_s,
        waited_s + cp.multiply(remaining, cp.inv_pos(rate)),
    )
    objective = cp.Minimize(finish_ratio[0] if m == 1 else cp.max(finish_ratio))
    constraints = [
        x >= 0,
        cp.sum(cp.multiply(gang.reshape(m, 1).astype(np.float64), x), axis=0) <= [gpus],
        cp.sum(x, axis=1) <= 1,
    ]
    problem = cp.Problem(objective, constraints)
    try:
        with warnings.catch_warnings():
            # "solution may be inaccurate": reported through the status instead
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=cp.ECOS)
    except cp.error.DCPError:
        return "not_dcp", None
    except cp.error.SolverError:
        return "solver_error", None
    return problem.status, None if x.value is None else x.value.reshape(m)


def solve_finish_time_fairness_typed(
    throughput: np.ndarray,
    gang: np.ndarray,
    remaining: np.ndarray,
    waited_s: np.ndarray,
    isolated_denominator_s: np.ndarray,
    type_gpus: np.ndarray,
) -> tuple[str, np.ndarray | None]:
    """:func:`solve_finish_time_fairness` over types: ``throughput`` (m, T), 0 where a job
    cannot run (its ``X`` is held at 0 there); returns ``(status, X (m, T) or None)``."""
    import cvxpy as cp

    if not np.all(isolated_denominator_s > 0):
        return "not_dcp", None
    m, num_types = throughput.shape
    x = cp.Variable((m, num_types))
    rate = cp.sum(cp.multiply(throughput, x), axis=1)
    finish_ratio = cp.multiply(1.0 / isolated_denominator_s, waited_s + cp.multiply(remaining, cp.inv_pos(rate)))
    objective = cp.Minimize(finish_ratio[0] if m == 1 else cp.max(finish_ratio))
    constraints = [
        x >= 0,
        cp.sum(cp.multiply(gang.reshape(m, 1).astype(np.float64), x), axis=0) <= np.asarray(type_gpus, dtype=np.float64),
        cp.sum(x, axis=1) <= 1,
    ]
    blocked = throughput <= 0
    if blocked.any():
        constraints.append(cp.multiply(blocked.astype(np.float64), x) == 0)
    problem = cp.Problem(objective, constraints)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            problem.solve(solver=cp.ECOS)
    except cp.error.DCPError:
        return "not_dcp", None
    except cp.error.SolverError:
        return "solver_error", None
    return problem.status, None if x.value is None else x.value


class ThemisAgent(GavelRoundAgent):
    """Finish-time-fair allocation (Themis) turned into rounds by the shared mechanism."""

    name = "themis"

    def __init__(self, remaining: str = "current_rate", **mechanism_options):
        super().__init__(**mechanism_options)
        self.remaining = check_remaining_source(remaining)

    def reset_rule(self) -> None:
        self._used_isolated_s: dict[int, float] = {}
        self._previous_remaining: dict[int, float] = {}
        self._previous_isolated_rate: dict[int, float] = {}
        self._statuses: dict[str, int] = {}

    def compute_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        gang = view.gang[job_ids].astype(np.float64)
        throughput = view.current_throughput[job_ids].astype(np.float64)
        remaining = remaining_iterations(view, job_ids, self.remaining)
        share = isolated_share(gang, view.gpus)
        isolated_rate = throughput * share
        used_s = np.empty(job_ids.size)
        for i, job_id in enumerate(job_ids.tolist()):
            used = self._used_isolated_s.get(job_id, 0.0)
            if job_id in self._previous_remaining:
                # rem grows when a job drops back to a smaller batch size, so this can
                # shrink (and go negative), exactly as in the authors' code
                used += (self._previous_remaining[job_id] - remaining[i]) / self._previous_isolated_rate[job_id]
            self._used_isolated_s[job_id] = used
            used_s[i] = used
        status, x = solve_finish_time_fairness(
            throughput, gang, remaining, view.time_s - view.arrival_s[job_ids],
            used_s + remaining / isolated_rate, view.gpus,
        )
        self._statuses[status] = self._statuses.get(status, 0) + 1
        if status != "not_dcp":
            # the authors remember this call's inputs unless the program was rejected
            self._previous_remaining = dict(zip(job_ids.tolist(), remaining.tolist(), strict=True))
            self._previous_isolated_rate = dict(zip(job_ids.tolist(), isolated_rate.tolist(), strict=True))
        if x is None:
            return share
        return np.clip(x, 0.0, 1.0)

    def compute_typed_allocation(self, view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
        gang = view.gang[job_ids].astype(np.float64)
        throughput = np.where(view.runnable[job_ids], view.throughput_by_type[job_ids], 0.0)
        remaining = remaining_iterations(view, job_ids, self.remaining)
        shares = equal_share_fractions(view, job_ids)
        isolated_rate = (shares * throughput).sum(axis=1)
        used_s = np.empty(job_ids.size)
        for i, job_id in enumerate(job_ids.tolist()):
            used = self._used_isolated_s.get(job_id, 0.0)
            if job_id in self._previous_remaining:
                used += (self._previous_remaining[job_id] - remaining[i]) / self._previous_isolated_rate[job_id]
            self._used_isolated_s[job_id] = used
            used_s[i] = used
        status, x = solve_finish_time_fairness_typed(
            throughput, gang, remaining, view.time_s - view.arrival_s[job_ids],
            used_s + remaining / isolated_rate, view.type_gpus,
        )
        self._statuses[status] = self._statuses.get(status, 0) + 1
        if status != "not_dcp":
            self._previous_remaining = dict(zip(job_ids.tolist(), remaining.tolist(), strict=True))
            self._previous_isolated_rate = dict(zip(job_ids.tolist(), isolated_rate.tolist(), strict=True))
        if x is None:
            return shares
        return np.clip(x, 0.0, 1.0)

    def stats(self) -> dict:
        return {**super().stats(), "solver_statuses": dict(getattr(self, "_statuses", {}))}
