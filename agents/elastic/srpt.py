"""Elastic SRPT: smallest predicted remaining GPU-area first, each job on the largest count
that still pays.

Rule, every round: order the active jobs by predicted remaining GPU-area at the reference
count (:func:`shockwave_agents.wsrpt.remaining_area_gpu_s`: the predicted remaining isolated
time times the gang, ``wsrpt``'s key; ties by job id) and, in that order, give each the
configuration of highest speedup among those that fit the GPUs left and are *efficient*:
speedup over the job's smallest fitting configuration at least ``efficiency`` times the
ratio of their counts, so a job grows only while the GPU-area it needs grows by at most a
factor ``1 / efficiency``. A job for which nothing fits waits (smaller, later jobs backfill).

Source: shortest-remaining-processing-time first, the classic rule for mean completion time,
on the remaining volume (Smith's rule, as ``wsrpt``), in its form for parallelisable jobs
(give the job first in line the parallelism it can use efficiently, as in the malleable-job
SRPT literature). Ours: the efficiency threshold stands in for the speedup curves those
analyses assume (the table's are sublinear, sometimes non-monotone); the remaining time is
the public prediction. The default 0.9 was chosen among 0.5, 0.75 and 0.9 on the bundled
``elastic-120`` (docs/BENCHMARKS.md, "Elastic jobs").
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import Agent
from shockwave_agents.elastic.configs import allocation, options, smallest_fitting
from shockwave_agents.wsrpt import remaining_area_gpu_s
from shockwave_gym.errors import InputError
from shockwave_gym.view import ClusterView


class ElasticSrptAgent(Agent):
    name = "elastic-srpt"

    def __init__(self, efficiency: float = 0.9):
        if isinstance(efficiency, bool) or not isinstance(efficiency, int | float) or not 0 <= efficiency <= 1:
            raise InputError(f"elastic-srpt: efficiency must be in [0, 1], got {efficiency!r}")
        self.efficiency = float(efficiency)

    def act(self, view: ClusterView):
        opts = options(view)
        remaining = remaining_area_gpu_s(view)[opts.jobs]
        free = opts.capacity.copy()
        jobs, types, counts = [], [], []
        for i in np.argsort(remaining, kind="stable").tolist():
            base = smallest_fitting(opts, i, free)
            if base is None:
                continue
            c0, s0 = int(opts.counts[i][base]), float(opts.speedup[i][base])
            best = base
            for k in range(opts.counts[i].size):
                t, c, s = int(opts.types[i][k]), int(opts.counts[i][k]), float(opts.speedup[i][k])
                if c <= free[t] and s >= self.efficiency * s0 * c / c0 and s > float(opts.speedup[i][best]):
                    best = k
            jobs.append(int(opts.jobs[i]))
            types.append(int(opts.types[i][best]))
            counts.append(int(opts.counts[i][best]))
            free[types[-1]] -= counts[-1]
        return allocation(jobs, types, counts)
