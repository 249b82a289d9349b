"""The observation's features, compiled (numba): the kernels of
:mod:`shockwave_gym.interface.observation`'s job and cluster features over the vector env's
state struct (:class:`~shockwave_gym.env.vector.state.ClusterState`), for K clusters or one
(the single env's step, env/vector/single.py).

* version 1: :func:`slot_raw_features` (the raw rows up to numpy's logarithms), then
  :func:`scatter_slot_features` (scales, clipping, float32) and :func:`cluster_rows`;
* version 2: :func:`job_rows_v2` and :func:`scatter_v2` around numpy's logarithms, with the
  cluster features (:func:`cluster_one_v2`).

Each kernel does per element the float64 operations of the reference (no fast-math);
numpy applies the logarithms to the raw rows exactly as the single observation does, so the
results stay bit for bit the same.

The version 2 observation is incremental: a job's features other than its age and rho-hat
(features 7 and 10) change only when it runs (or stops running), so each slot's finished
float32 features are kept and recomputed whole only when the slot's job changed or ran since
they were computed (its ``rounds_run`` or ``ran_last_round`` differ from the kept ones;
everything is recomputed after a reset); age and rho-hat are recomputed for every occupied
slot at every observation. numpy applies the logarithms to whatever entries are recomputed,
as for the whole block (its results do not depend on an entry's place in the array).
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_gym.batch import jit as core_jit
from shockwave_gym.cluster import TYPE_ORDER
from shockwave_gym.env.vector.estimates import (
    V2_FEATURES,
    V2_HIGH,
    V2_IN,
    V2_LOW,
    V2_OUT,
    take_logarithms_v2,
)
from shockwave_gym.interface.observation import (
    CLUSTER_FEATURES,
    TIME_SCALE_S,
    TIME_SPAN_S,
    TIME_UNIT_S,
    V2_CLUSTER_HIGH,
    V2_CLUSTER_LOW,
)

#: GPU types of the version 2 cluster features, and their time feature's scale (observation.py's).
TYPES = len(TYPE_ORDER)
LOG_TIME = math.log1p(TIME_SPAN_S / TIME_UNIT_S)
#: The version 1 cluster features' bounds (observation.CLUSTER_FEATURES).
CLUSTER_LOW = np.array([f[1] for f in CLUSTER_FEATURES])
CLUSTER_HIGH = np.array([f[2] for f in CLUSTER_FEATURES])

AVAILABLE = core_jit.AVAILABLE

if AVAILABLE:
    import numba

    _jit = numba.njit(cache=True, error_model="numpy", nogil=True)
    _inline = numba.njit(cache=True, error_model="numpy", nogil=True, inline="always")

    @_jit
    def slot_raw_features(boxed, scale_in, raw_out):
        """(features, occupied slots), row-major slot order: job_feature_matrix of each
        occupied slot's job of the vector env's state struct (ClusterState, boxed) up to its
        logarithms: row 2 holds batch / initial, rows 3-9 max(0, value x scale_in), ready for
        numpy's log2 and log1p."""
        sim, est, slot_job = boxed.sim, boxed.est, boxed.slots.slot_job
        gang, gpus, num_epochs, initial, round_s = sim.gang, sim.gpus, sim.num_epochs, sim.initial_batch_size, sim.round_s
        time_s, arrival, run_time, ran_last = sim.time_s, sim.arrival_s, sim.run_time_s, sim.ran_last_round
        progress, batch, rate, mean, remaining, rho = est.progress, est.batch, est.rate, est.mean, est.remaining, est.rho
        i = 0
        for k in range(slot_job.shape[0]):
            for s in range(slot_job.shape[1]):
                j = slot_job[k, s]
                if j < 0:
                    continue
                b = batch[k, j]
                raw_out[0, i] = gang[k, j] / gpus[k]
                raw_out[1, i] = progress[k, j] / num_epochs[k, j]
                raw_out[2, i] = b / initial[k, j]
                raw_out[3, i] = max((rate[k, j] * b) * scale_in[0], 0.0)
                raw_out[4, i] = max((mean[k, j] / round_s[k]) * scale_in[1], 0.0)
                raw_out[5, i] = max(remaining[k, j] * scale_in[2], 0.0)
                raw_out[6, i] = max((time_s[k] - arrival[k, j]) * scale_in[3], 0.0)
                raw_out[7, i] = max((run_time[k, j] * gang[k, j]) * scale_in[4], 0.0)
                raw_out[8, i] = max((1.0 if ran_last[k, j] else 0.0) * scale_in[5], 0.0)
                raw_out[9, i] = max(rho[k, j] * scale_in[6], 0.0)
                i += 1

    @_jit
    def scatter_slot_features(slot_job, logged, scale_out, low, high, out):
        """(K, slots, features) float32: the rest of job_feature_matrix on numpy's logarithms
        (row 2 x 0.25, rows 3-9 x scale_out, clipping), zeros for empty slots."""
        features = logged.shape[0]
        flat = out.reshape(-1)
        flat[:] = 0.0
        place = np.empty(logged.shape[1], np.int64)  # output offset of each occupied slot
        i = 0
        slots = slot_job.shape[1]
        for k in range(slot_job.shape[0]):
            for s in range(slots):
                if slot_job[k, s] >= 0:
                    place[i] = (k * slots + s) * features
                    i += 1
        for f in range(features):  # feature by feature: the logarithms' rows are read in order
            scale = 0.25 if f == 2 else (scale_out[f - 3] if f >= 3 else 1.0)
            row = logged[f]
            for i in range(row.size):
                value = row[i] * scale if f >= 2 else row[i]
                flat[place[i] + f] = np.float32(max(min(value, high[f]), low[f]))

    @_inline
    def _busy_and_queued(k, sim, slots):
        """Cluster ``k``'s GPUs held by the jobs that ran last round, and its queued jobs."""
        ran_last, gang, queued = sim.ran_last_round, sim.gang, slots.queued
        busy = 0
        queue = 0
        for j in range(sim.num_jobs[k]):
            if ran_last[k, j]:
                busy += gang[k, j]
            if queued[k, j]:
                queue += 1
        return busy, queue

    @_jit
    def cluster_rows(boxed, free, max_jobs, out):
        """cluster_features for every cluster of the vector env's state struct (ClusterState,
        boxed): math.log1p and math.log2, as the single env."""
        sim, slots, num_active = boxed.sim, boxed.slots, boxed.est.num_active
        gpus, time_s, round_index, round_s, demand = sim.gpus, sim.time_s, sim.round_index, sim.round_s, slots.demand_gpus
        for k in range(gpus.size):
            g = gpus[k]
            busy, queue = _busy_and_queued(k, sim, slots)
            values = (
                free[k] / g,
                busy / g,
                num_active[k] / max_jobs,
                queue / max_jobs,
                demand[k] / g,
                math.log1p(time_s[k] / TIME_SCALE_S) / 3.0,
                math.log1p(round_index[k] * round_s[k] / TIME_SCALE_S) / 3.0,
                math.log2(g) / 8.0,
            )
            for f in range(8):
                out[k, f] = np.float32(min(max(values[f], CLUSTER_LOW[f]), CLUSTER_HIGH[f]))

    @_inline
    def _type_capacity(k, column, num_types, sim):
        """GPUs of typed cluster ``k`` of the type in ``column`` of TYPE_ORDER (0: none)."""
        for c in range(num_types):
            if sim.type_column[k, c] == column:
                return sim.type_capacity[k, c]
        return 0

    @_inline
    def cluster_one_v2(k, st, free, out):
        """estimates.cluster_features_v2 for cluster ``k`` (math.log2 and math.log1p, as the
        single env), its free capacity per type being free_capacity_by_type's on one type:
        free / GPUs for the first type, 0 for the others (a typed cluster's are written over
        by :func:`_typed_features`)."""
        sim, slots = st.sim, st.slots
        g = sim.gpus[k]
        busy, queue = _busy_and_queued(k, sim, slots)
        low, high = V2_CLUSTER_LOW, V2_CLUSTER_HIGH
        for t in range(TYPES):
            capacity = free[k] / g if t == 0 else 0.0
            out[k, t] = np.float32(min(max(capacity, low[t]), high[t]))
        values = (
            busy / g,
            math.log2(1.0 + st.est.num_active[k] / g),
            math.log2(1.0 + queue / g),
            math.log2(1.0 + slots.demand_gpus[k] / g),
            math.log1p(sim.time_s[k] / TIME_UNIT_S) / LOG_TIME,
        )
        for f in range(5):
            out[k, TYPES + f] = np.float32(min(max(values[f], low[TYPES + f]), high[TYPES + f]))

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
    def _cluster_type_rates(k, j, sim, reference, full, i):
        """observation._cluster_type_rates for job ``j`` of typed cluster ``k``: the rows of
        the cluster's types, its rate there at its current epoch over the reference rate."""
        e = min(sim.pos[k, j], sim.seg_end[k, j] - 1)
        for c in range(sim.num_types[k]):
            full[11 + sim.type_column[k, c], i] = sim.typed[e, 3, c] / reference if reference > 0 else 0.0

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

    @_jit  # a pass of its own: the clusters of one type run the loops above unchanged
    def _typed_features(st, plan, full, cluster_out):
        """What the cluster's GPU types change in :func:`job_rows_v2`'s output, for every
        typed cluster: each type's capacity (free_capacity_by_type: every GPU is free at a
        decision of ``priority`` or ``select``; 0 for a type the cluster lacks) and, for each
        job recomputed whole, its rate on the cluster's types (observation._cluster_type_rates)."""
        sim, slot_job, rate = st.sim, st.slots.slot_job, st.est.rate
        low, high = V2_CLUSTER_LOW, V2_CLUSTER_HIGH
        for k in range(slot_job.shape[0]):
            num_types = sim.num_types[k]
            if num_types == 0:
                continue
            g = sim.gpus[k]
            for t in range(TYPES):
                cluster_out[k, t] = np.float32(min(max(_type_capacity(k, t, num_types, sim) / g, low[t]), high[t]))
            for s in range(slot_job.shape[1]):
                i = plan[k, s]
                if i >= 0:
                    j = slot_job[k, s]
                    _cluster_type_rates(k, j, sim, rate[k, j], full, i)

    @_jit
    def job_rows_v2(boxed, kept, free, cluster_out):
        """The raw (pre-logarithm) version 2 features to recompute: ``full`` (features,
        slots to recompute whole) as observation.JobFeaturesV2.fill, ``dynamic`` (2, other occupied
        slots) their age and rho-hat rows; ``kept.plan`` (K, slots): -1 nothing to write (an empty
        slot already zero), -2 zero the slot, i >= 0 column i of ``full``, -3 - 2 i column i of
        ``dynamic``, -4 - 2 i the same and the job's ran-last flag turned off (it cannot turn
        on without the job running). A slot's kept features are current when it holds the same job, at the same
        rounds run and ran-last flag, as when they were computed (``kept.job``, -1 for a zeroed
        slot, -2 for unknown); these are updated for the slots recomputed. Also writes the
        cluster features to ``cluster_out`` (:func:`cluster_one_v2`)."""
        st = boxed  # the vector env's ClusterState (state.py), as a struct
        clusters, slots = st.slots.slot_job.shape
        for k in range(clusters):
            cluster_one_v2(k, st, free, cluster_out)
        plan = kept.plan
        whole = 0
        partial = 0
        for k in range(clusters):
            whole, partial = _kept_plan(k, st, kept, plan, whole, partial)
        full = np.empty((V2_FEATURES, whole))
        dynamic = np.empty((2, partial))
        for k in range(clusters):
            _fill_rows(k, st, plan, full, dynamic)
        if st.sim.num_types.any():
            _typed_features(st, plan, full, cluster_out)
        return full, dynamic

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


    @_jit
    def elastic_one(slot_job, allowed, by_count, current, counts, limit, out):
        """The observation's ``elastic`` entry (interface/elastic_features.py) into ``out``
        (slots, 2 C), zeroed: per occupied slot its job's allowed counts (``allowed``, jobs x
        C), then at each allowed count its speedup over the next smaller allowed one per added
        GPU, the speedup being ``by_count / current`` (the table's rates at the job's current
        batch size), clipped to ``limit``."""
        num_counts = counts.size
        for s in range(slot_job.size):
            j = slot_job[s]
            if j < 0:
                continue
            prev_c, prev_s = 0.0, 0.0
            for k in range(num_counts):
                if allowed[j, k]:
                    speedup = by_count[j, k] / current[j]
                    marginal = (speedup - prev_s) / (counts[k] - prev_c)
                    out[s, k] = 1.0
                    out[s, num_counts + k] = min(max(marginal, -limit), limit)
                    prev_c, prev_s = counts[k], speedup


def finish_v2(kept, full, dynamic) -> None:
    """``kept`` (a KeptFeatures) brought up to date from the raw rows of :func:`job_rows_v2`:
    numpy's logarithms on them, then :func:`scatter_v2` (the single env and the vector env
    finish their observations this one way)."""
    take_logarithms_v2(full)
    np.log1p(dynamic, out=dynamic)
    scatter_v2(kept.plan, full, dynamic, V2_OUT, V2_LOW, V2_HIGH, kept.values)
