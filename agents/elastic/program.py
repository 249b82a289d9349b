"""The integer programs of the elastic baselines over configurations, solved with HiGHS.

One binary column ``x_i,k`` per (job ``i`` of an :class:`~.configs.Options`, allowed
configuration ``k``), in that order, optionally followed by one continuous column ``z``.
Rows: at most (or, for the jobs marked ``assigned``, exactly) one configuration per job, and
per type ``sum count * x <= G_t``. Solved by HiGHS through the planner's backend
(:class:`~shockwave_agents.shockwave.highs_backend.HighsBackend`: no gap, one thread, fixed
seed).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from shockwave_agents.elastic.configs import Options, allocation
from shockwave_agents.shockwave.highs_backend import HighsBackend
from shockwave_agents.shockwave.mip import MipProgram
from shockwave_gym.placement import Allocation

_BACKEND = HighsBackend()


def configuration_program(opts: Options, cost: np.ndarray, *, assigned: np.ndarray | None = None,
                          level: np.ndarray | None = None, level_bounds=(0.0, np.inf)) -> MipProgram:
    """``minimise cost . v`` over ``v = (x, [z])``. ``assigned`` (bool per job): those jobs
    get exactly one configuration. ``level`` (one value per ``x`` column): adds ``z`` and
    rows ``z - sum_k level x_i,k <= 0`` per job, ``z`` within ``level_bounds``."""
    sizes = [c.size for c in opts.counts]
    width = int(sum(sizes))
    num_jobs, num_types = len(sizes), opts.capacity.size
    rows, cols, vals = [], [], []
    col = 0
    for i, size in enumerate(sizes):
        for k in range(size):
            rows += [i, num_jobs + int(opts.types[i][k])]
            cols += [col, col]
            vals += [1.0, float(opts.counts[i][k])]
            col += 1
    lo = np.full(num_jobs + num_types, -np.inf)
    hi = np.concatenate([np.ones(num_jobs), opts.capacity.astype(np.float64)])
    if assigned is not None:
        lo[:num_jobs] = np.where(assigned, 1.0, -np.inf)
    n = width
    if level is not None:
        n += 1
        start = num_jobs + num_types
        for i, size in enumerate(sizes):
            first = int(sum(sizes[:i]))
            rows += [start + i] * (size + 1)
            cols += [*range(first, first + size), width]
            vals += [*(-level[first:first + size]).tolist(), 1.0]
        lo = np.concatenate([lo, np.full(num_jobs, -np.inf)])
        hi = np.concatenate([hi, np.zeros(num_jobs)])
    matrix = sp.csc_matrix((vals, (rows, cols)), shape=(lo.size, n))
    col_lo = np.zeros(n)
    col_hi = np.ones(n)
    integer = np.ones(n, dtype=bool)
    if level is not None:
        col_lo[-1], col_hi[-1], integer[-1] = level_bounds[0], level_bounds[1], False
    return MipProgram(c=np.asarray(cost, dtype=np.float64), A=matrix, row_lo=lo, row_hi=hi,
                      col_lo=col_lo, col_hi=col_hi, integer=integer, abs_gap=0.0)


def solve(program: MipProgram, who: str) -> np.ndarray:
    """The optimal vector of ``program`` (HiGHS); RuntimeError naming ``who`` if none."""
    result = _BACKEND.solve(program)
    if not result.has_solution:
        raise RuntimeError(f"{who}: HiGHS found no allocation ({result.message})")
    return result.vector


def chosen_allocation(opts: Options, vector: np.ndarray) -> Allocation:
    """The allocation the binary part of ``vector`` selects."""
    sizes = [c.size for c in opts.counts]
    starts = np.cumsum([0, *sizes])
    jobs, types, counts = [], [], []
    for col in np.flatnonzero(np.round(vector[:starts[-1]]) > 0.5).tolist():
        i = int(np.searchsorted(starts, col, side="right") - 1)
        k = col - int(starts[i])
        jobs.append(int(opts.jobs[i]))
        types.append(int(opts.types[i][k]))
        counts.append(int(opts.counts[i][k]))
    return allocation(jobs, types, counts)
