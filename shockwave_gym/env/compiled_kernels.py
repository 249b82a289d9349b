"""The single env's compiled kernels (numba) over one state struct, compiled_state.SingleState.

:func:`round_step` does what a step of the Python path does between the action and the
observation's logarithms, as a chain of kernels each reading the struct by name: decode the
action (:func:`decode`: PriorityMode / SelectMode and pack_in_order), run the round on the
:class:`~shockwave_gym.simulator.Simulator`'s own arrays (:func:`run_round`:
Simulator.run_round, in place), admit arrivals (:func:`admit`), pay the reward
(:func:`reward`: rewards.WeightedReward of the built-in terms), seat jobs (:func:`seat`:
SlotMap.update, on the env's slot map's arrays), derive each slotted job's observed
quantities, predicted remaining time and rho-hat and its raw version 2 features
(:func:`slot_features`: StaticJobArrays.state_rows, RemainingTimePredictor.remaining_s,
ftf_estimate, JobFeaturesV2.fill) and the cluster features (:func:`cluster_features`).
Every value is computed by the same float64 operations as on the Python path, in the same
order, bit for bit:

* sums that numpy computes pairwise (the jobs-in-system integral, ftf_excess) use
  :func:`shockwave_gym.batch.jit.pairwise_sum`; the predictor's sum over reachable batch
  sizes is sequential, which is numpy's order for rows shorter than 8 (the path is only
  taken for traces whose jobs reach fewer than 8 sizes);
* no fast-math; the cluster features use ``math.log2``/``math.log1p`` as the Python path.

The struct's fields are defined in :mod:`shockwave_gym.env.compiled_state`. Only imported
when numba is installed (:mod:`shockwave_gym.env.compiled` checks).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from shockwave_gym.batch import jit as core_jit
from shockwave_gym.env.compiled_state import FTF, GIVEN, JCT, MAKESPAN, NOOP, PRIORITY, SELECT
from shockwave_gym.state import ACTIVE, DONE

#: Slots of the integer / float outputs.
I_BAD, I_REPAIRS, I_COUNT, I_FINISHED, I_BUSY, I_NEXT, I_DONE, I_QUEUE, I_DEMAND, I_ACTIVE = range(10)
F_START, F_END, F_TIME, F_REWARD = range(4)


_jit = numba.njit(cache=True, error_model="numpy", nogil=True)
_inline = numba.njit(cache=True, error_model="numpy", nogil=True, inline="always")
_pairwise_sum = core_jit.pairwise_sum


@_inline
def _area(arrival, completion, n, start, end, buffer):
    """rewards.jobs_in_system_integral_s: the arrived jobs' overlaps, summed as numpy."""
    arrived = 0
    while arrived < n and arrival[arrived] < end:  # searchsorted(end, side="left")
        arrived += 1
    for i in range(arrived):
        c = completion[i]
        overlap = c if c < end else end  # fmin: NaN (unfinished) -> end
        if c != c:
            overlap = end
        a = arrival[i]
        overlap -= a if a > start else start  # np.maximum: the second on ties
        buffer[i] = overlap if not overlap <= 0.0 else 0.0  # np.maximum(overlap, 0): NaN passes
    return _pairwise_sum(buffer, arrived)


@_inline
def _decode_priority(scores, st, sel):
    """PriorityMode: slotted jobs by descending score (a stable sort: ties by arrival),
    then the queue in arrival order, packed. False when a score of an occupied slot is not
    finite (nothing selected)."""
    slot_job, job_slot = st.slots.slot_job, st.slots.job_slot
    gang, status = st.tables.gang, st.sim.status
    slots = slot_job.size
    for s in range(slots):
        if slot_job[s] >= 0 and not np.isfinite(np.float64(scores[s])):
            return False
    keys = np.empty(slots)
    by_id = np.empty(slots, np.int64)
    m = 0
    for j in range(status.size):  # slotted jobs in ascending id, their negated scores
        s = job_slot[j]
        if s >= 0:
            keys[m] = -np.float64(scores[s])
            by_id[m] = j
            m += 1
    order = np.argsort(keys[:m], kind="mergesort")
    free = st.rules.gpus
    for i in range(m):
        j = by_id[order[i]]
        if gang[j] <= free:
            free -= gang[j]
            sel[j] = True
    for j in range(status.size):  # then the queue, in arrival order
        if status[j] == ACTIVE and job_slot[j] < 0 and gang[j] <= free:
            free -= gang[j]
            sel[j] = True
    return True


@_inline
def _decode_select(wanted, st, sel):
    """SelectMode: the wanted slotted jobs in arrival order, packed; returns the repairs."""
    slot_job, job_slot, gang = st.slots.slot_job, st.slots.job_slot, st.tables.gang
    absent = 0
    for s in range(slot_job.size):
        if wanted[s] and slot_job[s] < 0:
            absent += 1
    free = st.rules.gpus
    asked = 0
    taken = 0
    for j in range(job_slot.size):
        s = job_slot[j]
        if s >= 0 and wanted[s]:
            asked += 1
            if gang[j] <= free:
                free -= gang[j]
                sel[j] = True
                taken += 1
    return absent + asked - taken


@_inline
def decode(code, scores, wanted, st):
    """(ascending ids of the round, repairs), or (None-like empty ids, -1) for a refused
    priority action. ``code``: PRIORITY (``scores`` per slot), SELECT (``wanted`` per
    slot), GIVEN (``wanted`` per job: a set decoded in Python) or ALL_ACTIVE (a round no
    action could change)."""
    status = st.sim.status
    n = status.size
    sel = np.zeros(n, np.bool_)
    repairs = 0
    if code == PRIORITY:
        if not _decode_priority(scores, st, sel):
            return np.empty(0, np.int64), -1
    elif code == SELECT:
        repairs = _decode_select(wanted, st, sel)
    elif code == GIVEN:
        for j in range(n):
            sel[j] = wanted[j]
    else:
        for j in range(n):
            sel[j] = status[j] == ACTIVE
    count = 0
    for j in range(n):
        if sel[j]:
            count += 1
    ids = np.empty(count, np.int64)
    i = 0
    for j in range(n):
        if sel[j]:
            ids[i] = j
            i += 1
    return ids, repairs


@_inline
def _offsets(st, ids, round_index):
    """Per job of the round: its restart loss (R3) and finish offset; the round's length
    (R4) and how many jobs finish in it."""
    rules, iso, work, ran_last = st.rules, st.tables.isolated_time_s, st.sim.work_done_s, st.sim.ran_last_round
    round_s, threshold, restart = rules.round_s, rules.restart_threshold_s, rules.restart_overhead_s
    count = ids.size
    overhead = np.zeros(count)
    finish_offset = np.empty(count)
    num_finishing = 0
    longest = -np.inf
    for i in range(count):
        j = ids[i]
        remaining = iso[j] - work[j]
        if round_index >= 1 and min(round_s, remaining) > threshold and not ran_last[j]:
            overhead[i] = restart
        finish_offset[i] = overhead[i] + remaining
        if finish_offset[i] <= round_s:
            num_finishing += 1
            if finish_offset[i] > longest:
                longest = finish_offset[i]
    round_len = longest if count and num_finishing == count else round_s
    return overhead, finish_offset, round_len, num_finishing


@_inline
def run_round(st, ids, round_index, start):
    """Simulator.run_round on the simulator's arrays: (round length, run_s, overhead_s,
    completed ids, GPUs busy)."""
    sim, tables, round_s = st.sim, st.tables, st.rules.round_s
    work, status, completion, run_time, rounds_run = (sim.work_done_s, sim.status, sim.completion_s, sim.run_time_s,
                                                      sim.rounds_run)
    last_run, last_overhead, ran_last, epoch_pos = sim.last_run_s, sim.last_overhead_s, sim.ran_last_round, sim.epoch_pos
    iso, ends, job_base, gang = tables.isolated_time_s, tables.epoch_end_global_s, tables.job_base_s, tables.gang
    overhead, finish_offset, round_len, num_finishing = _offsets(st, ids, round_index)
    run_s = np.empty(ids.size)
    done_ids = np.empty(num_finishing, np.int64)
    for j in range(status.size):
        last_run[j] = 0.0
        last_overhead[j] = 0.0
        ran_last[j] = False
    finished = 0
    busy = 0
    for i in range(ids.size):
        j = ids[i]
        run = min(finish_offset[i], round_len)
        run_s[i] = run
        w = work[j] + (run - overhead[i])
        if finish_offset[i] <= round_s:
            w = iso[j]
            completion[j] = start + finish_offset[i]
            status[j] = DONE
            done_ids[finished] = j
            finished += 1
        work[j] = w
        epoch_pos[j] = np.searchsorted(ends, (job_base[j] + w) + 1e-6, side="right")
        run_time[j] = run_time[j] + run
        rounds_run[j] += 1
        last_run[j] = run
        last_overhead[j] = overhead[i]
        ran_last[j] = True
        busy += gang[j]
    return round_len, run_s, overhead, done_ids, busy


@_inline
def admit(st, done, nxt, now):
    """Simulator._admit_and_skip_idle: (next arrival, decision time)."""
    arrival, status = st.tables.arrival_s, st.sim.status
    n = status.size
    if done < n:
        while True:
            while nxt < n and arrival[nxt] <= now:
                status[nxt] = ACTIVE
                nxt += 1
            if done < nxt or nxt >= n:
                break
            now = arrival[nxt]
    return nxt, now


@_inline
def _themis(st, done_ids, buffer, excess):
    """rewards.themis_rho of the jobs that completed: how many exceed the threshold; their
    excesses over 1 go to ``excess``."""
    arrival, completion, work = st.tables.arrival_s, st.sim.completion_s, st.sim.work_done_s
    gpus, threshold = st.rules.gpus, st.rules.unfair_threshold
    unfair_count = 0
    for i in range(done_ids.size):
        j = done_ids[i]
        a = arrival[j]
        c = completion[j]
        life = c - a
        area = _area(arrival, completion, arrival.size, a, c, buffer)
        contention = area / life if life > 0 else 1.0
        rho = life / (work[j] * max(1.0, contention / gpus))
        if rho > threshold:
            unfair_count += 1
        e = rho - 1.0
        excess[i] = e if not e <= 0.0 else 0.0
    return unfair_count


@_inline
def reward(st, start, now, done_ids):
    """WeightedReward of the built-in terms over [start, now]."""
    rules, arrival = st.rules, st.tables.arrival_s
    finished = done_ids.size
    buffer = np.empty(arrival.size)
    total = 0.0
    rhos_done = False
    unfair_count = 0
    excess = np.empty(max(finished, 1))
    for t in range(rules.term_code.size):
        tc = rules.term_code[t]
        if tc < 0:
            break
        if tc == JCT:
            value = -_area(arrival, st.sim.completion_s, arrival.size, start, now, buffer) / rules.jct_normaliser_s
        elif tc == MAKESPAN:
            value = -(now - start) / rules.round_s
        else:
            if not rhos_done:
                rhos_done = True
                unfair_count = _themis(st, done_ids, buffer, excess)
            if finished == 0:
                value = 0.0
            elif tc == FTF:
                value = -np.float64(unfair_count)
            else:
                value = -_pairwise_sum(excess, finished)
        total += rules.term_weight[t] * value
    return total


@_inline
def seat(st):
    """SlotMap.update: (queued, demand GPUs, active jobs); the queue goes to its buffer."""
    slot_job, job_slot, queue = st.slots.slot_job, st.slots.job_slot, st.slots.queue
    status, gang = st.sim.status, st.tables.gang
    n = status.size
    demand = 0
    active = 0
    for j in range(n):
        if status[j] == ACTIVE:
            demand += gang[j]
            active += 1
    for s in range(slot_job.size):
        j = slot_job[s]
        if j >= 0 and status[j] != ACTIVE:
            job_slot[j] = -1
            slot_job[s] = -1
    s = 0
    queued = 0
    for j in range(n):
        if status[j] != ACTIVE or job_slot[j] >= 0:
            continue
        while s < slot_job.size and slot_job[s] >= 0:
            s += 1
        if s < slot_job.size:
            slot_job[s] = j
            job_slot[j] = s
        else:
            queue[queued] = j
            queued += 1
    return queued, demand, active


@_inline
def _expected_epoch_s(prior, size_counts, duration_at, j, row):
    """The predictor's expected future epoch duration of job ``j`` at observed row ``row``:
    the prior plus the epochs seen at each size, weighting each size's duration."""
    weighted = 0.0
    weight_total = 0.0
    for w in range(prior.shape[1]):
        weight = prior[j, w] + size_counts[row, w]
        weighted += weight * duration_at[j, w]
        weight_total += weight
    return weighted / weight_total


@_inline
def _type_rates(type_sizes, type_rel, j, s, batch, raw):
    """Rows 11 on of slot ``s``: job ``j``'s per-type rates at its batch size (0 if none)."""
    types = type_rel.shape[2]
    for t in range(types):
        raw[11 + t, s] = 0.0
    for w in range(type_sizes.shape[1]):
        if type_sizes[j, w] == batch:
            for t in range(types):
                raw[11 + t, s] = type_rel[j, w, t]
            break


@_inline
def _empty_slot(raw, s):
    """An empty slot's raw features: zeros (rows 2 and 3 hold 1: log2(1) = 0)."""
    for f in range(raw.shape[0]):
        raw[f, s] = 0.0
    raw[2, s] = 1.0
    raw[3, s] = 1.0


@_inline
def slot_features(st, now, active):
    """Each slotted job's observed quantities, predicted remaining time and rho-hat, and
    its raw version 2 features (before the logarithms). Per-slot work reads arrays hoisted
    here: a struct passed per slot would be copied."""
    tables, sim, raw, slot_job = st.tables, st.sim, st.out.raw, st.slots.slot_job
    pos, work, status, run_time, ran_last = sim.epoch_pos, sim.work_done_s, sim.status, sim.run_time_s, sim.ran_last_round
    epoch_table, first_epoch, last_epoch, num_epochs = (tables.epoch_table, tables.first_epoch_index,
                                                        tables.last_epoch_index, tables.num_epochs)
    mean_by_row, row_base, arrival, gang = tables.mean_epoch_s_by_row, tables.count_row_base, tables.arrival_s, tables.gang
    prior, size_counts, duration_at, initial = (tables.prior, tables.size_counts_by_row, tables.duration_at_s,
                                                tables.initial_batch_size)
    type_sizes, type_rel, gpus, scale_in = tables.type_sizes, tables.type_relative, st.rules.gpus, st.rules.scale_in
    c_share = max(1.0, active / gpus)
    for s in range(slot_job.size):
        j = slot_job[s]
        if j < 0:
            _empty_slot(raw, s)
            continue
        p = pos[j]
        first = first_epoch[j]
        current = min(p, last_epoch[j])
        epochs_done = min(p - first, num_epochs[j])
        duration = epoch_table[current, 0]
        fraction = (work[j] - epoch_table[current, 1]) / duration
        if fraction <= 0.0:  # np.maximum(f, 0) then np.minimum(f, 1): NaN passes, ties give the bound
            fraction = 0.0
        if fraction >= 1.0:
            fraction = 1.0
        if status[j] == DONE:
            fraction = 1.0
        batch = np.int64(epoch_table[current, 3])
        row = row_base[j] + epochs_done
        mean = mean_by_row[row]
        if mean != mean:  # before its first epoch completes, the current one stands in
            mean = duration
        expected = _expected_epoch_s(prior, size_counts, duration_at, j, row)
        remaining = (1.0 - fraction) * duration + max(num_epochs[j] - epochs_done - 1, 0) * expected
        age = now - arrival[j]
        fair = (work[j] + remaining) * c_share
        rho = (c_share * remaining + age) / (fair if not fair <= 1e-9 else 1e-9)
        raw[0, s] = gang[j] / gpus
        raw[1, s] = (np.float64(current - first) + fraction) / num_epochs[j]
        raw[2, s] = np.float64(gang[j])
        raw[3, s] = batch / initial[j]
        values = (epoch_table[current, 2] * batch, mean, remaining, age, run_time[j] * gang[j],
                  1.0 if ran_last[j] else 0.0, rho)
        for f in range(7):
            v = values[f] * scale_in[f]
            raw[4 + f, s] = v if not v <= 0.0 else 0.0  # np.maximum(v, 0): NaN passes, -0.0 becomes 0.0
        _type_rates(type_sizes, type_rel, j, s, batch, raw)


@_inline
def cluster_features(st, busy, counts, now):
    """cluster_features_v2 of a homogeneous cluster outside sequential mode; ``counts`` =
    (active jobs, queued jobs, demand GPUs)."""
    rules = st.rules
    gpus = rules.gpus
    active, queued, demand = counts
    values = (
        1.0,  # every GPU free outside sequential mode
        0.0,
        0.0,
        busy / gpus,
        math.log2(1.0 + active / gpus),
        math.log2(1.0 + queued / gpus),
        math.log2(1.0 + demand / gpus),
        math.log1p(now / rules.time_unit_s) / rules.log_time,
    )
    for f in range(8):
        v = values[f]
        if v > rules.cluster_high[f]:
            v = rules.cluster_high[f]
        elif v < rules.cluster_low[f]:
            v = rules.cluster_low[f]
        st.out.cluster[f] = np.float32(v)


@_jit
def round_step(code, scores, wanted, boxed, round_index, time_s, next_arrival, num_done):
    """Decode (``code``), run one round, admit, reward, seat, derive, raw features, on the
    state struct ``boxed`` (compiled_state.SingleState, boxed) from the simulator's scalars before the round.
    Returns the round record's arrays (ids, run_s, overhead_s, completed
    ids); the scalars go to ``out.iout`` / ``out.fout`` (slots I_* / F_*). A non-finite
    score of an occupied slot (``priority``) sets iout[I_BAD] and changes nothing."""
    st = boxed
    iout, fout = st.out.iout, st.out.fout
    if code == NOOP:
        return np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty(0, np.int64)
    ids, repairs = decode(code, scores, wanted, st)
    if repairs < 0:
        iout[I_BAD] = 1
        return ids, np.empty(0), np.empty(0), np.empty(0, np.int64)
    start = time_s
    round_len, run_s, overhead, done_ids, busy = run_round(st, ids, round_index, start)
    done = num_done + done_ids.size
    nxt, now = admit(st, done, next_arrival, start + round_len)
    total = reward(st, start, now, done_ids)
    queued, demand, active = seat(st)
    slot_features(st, now, active)
    cluster_features(st, busy, (active, queued, demand), now)
    iout[I_BAD] = 0
    iout[I_REPAIRS] = repairs
    iout[I_COUNT] = ids.size
    iout[I_FINISHED] = done_ids.size
    iout[I_BUSY] = busy
    iout[I_NEXT] = nxt
    iout[I_DONE] = done
    iout[I_QUEUE] = queued
    iout[I_DEMAND] = demand
    iout[I_ACTIVE] = active
    fout[F_START] = start
    fout[F_END] = start + round_len
    fout[F_TIME] = now
    fout[F_REWARD] = total
    return ids, run_s, overhead, done_ids


@_jit
def finish_features(raw, scale_out, low, high):
    """(slots, F) float32: ``raw`` (after numpy's logarithms) x scale_out, then
    np.minimum(., high) and np.maximum(., low) (NaN passes; on ties the bound), cast."""
    features, slots = raw.shape
    out = np.empty((slots, features), np.float32)
    for s in range(slots):
        for f in range(features):
            v = raw[f, s] * scale_out[f]
            if v == v:
                if not v < high[f]:
                    v = high[f]
                if not v > low[f]:
                    v = low[f]
            out[s, f] = np.float32(v)
    return out
