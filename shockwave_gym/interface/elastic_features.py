"""The observation's ``elastic`` entry: per slot, the GPU counts its job may use and the
marginal throughput each adds (docs/ENV.md, "Elastic jobs"). Present in every observation
version when the env's trace source has elastic jobs.

Row ``s`` (the job in slot ``s``; zeros for an empty slot) holds ``2 C`` values, ``C =
len(view.gpu_counts)``:

- ``allowed_k`` (``k < C``): 1 when the job may run on ``gpu_counts[k]`` GPUs, else 0;
- ``marginal_k``: at an allowed count, the speedup it adds per added GPU over the next
  smaller allowed count (over nothing for the smallest): ``(s_k - s_prev) / (c_k - c_prev)``,
  ``s`` the table's rate at the job's current batch size over its rate at its reference
  count (the gang), ``s_prev = c_prev = 0`` below the smallest; 0 at counts it may not use.
  Negative where a larger count is slower. Clipped to ``[-MARGINAL_LIMIT, MARGINAL_LIMIT]``.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.view import ClusterView

#: Bound of the marginal entries (a speedup per GPU beyond it is clipped).
MARGINAL_LIMIT = 8.0


def elastic_space(max_jobs: int, num_counts: int):
    """The ``gymnasium.spaces.Box`` of :func:`elastic_features`."""
    from gymnasium import spaces

    low = np.concatenate([np.zeros(num_counts), np.full(num_counts, -MARGINAL_LIMIT)]).astype(np.float32)
    high = np.concatenate([np.ones(num_counts), np.full(num_counts, MARGINAL_LIMIT)]).astype(np.float32)
    return spaces.Box(np.tile(low, (max_jobs, 1)), np.tile(high, (max_jobs, 1)), dtype=np.float32)


def elastic_features(view: ClusterView, slots: SlotMap) -> np.ndarray:
    """(max_jobs, 2 C) float32: see the module doc."""
    counts = np.asarray(view.gpu_counts, dtype=np.float64)
    num_counts = counts.size
    out = np.zeros((slots.max_jobs, 2 * num_counts), dtype=np.float32)
    occupied = np.flatnonzero(slots.slot_job >= 0)
    if occupied.size == 0:
        return out
    jobs = slots.slot_job[occupied]
    allowed = view.count_allowed[jobs, 0, :]
    speedup = view.throughput_by_count[jobs, 0, :] / view.current_throughput[jobs, None]
    marginal = np.zeros_like(speedup)
    for row in range(jobs.size):
        prev_c, prev_s = 0.0, 0.0
        for k in np.flatnonzero(allowed[row]).tolist():
            marginal[row, k] = (speedup[row, k] - prev_s) / (counts[k] - prev_c)
            prev_c, prev_s = counts[k], speedup[row, k]
    out[occupied, :num_counts] = allowed
    out[occupied, num_counts:] = np.clip(marginal, -MARGINAL_LIMIT, MARGINAL_LIMIT)
    return out
