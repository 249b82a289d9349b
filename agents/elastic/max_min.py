"""Elastic max-min: the max-min fair share of normalised throughput, with the count chosen.

Rule, every round: every active job starts with nothing (level 0). Repeatedly, among the
jobs that can still rise, the one of lowest level (ties: least attained GPU-seconds, then job
id) moves to its smallest configuration, by count, that raises its speedup (rate over its
rate at the reference count, :mod:`.configs`) and fits the GPUs left; a job that cannot rise
is set aside. It stops when no job can rise. Levels are raised lowest first, so the round's
allocation is the greedy leximin one: its smallest speedup is the largest any allocation of
the round achieves on the tested instances (brute force), and the jobs left out of a full
cluster are those with the most service so far, which time-shares the cluster over rounds.

Source: Gavel's max-min fairness (Narayanan et al., OSDI '20) maximises the smallest
normalised effective throughput over jobs, with time fractions per GPU type. Simplified
here: the count is a variable (Gavel's jobs have fixed scale factors), and instead of
solving the LP over time fractions and running its round mechanism, each round is allocated
leximin-greedily with least attained service breaking ties.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import Agent
from shockwave_agents.elastic.configs import Options, allocation, options
from shockwave_gym.view import ClusterView


def rise(opts: Options, i: int, current: int | None, free: np.ndarray) -> int | None:
    """Job ``i``'s smallest-count configuration above its current speedup that fits (its GPUs
    in configuration ``current`` given back); the fastest type at that count. None if none."""
    level = 0.0 if current is None else float(opts.speedup[i][current])
    best = None
    for k in range(opts.counts[i].size):
        t, c = int(opts.types[i][k]), int(opts.counts[i][k])
        held = 0 if current is None or int(opts.types[i][current]) != t else int(opts.counts[i][current])
        if c > free[t] + held or float(opts.speedup[i][k]) <= level:
            continue
        if best is None or (c == opts.counts[i][best] and opts.speedup[i][k] > opts.speedup[i][best]):
            best = k
        elif c > opts.counts[i][best]:
            break
    return best


class ElasticMaxMinAgent(Agent):
    name = "elastic-max-min"

    def act(self, view: ClusterView):
        opts = options(view)
        service = view.attained_service_gpu_s[opts.jobs]
        free = opts.capacity.copy()
        chosen: dict[int, int] = {}
        stuck: set[int] = set()
        while len(stuck) < opts.jobs.size:
            candidates = [i for i in range(opts.jobs.size) if i not in stuck]
            i = min(candidates, key=lambda i: (float(opts.speedup[i][chosen[i]]) if i in chosen else 0.0,
                                               float(service[i]), i))
            k = rise(opts, i, chosen.get(i), free)
            if k is None:
                stuck.add(i)
                continue
            if i in chosen:
                free[opts.types[i][chosen[i]]] += opts.counts[i][chosen[i]]
            free[opts.types[i][k]] -= opts.counts[i][k]
            chosen[i] = k
        picked = sorted(chosen)
        return allocation([int(opts.jobs[i]) for i in picked], [int(opts.types[i][chosen[i]]) for i in picked],
                          [int(opts.counts[i][chosen[i]]) for i in picked])
