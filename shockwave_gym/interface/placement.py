"""Packing on a heterogeneous cluster: the default placement rule, from the agents' side.

:func:`pack_typed_in_order` runs the simulator's default rule
(:func:`shockwave_gym.placement.place_in_order`: in order, each job on the fastest type that
has room for its whole gang) over a view, skipping jobs that fit no type, so an agent can
return ids (or the :class:`~shockwave_gym.placement.Placement`) that will be placed exactly
as it planned. :func:`pack_for_cluster` is the agents' one call: the homogeneous packing on a
one-type cluster, the typed one otherwise. docs/HETEROGENEOUS.md, "Placement".
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.interface.packing import pack_in_order
from shockwave_gym.placement import Placement, place_in_order


def pack_typed_in_order(order: np.ndarray, view, *, backfill: bool = True, holds: np.ndarray | None = None) -> Placement:
    """The default rule over ``order`` on ``view``'s cluster, skipping jobs that fit no type
    (``backfill``) or stopping at the first (``backfill=False``); ``holds`` as in
    :func:`~shockwave_gym.interface.packing.pack_in_order`. Returns the placed jobs in scan order."""
    return place_in_order(
        order, view.gang, view.throughput_by_type, view.runnable, view.type_gpus,
        backfill=backfill, holds=holds,
    )


def pack_for_cluster(order: np.ndarray, view, *, backfill: bool = True, holds: np.ndarray | None = None) -> np.ndarray:
    """Job ids to run, in scan order: :func:`pack_in_order` on ``view.gpus`` when the cluster
    has one type (exactly the homogeneous packing), else the ids :func:`pack_typed_in_order`
    places (the simulator's default rule then puts each on the type planned here). A
    view-like object without ``cluster`` (a test double) counts as homogeneous."""
    cluster = getattr(view, "cluster", None)
    if cluster is None or cluster.is_homogeneous:
        return pack_in_order(order, view.gang, view.gpus, backfill=backfill, holds=holds)
    return pack_typed_in_order(order, view, backfill=backfill, holds=holds).job_ids


def equal_share_fractions(view, job_ids: np.ndarray) -> np.ndarray:
    """(m, T) time shares ``f[j, t]`` of the equal share (see :func:`equal_share_throughput`):
    ``G_t / (m g_j)``, scaled so that each row sums to at most 1."""
    job_ids = np.asarray(job_ids, dtype=np.int64)
    counts = np.asarray(view.type_gpus, dtype=np.float64)
    if job_ids.size == 0:
        return np.zeros((0, counts.size))
    gang = np.asarray(view.gang[job_ids], dtype=np.float64)
    shares = counts[None, :] / (job_ids.size * gang[:, None])
    return shares / np.maximum(shares.sum(axis=1), 1.0)[:, None]


def equal_share_throughput(view, job_ids: np.ndarray) -> np.ndarray:
    """Each job's throughput under its equal share of every type (Gavel's fairness reference):
    with ``m = len(job_ids)`` jobs, a job of gang ``g`` gets ``G_t / m`` GPUs of type ``t``,
    i.e. the time share ``f_t = G_t / (m g)`` on ``t``, scaled down to a total of 1 when the
    shares add up to more; the rate is ``sum_t f_t x rate_t`` (iterations/s at the current
    batch size, 0 on a type the job cannot use). docs/HETEROGENEOUS.md, "Agents"."""
    job_ids = np.asarray(job_ids, dtype=np.int64)
    if job_ids.size == 0:
        return np.zeros(0)
    rates = np.where(view.runnable[job_ids], view.throughput_by_type[job_ids], 0.0)
    return (equal_share_fractions(view, job_ids) * rates).sum(axis=1)
