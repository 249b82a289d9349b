"""Is a licensed solver usable here, and for which programs? Checked once per process.

Installed is not licensed. ``pip install Mosek`` gives a MOSEK that imports and then fails
for want of a licence file; ``pip install gurobipy`` ships a size-limited licence that solves
programs up to 2,000 variables and 2,000 constraints and refuses larger ones. Shockwave's
programs outgrow that limit on the canonical trace (the re-ranking program of a 109-job
re-plan has over 2,000 binaries), so a size-limited licence is reported as such, never as
"works".
"""

from __future__ import annotations

import enum
import importlib.util
from dataclasses import dataclass
from functools import cache

from shockwave_agents.shockwave.quiet import stdout_to_stderr

#: How a user supplies each solver's licence (the solvers read these locations themselves).
HOW_TO_LICENSE = {
    "mosek": "put the licence file at ~/mosek/mosek.lic or set MOSEKLM_LICENSE_FILE to its path",
    "gurobi": "install a full licence with grbgetkey or set GRB_LICENSE_FILE to the path of gurobi.lic",
}
_MODULES = {"mosek": "mosek", "gurobi": "gurobipy"}
#: Columns of the probe that tells a size-limited Gurobi licence (limit: 2,000) from a full one.
GUROBI_PROBE_COLUMNS = 2001


class SolverFallbackWarning(UserWarning):
    """A licensed solver could not be used (no licence, a size-limited one, or a failure) and
    HiGHS planned instead."""


class LicenceState(enum.StrEnum):
    USABLE = "usable"
    SIZE_LIMITED = "size_limited"
    MISSING = "missing"
    NOT_INSTALLED = "not_installed"


@dataclass(frozen=True)
class LicenceCheck:
    """What a licence check found; ``detail`` is the solver's own words."""

    solver: str
    state: LicenceState
    detail: str = ""

    def explain(self) -> str:
        """One sentence for a warning or a note: what is wrong and how to fix it."""
        if self.state is LicenceState.MISSING:
            return f"{self.solver} is installed but has no usable licence ({self.detail}): {HOW_TO_LICENSE[self.solver]}"
        if self.state is LicenceState.SIZE_LIMITED:
            return (f"{self.solver}'s licence is size-limited ({self.detail}), too small for Shockwave's "
                    f"larger programs: {HOW_TO_LICENSE[self.solver]}")
        if self.state is LicenceState.NOT_INSTALLED:
            return f"{self.solver} is not installed"
        return f"{self.solver} is licensed"


@cache
def check_licence(solver: str) -> LicenceCheck:
    """The licence state of ``solver`` ("mosek" or "gurobi") in this process."""
    if importlib.util.find_spec(_MODULES[solver]) is None:
        return LicenceCheck(solver, LicenceState.NOT_INSTALLED)
    with stdout_to_stderr():
        return _check_mosek() if solver == "mosek" else _check_gurobi()


def _check_mosek() -> LicenceCheck:
    import mosek

    try:
        with mosek.Env() as env:
            env.checkoutlicense(mosek.feature.pts)
            env.checkinlicense(mosek.feature.pts)
    except mosek.Error as exc:
        code = str(exc.errno).removeprefix("rescode.")
        words = f"MOSEK {code}: {exc.msg}" if getattr(exc, "msg", "") else f"MOSEK {code}"
        return LicenceCheck("mosek", LicenceState.MISSING, words)
    return LicenceCheck("mosek", LicenceState.USABLE)


def _check_gurobi() -> LicenceCheck:
    import gurobipy

    from shockwave_agents.shockwave.gurobi_backend import SIZE_LIMIT_ERRNO, quiet_env

    try:
        model = gurobipy.Model(env=quiet_env())
    except gurobipy.GurobiError as exc:
        return LicenceCheck("gurobi", LicenceState.MISSING, f"Gurobi error {exc.errno}: {exc}")
    try:
        x = model.addMVar(GUROBI_PROBE_COLUMNS, lb=0.0, ub=1.0)
        model.setObjective(x.sum(), gurobipy.GRB.MAXIMIZE)
        model.optimize()
    except gurobipy.GurobiError as exc:
        state = LicenceState.SIZE_LIMITED if exc.errno == SIZE_LIMIT_ERRNO else LicenceState.MISSING
        words = str(exc).split(";")[0]  # drops the advertising link
        return LicenceCheck("gurobi", state, f"Gurobi error {exc.errno}: {words}")
    finally:
        model.dispose()
    return LicenceCheck("gurobi", LicenceState.USABLE)
