"""The constraint blocks every per-type allocation LP shares (Gavel, MST, OSSP over types).

Variables are ``X[j, t]`` flattened row-major (job ``j``, type ``t`` at ``j * T + t``),
optionally followed by ``extra`` columns of the program's own (a level, a rate scale). The
blocks are the feasibility of a per-type allocation (docs/HETEROGENEOUS.md, "Agents"):

- capacity, one row per type: ``sum_j gang_j X[j, t] <= G_t``;
- time, one row per job: ``sum_t X[j, t] <= 1``;
- bounds ``0 <= X[j, t] <= 1``, and ``X[j, t] = 0`` where the job cannot run on ``t``
  (throughput 0); extra columns get ``(0, None)``.
"""

from __future__ import annotations

import numpy as np


def typed_blocks(throughput: np.ndarray, gang: np.ndarray, extra: int = 0):
    """``(capacity (T, n), time (m, n), bounds)`` with ``n = m * T + extra`` columns, for
    ``throughput`` (m, T) and ``gang`` (m,)."""
    m, num_types = throughput.shape
    width = m * num_types
    n = width + extra
    capacity = np.zeros((num_types, n))
    for t in range(num_types):
        capacity[t, t:width:num_types] = gang
    time = np.zeros((m, n))
    for j in range(m):
        time[j, j * num_types:(j + 1) * num_types] = 1.0
    bounds = [(0.0, 1.0 if rate > 0 else 0.0) for rate in throughput.ravel()] + [(0.0, None)] * extra
    return capacity, time, bounds
