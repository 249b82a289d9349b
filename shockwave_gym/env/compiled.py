"""The single env's compiled step (numba) for its common configuration: a homogeneous
cluster, observation version 2, the ``priority`` or ``select`` mode, built-in reward terms.

One call of :func:`round_step` does what a step of the Python path does between the action
and the observation's logarithms: decode the action (PriorityMode / SelectMode and
pack_in_order), run the round on the :class:`~shockwave_gym.simulator.Simulator`'s own arrays
(Simulator.run_round, in place), admit arrivals, pay the reward (rewards.WeightedReward of the
built-in terms), seat jobs (SlotMap.update, on the env's slot map's arrays), derive each
slotted job's observed quantities, predicted remaining time and rho-hat (StaticJobArrays.state_rows,
RemainingTimePredictor.remaining_s, ftf_estimate) and the raw version 2 features
(JobFeaturesV2.fill) and the cluster features. :class:`CompiledStep` then commits the scalars
to the simulator (:meth:`Simulator._commit_round`) and the slot map, and numpy applies the
logarithms, scales and clipping (observation.transform_v2's operations), so every value is
computed by the same float64 operations as on the Python path, in the same order, bit for bit:

* sums that numpy computes pairwise (the jobs-in-system integral, ftf_excess) use
  :func:`shockwave_gym.batch.jit.pairwise_sum`; the predictor's sum over reachable batch
  sizes is sequential, which is numpy's order for rows shorter than 8 (the path is only
  taken for traces whose jobs reach fewer than 8 sizes);
* no fast-math; the cluster features use ``math.log2``/``math.log1p`` as the Python path
  (the vector env's compiled path does the same, tests/test_env_vector.py compares them).

Without numba (an optional dependency) :data:`AVAILABLE` is False and the env keeps its
Python path. The view, ``simulator.result()`` and every public array stay exact: the kernel
writes the very arrays the Python path writes.
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_gym.batch import jit as core_jit
from shockwave_gym.state import ACTIVE, DONE, RoundRecord

AVAILABLE = core_jit.AVAILABLE

#: Decision codes of :func:`round_step`.
PRIORITY, SELECT, ALL_ACTIVE, NOOP, GIVEN = 0, 1, 2, 3, 4
#: Reward term codes (-1 ends the list).
JCT, MAKESPAN, FTF, FTF_EXCESS = 0, 1, 2, 3
#: Slots of the integer / float outputs.
I_BAD, I_REPAIRS, I_COUNT, I_FINISHED, I_BUSY, I_NEXT, I_DONE, I_QUEUE, I_DEMAND, I_ACTIVE = range(10)
F_START, F_END, F_TIME, F_REWARD = range(4)
#: The widest reachable-size row whose sum numpy computes sequentially (pairwise from 8 on).
MAX_SEQUENTIAL_WIDTH = 7

if AVAILABLE:
    import numba

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

    @_jit
    def round_step(code, scores, wanted, slot_job, job_slot, queue, status, work, completion, run_time, rounds_run,
                   last_run, last_overhead, ran_last, epoch_pos, iso, gang, arrival, job_base, end_global,
                   first_epoch, last_epoch, num_epochs, epoch_table, mean_by_row, counts_by_row, count_row_base,
                   initial, prior, duration_at, type_sizes, type_rel, term_code, term_weight, jct_norm, unfair,
                   round_index, time_s, round_s, threshold, restart_s, gpus, next_arrival, num_done, iout, fout,
                   raw, scale_in, cluster_out, cluster_low, cluster_high, time_unit, log_time):
        """Decode (``code``), run one round, admit, reward, seat, derive, raw features.

        Returns the round record's arrays (ids, run_s, overhead_s, completed ids); the
        scalars go to ``iout`` / ``fout`` (slots I_* / F_*). A non-finite score of an
        occupied slot (``priority``) sets iout[I_BAD] and changes nothing."""
        n = status.size
        slots = slot_job.size
        if code == NOOP:
            return np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty(0, np.int64)
        # --- decode: the ascending ids of the round ---------------------------------------
        sel = np.zeros(n, np.bool_)
        repairs = 0
        if code == PRIORITY:
            for s in range(slots):
                if slot_job[s] >= 0 and not np.isfinite(np.float64(scores[s])):
                    iout[I_BAD] = 1
                    return np.empty(0, np.int64), np.empty(0), np.empty(0), np.empty(0, np.int64)
            # slotted jobs in ascending id, their negated scores; a stable sort = ties by arrival
            keys = np.empty(slots)
            by_id = np.empty(slots, np.int64)
            m = 0
            for j in range(n):
                s = job_slot[j]
                if s >= 0:
                    keys[m] = -np.float64(scores[s])
                    by_id[m] = j
                    m += 1
            order = np.argsort(keys[:m], kind="mergesort")
            free = gpus
            for i in range(m):
                j = by_id[order[i]]
                if gang[j] <= free:
                    free -= gang[j]
                    sel[j] = True
            for j in range(n):  # then the queue, in arrival order
                if status[j] == ACTIVE and job_slot[j] < 0 and gang[j] <= free:
                    free -= gang[j]
                    sel[j] = True
        elif code == SELECT:
            absent = 0
            for s in range(slots):
                if wanted[s] and slot_job[s] < 0:
                    absent += 1
            free = gpus
            asked = 0
            taken = 0
            for j in range(n):
                s = job_slot[j]
                if s >= 0 and wanted[s]:
                    asked += 1
                    if gang[j] <= free:
                        free -= gang[j]
                        sel[j] = True
                        taken += 1
            repairs = absent + asked - taken
        elif code == GIVEN:  # ``wanted`` per job: a set decoded in Python
            for j in range(n):
                sel[j] = wanted[j]
        else:  # ALL_ACTIVE: a round no action could change
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
        # --- the round (Simulator.run_round) ---------------------------------------------
        start = time_s
        overhead = np.zeros(count)
        finish_offset = np.empty(count)
        num_finishing = 0
        longest = -np.inf
        for i in range(count):
            j = ids[i]
            remaining = iso[j] - work[j]
            if round_index >= 1 and min(round_s, remaining) > threshold and not ran_last[j]:
                overhead[i] = restart_s
            finish_offset[i] = overhead[i] + remaining
            if finish_offset[i] <= round_s:
                num_finishing += 1
                if finish_offset[i] > longest:
                    longest = finish_offset[i]
        round_len = longest if count and num_finishing == count else round_s
        run_s = np.empty(count)
        done_ids = np.empty(num_finishing, np.int64)
        for j in range(n):
            last_run[j] = 0.0
            last_overhead[j] = 0.0
            ran_last[j] = False
        finished = 0
        busy = 0
        for i in range(count):
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
            epoch_pos[j] = np.searchsorted(end_global, (job_base[j] + w) + 1e-6, side="right")
            run_time[j] = run_time[j] + run
            rounds_run[j] += 1
            last_run[j] = run
            last_overhead[j] = overhead[i]
            ran_last[j] = True
            busy += gang[j]
        done = num_done + finished
        now = start + round_len
        # --- arrivals (Simulator._admit_and_skip_idle) -----------------------------------
        nxt = next_arrival
        if done < n:
            while True:
                while nxt < n and arrival[nxt] <= now:
                    status[nxt] = ACTIVE
                    nxt += 1
                if done < nxt or nxt >= n:
                    break
                now = arrival[nxt]
        # --- reward (WeightedReward of the built-in terms) -------------------------------
        buffer = np.empty(n)
        total = 0.0
        rhos_done = False
        unfair_count = 0
        excess = np.empty(max(finished, 1))
        for t in range(term_code.size):
            tc = term_code[t]
            if tc < 0:
                break
            if tc == JCT:
                value = -_area(arrival, completion, n, start, now, buffer) / jct_norm
            elif tc == MAKESPAN:
                value = -(now - start) / round_s
            else:
                if not rhos_done:  # rewards.themis_rho of the jobs that completed
                    rhos_done = True
                    for i in range(finished):
                        j = done_ids[i]
                        a = arrival[j]
                        c = completion[j]
                        life = c - a
                        area = _area(arrival, completion, n, a, c, buffer)
                        contention = area / life if life > 0 else 1.0
                        rho = life / (work[j] * max(1.0, contention / gpus))
                        if rho > unfair:
                            unfair_count += 1
                        e = rho - 1.0
                        excess[i] = e if not e <= 0.0 else 0.0
                if finished == 0:
                    value = 0.0
                elif tc == FTF:
                    value = -np.float64(unfair_count)
                else:
                    value = -_pairwise_sum(excess, finished)
            total += term_weight[t] * value
        # --- slots (SlotMap.update) ------------------------------------------------------
        demand = 0
        active = 0
        for j in range(n):
            if status[j] == ACTIVE:
                demand += gang[j]
                active += 1
        for s in range(slots):
            j = slot_job[s]
            if j >= 0 and status[j] != ACTIVE:
                job_slot[j] = -1
                slot_job[s] = -1
        s = 0
        queued = 0
        for j in range(n):
            if status[j] != ACTIVE or job_slot[j] >= 0:
                continue
            while s < slots and slot_job[s] >= 0:
                s += 1
            if s < slots:
                slot_job[s] = j
                job_slot[j] = s
            else:
                queue[queued] = j
                queued += 1
        # --- per-slot derived arrays, predictor, rho-hat, raw v2 features ----------------
        c_share = max(1.0, active / gpus)
        widths = prior.shape[1]
        types = type_rel.shape[2]
        for s in range(slots):
            j = slot_job[s]
            if j < 0:
                for f in range(raw.shape[0]):
                    raw[f, s] = 0.0
                raw[2, s] = 1.0  # log2(1) = 0: the empty slot's zeros
                raw[3, s] = 1.0
                continue
            p = epoch_pos[j]
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
            rate = epoch_table[current, 2]
            batch = np.int64(epoch_table[current, 3])
            progress = np.float64(current - first) + fraction
            row = count_row_base[j] + epochs_done
            mean = mean_by_row[row]
            if mean != mean:  # before its first epoch completes, the current one stands in
                mean = duration
            weighted = 0.0
            weight_total = 0.0
            for w in range(widths):
                weight = prior[j, w] + counts_by_row[row, w]
                weighted += weight * duration_at[j, w]
                weight_total += weight
            future = max(num_epochs[j] - epochs_done - 1, 0)
            remaining = (1.0 - fraction) * duration + future * (weighted / weight_total)
            age = now - arrival[j]
            fair = (work[j] + remaining) * c_share
            rho = (c_share * remaining + age) / (fair if not fair <= 1e-9 else 1e-9)
            raw[0, s] = gang[j] / gpus
            raw[1, s] = progress / num_epochs[j]
            raw[2, s] = np.float64(gang[j])
            raw[3, s] = batch / initial[j]
            values = (rate * batch, mean, remaining, age, run_time[j] * gang[j], 1.0 if ran_last[j] else 0.0, rho)
            for f in range(7):
                v = values[f] * scale_in[f]
                if v <= 0.0:  # np.maximum(v, 0): NaN passes, -0.0 becomes 0.0
                    v = 0.0
                raw[4 + f, s] = v
            for t in range(types):
                raw[11 + t, s] = 0.0
            for w in range(type_sizes.shape[1]):
                if type_sizes[j, w] == batch:
                    for t in range(types):
                        raw[11 + t, s] = type_rel[j, w, t]
                    break
        # --- cluster features v2 (cluster_features_v2, homogeneous) ----------------------
        values = (
            1.0,  # every GPU free outside sequential mode
            0.0,
            0.0,
            busy / gpus,
            math.log2(1.0 + active / gpus),
            math.log2(1.0 + queued / gpus),
            math.log2(1.0 + demand / gpus),
            math.log1p(now / time_unit) / log_time,
        )
        for f in range(8):
            v = values[f]
            if v > cluster_high[f]:
                v = cluster_high[f]
            elif v < cluster_low[f]:
                v = cluster_low[f]
            cluster_out[f] = np.float32(v)
        iout[I_BAD] = 0
        iout[I_REPAIRS] = repairs
        iout[I_COUNT] = count
        iout[I_FINISHED] = finished
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


def reward_terms(reward_fn) -> tuple[np.ndarray, np.ndarray] | None:
    """(term codes, weights) of a WeightedReward made only of built-in terms, else None."""
    from shockwave_gym.env.rewards import REWARDS, WeightedReward

    if type(reward_fn) is not WeightedReward:
        return None
    codes = {REWARDS["jct"]: JCT, REWARDS["makespan"]: MAKESPAN, REWARDS["ftf"]: FTF, REWARDS["ftf_excess"]: FTF_EXCESS}
    terms = []
    for _, fn, weight in reward_fn.terms:
        if fn not in codes:
            return None
        terms.append((codes[fn], weight))
    return (np.array([c for c, _ in terms] + [-1], dtype=np.int64),
            np.array([w for _, w in terms] + [0.0], dtype=np.float64))


class CompiledStep:
    """The compiled step for one simulator (one trace) and the env's slot map: holds the
    static tables :func:`round_step` reads, runs it and commits its results."""

    def __init__(self, simulator, slots, features, reward_fn, terms, jct_normaliser_s: float):
        from shockwave_gym.interface import observation as obs
        from shockwave_gym.interface.predictor import predictor_for
        from shockwave_gym.metrics import UNFAIR_THRESHOLD

        sim = simulator
        st = sim.static
        predictor = predictor_for(sim.view)
        self.simulator, self.slots, self.reward_fn = sim, slots, reward_fn
        self._reward_terms = list(reward_fn.terms)
        self._static = (
            st.isolated_time_s, st.gang, st.arrival_s, st.job_base_s, st.epoch_end_global_s, st.first_epoch_index,
            st.last_epoch_index, st.num_epochs, np.ascontiguousarray(st.epoch_table), st.mean_epoch_s_by_row,
            st.size_counts_by_row, st.count_row_base, st.initial_batch_size, predictor.prior, predictor.duration_at_s,
            features._sizes, features._relative, terms[0], terms[1], float(jct_normaliser_s), float(UNFAIR_THRESHOLD),
        )
        config = sim.config
        self._round_constants = (float(config.round_s), float(config.restart_threshold_s),
                                 float(config.restart_overhead_s), int(config.gpus))
        self._tail = (obs.V2_SCALE_IN, None, obs.V2_CLUSTER_LOW, obs.V2_CLUSTER_HIGH, float(obs.TIME_UNIT_S),
                      float(obs._LOG_TIME))
        self._scale_out, self._low, self._high = obs.V2_SCALE_OUT, obs.V2_JOB_LOW, obs.V2_JOB_HIGH
        self.iout = np.zeros(10, np.int64)
        self.fout = np.zeros(4)
        self.raw = np.zeros((len(obs.JOB_FEATURES_V2), slots.max_jobs))
        self._queue = np.zeros(sim.num_jobs, np.int64)
        self._no_scores = np.zeros(slots.max_jobs)
        self._no_wanted = np.zeros(slots.max_jobs, np.bool_)
        self.cluster = np.zeros(len(obs.CLUSTER_FEATURES_V2), np.float32)
        self._call(NOOP, self._no_scores, self._no_wanted)  # loads (or compiles) the kernels now
        finish_features(np.zeros((self.raw.shape[0], 1)), self._scale_out, self._low, self._high)

    def valid_for(self, simulator, slots, reward_fn, jct_normaliser_s: float) -> bool:
        """Whether this step still serves ``simulator``, ``slots``, ``reward_fn`` and
        ``jct_normaliser_s`` (the ones it was built for, the reward's terms unchanged)."""
        return (simulator is self.simulator and slots is self.slots and reward_fn is self.reward_fn
                and reward_fn.terms == self._reward_terms and jct_normaliser_s == self._static[-2])

    def _call(self, code, scores, wanted):
        sim, slots = self.simulator, self.slots
        round_s, threshold, restart, gpus = self._round_constants
        scale_in, _, low, high, unit, log_time = self._tail
        return round_step(
            code, scores, wanted, slots.slot_job, slots.job_slot, self._queue, sim.status, sim.work_done_s,
            sim.completion_s, sim.run_time_s, sim.rounds_run, sim.last_run_s, sim.last_overhead_s, sim.ran_last_round,
            sim.epoch_pos, *self._static, sim.round_index, sim.time_s, round_s, threshold, restart, gpus,
            sim._next_arrival, sim._num_done, self.iout, self.fout, self.raw, scale_in, self.cluster, low, high, unit,
            log_time)

    def run(self, code: int, scores=None, wanted=None) -> tuple[float, int] | None:
        """Run one round decided by ``code`` (PRIORITY with ``scores``, SELECT with the bool
        ``wanted`` per slot, GIVEN with the bool ``wanted`` per job, ALL_ACTIVE); commit it.
        ``scores`` and ``wanted`` are fresh C-ordered float64 and bool arrays (so that one
        signature is compiled, once: about 15 s the first time, then loaded from numba's cache). (reward, repairs), or None when a score of an
        occupied slot is not finite (nothing changed)."""
        ids, run_s, overhead, done_ids = self._call(code, self._no_scores if scores is None else scores,
                                                    self._no_wanted if wanted is None else wanted)
        iout = self.iout.tolist()
        if iout[I_BAD]:
            return None
        start, end, now, reward = self.fout.tolist()
        sim = self.simulator
        record = RoundRecord(index=sim.round_index, start_s=start, end_s=end, job_ids=ids, run_s=run_s,
                             overhead_s=overhead, completed_ids=done_ids, gpus_busy=iout[I_BUSY])
        sim._commit_round(record, now, iout[I_NEXT], iout[I_DONE])
        slots = self.slots
        slots.queue = self._queue[: iout[I_QUEUE]].copy()
        slots.demand_gpus = iout[I_DEMAND]
        slots._seen = (id(sim.view), iout[I_NEXT], iout[I_ACTIVE])
        slots._gather = slots._by_job = slots._jobs_by_id = None
        self.num_active = iout[I_ACTIVE]
        return reward, iout[I_REPAIRS]

    def job_features(self) -> np.ndarray:
        """The (max_jobs, F) float32 job features of the last round's raw features: numpy's
        logarithms, then transform_v2's scales and clipping (compiled, as numpy does them)."""
        raw = self.raw
        np.log2(raw[2:4], out=raw[2:4])
        logged = raw[4:11]
        np.log1p(logged, out=logged)
        return finish_features(raw, self._scale_out, self._low, self._high)
