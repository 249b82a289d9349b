"""The matrix form every backend solves: :class:`MipProgram`, and its numeric safety rules.

Objective coefficients are normalised so the largest is 1 (docs/SEMANTICS.md, "The Shockwave planner": ratio^100 priorities
overflow a solver's coefficient range; HiGHS silently drops rows with coefficients >= 1e15),
and a span wider than :data:`DYNAMIC_RANGE` is compressed in log space, keeping their order
(:func:`normalised_coefficients`). :meth:`MipProgram.check_safe` refuses anything else.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from shockwave_gym import portable_math

#: Widest ratio between objective coefficients handed to a solver (see normalised_coefficients).
DYNAMIC_RANGE = 1e6
#: Largest absolute matrix or bound value we hand to a solver; larger means a modelling bug.
SAFE_MAGNITUDE = 1e9


class ProgramError(ValueError):
    """The instance cannot be turned into a numerically safe program."""


class ProgramForm(enum.StrEnum):
    """``SCHEDULE``: binary x[j, t] per job and round. ``COUNTS``: the aggregated relaxation,
    an integer number of rounds per job (and round-0 membership when restart loss is modelled)."""

    SCHEDULE = "schedule"
    COUNTS = "counts"


@dataclass(frozen=True)
class ProgramLayout:
    """Where a planning program's columns are: ``work`` work columns first (x[j, t] in
    row-major order, or counts then round-0 flags), then planned epochs p at ``p``, log
    utilities z at ``z`` and the max-remaining column m at ``m``. ``types`` > 1 for a typed
    program: x[j, k, t] (or counts n[j, k]) in row-major order."""

    form: ProgramForm
    n: int
    rounds: int
    round0: bool
    work: int
    types: int = 1

    @property
    def p(self) -> int:
        return self.work

    @property
    def z(self) -> int:
        return self.work + self.n

    @property
    def m(self) -> int:
        return self.work + 2 * self.n


@dataclass
class MipProgram:
    """``minimise c.v`` s.t. ``row_lo <= A v <= row_hi``, ``col_lo <= v <= col_hi``.

    ``integer`` marks integer columns. ``objective_unit`` converts the scaled minimisation
    value back to the instance's maximised objective: ``objective = -value * objective_unit``.
    ``abs_gap`` is the absolute gap in scaled units; ``rel_gap`` a relative gap (0 for the
    planning programs, whose objective is dominated by k * R). ``layout`` is set for planning
    programs (None for the re-ranking program). ``interior``: a hint for programs without
    integer columns that an interior-point method suits them (HiGHS then uses its IPM, with
    crossover to a vertex; other backends ignore it).
    """

    c: np.ndarray
    A: sp.csc_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integer: np.ndarray
    objective_unit: float = 1.0
    abs_gap: float = 1e-6
    rel_gap: float = 0.0
    layout: ProgramLayout | None = None
    interior: bool = False

    @property
    def num_cols(self) -> int:
        return int(self.c.size)

    @property
    def num_rows(self) -> int:
        return int(self.row_lo.size)

    def unscaled(self, value: float) -> float:
        return -value * self.objective_unit

    def check_safe(self) -> None:
        """Raise :class:`ProgramError` unless every number is finite and in the safe range."""
        for name, values in (("objective", self.c), ("matrix", self.A.data)):
            if not np.all(np.isfinite(values)) or np.any(np.abs(values) >= SAFE_MAGNITUDE):
                raise ProgramError(f"{name} coefficients outside the solver's safe range")
        for name, values in (("row bounds", np.concatenate([self.row_lo, self.row_hi])),
                             ("column bounds", np.concatenate([self.col_lo, self.col_hi]))):
            finite = values[np.isfinite(values)]
            if np.any(np.isnan(values)) or np.any(np.abs(finite) >= SAFE_MAGNITUDE):
                raise ProgramError(f"{name} outside the solver's safe range")


def normalised_coefficients(log_coefs: np.ndarray, dynamic_range: float = DYNAMIC_RANGE) -> tuple[np.ndarray, float]:
    """Positive coefficients given by their logs, divided by the largest (so the top is 1),
    and the divisor's log.

    If they span more than ``dynamic_range`` (ratio^100 priorities span 1e30 and more), the
    logs below the top are compressed affinely into that range: the order is kept and the
    heaviest terms still dominate, but no coefficient falls below what a solver resolves.
    ``-inf`` logs give 0.
    """
    logs = np.asarray(log_coefs, dtype=np.float64)
    finite = np.isfinite(logs)
    top = float(np.max(logs[finite]))
    shifted = np.where(finite, logs - top, -np.inf)
    low = float(np.min(shifted[finite]))
    limit = math.log(dynamic_range)
    if low < -limit:
        shifted = np.where(finite, shifted * (limit / -low), -np.inf)
    return portable_math.exp(shifted), top
