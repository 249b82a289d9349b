"""Small elastic instances and a brute-force search over their allocations (the elastic
baselines' optimality tests)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from shockwave_gym.config import SimConfig
from shockwave_gym.elastic import ElasticSimulator
from shockwave_gym.jobs import JobSpec


def elastic_view(jobs: list[tuple[str, int, int]], gpus: int = 0, cluster=None, throughputs=None):
    """The view at time 0 of elastic jobs ``(model, batch size, reference gang)``, each
    declaring counts 1, 2, 4, 8, all arrived at 0, static batch size, one epoch."""
    specs = [JobSpec(job_id=i, model=m, initial_batch_size=b, total_iterations=200_000, gang=g, mode="static",
                     arrival_s=0.0, gangs=(1, 2, 4, 8)) for i, (m, b, g) in enumerate(jobs)]
    config = SimConfig(cluster=cluster) if cluster is not None else SimConfig(gpus=gpus)
    return ElasticSimulator(specs, config, throughputs).view


def speedups(view) -> dict[int, dict[tuple[int, int], float]]:
    """Active job -> {(type, count): speedup over its reference count}."""
    out = {}
    for j in view.active_job_ids.tolist():
        t, k = np.nonzero(view.count_allowed[j])
        out[j] = {(int(a), view.gpu_counts[b]): float(view.throughput_by_count[j, a, b] / view.current_throughput[j])
                  for a, b in zip(t.tolist(), k.tolist(), strict=True)}
    return out


def allocations(view, *, everyone: bool = False):
    """Every feasible allocation {job: (type, count)} (a job may get nothing unless
    ``everyone``), as dicts."""
    options = speedups(view)
    jobs = sorted(options)
    capacity = np.asarray(view.type_gpus)
    choices = [([] if everyone else [None]) + sorted(options[j]) for j in jobs]
    for combo in itertools.product(*choices):
        used = np.zeros_like(capacity)
        for pick in combo:
            if pick is not None:
                used[pick[0]] += pick[1]
        if np.all(used <= capacity):
            yield {j: pick for j, pick in zip(jobs, combo, strict=True) if pick is not None}


def best(view, score, *, everyone: bool = False) -> tuple[float, dict]:
    """The largest ``score(allocation)`` over :func:`allocations`, and one allocation reaching it."""
    top, arg = -math.inf, None
    for alloc in allocations(view, everyone=everyone):
        value = score(alloc)
        if value > top + 1e-12:
            top, arg = value, alloc
    return top, arg


def as_dict(action) -> dict[int, tuple[int, int]]:
    """An :class:`~shockwave_gym.placement.Allocation` as {job: (type, count)}."""
    return {int(j): (int(t), int(c)) for j, t, c in
            zip(action.job_ids.tolist(), action.gpu_types.tolist(), action.counts.tolist(), strict=True)}
