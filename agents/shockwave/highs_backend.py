"""HiGHS through ``highspy``, on the program's matrices: the default backend.

The matrices go to HiGHS directly, with a warm start (``setSolution``), ``mip_rel_gap`` and
``mip_abs_gap`` from the program, work limits (:class:`~.limits.WorkLimits`: ``mip_max_nodes``,
``simplex_iteration_limit``, ``ipm_iteration_limit``; ``time_limit`` only when a wall-clock
cap is asked for), one thread and a fixed random seed, so a solve stops at the same point on
every machine at any load. A continuous program marked ``interior`` is solved by HiGHS's
interior-point method (with crossover).
"""

from __future__ import annotations

import time

import numpy as np

from shockwave_agents.shockwave.limits import UNLIMITED, WorkLimits, fdot
from shockwave_agents.shockwave.mip import MipProgram
from shockwave_agents.shockwave.quiet import banner_silenced
from shockwave_agents.shockwave.results import SolveResult, SolveStatus, check_solution, rounded

_BANNER_SHOWN = False


def new_highs():
    """A silent ``highspy.Highs``. HiGHS prints a banner on stdout at the first construction
    in a process; it is dropped, so ``--json`` output stays one JSON object and neither
    progress lines nor notebook cells show it."""
    global _BANNER_SHOWN
    import highspy

    if _BANNER_SHOWN:
        highs = highspy.Highs()
    else:
        with banner_silenced():
            highs = highspy.Highs()
        _BANNER_SHOWN = True
    highs.setOptionValue("output_flag", False)
    return highs


def _highs_lp(program: MipProgram):
    """The program as a ``highspy.HighsLp`` (column-wise matrix, infinities as HiGHS's)."""
    import highspy

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
    return lp


def _limit_options(limits: WorkLimits) -> list[tuple[str, object]]:
    """HiGHS options of ``limits`` (absent kinds keep HiGHS's defaults: no limit)."""
    options: list[tuple[str, object]] = []
    if limits.mip_nodes is not None:
        options.append(("mip_max_nodes", int(limits.mip_nodes)))
    if limits.lp_iterations is not None:
        options += [("simplex_iteration_limit", int(limits.lp_iterations)),
                    ("ipm_iteration_limit", int(limits.lp_iterations))]
    if limits.wall_clock_s is not None:
        options.append(("time_limit", float(limits.wall_clock_s)))
    return options


class HighsBackend:
    """HiGHS through highspy, on the program's matrices."""

    name = "highs"

    def __init__(self, threads: int = 1, random_seed: int = 0):
        self.threads = threads
        self.random_seed = random_seed

    def solve(
        self, program: MipProgram, *, limits: WorkLimits = UNLIMITED, warm_start: np.ndarray | None = None
    ) -> SolveResult:
        import highspy

        start = time.perf_counter()
        try:
            highs = new_highs()
            for key, value in (
                ("mip_rel_gap", float(program.rel_gap)), ("mip_abs_gap", float(program.abs_gap)),
                ("threads", int(self.threads)),
                ("random_seed", int(self.random_seed)), ("mip_feasibility_tolerance", 1e-7),
                *_limit_options(limits),
            ):
                highs.setOptionValue(key, value)
            if program.interior and not program.integer.any():
                highs.setOptionValue("solver", "ipm")
            if highs.passModel(_highs_lp(program)) == highspy.HighsStatus.kError:
                return SolveResult(SolveStatus.ERROR, self.name, time.perf_counter() - start,
                                   message="passModel rejected the model")
            if warm_start is not None:
                solution = highspy.HighsSolution()
                solution.col_value = np.asarray(warm_start, dtype=np.float64).tolist()
                highs.setSolution(solution)
            run_status = highs.run()
            return self._result(highs, program, run_status, time.perf_counter() - start)
        except Exception as exc:  # a solver failure must never end an episode
            return SolveResult(SolveStatus.ERROR, self.name, time.perf_counter() - start,
                               message=f"{type(exc).__name__}: {exc}")

    def _result(self, highs, program: MipProgram, run_status, elapsed: float) -> SolveResult:
        """Read the model status, check the point, report objective and dual bound."""
        import highspy

        status = highspy.HighsModelStatus
        model_status = highs.getModelStatus()
        info = highs.getInfo()
        if model_status == status.kInfeasible:
            return SolveResult(SolveStatus.INFEASIBLE, self.name, elapsed, message="infeasible")
        if model_status == status.kUnboundedOrInfeasible:
            return SolveResult(SolveStatus.INFEASIBLE, self.name, elapsed, message="unbounded or infeasible")
        has_primal = int(info.primal_solution_status) == int(highspy.SolutionStatus.kSolutionStatusFeasible)
        stopped = (status.kTimeLimit, status.kIterationLimit, status.kInterrupt, status.kSolutionLimit, status.kOptimal)
        if model_status == status.kOptimal and has_primal:
            kind = SolveStatus.OPTIMAL
        elif model_status in stopped:
            kind = SolveStatus.FEASIBLE if has_primal else SolveStatus.NO_SOLUTION
        else:
            return SolveResult(SolveStatus.ERROR, self.name, elapsed,
                               message=f"HiGHS status {highs.modelStatusToString(model_status)} ({run_status})")
        if kind == SolveStatus.NO_SOLUTION:
            return SolveResult(kind, self.name, elapsed, message="limit reached without an incumbent")
        vector = rounded(program, np.asarray(highs.getSolution().col_value, dtype=np.float64))
        problem = check_solution(program, vector)
        if problem is not None:
            return SolveResult(SolveStatus.ERROR, self.name, elapsed, message=f"HiGHS returned an invalid point: {problem}")
        objective = program.unscaled(fdot(program.c, vector))
        bound = float(info.mip_dual_bound)
        bound = program.unscaled(bound) if np.isfinite(bound) else None
        if kind == SolveStatus.OPTIMAL and bound is None:
            bound = objective
        return SolveResult(kind, self.name, elapsed, vector, objective, bound)
