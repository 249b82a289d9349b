"""A licensed solver with HiGHS behind it, program by program.

:class:`FallbackBackend` hands each program to its licensed solver; when the solver cannot
take that program (no licence, a size limit, a crash: status ``UNLICENSED`` or ``ERROR``),
HiGHS solves the same program with the same limits and warm start, and the result says why
(``fallback_reason``). The first fallback of an episode raises one
:class:`~.licences.SolverFallbackWarning`; the planner counts every one
(``planner_stats.solver_fallbacks``).
"""

from __future__ import annotations

import warnings

import numpy as np

from shockwave_agents.shockwave.highs_backend import HighsBackend
from shockwave_agents.shockwave.licences import SolverFallbackWarning
from shockwave_agents.shockwave.limits import UNLIMITED, WorkLimits
from shockwave_agents.shockwave.mip import MipProgram
from shockwave_agents.shockwave.results import SolveResult, SolveStatus

_FAILED = (SolveStatus.UNLICENSED, SolveStatus.ERROR)


class FallbackBackend:
    """``primary`` for every program it can take, HiGHS for the others."""

    def __init__(self, primary, threads: int = 1):
        self.primary = primary
        self.secondary = HighsBackend(threads=threads)
        self.name = primary.name
        self.fallbacks = 0
        self.first_reason: str | None = None

    def solve(
        self, program: MipProgram, *, limits: WorkLimits = UNLIMITED, warm_start: np.ndarray | None = None
    ) -> SolveResult:
        result = self.primary.solve(program, limits=limits, warm_start=warm_start)
        if result.status not in _FAILED:
            return result
        reason = f"{self.name} could not solve a {program.num_cols}-column, {program.num_rows}-row program ({result.message})"
        self.fallbacks += 1
        if self.first_reason is None:
            self.first_reason = reason
            warnings.warn(f"{reason}; HiGHS solves every program {self.name} cannot take "
                          "(planner_stats.solver_fallbacks counts them)", SolverFallbackWarning, stacklevel=2)
        backup = self.secondary.solve(program, limits=limits, warm_start=warm_start)
        backup.fallback_reason = reason
        backup.solve_s += result.solve_s
        return backup
