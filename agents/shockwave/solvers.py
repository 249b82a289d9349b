"""Solver backends by name, and the choice of one for an episode.

- ``highs`` (:class:`~.highs_backend.HighsBackend`, the default in practice): HiGHS on the
  program's matrices.
- ``gurobi`` (:class:`~.gurobi_backend.GurobiBackend`) and ``mosek`` (through cvxpy,
  :class:`~.cvxpy_backend.CvxpyBackend`): used only behind :class:`~.fallback.FallbackBackend`,
  so a program the licence cannot take is solved by HiGHS.
- ``cvxpy-highs``: HiGHS through cvxpy, an independent reference for the tests.
- ``greedy``: no solver; the planner uses its greedy plan.

:func:`select_backend` checks licences (:mod:`.licences`) and solves a tiny MIP before it
trusts a solver. ``solver="auto"`` takes MOSEK or Gurobi only with a licence that can take
any program, so a size-limited or missing licence never changes the plans: the figures are
then HiGHS's. Why a licensed solver was passed over goes to ``planner_stats.solver_note``
and to this module's logger at debug level: under ``"auto"`` HiGHS is the expected outcome,
not news. A :class:`~.licences.SolverFallbackWarning` is raised only when the user named the
solver that cannot be used (``solver="mosek"`` or ``"gurobi"``), or when no MIP solver works.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache

import numpy as np
import scipy.sparse as sp

from shockwave_agents.shockwave.fallback import FallbackBackend
from shockwave_agents.shockwave.highs_backend import HighsBackend, new_highs
from shockwave_agents.shockwave.licences import LicenceState, check_licence
from shockwave_agents.shockwave.limits import UNLIMITED, WorkLimits
from shockwave_agents.shockwave.mip import MipProgram
from shockwave_agents.shockwave.results import SolveResult, SolveStatus, check_solution

__all__ = [
    "ERROR", "FEASIBLE", "INFEASIBLE", "NO_SOLUTION", "OPTIMAL", "UNLICENSED", "BackendChoice",
    "GreedyOnlyBackend", "HighsBackend", "SolveResult", "SolveStatus", "backend_works",
    "check_solution", "make_backend", "new_highs", "select_backend",
]

OPTIMAL, FEASIBLE, INFEASIBLE = SolveStatus.OPTIMAL, SolveStatus.FEASIBLE, SolveStatus.INFEASIBLE
NO_SOLUTION, ERROR, UNLICENSED = SolveStatus.NO_SOLUTION, SolveStatus.ERROR, SolveStatus.UNLICENSED
LICENSED = ("mosek", "gurobi")
logger = logging.getLogger(__name__)


class GreedyOnlyBackend:
    """No solver: every solve reports ``no_solution``, so the planner uses its greedy plan."""

    name = "greedy"

    def solve(self, program: MipProgram, *, limits: WorkLimits = UNLIMITED, warm_start=None) -> SolveResult:
        return SolveResult(NO_SOLUTION, self.name, 0.0, message="greedy-only backend")


def make_backend(name: str, threads: int = 1):
    """The bare backend called ``name`` (no licence check, no fallback)."""
    if name == "highs":
        return HighsBackend(threads=threads)
    if name == "greedy":
        return GreedyOnlyBackend()
    if name == "gurobi":
        from shockwave_agents.shockwave.gurobi_backend import GurobiBackend

        return GurobiBackend(threads=threads)
    from shockwave_agents.shockwave.cvxpy_backend import CvxpyBackend

    return CvxpyBackend({"cvxpy-highs": "HIGHS", "mosek": "MOSEK"}[name], threads=threads)


@cache
def backend_works(name: str) -> bool:
    """True if ``name`` solves a tiny MIP here."""
    program = MipProgram(
        c=np.array([-1.0, -1.0]), A=sp.csc_matrix(np.array([[1.0, 1.0]])),
        row_lo=np.array([-np.inf]), row_hi=np.array([1.5]), col_lo=np.zeros(2), col_hi=np.ones(2),
        integer=np.array([True, True]),
    )
    try:
        result = make_backend(name, 1).solve(program, limits=WorkLimits(mip_nodes=100, lp_iterations=1000))
    except Exception:
        return False
    return result.status == OPTIMAL and abs(result.objective - 1.0) < 1e-6


@dataclass
class BackendChoice:
    """The backend for an episode; ``note`` goes to ``planner_stats.solver_note`` and
    ``warning``, when set, is raised once as a :class:`~.licences.SolverFallbackWarning`."""

    backend: object
    note: str = ""
    warning: str | None = None


def _licensed_skip(name: str, preference: str) -> tuple[str | None, str | None]:
    """(reason to skip ``name``, or None to use it; whether the reason deserves a warning)."""
    check = check_licence(name)
    if check.state is LicenceState.NOT_INSTALLED:
        return check.explain(), None
    if check.state is LicenceState.MISSING:
        return check.explain(), check.explain()
    if check.state is LicenceState.SIZE_LIMITED and preference != name:
        why = f"{check.explain()} (solver=gurobi uses it for the programs it can take)"
        return why, why
    if not backend_works(name):
        return f"{name} failed a test solve", f"{name} failed a test solve"
    return None, None


def select_backend(preference: str = "auto", threads: int = 1) -> BackendChoice:
    """The backend named ``preference`` if it works here, or for ``"auto"`` the first of
    MOSEK, Gurobi and HiGHS that does (licensed ones only with a licence that takes any
    program). A named solver that does not work falls back to HiGHS, and if nothing works to
    the greedy-only backend; the choice's note and warning say so."""
    from shockwave_agents.shockwave.config import AUTO_SOLVER_ORDER

    if preference == "greedy":
        return BackendChoice(GreedyOnlyBackend())
    names = AUTO_SOLVER_ORDER if preference == "auto" else (preference, "highs")
    skipped, warned = [], []
    for name in names:
        if name in LICENSED:
            reason, warning = _licensed_skip(name, preference)
        else:
            reason = warning = None if backend_works(name) else f"{name} failed a test solve"
        if reason is None:
            return _chosen(name, threads, preference, skipped, warned)
        skipped.append(reason)
        warned += [warning] if warning else []
    text = f"no MIP solver works here ({'; '.join(skipped)}); planning greedily"
    return BackendChoice(GreedyOnlyBackend(), text, text)


def _chosen(name: str, threads: int, preference: str, skipped: list[str], warned: list[str]) -> BackendChoice:
    backend = make_backend(name, threads)
    note = ""
    if name in LICENSED:
        check = check_licence(name)
        backend = FallbackBackend(backend, threads)
        if check.state is LicenceState.SIZE_LIMITED:
            note = f"{check.explain()}; each program above the limit is solved by HiGHS"
    elif skipped and (preference != "auto" or warned):
        note = f"solver={preference}: {'; '.join(skipped)}; using {name}"
    if note:
        logger.debug("%s", note)
    # under "auto" a licensed solver passed over is the expected path: debug level only
    return BackendChoice(backend, note, note if warned and preference != "auto" else None)
