"""Work limits of one solve, and sums whose rounding does not depend on the machine.

A solve stops on :class:`WorkLimits`: counts of work (branch-and-bound nodes, simplex and
interior-point iterations) that give the same stopping point on any machine at any load.
``wall_clock_s`` is an opt-in safety net (None by default): a solve that reaches it keeps the
incumbent it holds at that moment, which depends on the machine's speed and load.

:func:`fdot` is the dot product the planner uses where a sum of float products feeds a
decision: ``numpy.dot`` on float vectors goes to the BLAS, whose summation order depends on
its kernel (processor, build, thread count); :func:`math.fsum` rounds the exact sum once, so
the result is the same everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WorkLimits:
    """Limits of one solve; None = no limit of that kind.

    ``mip_nodes``: branch-and-bound nodes of a MIP solve. ``lp_iterations``: simplex
    iterations of an LP solve (crossover's included) and of each LP inside a MIP solve, as the
    solver applies its iteration limit; also the interior-point iterations of an LP solved by
    an interior-point method. ``wall_clock_s``: seconds of wall clock (machine dependent).
    """

    mip_nodes: int | None = None
    lp_iterations: int | None = None
    wall_clock_s: float | None = None

    @property
    def deterministic(self) -> bool:
        """True if no wall-clock limit can stop the solve."""
        return self.wall_clock_s is None


#: No limit at all (tests and references that must reach the optimum).
UNLIMITED = WorkLimits()


def fdot(a, b) -> float:
    """``sum(a * b)`` rounded once from the exact sum: the same value on every machine."""
    return math.fsum(np.multiply(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)).ravel().tolist())


__all__ = ["UNLIMITED", "WorkLimits", "fdot"]
