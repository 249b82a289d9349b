"""Per-GPU-type static arrays of a heterogeneous run, and the map between V100 work and
time on a type (docs/HETEROGENEOUS.md, "Progress on a type").

Progress stays in isolated seconds of reference (V100) work, as on the homogeneous path
(:mod:`shockwave_gym.state`). On type ``t`` a job's epoch ``e`` lasts
``d_t[e] = (dataset / b_e) / rate_t(b_e, gang)`` seconds instead of the reference ``d[e]``,
so inside epoch ``e`` the map between reference work ``w`` and type-``t`` time ``tau`` is the
straight line through the epoch's start and end on both scales:

    tau = S_t[e] + (w - S[e]) * d_t[e] / d[e],      w = S[e] + (tau - S_t[e]) * d[e] / d_t[e],

``S``/``S_t`` the epoch's start (cumulative durations) on each scale. When a job's type-``t``
epoch durations equal the reference's bit for bit (a V100 on a V100 table), the map is the
identity (``tau = w``, no arithmetic), so a V100-only heterogeneous run repeats the
homogeneous one exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.state import EPOCH_END_SLACK_S, StaticJobArrays
from shockwave_gym.throughput import TypedThroughputs


@dataclass
class TypedJobArrays:
    """Static per-type arrays: ``T`` = the cluster's types, ``F`` = flat epochs of all jobs."""

    cluster: ClusterSpec
    capacity: np.ndarray  # (T,) GPUs per type
    runnable: np.ndarray  # (J, T): the type's table has a positive rate for every reachable size
    epoch_rate: np.ndarray  # (F, T) iterations/s of the gang at each epoch's batch size (0: cannot run)
    epoch_duration_s: np.ndarray  # (F, T) epoch durations on each type (inf: cannot run)
    epoch_start_s: np.ndarray  # (F, T) epoch starts within the job on each type's scale
    epoch_end_global_s: np.ndarray  # (F, T) epoch ends + per-type job base offsets (finite everywhere)
    job_base_s: np.ndarray  # (J, T)
    isolated_time_s: np.ndarray  # (J, T) the whole job alone on the type (inf: cannot run)
    identity: np.ndarray  # (J, T): the type's durations equal the reference's exactly
    fair_isolated_time_s: np.ndarray  # (J,) equal-share isolated time (metrics' FTF basis)

    def to_type_time(self, static: StaticJobArrays, ids, types, work_s, epoch_pos):
        """(type-time done, type-time total) of jobs ``ids`` at reference work ``work_s`` on
        type indices ``types``; ``epoch_pos`` is each job's first epoch not completed (flat)."""
        tau = work_s.copy()
        total = static.isolated_time_s[ids].copy()
        mapped = ~self.identity[ids, types]
        if mapped.any():
            j, t = ids[mapped], types[mapped]
            e = np.minimum(epoch_pos[mapped], static.last_epoch_index[j])
            ratio = self.epoch_duration_s[e, t] / static.epoch_duration_s[e]
            tau[mapped] = self.epoch_start_s[e, t] + (work_s[mapped] - static.epoch_start_within_s[e]) * ratio
            total[mapped] = self.isolated_time_s[j, t]
        return tau, total

    def to_reference_work(self, static: StaticJobArrays, ids, types, tau_s):
        """Inverse of :meth:`to_type_time`: reference work at type-time ``tau_s``."""
        work = tau_s.copy()
        mapped = ~self.identity[ids, types]
        if mapped.any():
            j, t = ids[mapped], types[mapped]
            query = self.job_base_s[j, t] + tau_s[mapped] + EPOCH_END_SLACK_S
            # per-type columns are each sorted (bases are cumulative), so search per type
            e = np.empty(j.size, dtype=np.int64)
            for col in np.unique(t).tolist():
                sel = t == col
                e[sel] = self.epoch_end_global_s[:, col].searchsorted(query[sel], side="right")
            e = np.clip(e, static.first_epoch_index[j], static.last_epoch_index[j])
            ratio = static.epoch_duration_s[e] / self.epoch_duration_s[e, t]
            w = static.epoch_start_within_s[e] + (tau_s[mapped] - self.epoch_start_s[e, t]) * ratio
            work[mapped] = np.minimum(w, static.isolated_time_s[j])
        return work


def equal_share_weights(cluster: ClusterSpec) -> np.ndarray:
    """``w_t = count_t / total``: the share of a job's running time spent on each type when
    its fair share is the same fraction of every type (docs/HETEROGENEOUS.md, "Metrics")."""
    counts = np.asarray(cluster.counts, dtype=np.float64)
    return counts / float(cluster.total)


def build_typed_arrays(static: StaticJobArrays, cluster: ClusterSpec, throughputs: TypedThroughputs) -> TypedJobArrays:
    """Derive every job's per-type epoch rates and durations (same expression as
    :func:`~shockwave_gym.profile.job_profile`, so the reference type repeats it exactly)."""
    columns = [(throughputs.table(name), None) for name in cluster.types]
    rates, durations, runnable, identity = column_rates_and_durations(static, columns)
    job_of_epoch = np.repeat(np.arange(static.arrival_s.size), static.num_epochs)
    return TypedJobArrays(
        cluster=cluster,
        capacity=np.asarray(cluster.counts, dtype=np.int64),
        runnable=runnable,
        epoch_rate=rates,
        identity=identity,
        fair_isolated_time_s=_fair_isolated_time(static, cluster, rates, job_of_epoch),
        **cumulate_columns(static, durations, runnable),
    )


def cumulate_columns(static: StaticJobArrays, durations: np.ndarray, runnable: np.ndarray) -> dict:
    """The cumulative fields of :class:`TypedJobArrays` from (F, C) epoch durations per
    column and (J, C) runnable flags: epoch starts within each job, per-column job bases,
    the global epoch ends, and isolated times (``inf`` where a job cannot use the column)."""
    num_jobs, num_columns = static.arrival_s.size, durations.shape[1]
    starts = np.empty_like(durations)
    ends = np.empty_like(durations)
    iso = np.empty((num_jobs, num_columns))
    for j in range(num_jobs):
        lo, hi = static.epoch_offset[j], static.epoch_offset[j + 1]
        within = np.cumsum(durations[lo:hi], axis=0)
        ends[lo:hi] = within
        starts[lo:hi] = within - durations[lo:hi]
        iso[j] = within[-1]
    base = np.zeros((num_jobs, num_columns))
    if num_jobs:
        base[1:] = np.cumsum(iso, axis=0)[:-1]
    job_of_epoch = np.repeat(np.arange(num_jobs), static.num_epochs)
    return dict(
        epoch_duration_s=np.where(np.repeat(runnable, static.num_epochs, axis=0), durations, np.inf),
        epoch_start_s=starts,
        epoch_end_global_s=ends + base[job_of_epoch],
        job_base_s=base,
        isolated_time_s=np.where(runnable, iso, np.inf),
    )


def column_rates_and_durations(static: StaticJobArrays, columns):
    """``(rates, durations, runnable, identity)`` over ``columns``, each a ``(table, count)``
    pair (``count`` None: each job's own gang): (F, C) epoch rates and durations in each
    column (a column the job cannot use keeps the reference durations as a placeholder), and
    (J, C) whether the job can run there (a positive rate for every reachable size; with a
    count, also a count the job may take: an elastic job's declared counts, a rigid job's
    gang) and whether its durations there equal the reference's bit for bit."""
    num_jobs, num_columns = static.arrival_s.size, len(columns)
    flat = static.epoch_batch_size.size
    rates = np.zeros((flat, num_columns))
    durations = np.empty((flat, num_columns))
    runnable = np.zeros((num_jobs, num_columns), dtype=bool)
    identity = np.zeros((num_jobs, num_columns), dtype=bool)
    for t, (table, count) in enumerate(columns):
        for j, spec in enumerate(static.specs):
            lo, hi = static.epoch_offset[j], static.epoch_offset[j + 1]
            gang = spec.gang if count is None else count
            reachable = static.reachable_sizes[j][static.reachable_valid[j]].tolist()
            declared = count is None or count in (spec.gangs or (spec.gang,))
            ok = declared and all(table.has(spec.model, b, gang) for b in reachable)
            runnable[j, t] = ok
            reference = static.epoch_duration_s[lo:hi]
            if not ok:
                durations[lo:hi, t] = reference  # placeholder keeping the cumulative sums finite
                continue
            sizes = static.epoch_batch_size[lo:hi]
            rate_of = {b: table.rate(spec.model, b, gang) for b in np.unique(sizes).tolist()}
            job_rates = np.array([rate_of[b] for b in sizes.tolist()], dtype=np.float64)
            rates[lo:hi, t] = job_rates
            durations[lo:hi, t] = (spec.dataset_size / sizes) / job_rates
            identity[j, t] = np.array_equal(durations[lo:hi, t], reference)
    return rates, durations, runnable, identity


def _fair_isolated_time(static: StaticJobArrays, cluster: ClusterSpec, rates: np.ndarray, job_of_epoch) -> np.ndarray:
    """Isolated time at the equal-share rate: epoch ``e`` runs at ``sum_t w_t rate_t(b_e)``
    (``w`` from :func:`equal_share_weights`; a type the job cannot use contributes 0), i.e.
    ``iso_fair = sum_e (dataset / b_e) / sum_t w_t rate_t(b_e)``. One type of weight 1 gives
    back the reference isolated time bit for bit when its table is the reference's."""
    weights = equal_share_weights(cluster)
    if cluster.num_types == 1:
        mix = rates[:, 0] * weights[0]
    else:
        mix = rates @ weights
    sizes = static.epoch_batch_size
    dataset = np.array([spec.dataset_size for spec in static.specs], dtype=np.int64)[job_of_epoch]
    with np.errstate(divide="ignore"):
        durations = (dataset / sizes) / mix
    fair = np.empty(static.arrival_s.size)
    for j in range(fair.size):
        lo, hi = static.epoch_offset[j], static.epoch_offset[j + 1]
        fair[j] = np.cumsum(durations[lo:hi])[-1]
    return fair
