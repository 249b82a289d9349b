"""The re-ranking problem's terms, and a fast local search that solves it approximately.

Re-ranking keeps each job's number of planned rounds and moves heavily weighted jobs earlier
(the authors' second program, :func:`.packing.build_rank_program`). :func:`rank_terms` gives
what both the program and the search need: the jobs that can move, the first movable round,
the free capacity of each movable round and the cost ``cost[j, t]`` of job j running in
round t, normalised so the largest is 1 (the program's objective is the sum of those costs).

:func:`improve_ranking` starts from a feasible schedule and applies improving moves between
pairs of rounds t1 < t2 until none is left (or ``max_passes`` sweeps), each keeping every
round within capacity and every job's number of rounds:

- *move*: a job in t2 but not t1 moves to t1 if t1 has room for its gang;
- *swap*: a job in t2 trades places with a job in t1 (gangs may differ if both rounds keep
  room);
- *eject*: a job in t2 takes t1's place of several cheaper jobs whose gangs together free
  enough GPUs in t1, and they move to t2.

The search is deterministic (ties broken by job index) and takes time polynomial in the jobs
and rounds, so it caps the cost of re-ranking where the program would be slow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shockwave_agents.shockwave.mip import normalised_coefficients

#: Smallest objective improvement (normalised units) a move must bring.
MIN_GAIN = 1e-12


@dataclass(frozen=True)
class RankTerms:
    """The re-ranking problem of one schedule: ``movable`` job indices, the first movable
    round ``first``, ``counts`` (planned rounds of each movable job from ``first`` on),
    ``gang`` (theirs), ``capacity`` (GPUs per movable round left by the fixed jobs) and
    ``cost`` (k, span): normalised cost of each movable job in each movable round; ``top``
    is the normaliser (the program's objective unit)."""

    movable: np.ndarray
    first: int
    counts: np.ndarray
    gang: np.ndarray
    capacity: np.ndarray
    cost: np.ndarray
    top: float

    @property
    def span(self) -> int:
        return int(self.cost.shape[1])

    def objective(self, x: np.ndarray) -> float:
        """Normalised cost of the movable block ``x`` (k, span)."""
        return float(np.sum(self.cost[x]))


def rank_terms(
    gang: np.ndarray, schedule: np.ndarray, log_weights: np.ndarray, gpus: int, *,
    keep_round0: bool = False, round0_cost: np.ndarray | None = None,
) -> RankTerms | None:
    """The terms of re-ranking ``schedule`` (n, T), or None if nothing can move (see
    :func:`.packing.build_rank_program` for the meaning of the options)."""
    horizon = schedule.shape[1]
    first = 1 if keep_round0 else 0
    span = horizon - first
    counts = schedule[:, first:].sum(axis=1).astype(np.int64)
    movable = np.flatnonzero((counts > 0) & (counts < span))
    if movable.size < 2 or span < 2:
        return None
    fixed_load = float(gang[counts >= span].sum())
    return _terms(gang, counts, movable, first, span, log_weights, np.full(span, gpus - fixed_load), round0_cost)


def typed_rank_terms(
    gang: np.ndarray, schedule: np.ndarray, may_move: np.ndarray, log_weights: np.ndarray, capacity: int, *,
    keep_round0: bool = False, round0_cost: np.ndarray | None = None,
) -> RankTerms | None:
    """The re-ranking terms of one GPU type of a typed plan: ``schedule`` (n, T) is that
    type's part, ``capacity`` its GPUs. Only jobs with ``may_move`` (those planned on this
    type alone) move; every other job keeps its rounds and takes capacity in them."""
    horizon = schedule.shape[1]
    first = 1 if keep_round0 else 0
    span = horizon - first
    counts = schedule[:, first:].sum(axis=1).astype(np.int64)
    movable = np.flatnonzero(may_move & (counts > 0) & (counts < span))
    if movable.size < 2 or span < 2:
        return None
    pinned = np.ones(counts.size, dtype=bool)
    pinned[movable] = False
    load = np.asarray(gang, dtype=np.float64)[pinned] @ schedule[pinned, first:].astype(np.float64)
    return _terms(gang, counts, movable, first, span, log_weights, float(capacity) - load, round0_cost)


def _terms(gang, counts, movable, first: int, span: int, log_weights, capacity: np.ndarray,
           round0_cost: np.ndarray | None) -> RankTerms:
    w, _ = normalised_coefficients(np.asarray(log_weights, dtype=np.float64)[movable])
    delay = np.broadcast_to(np.arange(span, dtype=np.float64), (movable.size, span)).copy()
    if round0_cost is not None and first == 0:
        delay[:, 0] += np.asarray(round0_cost, dtype=np.float64)[movable]
    raw = (w / counts[movable])[:, None] * delay
    top = float(raw.max()) if raw.size and raw.max() > 0 else 1.0
    return RankTerms(movable, first, counts[movable], np.asarray(gang, dtype=np.int64)[movable],
                     capacity, raw / top, top)


def improve_ranking(terms: RankTerms, start: np.ndarray, max_passes: int = 50) -> np.ndarray:
    """A locally optimal movable block (k, span) reached from the feasible ``start``. A pair
    of rounds is looked at again only after a move changed one of them."""
    x = np.array(start, dtype=bool)
    free = terms.capacity - terms.gang.astype(np.float64) @ x
    changes = np.zeros(terms.span, dtype=np.int64)  # moves that touched each round so far
    seen = np.full((terms.span, terms.span), -1, dtype=np.int64)  # changes[t1] + changes[t2] when last looked at
    for _ in range(max_passes):
        improved = False
        for t1 in range(terms.span - 1):
            for t2 in range(terms.span - 1, t1, -1):
                if seen[t1, t2] == changes[t1] + changes[t2]:
                    continue
                while _best_move(terms, x, free, t1, t2):
                    changes[t1] += 1
                    changes[t2] += 1
                    improved = True
                seen[t1, t2] = changes[t1] + changes[t2]
        if not improved:
            break
    return x


def _best_move(terms: RankTerms, x: np.ndarray, free: np.ndarray, t1: int, t2: int) -> bool:
    """Apply the best improving move from round t2 to round t1; False if there is none."""
    late = np.flatnonzero(x[:, t2] & ~x[:, t1])
    if late.size == 0:
        return False
    gang = terms.gang
    gain = terms.cost[late, t2] - terms.cost[late, t1]
    fits = (gang[late] <= free[t1]) & (gain > MIN_GAIN)
    if np.any(fits):
        a = late[fits][np.argmax(gain[fits])]
        _shift(x, free, gang, [a], [], t1, t2)
        return True
    early = np.flatnonzero(x[:, t1] & ~x[:, t2])
    if early.size == 0:
        return False
    loss = terms.cost[early, t2] - terms.cost[early, t1]
    diff = gang[late][:, None] - gang[early][None, :]
    ok = (diff <= free[t1]) & (-diff <= free[t2])
    net = np.where(ok, gain[:, None] - loss[None, :], -np.inf)
    i, j = np.unravel_index(int(np.argmax(net)), net.shape)
    if net[i, j] > MIN_GAIN:
        _shift(x, free, gang, [late[i]], [early[j]], t1, t2)
        return True
    return _eject(terms, x, free, late, gain, early, loss, t1, t2)


def _eject(terms, x, free, late, gain, early, loss, t1: int, t2: int) -> bool:
    """One job of ``late`` (in t2) replaces several cheaper jobs of ``early`` (in t1): the
    cheapest per GPU first, each no larger than the GPUs still needed."""
    gang = terms.gang
    need = gang[late] - free[t1]
    per_gpu = loss / gang[early]
    # a move can only pay if the job's gain beats the cheapest possible ejection
    hopeful = np.flatnonzero((gain > MIN_GAIN) & (gain > need * max(float(per_gpu.min()), 0.0) + MIN_GAIN))
    if hopeful.size == 0:
        return False
    rank = np.lexsort((early, per_gpu))
    order, order_gang, order_loss = early[rank].tolist(), gang[early[rank]].tolist(), loss[rank].tolist()
    for idx in hopeful[np.argsort(-gain[hopeful], kind="stable")].tolist():
        a, short = int(late[idx]), int(need[idx])
        chosen, freed, cost = [], 0, 0.0
        for b, size, b_loss in zip(order, order_gang, order_loss, strict=True):
            if freed >= short or cost >= gain[idx]:
                break
            if size <= short - freed:
                chosen.append(b)
                freed += size
                cost += b_loss
        if freed >= short and free[t2] + gang[a] - freed >= 0 and gain[idx] - cost > MIN_GAIN:
            _shift(x, free, gang, [a], chosen, t1, t2)
            return True
    return False


def _shift(x, free, gang, up: list, down: list, t1: int, t2: int) -> None:
    """Jobs ``up`` move from t2 to t1, jobs ``down`` from t1 to t2."""
    for a in up:
        x[a, t2], x[a, t1] = False, True
        free[t1] -= gang[a]
        free[t2] += gang[a]
    for b in down:
        x[b, t1], x[b, t2] = False, True
        free[t1] += gang[b]
        free[t2] -= gang[b]
