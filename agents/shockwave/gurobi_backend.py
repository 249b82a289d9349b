"""Gurobi through ``gurobipy``'s matrix API, on the same matrices HiGHS gets.

One quiet Gurobi environment per process (``OutputFlag=0`` from the start, so neither the
licence line nor the log reaches stdout). Each solve gets the program's gaps, the work limits
(``NodeLimit``, ``IterationLimit``; ``TimeLimit`` only when a wall-clock cap is asked for),
one thread unless configured otherwise, seed 0 and the warm start (``Start``). A program larger than a
size-limited licence allows comes back as :attr:`~.results.SolveStatus.UNLICENSED`, never
as an exception, so the caller can give that program to HiGHS (:mod:`.fallback`).
"""

from __future__ import annotations

import time
from functools import cache

import numpy as np

from shockwave_agents.shockwave.limits import UNLIMITED, WorkLimits, fdot
from shockwave_agents.shockwave.mip import MipProgram
from shockwave_agents.shockwave.quiet import banner_silenced
from shockwave_agents.shockwave.results import SolveResult, SolveStatus, check_solution, rounded

#: Gurobi's error codes ``GRB.Error.NO_LICENSE`` and ``GRB.Error.SIZE_LIMIT_EXCEEDED`` ("Model
#: too large for size-limited license").
NO_LICENCE_ERRNO, SIZE_LIMIT_ERRNO = 10009, 10010
LICENCE_ERRNOS = frozenset({NO_LICENCE_ERRNO, SIZE_LIMIT_ERRNO})


@cache
def quiet_env():
    """The process's Gurobi environment, started with output off; its licence line is
    dropped (:func:`banner_silenced`)."""
    import gurobipy

    with banner_silenced():
        return gurobipy.Env(params={"OutputFlag": 0})


def _add_rows(model, x, program: MipProgram) -> None:
    """``row_lo <= A x <= row_hi`` as equality, <= and >= blocks (infinite sides dropped)."""
    A = program.A.tocsr()
    lo, hi = program.row_lo, program.row_hi
    equal = np.isfinite(lo) & np.isfinite(hi) & (lo == hi)
    upper = np.isfinite(hi) & ~equal
    lower = np.isfinite(lo) & ~equal
    for mask, sense, rhs in ((equal, "=", hi), (upper, "<", hi), (lower, ">", lo)):
        if mask.any():
            model.addMConstr(A[mask], x, sense, rhs[mask])


def _vtypes(program: MipProgram) -> np.ndarray:
    return np.where(program.integer, "I", "C")


def _limit_params(limits: WorkLimits) -> list[tuple[str, float]]:
    """Gurobi parameters of ``limits`` (``IterationLimit`` counts all simplex iterations of
    the solve; ``BarIterLimit`` the barrier's)."""
    params: list[tuple[str, float]] = []
    if limits.mip_nodes is not None:
        params.append(("NodeLimit", float(limits.mip_nodes)))
    if limits.lp_iterations is not None:
        params += [("IterationLimit", float(limits.lp_iterations)), ("BarIterLimit", int(limits.lp_iterations))]
    if limits.wall_clock_s is not None:
        params.append(("TimeLimit", float(limits.wall_clock_s)))
    return params


class GurobiBackend:
    """Gurobi on the program's matrices."""

    name = "gurobi"

    def __init__(self, threads: int = 1):
        self.threads = threads

    def solve(
        self, program: MipProgram, *, limits: WorkLimits = UNLIMITED, warm_start: np.ndarray | None = None
    ) -> SolveResult:
        import gurobipy

        start = time.perf_counter()
        model = None
        try:
            model = gurobipy.Model(env=quiet_env())
            x = model.addMVar(program.num_cols, lb=program.col_lo, ub=np.where(
                np.isfinite(program.col_hi), program.col_hi, gurobipy.GRB.INFINITY), vtype=_vtypes(program))
            _add_rows(model, x, program)
            model.setObjective(program.c @ x, gurobipy.GRB.MINIMIZE)
            for key, value in (("MIPGap", float(program.rel_gap)),
                               ("MIPGapAbs", float(program.abs_gap)), ("Threads", int(self.threads)),
                               ("Seed", 0), ("IntFeasTol", 1e-7), ("OptimalityTol", 1e-9), ("FeasibilityTol", 1e-9),
                               *_limit_params(limits)):
                model.setParam(key, value)
            if warm_start is not None:
                x.Start = np.asarray(warm_start, dtype=np.float64)
            model.optimize()
            return self._result(model, x, program, time.perf_counter() - start)
        except gurobipy.GurobiError as exc:
            kind = SolveStatus.UNLICENSED if exc.errno in LICENCE_ERRNOS else SolveStatus.ERROR
            return SolveResult(kind, self.name, time.perf_counter() - start,
                               message=f"Gurobi error {exc.errno}: {exc}")
        except Exception as exc:  # a solver failure must never end an episode
            return SolveResult(SolveStatus.ERROR, self.name, time.perf_counter() - start,
                               message=f"{type(exc).__name__}: {exc}")
        finally:
            if model is not None:
                model.dispose()

    def _result(self, model, x, program: MipProgram, elapsed: float) -> SolveResult:
        """Map Gurobi's status, check the point, report objective and bound."""
        from gurobipy import GRB

        status = model.Status
        if status in (GRB.INFEASIBLE, GRB.INF_OR_UNBD):
            return SolveResult(SolveStatus.INFEASIBLE, self.name, elapsed, message="infeasible")
        stopped = (GRB.TIME_LIMIT, GRB.ITERATION_LIMIT, GRB.NODE_LIMIT, GRB.SOLUTION_LIMIT, GRB.INTERRUPTED)
        if status == GRB.OPTIMAL and model.SolCount > 0:
            kind = SolveStatus.OPTIMAL
        elif status in stopped:
            kind = SolveStatus.FEASIBLE if model.SolCount > 0 else SolveStatus.NO_SOLUTION
        else:
            return SolveResult(SolveStatus.ERROR, self.name, elapsed, message=f"Gurobi status {status}")
        if kind == SolveStatus.NO_SOLUTION:
            return SolveResult(kind, self.name, elapsed, message="limit reached without an incumbent")
        vector = rounded(program, np.asarray(x.X, dtype=np.float64))
        problem = check_solution(program, vector)
        if problem is not None:
            return SolveResult(SolveStatus.ERROR, self.name, elapsed, message=f"Gurobi returned an invalid point: {problem}")
        objective = program.unscaled(fdot(program.c, vector))
        bound = float(model.ObjBound) if program.integer.any() else float(model.ObjVal)
        bound = program.unscaled(bound) if np.isfinite(bound) else None
        if kind == SolveStatus.OPTIMAL and bound is None:
            bound = objective
        return SolveResult(kind, self.name, elapsed, vector, objective, bound)
