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
    key = np.asarray(log_weights, dtype=np.float64) - np.log(np.maximum(counts, 1))
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

