"""Packing: turn an order of jobs into a set whose gangs fit the cluster.

Every agent and every action mode that packs uses :func:`pack_in_order`.
"""

from __future__ import annotations

import numpy as np


def pack_in_order(
    order: np.ndarray,
    gang: np.ndarray,
    gpus: int,
    *,
    backfill: bool = True,
    holds: np.ndarray | None = None,
) -> np.ndarray:
    """Scan job ids in ``order`` with ``gpus`` free and take each whose gang still fits.

    With ``backfill`` a job that does not fit is skipped and smaller ones behind it may run;
    without it, the scan stops at the first job that does not fit (strict order). ``holds``
    (bool per entry of ``order``) marks jobs that take their GPUs when the scan reaches them
    but do not run (the Gavel mechanism's unallocated jobs). ``gang`` is indexed by job id.
    Returns the ids taken, in scan order.
    """
    order = np.asarray(order, dtype=np.int64)
    if order.size == 0:
        return order
    sizes = gang[order]
    if holds is None and backfill:
        cumulative = sizes.cumsum()
        if cumulative[-1] <= gpus:  # everything fits: the common case, no Python loop
            return order
        head = int(cumulative.searchsorted(gpus, side="right"))  # fit in sequence
        free = gpus - (int(cumulative[head - 1]) if head else 0)
        if free == 0:
            return order[:head]
        return np.concatenate([order[:head], _scan(order[head:], sizes[head:], None, free, True)])
    return _scan(order, sizes, holds, gpus, backfill)


def _scan(order: np.ndarray, sizes: np.ndarray, holds: np.ndarray | None, free: int, backfill: bool) -> np.ndarray:
    chosen = []
    if holds is None and backfill:
        # the scan can stop once the free GPUs are fewer than any gang still to come
        smallest_left = np.minimum.accumulate(sizes[::-1])[::-1].tolist()
        for job_id, size, smallest in zip(order.tolist(), sizes.tolist(), smallest_left, strict=True):
            if free < smallest:
                break
            if size <= free:
                free -= size
                chosen.append(job_id)
        return np.asarray(chosen, dtype=np.int64)
    held = [False] * order.size if holds is None else np.asarray(holds, dtype=bool).tolist()
    for job_id, size, hold in zip(order.tolist(), sizes.tolist(), held, strict=True):
        if free == 0:
            break
        if size > free:
            if not backfill:
                break
            continue
        free -= size
        if not hold:
            chosen.append(job_id)
    return np.asarray(chosen, dtype=np.int64)
