"""Packing for K clusters at once: :func:`~shockwave_gym.interface.packing.pack_in_order`'s
rule (scan in order, take every job whose gang still fits, smaller ones backfill).

The longest prefix that fits is taken with one cumulative sum; after it, at most "free GPUs"
more jobs can fit, so the backfill takes the first job that fits, once per free GPU at most.
A job skipped once never fits later (the free count only falls), so the first fitting job
not yet taken is exactly the next job the sequential scan would take.
"""

from __future__ import annotations

import numpy as np


def pack_rows(gang_in_order: np.ndarray, candidate: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """(K, L) bool: which candidates the scan takes. ``gang_in_order`` (K, L) holds each
    entry's gang in scan order; ``candidate`` (K, L) marks real entries; ``gpus`` (K,)."""
    gang = np.where(candidate, gang_in_order, 0)
    taken = candidate & (np.cumsum(gang, axis=1) <= gpus[:, None])
    free = gpus - (gang * taken).sum(axis=1)
    rest = candidate & ~taken
    while True:
        fits = rest & (gang <= free[:, None])
        rows = np.flatnonzero(fits.any(axis=1))
        if rows.size == 0:
            return taken
        first = np.argmax(fits[rows], axis=1)
        taken[rows, first] = True
        rest[rows, first] = False
        free[rows] -= gang[rows, first]
