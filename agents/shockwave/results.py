"""What a solve returns: a typed status, the point, and the check every point goes through.

No backend raises on solver failure: each returns a :class:`SolveResult` whose ``status`` the
caller checks, and every point is checked against the program's rows and bounds
(:func:`check_solution`) before it is used.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from shockwave_agents.shockwave.mip import MipProgram

#: Primal feasibility tolerance used to check what a solver returns.
CHECK_TOL = 1e-6


class SolveStatus(enum.StrEnum):
    """How one solve ended. ``FEASIBLE`` is a solver's word: it stopped (a work limit, or the
    opt-in wall-clock cap) holding a feasible incumbent that is not proven optimal. It says nothing about the planner's path.
    ``UNLICENSED``: the solver refused the program for want of a licence that covers it (none,
    or a size-limited one and a program above the limit)."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    NO_SOLUTION = "no_solution"
    ERROR = "error"
    UNLICENSED = "unlicensed"


@dataclass
class SolveResult:
    """What a solve produced. ``vector`` is set for ``OPTIMAL`` and ``FEASIBLE``. ``objective``
    and ``bound`` are in the program's unscaled, maximised units; ``gap`` = bound - objective
    (absolute, unscaled). ``solver`` names the backend that produced the point; when a
    licensed solver could not take the program and HiGHS solved it instead,
    ``fallback_reason`` says why."""

    status: SolveStatus
    solver: str
    solve_s: float
    vector: np.ndarray | None = None
    objective: float | None = None
    bound: float | None = None
    message: str = ""
    fallback_reason: str | None = None

    def __post_init__(self) -> None:
        self.status = SolveStatus(self.status)

    @property
    def has_solution(self) -> bool:
        return self.status in (SolveStatus.OPTIMAL, SolveStatus.FEASIBLE) and self.vector is not None

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


def rounded(program: MipProgram, vector: np.ndarray) -> np.ndarray:
    """``vector`` with its integer columns rounded to the nearest integer."""
    out = np.array(vector, dtype=np.float64)
    out[program.integer] = np.round(out[program.integer])
    return out
