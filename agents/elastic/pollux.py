"""Pollux-style allocator: greedy marginal throughput per GPU, with a fairness knob.

Rule, every round: every active job (in arrival order, while they fit) gets its smallest
allowed count (on the fastest type with room at that count); then, repeatedly, the running
job whose move to a larger allowed configuration adds the most utility *per added GPU* makes
that move, until no move that fits adds utility. A job's utility is ``phi(s)`` of its speedup
``s`` (rate in the configuration / rate at its reference count, :mod:`.configs`), with
``phi(s) = (s**p - 1) / p`` (``log s`` at ``p = 0``): ``p = 1`` maximises the total speedup,
a smaller ``p`` favours jobs that have less (Pollux's fairness knob). Every larger count is
considered, not only the next one, so a count that is slower than a smaller one (a negative
gain: LM at batch size 5 on 2 GPUs) is never taken for itself but can be jumped over (1 -> 4).

Source: Pollux (Qiao et al., OSDI '21) allocates GPUs to maximise a generalised (power) mean
of the jobs' speedups with a fairness exponent, and shows greedy marginal-gain allocation as
its intuition. Simplified here: throughput instead of goodput (no statistical efficiency, so
no batch-size co-adaptation: the trace's schedule stays), the greedy instead of Pollux's
genetic search, no re-allocation penalty, one count per round from the table's counts. With
indivisible steps (1, 2, 4, 8 GPUs) the greedy can miss the optimum of ``sum phi(s_j)`` when
the capacity left is smaller than the better step (a test pins such an instance); on the
tested instances where every better step fits it equals the brute-force optimum.
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_agents.base import Agent
from shockwave_agents.elastic.configs import Options, allocation, options, smallest_fitting
from shockwave_gym.view import ClusterView


def utility(speedup: float, p: float) -> float:
    """``phi(s) = (s**p - 1) / p``, ``log s`` at ``p = 0`` (``-inf`` at ``s = 0``, p <= 0)."""
    if speedup <= 0:
        return -math.inf if p <= 0 else -1.0 / p
    return math.log(speedup) if p == 0 else (speedup ** p - 1.0) / p


class PolluxAgent(Agent):
    name = "pollux"

    def __init__(self, p: float = 0.5):
        if isinstance(p, bool) or not isinstance(p, int | float) or not math.isfinite(p) or p > 1:
            raise ValueError(f"pollux: p must be a finite number <= 1, got {p!r}")
        self.p = float(p)

    def act(self, view: ClusterView):
        opts = options(view)
        free = opts.capacity.copy()
        chosen: dict[int, int] = {}
        for i in range(opts.jobs.size):
            k = smallest_fitting(opts, i, free)
            if k is not None:
                chosen[i] = k
                free[opts.types[i][k]] -= opts.counts[i][k]
        while True:
            move = self._best_move(opts, chosen, free)
            if move is None:
                break
            i, k = move
            old = chosen[i]
            free[opts.types[i][old]] += opts.counts[i][old]
            free[opts.types[i][k]] -= opts.counts[i][k]
            chosen[i] = k
        picked = sorted(chosen)
        return allocation([int(opts.jobs[i]) for i in picked], [int(opts.types[i][chosen[i]]) for i in picked],
                          [int(opts.counts[i][chosen[i]]) for i in picked])

    def _best_move(self, opts: Options, chosen: dict[int, int], free: np.ndarray) -> tuple[int, int] | None:
        """The move (job index, configuration index) with the largest positive utility gain
        per added GPU that fits; ties go to the earlier job, then the smaller count."""
        best, best_gain = None, 0.0
        for i, k0 in chosen.items():
            t0, c0 = int(opts.types[i][k0]), int(opts.counts[i][k0])
            base = utility(float(opts.speedup[i][k0]), self.p)
            for k in range(opts.counts[i].size):
                t, c = int(opts.types[i][k]), int(opts.counts[i][k])
                if c <= c0 or c > free[t] + (c0 if t == t0 else 0):
                    continue
                gain = (utility(float(opts.speedup[i][k]), self.p) - base) / (c - c0)
                if gain > best_gain + 1e-12:
                    best, best_gain = (i, k), gain
        return best
