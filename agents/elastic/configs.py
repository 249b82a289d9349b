"""What the elastic baselines share: each active job's configurations (type, count) with
the table's rate at its current batch size, its speedup over its reference count, and the
action that gives the chosen counts.

A job's *speedup* in a configuration is its rate there divided by its rate at its reference
count (its gang) on the reference V100 table at the same batch size
(``view.current_throughput``), the basis of its isolated time: the same unit for every job.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shockwave_gym.placement import Allocation
from shockwave_gym.view import ClusterView


@dataclass(frozen=True)
class Options:
    """The configurations of the active jobs: ``jobs[i]`` may run in configurations
    ``types[i][k], counts[i][k]`` at speedups ``speedup[i][k]`` (ascending count, then type)."""

    jobs: np.ndarray
    types: tuple[np.ndarray, ...]
    counts: tuple[np.ndarray, ...]
    speedup: tuple[np.ndarray, ...]
    capacity: np.ndarray  # (T,) GPUs per type


def options(view: ClusterView, jobs: np.ndarray | None = None) -> Options:
    """The configurations of ``jobs`` (default: the active jobs) in the view's state."""
    jobs = view.active_job_ids if jobs is None else np.asarray(jobs, dtype=np.int64)
    allowed, rates = view.count_allowed, view.throughput_by_count
    reference = view.current_throughput
    counts_axis = np.asarray(view.gpu_counts)
    types, counts, speedup = [], [], []
    for j in jobs.tolist():
        t, k = np.nonzero(allowed[j])
        order = np.lexsort((t, counts_axis[k]))
        types.append(t[order])
        counts.append(counts_axis[k][order])
        speedup.append(rates[j, t, k][order] / reference[j])
    return Options(jobs, tuple(types), tuple(counts), tuple(speedup), np.asarray(view.type_gpus, dtype=np.int64))


def allocation(jobs: list[int], types: list[int], counts: list[int]) -> Allocation:
    """The action giving job ``jobs[i]`` ``counts[i]`` GPUs of type ``types[i]``."""
    return Allocation(np.asarray(jobs, dtype=np.int64), np.asarray(counts, dtype=np.int64),
                      np.asarray(types, dtype=np.int64))


def smallest_fitting(opts: Options, i: int, free: np.ndarray) -> int | None:
    """Index of job ``i``'s configuration of the smallest count that fits ``free`` (the
    fastest type at that count), or None."""
    best = None
    for k in range(opts.counts[i].size):
        t, c = int(opts.types[i][k]), int(opts.counts[i][k])
        if c > free[t]:
            continue
        if best is None:
            best = k
        elif c == opts.counts[i][best] and opts.speedup[i][k] > opts.speedup[i][best]:
            best = k
        elif c > opts.counts[i][best]:
            break
    return best
