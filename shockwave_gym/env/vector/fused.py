"""The compiled vector env's step in three passes: :func:`advance` (decode the actions, run
the rounds, admit arrivals, derive the estimates, pay the rewards, seat jobs, skip the rounds
without a decision), then :func:`job_rows_v2` and :func:`scatter_v2` around numpy's
logarithms for the observation.

The per-cluster helpers are the ones :mod:`~shockwave_gym.batch.jit` and
:mod:`~shockwave_gym.env.vector.jit` loop over, so every value is computed by the same float64
operations as there, in the same order; only the Python between them is gone (a step of the
``priority`` and ``select`` modes is one compiled call instead of dozens of array calls).

The observation is incremental: a job's features other than its age and rho-hat (features 7
and 10) change only when it runs (or stops running), so each slot's finished float32 features
are kept and recomputed whole only when the slot's job changed or ran since they were
computed (its ``rounds_run`` or ``ran_last_round`` differ from the kept ones; everything is
recomputed after a reset); age and rho-hat are recomputed for every occupied slot at every
observation. numpy applies the
logarithms to whatever entries are recomputed, as for the whole block (its results do not
depend on an entry's place in the array).
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.batch import jit as core_jit
from shockwave_gym.env.vector import jit as vec_jit

AVAILABLE = core_jit.AVAILABLE

#: Reward term codes of :func:`advance`'s ``term_code`` (-1 ends a cluster's list).
JCT, MAKESPAN, FTF, FTF_EXCESS = 0, 1, 2, 3

if AVAILABLE:
    import numba

    _jit = numba.njit(cache=True, error_model="numpy", nogil=True)
    _inline = numba.njit(cache=True, error_model="numpy", nogil=True, inline="always")
    _step_one = core_jit.step_one
    _admit_one = core_jit.admit_one
    _pairwise_sum = core_jit.pairwise_sum
    _derive_one = vec_jit.derive_one
    _slots_one = vec_jit.slots_one
    _priority_one = vec_jit.priority_one
    _select_one = vec_jit.select_one
    _scores_finite = vec_jit.scores_finite
    _area = vec_jit._area
    _cluster_one_v2 = vec_jit.cluster_one_v2

    @_inline
    def _reward(k, start, end, completed, finished, term_code, term_weight, jct_norm, round_s, arrival,
                completion, work, num_jobs, gpus, unfair, buffer, excess):
        """The weighted reward of the interval [start, end] of cluster ``k``, the jobs
        ``completed[:finished]`` having completed in it (rewards.BatchReward per cluster)."""
        total = 0.0
        rhos_done = False
        unfair_count = 0
        n = num_jobs[k]
        for t in range(term_code.shape[1]):
            code = term_code[k, t]
            if code < 0:
                break
            if code == 0:  # jct
                value = -_area(arrival, completion, k, n, start, end, buffer) / jct_norm[k]
            elif code == 1:  # makespan
                value = -(end - start) / round_s[k]
            else:
                if not rhos_done:  # rewards.themis_rho of the jobs that completed
                    rhos_done = True
                    for i in range(finished):
                        j = completed[i]
                        a = arrival[k, j]
                        c = completion[k, j]
                        life = c - a
                        area = _area(arrival, completion, k, n, a, c, buffer)
                        contention = area / life if life > 0 else 1.0
                        rho = life / (work[k, j] * max(1.0, contention / gpus[k]))
                        if rho > unfair:
                            unfair_count += 1
                        excess[i] = np.maximum(rho - 1.0, 0.0)
                if code == 2:  # ftf
                    value = -np.float64(unfair_count)
                else:  # ftf_excess
                    value = -_pairwise_sum(excess, finished) if finished > 0 else 0.0
            total = total + term_weight[k, t] * value
        return total

    @_jit
    def advance(acting, fresh, resume, skip, select, capacity, scores, wanted, num_jobs, iso, work, ran_last,
                round_index, round_s, threshold, overhead_s, gang, completion, status, run_time, rounds_run, last_run,
                last_overhead, time_s, num_done, overhead_gpu_s, exact_overhead, job_base, pos, seg_end, span,
                end_global, arrival, next_arrival, round_start, round_end, round_busy, first_epoch, num_epochs, packed,
                gpus, max_rounds, prior, duration_at, row0, progress, remaining, rho, mean, batch, rate, num_active, derived,
                derived_rounds, slot_job, job_slot, queued, demand, queue_count, term_code, term_weight, jct_norm, unfair,
                active_code, done_code, sel, reward, rounds, repairs, bad, pending):
        """One env step of the ``priority`` (``scores``) or ``select`` (``wanted``) mode in
        every cluster of ``acting``: decode, run the round, then with ``skip`` the rounds no
        action could change (ClusterVectorEnv._forced_rounds), adding their rewards to
        ``reward`` and counting them in ``rounds``. Clusters in ``fresh`` (just reset) are
        only derived and seated. With ``resume``, only the skipping continues (after the
        caller grew the round records, ``capacity`` rounds per cluster: a cluster that would
        need more stops and is flagged in ``pending``). A non-finite score of an occupied
        slot, or a ``select`` entry other than 0 and 1 in any row, flags its cluster in
        ``bad`` and nothing is run (``wanted`` may be bool, integer or float)."""
        clusters = acting.size
        width = sel.shape[1]
        slots = slot_job.shape[1]
        if not resume:
            any_bad = False
            for k in range(clusters):
                if select:
                    for s in range(slots):
                        value = wanted[k, s]
                        if not (value == 0 or value == 1):
                            bad[k] = True
                            any_bad = True
                elif acting[k] and not _scores_finite(k, scores, slot_job):
                    bad[k] = True
                    any_bad = True
            if any_bad:
                return
        keys = np.empty(slots)
        ids = np.empty(slots, np.int64)
        waiting = np.zeros(gpus.max() + 2, np.int64)
        order = np.empty(width, np.int64)
        paid = np.empty(width)
        completed = np.empty(width, np.int64)
        buffer = np.empty(width)
        excess = np.empty(width)
        for k in range(clusters):
            if acting[k]:
                first = not resume  # the agent's round; then the skipped ones
                if first:
                    for j in range(width):
                        sel[k, j] = False
                    if select:
                        repairs[k] = _select_one(k, wanted, slot_job, job_slot, gang, gpus, sel, order)
                    else:
                        _priority_one(k, scores, slot_job, queued, gang, gpus, sel, keys, ids, waiting)
                while True:
                    if not first:  # skip_trivial: the next round if no action could change it
                        if num_done[k] >= num_jobs[k] or round_index[k] >= max_rounds[k] or demand[k] > gpus[k]:
                            break
                        if select and queue_count[k] > 0:
                            break
                        if round_index[k] >= capacity:
                            pending[k] = True
                            break
                        for j in range(width):
                            sel[k, j] = status[k, j] == active_code
                    # the round, then what the env does after a round: record it, admit
                    # arrivals, pay the reward, seat jobs (the estimates are derived once the
                    # rounds are over: nothing in between reads them)
                    at = round_index[k]
                    start, end, busy, finished = _step_one(
                        k, sel, num_jobs, iso, work, ran_last, round_index, round_s, threshold, overhead_s, gang,
                        completion, status, run_time, rounds_run, last_run, last_overhead, time_s, num_done,
                        overhead_gpu_s, exact_overhead, job_base, pos, seg_end, span, end_global, done_code, paid,
                        completed)
                    round_start[k, at] = start
                    round_end[k, at] = end
                    round_busy[k, at] = busy
                    if num_done[k] < num_jobs[k]:
                        _admit_one(k, arrival, time_s, next_arrival, num_done, num_jobs, status, active_code)
                    value = _reward(k, start, time_s[k], completed, finished, term_code, term_weight, jct_norm,
                                    round_s, arrival, completion, work, num_jobs, gpus, unfair, buffer, excess)
                    _slots_one(k, num_jobs, status, gang, active_code, slot_job, job_slot, queued, demand,
                               queue_count)
                    if first:
                        reward[k] = value
                        rounds[k] = 1
                    else:
                        reward[k] = reward[k] + value
                        rounds[k] += 1
                    first = False
                    if not skip:
                        break
                _derive_one(k, num_jobs, pos, seg_end, first_epoch, num_epochs, work, status, packed, prior,
                            duration_at, row0, time_s, arrival, gpus, ran_last, active_code, done_code, progress,
                            remaining, rho, mean, batch, rate, num_active, rounds_run, derived, derived_rounds)
            elif fresh[k]:
                _derive_one(k, num_jobs, pos, seg_end, first_epoch, num_epochs, work, status, packed, prior,
                            duration_at, row0, time_s, arrival, gpus, ran_last, active_code, done_code, progress, remaining,
                            rho, mean, batch, rate, num_active, rounds_run, derived, derived_rounds)
                _slots_one(k, num_jobs, status, gang, active_code, slot_job, job_slot, queued, demand,
                           queue_count)

    @_jit
    def job_rows_v2(slot_job, gang, gpus, progress, num_epochs, batch, initial, rate, mean, remaining, time_s,
                    arrival, run_time, ran_last, rho, type_sizes, type_rel, row0, scale_in, rounds_run, kept_job,
                    kept_rounds, kept_ran, features, num_jobs, num_active, queued, demand, free, types, time_unit,
                    log_time, cluster_low, cluster_high, cluster_out):
        """The raw (pre-logarithm) version 2 features to recompute: ``full`` (features,
        slots to recompute whole) as numpy_loops.slot_raw_features_v2, ``dynamic`` (2, other occupied
        slots) their age and rho-hat rows; ``plan`` (K, slots): -1 nothing to write (an empty
        slot already zero), -2 zero the slot, i >= 0 column i of ``full``, -3 - 2 i column i of
        ``dynamic``, -4 - 2 i the same and the job's ran-last flag turned off (it cannot turn
        on without the job running). A slot's kept features are current when it holds the same job, at the same
        rounds run and ran-last flag, as when they were computed (``kept_job``, -1 for a zeroed
        slot, -2 for unknown); these are updated for the slots recomputed. Also writes the
        cluster features to ``cluster_out`` (jit.cluster_one_v2)."""
        clusters, slots = slot_job.shape
        for k in range(clusters):
            _cluster_one_v2(k, gpus, gang, ran_last, num_jobs, num_active, queued, demand, free, types, time_s,
                            time_unit, log_time, cluster_low, cluster_high, cluster_out)
        plan = np.empty((clusters, slots), np.int64)
        whole = 0
        partial = 0
        for k in range(clusters):
            for s in range(slots):
                j = slot_job[k, s]
                if j < 0:
                    plan[k, s] = -1 if kept_job[k, s] == -1 else -2
                    kept_job[k, s] = -1
                elif kept_job[k, s] == j and kept_rounds[k, s] == rounds_run[k, j]:
                    # not run since: age and rho-hat change; ran-last too if it ran the round before
                    plan[k, s] = -3 - 2 * partial - (1 if kept_ran[k, s] != ran_last[k, j] else 0)
                    kept_ran[k, s] = ran_last[k, j]
                    partial += 1
                else:
                    plan[k, s] = whole
                    whole += 1
                    kept_job[k, s] = j
                    kept_rounds[k, s] = rounds_run[k, j]
                    kept_ran[k, s] = ran_last[k, j]
        full = np.empty((features, whole))
        dynamic = np.empty((2, partial))
        widths = type_sizes.shape[1]
        type_count = type_rel.shape[2]
        for k in range(clusters):
            for s in range(slots):
                i = plan[k, s]
                if i == -1 or i == -2:
                    continue
                j = slot_job[k, s]
                if i < 0:
                    i = (-3 - i) >> 1
                    dynamic[0, i] = max((time_s[k] - arrival[k, j]) * scale_in[3], 0.0)
                    dynamic[1, i] = max(rho[k, j] * scale_in[6], 0.0)
                    continue
                b = batch[k, j]
                full[0, i] = gang[k, j] / gpus[k]
                full[1, i] = progress[k, j] / num_epochs[k, j]
                full[2, i] = np.float64(gang[k, j])
                full[3, i] = b / initial[k, j]
                full[4, i] = max((rate[k, j] * b) * scale_in[0], 0.0)
                full[5, i] = max(mean[k, j] * scale_in[1], 0.0)
                full[6, i] = max(remaining[k, j] * scale_in[2], 0.0)
                full[7, i] = max((time_s[k] - arrival[k, j]) * scale_in[3], 0.0)
                full[8, i] = max((run_time[k, j] * gang[k, j]) * scale_in[4], 0.0)
                full[9, i] = max((1.0 if ran_last[k, j] else 0.0) * scale_in[5], 0.0)
                full[10, i] = max(rho[k, j] * scale_in[6], 0.0)
                for t in range(type_count):
                    full[11 + t, i] = 0.0
                r = row0[k] + j  # the job's row of the per-trace tables (TraceJobTables)
                for w in range(widths):
                    if type_sizes[r, w] == b:
                        for t in range(type_count):
                            full[11 + t, i] = type_rel[r, w, t]
                        break
        return full, dynamic, plan

    @_jit
    def scatter_v2(plan, full, dynamic, scale_out, low, high, kept):
        """The kept (K, slots, features) float32 features brought up to date from the
        logarithms (numpy_loops.scatter_scaled's scaling and clipping): recomputed slots from
        ``full``, age and rho-hat of the others from ``dynamic``, vacated slots zeroed."""
        clusters, slots = plan.shape
        features = kept.shape[2]
        for k in range(clusters):
            for s in range(slots):
                i = plan[k, s]
                if i == -1:
                    continue
                if i == -2:
                    for f in range(features):
                        kept[k, s, f] = 0.0
                elif i >= 0:
                    for f in range(features):
                        kept[k, s, f] = np.float32(max(min(full[f, i] * scale_out[f], high[f]), low[f]))
                else:
                    code = -3 - i
                    i = code >> 1
                    if code & 1:  # ran last round no more: raw 0 (see job_rows_v2), log1p(0) = 0
                        kept[k, s, 9] = np.float32(max(min(0.0 * scale_out[9], high[9]), low[9]))
                    kept[k, s, 7] = np.float32(max(min(dynamic[0, i] * scale_out[7], high[7]), low[7]))
                    kept[k, s, 10] = np.float32(max(min(dynamic[1, i] * scale_out[10], high[10]), low[10]))
