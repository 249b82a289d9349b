"""Packing per-job round counts into rounds, and the re-ranking program.

The planning objective depends on a schedule only through each job's number of planned
rounds (and round-0 membership when restart loss is modelled), so the planner first solves
the aggregated counts program and then needs a 0/1 schedule with exactly those row sums that
respects every round's capacity. :func:`pack_counts` builds one greedily: jobs by gang size
(largest first), each into the rounds with the most free GPUs. Gang sizes that divide each
other (1, 2, 4, 8) keep every round's free capacity a multiple of the current gang, which is
what makes this greedy succeed whenever the counts fit comfortably; when it fails the planner
falls back to the schedule program.

:func:`build_rank_program` is the authors' second program: keep each job's number of planned
rounds and minimise sum_j w_j * (mean planned round index of j) under the same capacity, so
heavier-weighted jobs run earlier.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from shockwave_agents.shockwave.mip import MipProgram
from shockwave_agents.shockwave.ranking import RankTerms, rank_terms
from shockwave_gym import portable_math


def pack_counts(
    counts: np.ndarray, gang: np.ndarray, gpus: int, horizon: int, round0: np.ndarray | None = None
) -> np.ndarray | None:
    """A (n, T) boolean schedule with row sums ``counts`` (and column 0 equal to ``round0``
    when given) that fits ``gpus`` in every round, or None if the greedy finds none."""
    counts = np.asarray(counts, dtype=np.int64)
    n = counts.size
    x = np.zeros((n, horizon), dtype=bool)
    free = np.full(horizon, int(gpus), dtype=np.int64)
    left = counts.copy()
    first = 0
    if round0 is not None:
        x[round0, 0] = True
        free[0] -= int(gang[round0].sum())
        left = counts - round0.astype(np.int64)
        first = 1
        if free[0] < 0 or np.any(left < 0):
            return None
    if np.any(left > horizon - first):
        return None
    order = np.lexsort((-left, -gang))
    rounds = np.arange(first, horizon)
    for j in order.tolist():
        need = int(left[j])
        if need == 0:
            continue
        size = int(gang[j])
        fits = rounds[free[rounds] >= size]
        if fits.size < need:
            return None
        chosen = fits[np.lexsort((fits, -free[fits]))][:need]
        x[j, chosen] = True
        free[chosen] -= size
    return x


def pack_typed_counts(
    counts: np.ndarray, gang: np.ndarray, capacity: np.ndarray, horizon: int, last_type: np.ndarray | None = None,
    *, repair_speed: np.ndarray | None = None,
) -> np.ndarray | None:
    """A typed (n, K, T) boolean schedule with ``counts[j, k]`` rounds of job j on type k, at
    most one type per job and round, within every type's ``capacity`` in every round, or
    None if the greedy finds none.

    Jobs by gang size (largest first), then by total rounds; each job's types by how few
    rounds could still take it there (the tightest first), each into the rounds where that
    type has the most free GPUs. A job's planned first round goes, when it can, to the type
    it ran on last (``last_type``; -1: none), so the plan does not move it for nothing.

    With ``repair_speed`` (n, K; 0 where a job cannot run) the packing never fails: rounds
    that do not fit on their type go to the job's other types with room, fastest first, and
    are dropped if none has room (the counts program is a relaxation: per-type capacities
    that gang sizes do not divide, e.g. 8-GPU gangs on 12 GPUs, can make its counts
    unpackable).
    """
    counts = np.asarray(counts, dtype=np.int64)
    n, kinds = counts.shape
    x = np.zeros((n, kinds, horizon), dtype=bool)
    free = np.repeat(np.asarray(capacity, dtype=np.int64)[:, None], horizon, axis=1)
    used = np.zeros((n, horizon), dtype=bool)
    if np.any(counts.sum(axis=1) > horizon):
        return None
    order = np.lexsort((-counts.sum(axis=1), -np.asarray(gang)))
    rounds = np.arange(horizon)
    for j in order.tolist():
        size = int(gang[j])
        wanted = np.flatnonzero(counts[j] > 0)
        room = np.array([int(np.sum(~used[j] & (free[k] >= size))) - counts[j, k] for k in wanted.tolist()])
        short = 0
        for k in wanted[np.argsort(room, kind="stable")].tolist():
            need = int(counts[j, k])
            fits = rounds[~used[j] & (free[k] >= size)]
            if fits.size < need:
                if repair_speed is None:
                    return None
                short += need - fits.size
            _take(x, used, free, j, k, size, fits, need, last_type)
        if short:
            for k in np.argsort(-repair_speed[j], kind="stable").tolist():
                if short == 0 or repair_speed[j, k] <= 0:
                    break
                fits = rounds[~used[j] & (free[k] >= size)]
                short -= _take(x, used, free, j, k, size, fits, short, last_type)
    return x


def _take(x, used, free, j: int, k: int, size: int, fits: np.ndarray, need: int, last_type) -> int:
    """Put job j on type k in up to ``need`` of the rounds ``fits`` (its last type's first
    round first, then the rounds with the most free GPUs); the number taken."""
    sticky = (fits == 0) & (last_type is not None and int(last_type[j]) == k)
    chosen = fits[np.lexsort((fits, -free[k, fits], ~sticky))][:need]
    x[j, k, chosen] = True
    used[j, chosen] = True
    free[k, chosen] -= size
    return int(chosen.size)


def build_rank_program(
    gang: np.ndarray, schedule: np.ndarray, log_weights: np.ndarray, gpus: int, *,
    keep_round0: bool = False, rel_gap: float = 1e-3, round0_cost: np.ndarray | None = None,
) -> tuple[MipProgram, np.ndarray, int] | None:
    """The re-ranking program for ``schedule`` (n, T).

    Returns (program, indices of the jobs it moves, first movable round), or None if
    nothing can move. Jobs planned in every movable round are fixed and take capacity; with
    ``keep_round0`` round 0 stays as planned (its restart loss was part of the plan).
    ``round0_cost`` (rounds, per job) charges running in round 0 as that much extra delay
    (a restart's overhead is lost work: 20 s is a sixth of a round).
    """
    terms = rank_terms(gang, schedule, log_weights, gpus, keep_round0=keep_round0, round0_cost=round0_cost)
    if terms is None:
        return None
    return rank_program(terms, rel_gap), terms.movable, terms.first


def rank_program(terms: RankTerms, rel_gap: float = 1e-3, *, relaxed: bool = False) -> MipProgram:
    """The re-ranking program of ``terms``: binary x[j, t] over the movable jobs and rounds,
    each round within capacity, each job its planned number of rounds, minimising the cost.
    ``relaxed``: every column continuous (the LP relaxation, marked for an interior-point
    solve, whose vertex after crossover rounds better on this program than the simplex's)."""
    k, span = terms.cost.shape
    nx = k * span
    job_of_x = np.repeat(np.arange(k), span)
    round_of_x = np.tile(np.arange(span), k)
    A = sp.vstack([
        sp.csr_matrix((terms.gang[job_of_x].astype(np.float64), (round_of_x, np.arange(nx))), shape=(span, nx)),
        sp.csr_matrix((np.ones(nx), (job_of_x, np.arange(nx))), shape=(k, nx)),
    ]).tocsc()
    counts_f = terms.counts.astype(np.float64)
    program = MipProgram(
        c=terms.cost.ravel(), A=A, row_lo=np.concatenate([np.full(span, -np.inf), counts_f]),
        row_hi=np.concatenate([terms.capacity, counts_f]), col_lo=np.zeros(nx), col_hi=np.ones(nx),
        integer=np.full(nx, not relaxed), objective_unit=-terms.top, abs_gap=1e-6, rel_gap=rel_gap,
        interior=relaxed,
    )
    program.check_safe()
    return program


def rank_greedily(
    gang: np.ndarray, schedule: np.ndarray, log_weights: np.ndarray, gpus: int, *, keep_round0: bool = False
) -> np.ndarray | None:
    """A warm start for the re-ranking program: the same rounds per job as ``schedule``,
    filled round by round; jobs that must run in every remaining round first, then by
    w_j / n_j (highest first), smaller gangs backfilling. None if this gets stuck."""
    horizon = schedule.shape[1]
    first = 1 if keep_round0 else 0
    counts = schedule[:, first:].sum(axis=1).astype(np.int64)
    out = np.zeros_like(schedule)
    out[:, :first] = schedule[:, :first]
    key = np.asarray(log_weights, dtype=np.float64) - portable_math.log(np.maximum(counts, 1))
    by_priority = np.lexsort((np.arange(counts.size), -key))
    left = counts.copy()
    for t in range(first, horizon):
        rounds_left = horizon - t
        must = left == rounds_left
        order = np.concatenate([by_priority[must[by_priority]], by_priority[~must[by_priority] & (left[by_priority] > 0)]])
        free = int(gpus)
        for j in order.tolist():
            if gang[j] <= free:
                out[j, t] = True
                free -= int(gang[j])
                left[j] -= 1
            elif must[j]:
                return None
    return out if not left.any() else None

