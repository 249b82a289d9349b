"""Sia-style allocator: an integer program over configurations (count, and type where the
cluster has several), solved with HiGHS.

Rule, every round: choose for each active job at most one allowed configuration ``(t, c)``
(binary ``x_jtc``) to maximise ``sum x_jtc * u_jtc`` subject to ``sum_tc x_jtc <= 1`` per job
and ``sum_jc c * x_jtc <= G_t`` per type, with ``u_jtc = s_jtc ** p * (1 - restart)`` when job
``j`` ran last round in another configuration (else without the factor): ``s_jtc`` the
job's speedup there (:mod:`.configs`), ``p`` in (0, 1] the knob that spreads GPUs over jobs
(a smaller ``p`` values a job's first GPUs more than its extra ones), ``restart`` the
penalty of a re-allocation (default: the share of a round a restart costs,
``restart_overhead_s / round_s``, 1/6 at the default 20 s and 120 s). Every allocated job
adds ``u > 0`` and speedups grow less than the count, so the program tends to run more jobs
rather than grow one. Solved exactly with HiGHS (``highspy``, as the planner's
backend, :mod:`.program`); ties between optima go to HiGHS's vertex.

Source: Sia (Jayaram Subramanya et al., SOSP '23) solves, every round, an integer program
that picks one (GPU type, count) configuration per job to maximise the sum of the jobs'
normalised goodputs raised to a power, with a restart factor for re-allocations.
Simplified here: throughput from the table instead of learned goodput models (no
statistical efficiency, no batch-size choice), normalised by the job's rate at its reference
count rather than at its smallest configuration, and a positive power.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import Agent
from shockwave_agents.elastic.configs import Options, options
from shockwave_agents.elastic.program import chosen_allocation, configuration_program, solve
from shockwave_gym.errors import InputError
from shockwave_gym.view import ClusterView


class SiaAgent(Agent):
    name = "sia"

    def __init__(self, p: float = 0.5, restart: float | None = None):
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 < p <= 1:
            raise InputError(f"sia: p must be in (0, 1], got {p!r}")
        if restart is not None and (isinstance(restart, bool) or not isinstance(restart, int | float)
                                    or not 0 <= restart < 1):
            raise InputError(f"sia: restart must be in [0, 1), got {restart!r}")
        self.p, self.restart = float(p), restart

    def utilities(self, view: ClusterView, opts: Options) -> list[np.ndarray]:
        """``u_jtc`` per active job and allowed configuration (see the module doc)."""
        last_count, last_type = view.last_count, view.last_type
        factor = 1.0 - (view.restart_overhead_s / view.round_s if self.restart is None else self.restart)
        out = []
        for i, j in enumerate(opts.jobs.tolist()):
            u = opts.speedup[i] ** self.p
            if last_count[j] > 0:
                moved = (opts.counts[i] != last_count[j]) | (opts.types[i] != last_type[j])
                u = np.where(moved, u * factor, u)
            out.append(u)
        return out

    def act(self, view: ClusterView):
        opts = options(view)
        if opts.jobs.size == 0:
            return []
        utilities = np.concatenate(self.utilities(view, opts))
        return chosen_allocation(opts, solve(configuration_program(opts, -utilities), "sia"))
