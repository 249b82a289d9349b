"""Priority order inside a typed plan (ours; docs/SHOCKWAVE_HETERO.md, "Fairness against Gavel").

The typed counts are packed into rounds by gang and type tightness (:func:`.packing.pack_typed_counts`),
so *when* a job runs inside the plan says nothing about its priority, and the per-type
re-ranking (:meth:`.reranker.Reranker._rank_typed`) cannot repair that: a job planned on
several types keeps its rounds, so the rounds of the jobs planned on one type can only move
where those leave room. A late single-GPU job can therefore be planned in the last rounds,
and since the plan is replaced at the next arrival or completion, it may never run.

:func:`list_rank_typed` rebuilds the plan in time order from the same counts ``n[j, k]``:
round by round, jobs that must run in every round left first, then by the re-ranking's key
``w_j / n_j`` (highest first; ``w`` the relaxed path's priority, ``n_j`` the job's planned
rounds), each on a type where it still has rounds and its gang fits, its last type
first, then its fastest. Every job keeps its rounds on every type, so the plan's objective
is unchanged; if a job that must run cannot be placed (gangs that fragment a type), the
plan is returned as it was.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym import portable_math


def list_rank_typed(x: np.ndarray, gang: np.ndarray, capacity: np.ndarray, log_weights: np.ndarray,
                    speed: np.ndarray, last_type: np.ndarray | None = None) -> np.ndarray:
    """``x`` (n, K, T) with each job's rounds on each type moved as early as its priority
    allows (see the module doc), or ``x`` itself if the list schedule gets stuck."""
    x = np.asarray(x, dtype=bool)
    n, kinds, horizon = x.shape
    left = x.sum(axis=2).astype(np.int64)
    total = left.sum(axis=1)
    key = np.asarray(log_weights, dtype=np.float64) - portable_math.log(np.maximum(total, 1).astype(np.float64))
    by_priority = np.lexsort((np.arange(n), -key))
    previous = np.full(n, -1, dtype=np.int64) if last_type is None else np.asarray(last_type, dtype=np.int64).copy()
    out = np.zeros_like(x)
    for t in range(horizon):
        rows = left.sum(axis=1)
        must = rows == horizon - t
        order = [j for j in by_priority.tolist() if must[j]] + [j for j in by_priority.tolist()
                                                                if rows[j] > 0 and not must[j]]
        free = np.asarray(capacity, dtype=np.int64).copy()
        for j in order:
            k = _pick_type(left[j], free, int(gang[j]), speed[j], int(previous[j]))
            if k < 0:
                if must[j]:
                    return x
                continue
            out[j, k, t] = True
            left[j, k] -= 1
            free[k] -= int(gang[j])
            previous[j] = k
    return out if not left.any() else x


def _pick_type(left: np.ndarray, free: np.ndarray, size: int, speed: np.ndarray, previous: int) -> int:
    """The type for one of a job's rounds: one where it has rounds left and its gang fits,
    the type it ran on last if possible, else the fastest (ties: the earlier type); -1 if none."""
    ok = (left > 0) & (free >= size)
    if not ok.any():
        return -1
    if 0 <= previous < ok.size and ok[previous]:
        return previous
    return int(np.argmax(np.where(ok, speed, -1.0)))


def front_swap_typed(x: np.ndarray, gang: np.ndarray, capacity: np.ndarray, log_weights: np.ndarray,
                     front: int = 2) -> np.ndarray:
    """``x`` (n, K, T) with the first ``front`` rounds given to the highest-priority jobs the
    plan runs later: for each front round t1 and later round t2, a job ``a`` in t2 on type k
    and not in t1 moves to t1 on type k if k has room for its gang there, or swaps with a job
    ``b`` of the same gang in t1 on type k that is not in t2 and has a lower key ``w_j / n_j``
    (the re-ranking's key; ``n_j`` the job's planned rounds). Every job keeps its rounds on
    every type, every round its capacity, every job one type per round, so the plan's
    objective is unchanged; unlike the per-type re-ranking, jobs planned on several types
    move too. (The plan is replaced at the next arrival or completion: its first rounds are
    the ones that run.)"""
    x = np.array(x, dtype=bool)
    n, kinds, horizon = x.shape
    gang = np.asarray(gang, dtype=np.int64)
    total = x.sum(axis=(1, 2))
    key = np.asarray(log_weights, dtype=np.float64) - portable_math.log(np.maximum(total, 1).astype(np.float64))
    for t1 in range(min(front, horizon)):
        free = np.asarray(capacity, dtype=np.int64) - np.einsum("j,jk->k", gang, x[:, :, t1].astype(np.int64))
        for t2 in range(t1 + 1, horizon):
            running1 = x[:, :, t1].any(axis=1)
            movers = np.flatnonzero(x[:, :, t2].any(axis=1) & ~running1)
            for a in movers[np.lexsort((movers, -key[movers]))].tolist():
                k = int(np.argmax(x[a, :, t2]))
                if free[k] >= gang[a]:
                    x[a, k, t2], x[a, k, t1] = False, True
                    free[k] -= gang[a]
                    continue
                running2 = x[:, :, t2].any(axis=1)
                others = np.flatnonzero(x[:, k, t1] & ~running2 & (gang == gang[a]) & (key < key[a]))
                if others.size == 0:
                    continue
                b = int(others[np.lexsort((others, key[others]))][0])
                x[a, k, t2], x[a, k, t1] = False, True
                x[b, k, t1], x[b, k, t2] = False, True
    return x


__all__ = ["front_swap_typed", "list_rank_typed"]
