"""Sia-style allocator: an integer program over configurations (count, and type where the
cluster has several), solved with HiGHS.

Rule, every round: choose for each active job at most one allowed configuration ``(t, c)``
(binary ``x_jtc``) to maximise ``sum x_jtc * u_jtc`` subject to ``sum_tc x_jtc <= 1`` per job
and ``sum_jc c * x_jtc <= G_t`` per type, with ``u_jtc = s_jtc ** p * (1 - restart)`` when job
``j`` ran last round in another configuration (else without the factor): ``s_jtc`` the
job's speedup there (:mod:`.configs`), ``p`` in (0, 1] the knob that spreads GPUs over jobs
(a smaller ``p`` values a job's first GPUs more than its extra ones), ``restart`` the
penalty of a re-allocation. Every allocated job adds ``u > 0``, so the program runs as many
jobs as it can before it grows any. Solved exactly with HiGHS (``highspy``, as the planner's
backend: :class:`~shockwave_agents.shockwave.highs_backend.HighsBackend`, no gap, one
thread, fixed seed); ties between optima go to HiGHS's vertex.

Source: Sia (Jayaram Subramanya et al., SOSP '23) solves, every round, an integer program
that picks one (GPU type, count) configuration per job to maximise the sum of the jobs'
normalised goodputs raised to a power, with a restart factor for re-allocations.
Simplified here: throughput from the table instead of learned goodput models (no
statistical efficiency, no batch-size choice), normalised by the job's rate at its reference
count rather than at its smallest configuration, and a positive power.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from shockwave_agents.base import Agent
from shockwave_agents.elastic.configs import Options, allocation, options
from shockwave_agents.shockwave.highs_backend import HighsBackend
from shockwave_agents.shockwave.mip import MipProgram
from shockwave_gym.view import ClusterView


def sia_program(opts: Options, utilities: list[np.ndarray]) -> MipProgram:
    """The program over one binary column per (active job, allowed configuration), in the
    order of ``opts``: maximise ``sum u x`` as the minimisation of ``-u . x``."""
    sizes = [u.size for u in utilities]
    n = int(sum(sizes))
    num_jobs, num_types = len(sizes), opts.capacity.size
    rows, cols, vals = [], [], []
    col = 0
    for i, size in enumerate(sizes):
        for k in range(size):
            rows += [i, num_jobs + int(opts.types[i][k])]
            cols += [col, col]
            vals += [1.0, float(opts.counts[i][k])]
            col += 1
    matrix = sp.csc_matrix((vals, (rows, cols)), shape=(num_jobs + num_types, n))
    c = -np.concatenate(utilities) if n else np.zeros(0)
    return MipProgram(c=c, A=matrix, row_lo=np.full(num_jobs + num_types, -np.inf),
                      row_hi=np.concatenate([np.ones(num_jobs), opts.capacity.astype(np.float64)]),
                      col_lo=np.zeros(n), col_hi=np.ones(n), integer=np.ones(n, dtype=bool), abs_gap=0.0)


class SiaAgent(Agent):
    name = "sia"

    def __init__(self, p: float = 0.5, restart: float = 0.1):
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p <= 1:
            raise ValueError(f"sia: p must be in (0, 1], got {p!r}")
        if isinstance(restart, bool) or not isinstance(restart, int | float) or not 0 <= restart < 1:
            raise ValueError(f"sia: restart must be in [0, 1), got {restart!r}")
        self.p, self.restart = float(p), float(restart)
        self._backend = HighsBackend()

    def utilities(self, view: ClusterView, opts: Options) -> list[np.ndarray]:
        """``u_jtc`` per active job and allowed configuration (see the module doc)."""
        last_count, last_type = view.last_count, view.last_type
        out = []
        for i, j in enumerate(opts.jobs.tolist()):
            u = opts.speedup[i] ** self.p
            if last_count[j] > 0:
                moved = (opts.counts[i] != last_count[j]) | (opts.types[i] != last_type[j])
                u = np.where(moved, u * (1.0 - self.restart), u)
            out.append(u)
        return out

    def act(self, view: ClusterView):
        opts = options(view)
        if opts.jobs.size == 0:
            return []
        utilities = self.utilities(view, opts)
        result = self._backend.solve(sia_program(opts, utilities))
        if not result.has_solution:
            raise RuntimeError(f"sia: HiGHS found no allocation ({result.message})")
        chosen = np.flatnonzero(np.round(result.vector) > 0.5)
        starts = np.cumsum([0] + [u.size for u in utilities])
        jobs, types, counts = [], [], []
        for col in chosen.tolist():
            i = int(np.searchsorted(starts, col, side="right") - 1)
            k = col - int(starts[i])
            jobs.append(int(opts.jobs[i]))
            types.append(int(opts.types[i][k]))
            counts.append(int(opts.counts[i][k]))
        return allocation(jobs, types, counts)


def objective(opts: Options, utilities: list[np.ndarray], choice: dict[int, int]) -> float:
    """``sum u`` of a choice ``{job index: configuration index}`` (for checks)."""
    return math.fsum(float(utilities[i][k]) for i, k in choice.items())
