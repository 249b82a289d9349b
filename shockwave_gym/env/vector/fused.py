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
from shockwave_gym.env.vector.estimates import V2_FEATURES, V2_IN
from shockwave_gym.metrics import UNFAIR_THRESHOLD
from shockwave_gym.state import ACTIVE

AVAILABLE = core_jit.AVAILABLE

#: Reward term codes of :func:`advance`'s ``term_code`` (-1 ends a cluster's list).
JCT, MAKESPAN, FTF, FTF_EXCESS = 0, 1, 2, 3
#: How :func:`advance` takes the agent's round: decoded from ``io.scores`` (PRIORITY) or
#: ``io.wanted`` (SELECT), or given in the state's ``sel`` (GIVEN: the sequential mode's picks).
PRIORITY, SELECT, GIVEN = 0, 1, 2



def reward_codes(reward_fn) -> tuple[list[int], list[float]] | None:
    """The terms of ``reward_fn`` as :func:`advance`'s codes and weights when it is a
    :class:`~shockwave_gym.env.rewards.WeightedReward` of built-in terms the kernels pay
    (``jct``, ``makespan``, ``ftf``, ``ftf_excess``), else None."""
    from shockwave_gym.env.rewards import REWARDS, WeightedReward

    if type(reward_fn) is not WeightedReward:
        return None
    known = {REWARDS["jct"]: JCT, REWARDS["makespan"]: MAKESPAN, REWARDS["ftf"]: FTF, REWARDS["ftf_excess"]: FTF_EXCESS}
    if any(fn not in known for _, fn, _ in reward_fn.terms):
        return None
    return [known[fn] for _, fn, _ in reward_fn.terms], [float(weight) for _, _, weight in reward_fn.terms]


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
    _area = vec_jit.area
    _cluster_one_v2 = vec_jit.cluster_one_v2

    @_inline
    def _completed_rhos(k, sim, completed, finished, buffer, excess):
        """rewards.themis_rho of the jobs ``completed[:finished]`` of cluster ``k``: the
        number above the unfairness threshold; their excesses over 1 go to ``excess``."""
        unfair_count = 0
        arrival, completion, work, n, gpus = sim.arrival_s, sim.completion_s, sim.work_done_s, sim.num_jobs[k], sim.gpus[k]
        for i in range(finished):
            j = completed[i]
            a = arrival[k, j]
            c = completion[k, j]
            life = c - a
            area = _area(arrival, completion, k, n, a, c, buffer)
            contention = area / life if life > 0 else 1.0
            rho = life / (work[k, j] * max(1.0, contention / gpus))
            if rho > UNFAIR_THRESHOLD:
                unfair_count += 1
            excess[i] = np.maximum(rho - 1.0, 0.0)
        return unfair_count

    @_inline
    def _reward(k, st, start, completed, finished, buffer, excess):
        """The weighted reward of the interval [start, now] of cluster ``k``, the jobs
        ``completed[:finished]`` having completed in it (rewards.BatchReward per cluster)."""
        sim, reward = st.sim, st.reward
        term_code, term_weight = reward.term_code, reward.term_weight
        end = sim.time_s[k]
        total = 0.0
        rhos_done = False
        unfair_count = 0
        for t in range(term_code.shape[1]):
            code = term_code[k, t]
            if code < 0:
                break
            if code == JCT:
                area = _area(sim.arrival_s, sim.completion_s, k, sim.num_jobs[k], start, end, buffer)
                value = -area / reward.jct_normaliser_s[k]
            elif code == MAKESPAN:
                value = -(end - start) / sim.round_s[k]
            else:
                if not rhos_done:
                    rhos_done = True
                    unfair_count = _completed_rhos(k, sim, completed, finished, buffer, excess)
                if code == FTF:
                    value = -np.float64(unfair_count)
                else:  # FTF_EXCESS
                    value = -_pairwise_sum(excess, finished) if finished > 0 else 0.0
            total = total + term_weight[k, t] * value
        return total

    @_inline
    def _refused(st, io, select):
        """Flag in ``io.bad`` the clusters whose action is refused: a non-finite score of an
        occupied slot (acting clusters), a ``select`` entry other than 0 and 1 (any row)."""
        slot_job, acting, wanted, scores, bad = st.slots.slot_job, io.acting, io.wanted, io.scores, io.bad
        any_bad = False
        for k in range(acting.size):
            if select:
                for s in range(slot_job.shape[1]):
                    value = wanted[k, s]
                    if not (value == 0 or value == 1):
                        bad[k] = True
                        any_bad = True
            elif acting[k] and not _scores_finite(k, scores, slot_job):
                bad[k] = True
                any_bad = True
        return any_bad

    @_inline
    def _skips(k, st, select):
        """skip_trivial: whether cluster ``k``'s next round is one no action could change
        (ClusterVectorEnv._forced_rounds); if so, ``st.sel[k]`` holds its active jobs."""
        sim, slots = st.sim, st.slots
        if sim.num_done[k] >= sim.num_jobs[k] or sim.round_index[k] >= st.max_rounds[k]:
            return False
        if slots.demand_gpus[k] > sim.gpus[k] or (select and slots.queue_count[k] > 0):
            return False
        sel, status = st.sel, sim.status
        for j in range(sel.shape[1]):
            sel[k, j] = status[k, j] == ACTIVE
        return True

    @_inline
    def _one_round(k, st, paid, completed, buffer, excess):
        """The round of ``st.sel[k]`` and what the env does after a round: record it, admit
        arrivals, pay the reward, seat jobs (the estimates are derived once the rounds are
        over: nothing in between reads them). Returns the reward."""
        sim = st.sim
        at = sim.round_index[k]
        start, end, busy, finished = _step_one(k, st.sel, sim, paid, completed)
        sim.round_start_s[k, at] = start
        sim.round_end_s[k, at] = end
        sim.round_gpus_busy[k, at] = busy
        if sim.num_done[k] < sim.num_jobs[k]:
            _admit_one(k, sim)
        value = _reward(k, st, start, completed, finished, buffer, excess)
        _slots_one(k, sim, st.slots)
        return value

    @_jit
    def advance(boxed, io, resume, skip, mode):
        """One env step in every cluster of ``io.acting``: the agent's round (``mode``
        PRIORITY: decoded from ``io.scores``; SELECT: from ``io.wanted``; GIVEN: the jobs
        already in the state's ``sel``), then with ``skip`` the rounds no action could change
        (ClusterVectorEnv._forced_rounds), adding their rewards to ``io.reward`` and counting
        them in ``io.rounds``. Clusters in ``io.fresh`` (just reset) are only derived and
        seated. With ``resume``, only the skipping continues (after the caller grew the round
        records: a cluster that would need more stops and is flagged in ``io.pending``). A
        refused action (:func:`_refused`) flags its cluster in ``io.bad`` and nothing is run
        (``io.wanted`` may be bool, integer or float).

        The per-cluster body is written out here and the scratch arrays are separate
        locals: passing ``io`` and tuples of scratch arrays to per-cluster helpers copied
        them with an atomic reference count per array at every call (some 30 per cluster),
        which cost 5-10% of the vector step at K = 64 and 256 (issue 32)."""
        st = boxed  # the vector env's ClusterState (state.py), as a struct
        select = mode == SELECT
        if not resume and mode != GIVEN and _refused(st, io, select):
            return
        sim, slots, tables, est, sel = st.sim, st.slots, st.tables, st.est, st.sel
        width, capacity = sel.shape[1], sim.round_start_s.shape[1]
        keys, ids = np.empty(slots.slot_job.shape[1]), np.empty(slots.slot_job.shape[1], np.int64)
        waiting, order = np.zeros(sim.gpus.max() + 2, np.int64), np.empty(width, np.int64)
        paid, completed, buffer, excess = np.empty(width), np.empty(width, np.int64), np.empty(width), np.empty(width)
        acting, fresh, reward, rounds, pending = io.acting, io.fresh, io.reward, io.rounds, io.pending
        for k in range(acting.size):
            if acting[k]:
                first = not resume
                if first and mode != GIVEN:  # the agent's round: sel[k] from its scores or select bits
                    for j in range(width):
                        sel[k, j] = False
                    if select:
                        io.repairs[k] = _select_one(k, io.wanted, sim, slots, sel, order)
                    else:
                        _priority_one(k, io.scores, sim, slots, sel, keys, ids, waiting)
                while True:  # then with skip the rounds no action could change
                    if not first:
                        if not _skips(k, st, select):
                            break
                        if sim.round_index[k] >= capacity:
                            pending[k] = True
                            break
                    value = _one_round(k, st, paid, completed, buffer, excess)
                    reward[k] = value if first else reward[k] + value
                    rounds[k] = 1 if first else rounds[k] + 1
                    first = False
                    if not skip:
                        break
                _derive_one(k, sim, tables, est)
            elif fresh[k]:
                _derive_one(k, sim, tables, est)
                _slots_one(k, sim, slots)

    @_jit
    def advance_rows(boxed, io, mode, kept, free, cluster_out):
        """:func:`advance` of one round (no skipping, no resume) then :func:`job_rows_v2`, in
        one call: the single env's step (env/vector/single.py). Nothing but ``io.bad`` when
        the action is refused."""
        advance(boxed, io, False, False, mode)
        if io.bad[0]:
            return np.empty((V2_FEATURES, 0)), np.empty((2, 0)), np.empty((0, 0), np.int64)
        return job_rows_v2(boxed, kept, free, cluster_out)

    @_inline
    def _kept_plan(k, st, kept, plan, whole, partial):
        """Cluster ``k``'s entries of :func:`job_rows_v2`'s ``plan``, ``whole`` and
        ``partial`` columns being taken so far; returns them advanced."""
        slot_job, ran_last, rounds_run = st.slots.slot_job, st.sim.ran_last_round, st.sim.rounds_run
        kept_job, kept_rounds, kept_ran = kept.job, kept.rounds, kept.ran
        for s in range(slot_job.shape[1]):
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
        return whole, partial

    @_inline
    def _type_rates(type_sizes, type_rel, r, b, full, i):
        """Rows 11 on of column ``i``: row ``r``'s per-type rates at batch size ``b`` (0 if none)."""
        for t in range(type_rel.shape[2]):
            full[11 + t, i] = 0.0
        for w in range(type_sizes.shape[1]):
            if type_sizes[r, w] == b:
                for t in range(type_rel.shape[2]):
                    full[11 + t, i] = type_rel[r, w, t]
                break

    @_inline
    def _fill_rows(k, st, plan, full, dynamic):
        """Cluster ``k``'s columns of ``full`` (its raw version 2 features, as
        observation.JobFeaturesV2.fill) and ``dynamic`` (age and rho-hat), per ``plan``."""
        sim, est, tables = st.sim, st.est, st.tables
        slot_job, gang, gpus, now = st.slots.slot_job, sim.gang, sim.gpus[k], sim.time_s[k]
        arrival, rho, batch, initial = sim.arrival_s, est.rho, est.batch, sim.initial_batch_size
        progress, rate, mean, remaining = est.progress, est.rate, est.mean, est.remaining
        num_epochs, run_time, ran_last = sim.num_epochs, sim.run_time_s, sim.ran_last_round
        type_sizes, type_rel, row0 = tables.type_sizes, tables.type_relative, tables.row0[k]
        for s in range(slot_job.shape[1]):
            i = plan[k, s]
            if i == -1 or i == -2:
                continue
            j = slot_job[k, s]
            if i < 0:
                i = (-3 - i) >> 1
                dynamic[0, i] = max((now - arrival[k, j]) * V2_IN[3], 0.0)
                dynamic[1, i] = max(rho[k, j] * V2_IN[6], 0.0)
                continue
            b = batch[k, j]
            full[0, i] = gang[k, j] / gpus
            full[1, i] = progress[k, j] / num_epochs[k, j]
            full[2, i] = np.float64(gang[k, j])
            full[3, i] = b / initial[k, j]
            full[4, i] = max((rate[k, j] * b) * V2_IN[0], 0.0)
            full[5, i] = max(mean[k, j] * V2_IN[1], 0.0)
            full[6, i] = max(remaining[k, j] * V2_IN[2], 0.0)
            full[7, i] = max((now - arrival[k, j]) * V2_IN[3], 0.0)
            full[8, i] = max((run_time[k, j] * gang[k, j]) * V2_IN[4], 0.0)
            full[9, i] = max((1.0 if ran_last[k, j] else 0.0) * V2_IN[5], 0.0)
            full[10, i] = max(rho[k, j] * V2_IN[6], 0.0)
            # the job's row of the per-trace tables (TraceJobTables)
            _type_rates(type_sizes, type_rel, row0 + j, b, full, i)

    @_jit
    def job_rows_v2(boxed, kept, free, cluster_out):
        """The raw (pre-logarithm) version 2 features to recompute: ``full`` (features,
        slots to recompute whole) as observation.JobFeaturesV2.fill, ``dynamic`` (2, other occupied
        slots) their age and rho-hat rows; ``plan`` (K, slots): -1 nothing to write (an empty
        slot already zero), -2 zero the slot, i >= 0 column i of ``full``, -3 - 2 i column i of
        ``dynamic``, -4 - 2 i the same and the job's ran-last flag turned off (it cannot turn
        on without the job running). A slot's kept features are current when it holds the same job, at the same
        rounds run and ran-last flag, as when they were computed (``kept.job``, -1 for a zeroed
        slot, -2 for unknown); these are updated for the slots recomputed. Also writes the
        cluster features to ``cluster_out`` (jit.cluster_one_v2)."""
        st = boxed  # the vector env's ClusterState (state.py), as a struct
        clusters, slots = st.slots.slot_job.shape
        for k in range(clusters):
            _cluster_one_v2(k, st, free, cluster_out)
        plan = np.empty((clusters, slots), np.int64)
        whole = 0
        partial = 0
        for k in range(clusters):
            whole, partial = _kept_plan(k, st, kept, plan, whole, partial)
        full = np.empty((V2_FEATURES, whole))
        dynamic = np.empty((2, partial))
        for k in range(clusters):
            _fill_rows(k, st, plan, full, dynamic)
        return full, dynamic, plan

    @_jit
    def scatter_v2(plan, full, dynamic, scale_out, low, high, kept):
        """The kept (K, slots, features) float32 features brought up to date from the
        logarithms (observation.transform_v2's scaling and clipping): recomputed slots from
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
