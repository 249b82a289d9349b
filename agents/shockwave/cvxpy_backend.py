"""cvxpy formulations: the MOSEK backend, and an independent reference for the tests.

:class:`CvxpyBackend` solves any :class:`~.mip.MipProgram` (the same matrices the HiGHS path
uses) through cvxpy with the named solver: MOSEK (when licensed) and HiGHS (the reference).
:func:`solve_instance_reference` writes the planning program afresh from its definition
(cvxpy's ``max`` and ``pos`` atoms, the log pieces as cvxpy constraints), without our matrix
builder, so tests can check that both reach the same optimum. cvxpy is imported lazily.
"""

from __future__ import annotations

import math
import time

import numpy as np

from shockwave_agents.shockwave.highs_backend import new_highs
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.limits import UNLIMITED, WorkLimits, fdot
from shockwave_agents.shockwave.mip import MipProgram
from shockwave_agents.shockwave.quiet import stdout_to_stderr
from shockwave_agents.shockwave.results import SolveResult, SolveStatus, check_solution, rounded
from shockwave_gym import portable_math


def _solver_options(solver: str, limits: WorkLimits, abs_gap: float, threads: int, rel_gap: float = 0.0) -> dict:
    """The named solver's options: gaps, threads and the work limits (a wall-clock limit only
    when ``limits`` has one)."""
    nodes, iterations, wall_s = limits.mip_nodes, limits.lp_iterations, limits.wall_clock_s
    if solver == "HIGHS":
        options = {"mip_rel_gap": float(rel_gap), "mip_abs_gap": float(abs_gap), "threads": int(threads)}
        extra = {"mip_max_nodes": nodes, "simplex_iteration_limit": iterations,
                 "ipm_iteration_limit": iterations, "time_limit": wall_s}
    elif solver == "MOSEK":
        options = {"MSK_DPAR_MIO_TOL_ABS_GAP": float(abs_gap), "MSK_DPAR_MIO_TOL_REL_GAP": float(rel_gap),
                   "MSK_IPAR_NUM_THREADS": int(threads)}
        extra = {"MSK_IPAR_MIO_MAX_NUM_BRANCHES": nodes, "MSK_IPAR_SIM_MAX_ITERATIONS": iterations,
                 "MSK_IPAR_INTPNT_MAX_ITERATIONS": iterations, "MSK_DPAR_OPTIMIZER_MAX_TIME": wall_s,
                 "MSK_DPAR_MIO_MAX_TIME": wall_s}
    elif solver == "GUROBI":
        options = {"MIPGap": float(rel_gap), "MIPGapAbs": float(abs_gap), "Threads": int(threads), "OutputFlag": 0}
        extra = {"NodeLimit": nodes, "IterationLimit": iterations, "BarIterLimit": iterations, "TimeLimit": wall_s}
    else:
        return {}
    options.update({key: value for key, value in extra.items() if value is not None})
    return {"mosek_params": options} if solver == "MOSEK" else options


def _status(problem, has_values: bool) -> SolveStatus:
    import cvxpy as cp

    if problem.status == cp.OPTIMAL and has_values:
        return SolveStatus.OPTIMAL
    if problem.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        return SolveStatus.INFEASIBLE
    if problem.status in (cp.OPTIMAL_INACCURATE, cp.USER_LIMIT) and has_values:
        return SolveStatus.FEASIBLE
    if problem.status in (cp.USER_LIMIT,):
        return SolveStatus.NO_SOLUTION
    return SolveStatus.ERROR


def _cvxpy_problem(program: MipProgram):
    """(problem, integer variable, continuous variable) of ``program`` in cvxpy."""
    import cvxpy as cp

    ints = program.integer
    x_int = cp.Variable(int(ints.sum()), integer=True)
    x_cont = cp.Variable(int((~ints).sum()))
    expr = program.A[:, ints] @ x_int + program.A[:, ~ints] @ x_cont
    constraints = []
    hi, lo = np.isfinite(program.row_hi), np.isfinite(program.row_lo)
    if hi.any():
        constraints.append(expr[np.flatnonzero(hi)] <= program.row_hi[hi])
    if lo.any():
        constraints.append(expr[np.flatnonzero(lo)] >= program.row_lo[lo])
    for var, mask in ((x_int, ints), (x_cont, ~ints)):
        low, up = program.col_lo[mask], program.col_hi[mask]
        if np.isfinite(low).any():
            constraints.append(var[np.flatnonzero(np.isfinite(low))] >= low[np.isfinite(low)])
        if np.isfinite(up).any():
            constraints.append(var[np.flatnonzero(np.isfinite(up))] <= up[np.isfinite(up)])
    objective = cp.Minimize(program.c[ints] @ x_int + program.c[~ints] @ x_cont)
    return cp.Problem(objective, constraints), x_int, x_cont


class CvxpyBackend:
    """A :class:`~.mip.MipProgram` solved through cvxpy with ``solver``."""

    def __init__(self, solver: str, threads: int = 1):
        self.solver = solver
        self.threads = threads
        self.name = f"cvxpy-{solver.lower()}" if solver == "HIGHS" else solver.lower()

    def solve(
        self, program: MipProgram, *, limits: WorkLimits = UNLIMITED, warm_start: np.ndarray | None = None
    ) -> SolveResult:
        start = time.perf_counter()
        try:
            if self.solver == "HIGHS":
                new_highs()  # absorbs HiGHS' one-time stdout banner
            problem, x_int, x_cont = _cvxpy_problem(program)
            if warm_start is not None:
                x_int.value = np.asarray(warm_start)[program.integer]
                x_cont.value = np.asarray(warm_start)[~program.integer]
            with stdout_to_stderr():
                problem.solve(
                    solver=self.solver, warm_start=warm_start is not None, verbose=False,
                    **_solver_options(self.solver, limits, program.abs_gap, self.threads, program.rel_gap),
                )
            return self._result(problem, x_int, x_cont, program, time.perf_counter() - start)
        except Exception as exc:  # includes missing licences and solver crashes
            return SolveResult(SolveStatus.ERROR, self.name, time.perf_counter() - start,
                               message=f"{type(exc).__name__}: {exc}")

    def _result(self, problem, x_int, x_cont, program: MipProgram, elapsed: float) -> SolveResult:
        has_values = x_int.value is not None and x_cont.value is not None
        status = _status(problem, has_values)
        if status not in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE):
            return SolveResult(status, self.name, elapsed, message=f"cvxpy status {problem.status}")
        vector = np.zeros(program.num_cols)
        vector[program.integer], vector[~program.integer] = x_int.value, x_cont.value
        vector = rounded(program, vector)
        issue = check_solution(program, vector, tol=1e-5)
        if issue is not None:
            return SolveResult(SolveStatus.ERROR, self.name, elapsed, message=f"{self.solver} returned an invalid point: {issue}")
        value = program.unscaled(fdot(program.c, vector))
        return SolveResult(status, self.name, elapsed, vector, value, value if status == SolveStatus.OPTIMAL else None)


def solve_instance_reference(instance: PlanningInstance, solver: str = "HIGHS", limits: WorkLimits = UNLIMITED):
    """Solve ``instance`` from its definition with cvxpy; returns (status, objective, x).

    The objective is the unscaled maximised one of :func:`~.objective.evaluate_plan`.
    """
    import cvxpy as cp

    if solver == "HIGHS":
        new_highs()
    n, horizon = instance.num_jobs, instance.rounds
    x = cp.Variable((n, horizon), boolean=True)
    planned = cp.Variable(n)
    log_utility = cp.Variable(n)
    slopes, intercepts = instance.segments()
    utility = cp.multiply(instance.epochs_done + planned, 1.0 / instance.epochs_total)
    run_s = instance.round_s * cp.sum(x, axis=1) - cp.multiply(instance.loss_s, x[:, 0])
    constraints = [
        x.T @ instance.gang.astype(float) <= instance.gpus,
        planned >= instance.lower_epochs,
        planned <= instance.max_epochs,
        cp.multiply(instance.mean_epoch_s, planned) <= run_s,
    ]
    constraints += [log_utility <= a * utility + c for a, c in zip(slopes, intercepts, strict=True)]
    constraints += [log_utility >= math.log(instance.log_zero_floor)]
    max_remaining = cp.max(cp.pos(instance.remaining_s - cp.multiply(instance.mean_epoch_s, planned)))
    weights = portable_math.exp(instance.weights_log)
    objective = cp.Maximize(
        instance.nsw_coef * (weights @ log_utility) - instance.makespan_coef_per_s * max_remaining
    )
    problem = cp.Problem(objective, constraints)
    with stdout_to_stderr():
        problem.solve(solver=solver, **_solver_options(solver, limits, 1e-9, 1))
    if problem.status != cp.OPTIMAL:
        return problem.status, None, None
    return problem.status, float(problem.value), np.round(x.value).astype(bool)
