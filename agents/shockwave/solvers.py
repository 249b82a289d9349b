"""Solver backends for the planning programs, chosen by trying them.

- :class:`HighsBackend` (default): the matrices go to ``highspy`` directly, with a warm start
  (``setSolution``), ``mip_rel_gap = 0``, an absolute gap and a time limit.
- :class:`~.cvxpy_backend.CvxpyBackend`: the same program through cvxpy, for MOSEK or Gurobi
  when a licence really works (``pip install shockwave-gym[mosek]``; the solvers read
  ``MOSEKLM_LICENSE_FILE`` / ``GRB_LICENSE_FILE`` themselves), and cvxpy + HiGHS as an
  independent reference in tests.

Installed is not licensed: :func:`select_backend` solves a tiny MIP with each candidate and
keeps the first that succeeds. Every backend returns a :class:`SolveResult` whose ``status``
is checked by the caller; no backend raises on solver failure.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from functools import cache

import numpy as np

from shockwave_agents.shockwave.program import MipProgram

#: Statuses a backend reports.
OPTIMAL, FEASIBLE, INFEASIBLE, NO_SOLUTION, ERROR = "optimal", "feasible", "infeasible", "no_solution", "error"
#: Primal feasibility tolerance used to check what a solver returns.
CHECK_TOL = 1e-6


@dataclass
class SolveResult:
    """What a solve produced. ``vector`` is set for ``optimal`` and ``feasible`` (time limit
    with an incumbent). ``objective`` and ``bound`` are in the program's unscaled, maximised
    units; ``gap`` = bound - objective (absolute, unscaled)."""

    status: str
    solver: str
    solve_s: float
    vector: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    message: str = ""

    @property
    def has_solution(self) -> bool:
        return self.status in (OPTIMAL, FEASIBLE) and self.vector is not None

    @property
    def gap(self) -> float | None:
        if self.objective is None or self.bound is None:
            return None
        return max(0.0, self.bound - self.objective)


def check_solution(program: MipProgram, vector: np.ndarray, tol: float = CHECK_TOL) -> str | None:
    """None if ``vector`` satisfies the program (bounds, rows, integrality), else why not."""
    if vector is None or vector.shape != (program.num_cols,) or not np.all(np.isfinite(vector)):
        return "solution vector missing or not finite"
    if np.any(vector < program.col_lo - tol) or np.any(vector > program.col_hi + tol):
        return "column bound violated"
    ints = vector[program.integer]
    if np.any(np.abs(ints - np.round(ints)) > 1e-5):
        return "integrality violated"
    activity = program.A @ vector
    scale = 1.0 + np.abs(activity)
    if np.any(activity < program.row_lo - tol * scale) or np.any(activity > program.row_hi + tol * scale):
        return "row bound violated"
    return None


def _rounded(program: MipProgram, vector: np.ndarray) -> np.ndarray:
    out = np.array(vector, dtype=np.float64)
    out[program.integer] = np.round(out[program.integer])
    return out


_BANNER_SHOWN = False


def new_highs():
    """A silent ``highspy.Highs``. HiGHS prints a banner on stdout at the first construction
    in a process; it is sent to stderr instead so ``--json`` output stays one JSON object."""
    global _BANNER_SHOWN
    import highspy

    if _BANNER_SHOWN:
        highs = highspy.Highs()
    else:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            os.dup2(2, 1)
            highs = highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        _BANNER_SHOWN = True
    highs.setOptionValue("output_flag", False)
    return highs


class HighsBackend:
    """HiGHS through highspy, on the program's matrices."""

    name = "highs"

    def __init__(self, threads: int = 1, random_seed: int = 0):
        self.threads = threads
        self.random_seed = random_seed

    def solve(
        self, program: MipProgram, *, time_limit_s: float, warm_start: np.ndarray | None = None
    ) -> SolveResult:
        import highspy

        start = time.perf_counter()
        try:
            highs = new_highs()
            lp = highspy.HighsLp()
            lp.num_col_, lp.num_row_ = program.num_cols, program.num_rows
            lp.col_cost_ = program.c
            lp.col_lower_ = program.col_lo
            lp.col_upper_ = np.where(np.isfinite(program.col_hi), program.col_hi, highspy.kHighsInf)
            lp.row_lower_ = np.where(np.isfinite(program.row_lo), program.row_lo, -highspy.kHighsInf)
            lp.row_upper_ = np.where(np.isfinite(program.row_hi), program.row_hi, highspy.kHighsInf)
            matrix = program.A
            lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
            lp.a_matrix_.start_ = matrix.indptr
            lp.a_matrix_.index_ = matrix.indices
            lp.a_matrix_.value_ = matrix.data
            lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = program.num_cols, program.num_rows
            lp.integrality_ = [
                highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
                for flag in program.integer.tolist()
            ]
            for key, value in (
                ("mip_rel_gap", float(program.rel_gap)), ("mip_abs_gap", float(program.abs_gap)),
                ("time_limit", float(time_limit_s)), ("threads", int(self.threads)),
                ("random_seed", int(self.random_seed)), ("mip_feasibility_tolerance", 1e-7),
            ):
                highs.setOptionValue(key, value)
            status = highs.passModel(lp)
            if status == highspy.HighsStatus.kError:
                return SolveResult(ERROR, self.name, time.perf_counter() - start, message="passModel rejected the model")
            if warm_start is not None:
                solution = highspy.HighsSolution()
                solution.col_value = np.asarray(warm_start, dtype=np.float64).tolist()
                highs.setSolution(solution)
            run_status = highs.run()
            elapsed = time.perf_counter() - start
            model_status = highs.getModelStatus()
            info = highs.getInfo()
            if model_status in (highspy.HighsModelStatus.kInfeasible,):
                return SolveResult(INFEASIBLE, self.name, elapsed, message="infeasible")
            if model_status == highspy.HighsModelStatus.kUnboundedOrInfeasible:
                return SolveResult(INFEASIBLE, self.name, elapsed, message="unbounded or infeasible")
            has_primal = int(info.primal_solution_status) == int(highspy.SolutionStatus.kSolutionStatusFeasible)
            if model_status == highspy.HighsModelStatus.kOptimal and has_primal:
                kind = OPTIMAL
            elif model_status in (
                highspy.HighsModelStatus.kTimeLimit, highspy.HighsModelStatus.kIterationLimit,
                highspy.HighsModelStatus.kInterrupt, highspy.HighsModelStatus.kSolutionLimit,
                highspy.HighsModelStatus.kOptimal,
            ):
                kind = FEASIBLE if has_primal else NO_SOLUTION
            else:
                return SolveResult(ERROR, self.name, elapsed, message=f"HiGHS status {highs.modelStatusToString(model_status)} ({run_status})")
            if kind == NO_SOLUTION:
                return SolveResult(NO_SOLUTION, self.name, elapsed, message="time limit without an incumbent")
            vector = _rounded(program, np.asarray(highs.getSolution().col_value, dtype=np.float64))
            problem = check_solution(program, vector)
            if problem is not None:
                return SolveResult(ERROR, self.name, elapsed, message=f"HiGHS returned an invalid point: {problem}")
            objective = program.unscaled(float(program.c @ vector))
            bound = float(info.mip_dual_bound)
            bound = program.unscaled(bound) if np.isfinite(bound) else None
            if kind == OPTIMAL and bound is None:
                bound = objective
            return SolveResult(kind, self.name, elapsed, vector, objective, bound)
        except Exception as exc:  # a solver failure must never end an episode
            return SolveResult(ERROR, self.name, time.perf_counter() - start, message=f"{type(exc).__name__}: {exc}")


class GreedyOnlyBackend:
    """No solver: every solve reports ``no_solution``, so the planner uses its greedy plan."""

    name = "greedy"

    def solve(self, program: MipProgram, *, time_limit_s: float, warm_start=None) -> SolveResult:
        return SolveResult(NO_SOLUTION, self.name, 0.0, message="greedy-only backend")


def _make(name: str, threads: int):
    if name == "highs":
        return HighsBackend(threads=threads)
    if name == "greedy":
        return GreedyOnlyBackend()
    from shockwave_agents.shockwave.cvxpy_backend import CvxpyBackend

    solver = {"cvxpy-highs": "HIGHS", "mosek": "MOSEK", "gurobi": "GUROBI"}[name]
    return CvxpyBackend(solver, threads=threads)


@cache
def backend_works(name: str) -> bool:
    """True if ``name`` solves a tiny MIP here (installed *and* licensed)."""
    import scipy.sparse as sp

    from shockwave_agents.shockwave.program import MipProgram as Program

    program = Program(
        c=np.array([-1.0, -1.0]), A=sp.csc_matrix(np.array([[1.0, 1.0]])),
        row_lo=np.array([-np.inf]), row_hi=np.array([1.5]), col_lo=np.zeros(2), col_hi=np.ones(2),
        integer=np.array([True, True]),
    )
    try:
        result = _make(name, 1).solve(program, time_limit_s=10.0)
    except Exception:
        return False
    return result.status == OPTIMAL and abs(result.objective - 1.0) < 1e-6


def select_backend(preference: str = "auto", threads: int = 1):
    """(backend, note): the backend named ``preference`` if it solves here, or for ``"auto"``
    the first of MOSEK, Gurobi, HiGHS that does. A named solver that does not work falls back
    to HiGHS, and if nothing works to the greedy-only backend; ``note`` says so."""
    from shockwave_agents.shockwave.config import AUTO_SOLVER_ORDER

    if preference == "greedy":
        return GreedyOnlyBackend(), ""
    names = AUTO_SOLVER_ORDER if preference == "auto" else (preference, "highs")
    skipped = []
    for name in names:
        if name in ("mosek", "gurobi") and not _importable(name):
            skipped.append(f"{name} not installed")
            continue
        if backend_works(name):
            note = "" if name == names[0] or preference == "auto" else f"{preference} unavailable ({'; '.join(skipped) or 'no licence or failed test solve'}); using {name}"
            return _make(name, threads), note
        skipped.append(f"{name} failed a test solve (no licence?)")
    return GreedyOnlyBackend(), "no MIP solver works here; planning greedily"


def _importable(name: str) -> bool:
    import importlib.util

    module = {"mosek": "mosek", "gurobi": "gurobipy"}[name]
    return importlib.util.find_spec(module) is not None
