"""A feasible re-ranking from the re-ranking program's LP relaxation.

The LP optimum of the re-ranking program (:func:`.packing.build_rank_program` with every
column continuous) is integral for most jobs; the others are split, mostly into halves, between
rounds. :func:`round_relaxation` gives each job its ``counts[j]`` rounds with the largest LP
values (earlier rounds on ties), then repairs rounds over capacity: a job leaves the round for
a round with room (the cheapest such move, preferring jobs no larger than the excess), or,
when no round has room for any of them, for a round where one of its jobs makes room by
moving on to a third round. The result, or None if the repair gets stuck, is a start for
:func:`.ranking.improve_ranking`.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.shockwave.ranking import RankTerms

#: Tolerance on GPU counts and LP values.
EPS = 1e-9


def round_relaxation(terms: RankTerms, lp_block: np.ndarray) -> np.ndarray | None:
    """A feasible movable block (k, span) near the LP solution ``lp_block`` (k, span)."""
    k, span = lp_block.shape
    values = np.round(lp_block, 9)
    order = np.lexsort((np.broadcast_to(np.arange(span), (k, span)), -values), axis=1)
    x = np.zeros((k, span), dtype=bool)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(span)[None, :].repeat(k, axis=0), axis=1)
    x[:] = ranks < terms.counts[:, None]
    gang = terms.gang.astype(np.float64)
    free = terms.capacity - gang @ x
    for _ in range(4 * k * span):
        over = np.flatnonzero(free < -EPS)
        if over.size == 0:
            return x
        t = int(over[0])
        if not (_move_out(terms, x, free, t) or _move_via(terms, x, free, t)):
            return None
    return None


def _move_out(terms: RankTerms, x: np.ndarray, free: np.ndarray, t: int) -> bool:
    """Move one job of round t to a round with room for it; False if none can move."""
    gang, cost = terms.gang, terms.cost
    best = None
    for j in np.flatnonzero(x[:, t]).tolist():
        dest = np.flatnonzero(~x[j] & (free >= gang[j] - EPS))
        if dest.size == 0:
            continue
        d = int(dest[np.argmin(cost[j, dest])])
        key = (0 if gang[j] <= -free[t] + EPS else 1, cost[j, d] - cost[j, t])
        if best is None or key < best[0]:
            best = (key, j, d)
    if best is None:
        return False
    _, j, d = best
    _relocate(x, free, gang, j, t, d)
    return True


def _move_via(terms: RankTerms, x: np.ndarray, free: np.ndarray, t: int) -> bool:
    """Move job j from t to d after job b moves from d to a round e with room for it."""
    gang, cost = terms.gang, terms.cost
    for j in np.flatnonzero(x[:, t]).tolist():
        best = None
        for d in np.flatnonzero(~x[j]).tolist():
            short = gang[j] - free[d]
            if short <= EPS:
                continue
            for b in np.flatnonzero(x[:, d] & ~x[:, t] & (gang >= short - EPS)).tolist():
                dest = np.flatnonzero(~x[b] & (free >= gang[b] - EPS))
                dest = dest[dest != t]
                if dest.size == 0:
                    continue
                e = int(dest[np.argmin(cost[b, dest])])
                delta = cost[j, d] - cost[j, t] + cost[b, e] - cost[b, d]
                if best is None or delta < best[0]:
                    best = (delta, d, b, e)
        if best is not None:
            _, d, b, e = best
            _relocate(x, free, gang, b, d, e)
            _relocate(x, free, gang, j, t, d)
            return True
    return False


def _relocate(x: np.ndarray, free: np.ndarray, gang: np.ndarray, j: int, src: int, dst: int) -> None:
    x[j, src], x[j, dst] = False, True
    free[src] += gang[j]
    free[dst] -= gang[j]
