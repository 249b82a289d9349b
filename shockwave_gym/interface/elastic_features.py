"""The observation's ``elastic`` entry: per slot, the GPU configurations its job may use and
the marginal throughput each adds per added GPU (docs/ENV.md, "Elastic jobs"). Present in
every observation version when the env's trace source has elastic jobs.

``C = len(view.gpu_counts)`` counts, ``T`` GPU types (1 on a homogeneous cluster), ``N = T *
C`` configurations, configuration ``n = t * C + k`` (``gpu_counts[k]`` GPUs of type ``t``, as
in :mod:`~shockwave_gym.interface.elastic_actions`). Row ``s`` (the job in slot ``s``; zeros
for an empty slot) holds ``2 N`` values; on one type (``n = k``) this is the one-type layout:

- ``allowed_n`` (``n < N``): 1 when the job may run in configuration ``n``, else 0;
- ``marginal_n``: at an allowed configuration, the speedup it adds per added GPU over the
  next smaller allowed count *of the same type* (over nothing for the type's smallest):
  ``(s_n - s_prev) / (c_n - c_prev)``, ``s`` the table's rate of type ``t`` at the job's
  current batch size over the job's reference rate (its gang on the reference V100 table,
  ``view.current_throughput``; one scale for every type), ``s_prev = c_prev = 0`` below the
  smallest; 0 at configurations it may not use. Negative where a larger count is slower.
  Clipped to ``[-MARGINAL_LIMIT, MARGINAL_LIMIT]``.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.interface.slots import SlotMap
from shockwave_gym.view import ClusterView

#: Bound of the marginal entries (a speedup per GPU beyond it is clipped).
MARGINAL_LIMIT = 8.0


def elastic_space(max_jobs: int, num_counts: int, num_types: int = 1):
    """The ``gymnasium.spaces.Box`` of :func:`elastic_features`."""
    from gymnasium import spaces

    num_configs = num_types * num_counts
    low = np.concatenate([np.zeros(num_configs), np.full(num_configs, -MARGINAL_LIMIT)]).astype(np.float32)
    high = np.concatenate([np.ones(num_configs), np.full(num_configs, MARGINAL_LIMIT)]).astype(np.float32)
    return spaces.Box(np.tile(low, (max_jobs, 1)), np.tile(high, (max_jobs, 1)), dtype=np.float32)


def elastic_features(view: ClusterView, slots: SlotMap) -> np.ndarray:
    """(max_jobs, 2 N) float32: see the module doc."""
    counts = np.asarray(view.gpu_counts, dtype=np.float64)
    allowed_all = view.count_allowed
    num_types, num_counts = allowed_all.shape[1], counts.size
    num_configs = num_types * num_counts
    out = np.zeros((slots.max_jobs, 2 * num_configs), dtype=np.float32)
    occupied = np.flatnonzero(slots.slot_job >= 0)
    if occupied.size == 0:
        return out
    jobs = slots.slot_job[occupied]
    allowed = allowed_all[jobs]
    speedup = view.throughput_by_count[jobs] / view.current_throughput[jobs, None, None]
    marginal = np.zeros_like(speedup)
    for row in range(jobs.size):
        for t in range(num_types):
            prev_c, prev_s = 0.0, 0.0
            for k in np.flatnonzero(allowed[row, t]).tolist():
                marginal[row, t, k] = (speedup[row, t, k] - prev_s) / (counts[k] - prev_c)
                prev_c, prev_s = counts[k], speedup[row, t, k]
    out[occupied, :num_configs] = allowed.reshape(jobs.size, num_configs)
    out[occupied, num_configs:] = np.clip(marginal.reshape(jobs.size, num_configs), -MARGINAL_LIMIT, MARGINAL_LIMIT)
    return out
