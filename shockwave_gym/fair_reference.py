"""The fair-share reference: each job's finish time under an exact, fluid equal share of the
cluster, independent of any scheduling policy (docs/METRICS.md, "The fair-share reference").

At every instant each active (arrived, unfinished) job ``j`` holds ``s_j = min(g_j, lam)``
GPUs, the water level ``lam`` chosen so that ``sum_j s_j = min(G, sum_j g_j)`` (water-filling:
a job never holds more GPUs than its gang, and what small gangs leave goes to larger ones).
The job progresses at ``s_j / g_j`` of its isolated rate; there are no rounds and no restart
cost. ``T_fair_j`` = its completion there - its arrival, and the new fairness measure is
``rho_j = JCT_j / T_fair_j`` with JCT from arrival.

Progress is measured in *reference work* ``W_j``: the isolated time on a homogeneous cluster;
on a heterogeneous cluster the equal-share work of :func:`typed_reference_work_s`. A job at full
share (``s_j = g_j``) does one second of reference work per second, so ``W_j`` at share
``f`` takes ``W_j / f`` seconds.

Event-driven and exact: between two events (an arrival or a reference completion) the active
set, ``lam`` and every job's rate are constant. Jobs of one gang size share one rate, so each
gang size keeps a virtual clock (reference work a job of that size has done since time 0 if it
had been active throughout) and a heap of its jobs' finish marks on that clock. Each event costs
``O(K + log N)`` with ``K`` the number of distinct gang sizes (``K <= G``), so the whole
reference ``O(events x (K + log N))``. Completions within 1 ns of each other are one event.
"""

from __future__ import annotations

import hashlib
import heapq
import math
from collections import OrderedDict

import numpy as np

_TIE_S = 1e-9  # completions this close to the event time are taken at the event
_CACHE: OrderedDict[str, np.ndarray] = OrderedDict()
_CACHE_SIZE = 64


def water_level(gang_sizes, counts, gpus: float) -> float:
    """``lam`` with ``sum_k counts_k x min(gang_k, lam) = min(G, sum_k counts_k x gang_k)``;
    ``inf`` when every active job fits at once. ``gang_sizes`` ascending, ``counts`` > 0."""
    demand = sum(g * c for g, c in zip(gang_sizes, counts, strict=True))
    if demand <= gpus:
        return math.inf
    capacity, remaining = float(gpus), sum(counts)
    for g, c in zip(gang_sizes, counts, strict=True):
        if g * remaining <= capacity:  # g <= capacity / remaining: this size runs in full
            capacity -= g * c
            remaining -= c
        else:
            return capacity / remaining
    return math.inf  # not reached when demand > gpus


def fluid_shares(gang: np.ndarray, gpus: float) -> np.ndarray:
    """GPUs ``s_j = min(g_j, lam)`` each job of ``gang`` (the active jobs) holds under water-filling."""
    gang = np.asarray(gang)
    if gang.size == 0:
        return np.zeros(0)
    sizes, counts = np.unique(gang, return_counts=True)
    lam = water_level(sizes.tolist(), counts.tolist(), gpus)
    return np.minimum(gang.astype(np.float64), lam)


def fluid_completion_s(arrival_s: np.ndarray, gang: np.ndarray, work_s: np.ndarray, gpus: int) -> np.ndarray:
    """Each job's completion time in the fluid equal-share schedule (see the module doc).

    ``work_s`` is the reference work (seconds at full share); a job with non-finite work never
    completes (``inf``) and holds its share forever after arriving."""
    arrival = np.asarray(arrival_s, dtype=np.float64)
    gangs = np.asarray(gang, dtype=np.int64)
    work = np.asarray(work_s, dtype=np.float64)
    n = arrival.size
    completion = np.full(n, math.inf)
    order = np.argsort(arrival, kind="stable").tolist()
    clock: dict[int, float] = {}  # gang size -> virtual clock (reference work per job so far)
    heaps: dict[int, list[tuple[float, int]]] = {}
    t, i = 0.0, 0
    while i < n or heaps:
        if not heaps:  # idle until the next arrival
            t = max(t, float(arrival[order[i]]))
        while i < n and arrival[order[i]] <= t:  # admit every arrival up to now
            j = order[i]
            g = int(gangs[j])
            if g not in heaps:
                heaps[g], clock[g] = [], 0.0
            heapq.heappush(heaps[g], (clock[g] + float(work[j]), j))
            i += 1
        sizes = sorted(heaps)
        lam = water_level(sizes, [len(heaps[g]) for g in sizes], gpus)
        rate = {g: (1.0 if g <= lam else lam / g) for g in sizes}
        step = min((heaps[g][0][0] - clock[g]) / rate[g] for g in sizes)
        next_arrival = float(arrival[order[i]]) if i < n else math.inf
        if not math.isfinite(step) and not math.isfinite(next_arrival):
            break  # only jobs that never finish are left
        if t + step > next_arrival:  # an arrival comes first
            dt = next_arrival - t
            t = next_arrival
            for g in sizes:
                clock[g] += rate[g] * dt
            continue
        step = max(step, 0.0)
        t += step
        for g in sizes:
            clock[g] += rate[g] * step
            heap = heaps[g]
            while heap and (heap[0][0] - clock[g]) / rate[g] <= _TIE_S:
                completion[heapq.heappop(heap)[1]] = t
            if not heap:
                del heaps[g], clock[g]
    return completion


def reference_digest(arrival_s: np.ndarray, gang: np.ndarray, work_s: np.ndarray, gpus: int) -> str:
    """Cache key: the facts the trace, the cluster and the throughput table fix for the reference."""
    h = hashlib.sha256()
    for array, dtype in ((arrival_s, np.float64), (gang, np.int64), (work_s, np.float64)):
        h.update(np.ascontiguousarray(array, dtype=dtype).tobytes())
        h.update(b"|")
    h.update(str(int(gpus)).encode())
    return h.hexdigest()


def fair_time_s(arrival_s: np.ndarray, gang: np.ndarray, work_s: np.ndarray, gpus: int) -> np.ndarray:
    """``T_fair_j`` = fluid completion - arrival, computed once per (trace, cluster, table)
    in a process (a small least-recently-used cache keyed by :func:`reference_digest`)."""
    key = reference_digest(arrival_s, gang, work_s, gpus)
    cached = _CACHE.get(key)
    if cached is None:
        cached = fluid_completion_s(arrival_s, gang, work_s, gpus) - np.asarray(arrival_s, dtype=np.float64)
        cached.setflags(write=False)
        _CACHE[key] = cached
        if len(_CACHE) > _CACHE_SIZE:
            _CACHE.popitem(last=False)
    else:
        _CACHE.move_to_end(key)
    return cached


def typed_reference_work_s(static, typed) -> np.ndarray:
    """Reference work on a heterogeneous cluster (``static``: the simulator's
    :class:`~shockwave_gym.state.StaticJobArrays`, ``typed`` its
    :class:`~shockwave_gym.hetero_state.TypedJobArrays`).

    Job ``j`` at full share runs epoch ``e`` at ``sum_t w_jt r_jt(b_e)`` iterations per second,
    ``r_jt`` the gang's throughput on type ``t`` at the epoch's batch size and
    ``w_jt = G_t / sum_{u in E_j} G_u`` over the types ``E_j`` it can use (a positive rate for
    every reachable batch size and ``G_t >= g_j``; other types get weight 0). So
    ``W_j = sum_e (dataset_j / b_e) / sum_t w_jt r_jt(b_e)``: a batch-size change moves the
    rate with the epoch. A job no type can hold gets ``inf``. On a cluster of one type whose
    table is the reference's this is the isolated time bit for bit (same expression)."""
    eligible = typed.runnable & (static.gang[:, None] <= typed.capacity[None, :])
    capacity = typed.capacity.astype(np.float64)
    pool = (eligible * capacity[None, :]).sum(axis=1)
    counts = static.num_epochs
    job_of_epoch = np.repeat(np.arange(static.arrival_s.size), counts)
    rates = typed.epoch_rate
    if capacity.size == 1:
        weight = np.where(pool > 0, capacity[0] / np.where(pool > 0, pool, 1.0), 0.0)
        mix = rates[:, 0] * weight[job_of_epoch]
    else:
        weights = np.where(eligible, capacity[None, :], 0.0) / np.where(pool > 0, pool, 1.0)[:, None]
        mix = np.einsum("ft,ft->f", rates, weights[job_of_epoch])
    dataset = np.array([spec.dataset_size for spec in static.specs], dtype=np.int64)[job_of_epoch]
    with np.errstate(divide="ignore"):
        durations = (dataset / static.epoch_batch_size) / mix
    work = np.empty(static.arrival_s.size)
    for j in range(work.size):
        lo, hi = static.epoch_offset[j], static.epoch_offset[j + 1]
        work[j] = np.cumsum(durations[lo:hi])[-1] if pool[j] > 0 else math.inf
    return work
