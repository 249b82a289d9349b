"""The pure-numpy twins of :mod:`shockwave_gym.env.vector.jit`'s per-step loops.

Same signatures, same outputs bit for bit (entries no reward or observation reads may
differ); used when numba is not installed or with ``compiled=False``. Each function does
the numpy path's whole-batch array operations, in the single env's order.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.batch.bank import PACKED_COUNTS
from shockwave_gym.state import ACTIVE, DONE


def derive_rows(sim, prior, duration_at, est):
    """ClusterView._derived, RemainingTimePredictor.remaining_s and ftf_estimate for all jobs
    of the simulator's arrays ``sim`` (SimArrays) into ``est`` (Estimates), with the
    predictor's per-cluster ``prior`` and ``duration_at`` (BatchPredictor)."""
    pos, seg_end, first, num_epochs, work, status = sim.pos, sim.seg_end, sim.first, sim.num_epochs, sim.work_done_s, sim.status
    packed, time_s, arrival, gpus = sim.packed, sim.time_s, sim.arrival_s, sim.gpus
    progress_out, remaining_out, rho_out, mean_out, batch_out, rate_out, num_active_out = est[:7]
    num_active_out[:] = np.count_nonzero(status == ACTIVE, axis=1)
    current = np.maximum(np.minimum(pos, seg_end - 1), 0)
    done = np.minimum(pos - first, num_epochs)
    now = packed[current]
    last = packed[np.maximum(pos - 1, 0)]  # the last completed epoch, when there is one
    duration = now[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):
        fraction = (work - now[..., 1]) / duration
        np.clip(fraction, 0.0, 1.0, out=fraction)
        fraction[status == DONE] = 1.0
        progress_out[:] = (current - first) + fraction
        batch_out[:] = now[..., 3]
        rate_out[:] = now[..., 2]
        completed = done > 0
        mean_out[:] = np.where(completed, last[..., 4] / np.maximum(done, 1), duration)
        weights = prior + np.where(completed[..., None], last[..., PACKED_COUNTS:], 0.0)
        expected = (weights * duration_at).sum(axis=2) / weights.sum(axis=2)
        future = np.maximum(num_epochs - done - 1, 0)
        remaining_out[:] = (1.0 - fraction) * duration + future * expected
        c = np.maximum(1.0, num_active_out / gpus)[:, None]
        age = time_s[:, None] - arrival
        rho_out[:] = (age + c * remaining_out) / np.maximum(c * (work + remaining_out), 1e-9)


def slot_raw_features(sim, est, slot_job, scale_in, raw_out):
    """(features, occupied slots), row-major slot order, up to the logarithms."""
    gang, gpus, num_epochs, initial, round_s = sim.gang, sim.gpus, sim.num_epochs, sim.initial_batch_size, sim.round_s
    time_s, arrival, run_time, ran_last = sim.time_s, sim.arrival_s, sim.run_time_s, sim.ran_last_round
    progress, batch, rate, mean, remaining, rho = est.progress, est.batch, est.rate, est.mean, est.remaining, est.rho
    r, s = np.nonzero(slot_job >= 0)
    j = slot_job[r, s]
    b = batch[r, j]
    raw_out[0] = gang[r, j] / gpus[r]
    raw_out[1] = progress[r, j] / num_epochs[r, j]
    raw_out[2] = b / initial[r, j]
    before_log = (
        rate[r, j] * b,
        mean[r, j] / round_s[r],
        remaining[r, j],
        time_s[r] - arrival[r, j],
        run_time[r, j] * gang[r, j],
        ran_last[r, j].astype(np.float64),
        rho[r, j],
    )
    for row, value in enumerate(before_log):
        raw_out[3 + row] = np.maximum(value * scale_in[row], 0.0)


def scatter_slot_features(slot_job, logged, scale_out, low, high, out):
    """(K, slots, features) float32 from the logarithms: scales, clipping, empty slots 0."""
    values = logged.copy()
    values[2] *= 0.25
    values[3:] *= scale_out[:, None]
    clipped = np.maximum(np.minimum(values, high[:, None]), low[:, None])
    out[...] = 0.0
    r, s = np.nonzero(slot_job >= 0)
    out[r, s] = clipped.T


def slot_raw_features_v2(sim, est, slot_job, type_table, scale_in, raw_out):
    """(features, occupied slots), row-major slot order, up to the logarithms; the per-type
    rates from ``type_table`` (BatchTypeTable)."""
    gang, gpus, num_epochs, initial = sim.gang, sim.gpus, sim.num_epochs, sim.initial_batch_size
    time_s, arrival, run_time, ran_last = sim.time_s, sim.arrival_s, sim.run_time_s, sim.ran_last_round
    progress, batch, rate, mean, remaining, rho = est.progress, est.batch, est.rate, est.mean, est.remaining, est.rho
    type_sizes, type_rel = type_table.sizes, type_table.relative
    r, s = np.nonzero(slot_job >= 0)
    j = slot_job[r, s]
    b = batch[r, j]
    raw_out[0] = gang[r, j] / gpus[r]
    raw_out[1] = progress[r, j] / num_epochs[r, j]
    raw_out[2] = gang[r, j]
    raw_out[3] = b / initial[r, j]
    before_log = (
        rate[r, j] * b,
        mean[r, j],
        remaining[r, j],
        time_s[r] - arrival[r, j],
        run_time[r, j] * gang[r, j],
        ran_last[r, j].astype(np.float64),
        rho[r, j],
    )
    for row, value in enumerate(before_log):
        raw_out[4 + row] = np.maximum(value * scale_in[row], 0.0)
    match = type_sizes[r, j] == b[:, None]
    at = match.argmax(axis=1)
    raw_out[11:] = (type_rel[r, j, at] * match[np.arange(at.size), at][:, None]).T


def scatter_scaled(slot_job, logged, scale_out, low, high, out):
    """(K, slots, features) float32 from the logarithms: scales, clipping, empty slots 0."""
    values = logged * scale_out[:, None]
    clipped = np.maximum(np.minimum(values, high[:, None]), low[:, None])
    out[...] = 0.0
    r, s = np.nonzero(slot_job >= 0)
    out[r, s] = clipped.T


def themis_rho(arrival, completion, work, num_jobs, gpus, completed, out):
    """rho of every job in ``completed`` (rewards.themis_rho), 0 elsewhere."""
    from shockwave_gym.env.rewards import jobs_in_system_integral_s

    out[...] = 0.0
    for k, j in zip(*np.nonzero(completed), strict=True):
        n = num_jobs[k]
        a, c = float(arrival[k, j]), float(completion[k, j])
        life = c - a
        area = jobs_in_system_integral_s(arrival[k, :n], completion[k, :n], a, c)
        contention = area / life if life > 0 else 1.0
        out[k, j] = life / (float(work[k, j]) * max(1.0, contention / gpus[k]))
