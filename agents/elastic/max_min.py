"""Elastic max-min: the max-min fair share of normalised throughput, with the count chosen.

Rule, every round: admit the active jobs in order of least attained GPU-seconds (ties by job
id) while each one's smallest allowed count still fits (first fit, fastest type); then give
every admitted job one configuration (type, count) so that the smallest speedup among them
(rate over its rate at the reference count, :mod:`.configs`) is as large as possible, and
among such allocations the total speedup is largest. Both stages are integer programs solved
exactly with HiGHS (:mod:`.program`). Jobs left out of a full cluster are those with the most
service so far, so the cluster is time-shared over rounds.

Source: Gavel's max-min fairness (Narayanan et al., OSDI '20) maximises the smallest
normalised effective throughput over jobs, with time fractions per GPU type and a round
mechanism that realises them. Simplified here: the count is a variable (Gavel's jobs have
fixed scale factors), and each round is allocated directly, as whole configurations, over
the admitted jobs, least attained service deciding who is admitted, instead of solving for
time fractions and realising them over rounds.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import Agent
from shockwave_agents.elastic.configs import Options, options, smallest_fitting
from shockwave_agents.elastic.program import chosen_allocation, configuration_program, solve
from shockwave_gym.view import ClusterView

#: The second stage keeps the smallest speedup within this of the first stage's optimum.
LEVEL_TOLERANCE = 1e-9


def admitted(view: ClusterView, opts: Options) -> Options:
    """The jobs of ``opts`` admitted this round (see the module doc), as their own options."""
    service = view.attained_service_gpu_s[opts.jobs]
    free = opts.capacity.copy()
    keep = []
    for i in np.lexsort((opts.jobs, service)).tolist():
        k = smallest_fitting(opts, i, free)
        if k is not None:
            keep.append(i)
            free[opts.types[i][k]] -= opts.counts[i][k]
    keep.sort()
    return Options(opts.jobs[keep], tuple(opts.types[i] for i in keep), tuple(opts.counts[i] for i in keep),
                   tuple(opts.speedup[i] for i in keep), opts.capacity)


class ElasticMaxMinAgent(Agent):
    name = "elastic-max-min"

    def act(self, view: ClusterView):
        opts = admitted(view, options(view))
        if opts.jobs.size == 0:
            return []
        level = np.concatenate(opts.speedup)
        every = np.ones(opts.jobs.size, dtype=bool)
        first = np.zeros(level.size + 1)
        first[-1] = -1.0  # maximise z, the smallest speedup
        z = solve(configuration_program(opts, first, assigned=every, level=level), self.name)[-1]
        second = np.append(-level, 0.0)  # then the total speedup, z kept
        vector = solve(configuration_program(opts, second, assigned=every, level=level,
                                             level_bounds=(z - LEVEL_TOLERANCE, np.inf)), self.name)
        return chosen_allocation(opts, vector)
