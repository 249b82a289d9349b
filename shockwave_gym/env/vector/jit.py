"""Compiled (numba) per-cluster kernels of an env step: derived arrays, predictor and
rho-hat in one pass; the slot map; the ``priority`` and ``select`` decoders with the packing
scan; the jobs-in-system area the rewards sum (the features are
:mod:`~shockwave_gym.env.vector.features`').

Each kernel does per element the float64 operations of the reference (the view, the
interface's predictor, features and action modes, env/rewards.py; no fast-math). Logarithms
are left to numpy, which applies them to the raw features exactly as the single observation
does, so results stay bit for bit the same. Optional: without numba the env runs the
reference.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.batch import jit as core_jit
from shockwave_gym.state import ACTIVE, DONE

AVAILABLE = core_jit.AVAILABLE

if AVAILABLE:
    import numba

    _jit = numba.njit(cache=True, error_model="numpy", nogil=True)
    # helpers inlined into their callers: a call passing arrays costs reference counting
    _inline = numba.njit(cache=True, error_model="numpy", nogil=True, inline="always")
    pairwise_sum = core_jit.pairwise_sum

    @_inline
    def _is_read(status, ran_last):
        """Whether a job's estimates are ever read: active jobs and those that just completed."""
        return status == ACTIVE or (status == DONE and ran_last)

    @_inline
    def _expected_epoch_s(prior, duration_at, packed, row, last, done):
        """The expected duration of a future epoch: the prior plus the epochs seen at each
        size (none yet: + 0.0), weighting each size's duration."""
        weighted = 0.0
        total = 0.0
        for w in range(prior.shape[1]):
            weight = prior[row, w] + (packed[last, 5 + w] if done > 0 else 0.0)
            weighted += weight * duration_at[row, w]
            total += weight
        return weighted / total

    @_inline
    def _derive_jobs(k, sim, tables, est, c):
        """Progress, batch size, rate, mean epoch duration and predicted remaining time of the
        jobs of cluster ``k`` that ran since they were derived (ClusterView._derived,
        RemainingTimePredictor.remaining_s), then every read job's rho-hat (ftf_estimate)
        with contention ``c``, in one pass."""
        packed, prior, duration_at, base = sim.packed, tables.prior, tables.duration_at_s, tables.row0[k]
        pos, seg_end, first, num_epochs = sim.pos, sim.seg_end, sim.first, sim.num_epochs
        status, ran_last, rounds_run, work = sim.status, sim.ran_last_round, sim.rounds_run, sim.work_done_s
        derived, derived_rounds = est.derived, est.derived_rounds
        progress, batch, rate, mean, remaining = est.progress, est.batch, est.rate, est.mean, est.remaining
        rho, arrival, now = est.rho, sim.arrival_s, sim.time_s[k]
        for j in range(sim.num_jobs[k]):
            if not _is_read(status[k, j], ran_last[k, j]):
                continue
            if derived[k, j] and derived_rounds[k, j] == rounds_run[k, j]:
                age = now - arrival[k, j]
                rho[k, j] = (age + c * remaining[k, j]) / max(c * (work[k, j] + remaining[k, j]), 1e-9)
                continue
            derived[k, j] = True
            derived_rounds[k, j] = rounds_run[k, j]
            p = pos[k, j]
            current = max(min(p, seg_end[k, j] - 1), 0)
            done = min(p - first[k, j], num_epochs[k, j])
            duration = packed[current, 0]
            fraction = min(max((work[k, j] - packed[current, 1]) / duration, 0.0), 1.0)
            if status[k, j] == DONE:
                fraction = 1.0
            progress[k, j] = (current - first[k, j]) + fraction
            batch[k, j] = np.int64(packed[current, 3])
            rate[k, j] = packed[current, 2]
            last = p - 1  # = first + done - 1, the last completed epoch (when done > 0)
            mean[k, j] = packed[last, 4] / done if done > 0 else duration
            expected = _expected_epoch_s(prior, duration_at, packed, base + j, last, done)
            future = max(num_epochs[k, j] - done - 1, 0)
            remaining[k, j] = (1.0 - fraction) * duration + future * expected
            age = now - arrival[k, j]
            rho[k, j] = (age + c * remaining[k, j]) / max(c * (work[k, j] + remaining[k, j]), 1e-9)

    @_inline
    def derive_one(k, sim, tables, est):
        """Cluster ``k``'s ClusterView._derived, RemainingTimePredictor.remaining_s and
        ftf_estimate per job (the mean epoch duration already falls back on the current
        epoch's). ``sim.packed`` is the bank's per-epoch table (EpochBank.packed); job ``j``'s
        prior and durations are row ``tables.row0[k] + j`` (TraceJobTables).

        Incremental: a job's progress, batch size, rate, mean epoch duration and remaining
        time depend only on its work and epoch, which change only when it runs, so they are
        recomputed only for jobs that ran since they were last computed (``rounds_run`` differs
        from ``derived_rounds``) or were never computed (``derived`` False: cleared when the
        cluster resets); rho-hat, which reads the clock and the number of active jobs, is
        recomputed for every job read."""
        status = sim.status
        active = 0
        for j in range(sim.num_jobs[k]):
            if status[k, j] == ACTIVE:
                active += 1
        est.num_active[k] = active
        _derive_jobs(k, sim, tables, est, max(1.0, active / sim.gpus[k]))

    @_jit
    def derive_rows(rows, boxed):
        """:func:`derive_one` for the clusters in ``rows`` (the others' outputs are kept) of
        the vector env's state struct (ClusterState, boxed)."""
        st = boxed
        sim, tables, est = st.sim, st.tables, st.est
        for k in range(rows.size):
            if rows[k]:
                derive_one(k, sim, tables, est)

    @_inline
    def slots_one(k, sim, slots):
        """BatchSlotMap.update for cluster ``k`` (and its queue length)."""
        slot_job, job_slot, queued = slots.slot_job, slots.job_slot, slots.queued
        status, gang = sim.status, sim.gang
        width = slot_job.shape[1]
        n = sim.num_jobs[k]
        total = 0
        for j in range(n):
            if status[k, j] == ACTIVE:
                total += gang[k, j]
        slots.demand_gpus[k] = total
        for s in range(width):
            j = slot_job[k, s]
            if j >= 0 and status[k, j] != ACTIVE:
                job_slot[k, j] = -1
                slot_job[k, s] = -1
        s = 0
        waiting = 0
        for j in range(n):
            queued[k, j] = False
            if status[k, j] != ACTIVE or job_slot[k, j] >= 0:
                continue
            while s < width and slot_job[k, s] >= 0:
                s += 1
            if s < width:
                slot_job[k, s] = j
                job_slot[k, j] = s
            else:
                queued[k, j] = True
                waiting += 1
        slots.queue_count[k] = waiting

    @_jit
    def update_slots(rows, boxed_sim, boxed_slots):
        """BatchSlotMap.update for ``rows`` (SimArrays and SlotArrays, boxed)."""
        sim, slots = boxed_sim, boxed_slots
        for k in range(rows.size):
            if rows[k]:
                slots_one(k, sim, slots)

    @_inline
    def _scan(k, order, count, gang, gpus, sel):
        free = gpus[k]
        taken = 0
        for i in range(count):
            if free == 0:
                break
            j = order[i]
            g = gang[k, j]
            if g > free:
                continue
            free -= g
            sel[k, j] = True
            taken += 1
        return taken

    @_inline
    def _before(key_a, id_a, key_b, id_b):
        """Heap order: smaller key (higher score) first, ties by lower id."""
        return key_a < key_b or (key_a == key_b and id_a < id_b)

    @_inline
    def _sift_down(keys, ids, size, i):
        """Restore the heap (``keys``, ``ids`` stored in the nodes) below node ``i``."""
        key, job = keys[i], ids[i]
        hole = i
        while True:
            child = 2 * hole + 1
            if child >= size:
                break
            if child + 1 < size and _before(keys[child + 1], ids[child + 1], keys[child], ids[child]):
                child += 1
            if not _before(keys[child], ids[child], key, job):
                break
            keys[hole], ids[hole] = keys[child], ids[child]
            hole = child
        keys[hole], ids[hole] = key, job

    @_inline
    def _pop(keys, ids, size):
        """Remove the first node of a heap of ``size`` nodes (Floyd's bottom-up deletion: the
        hole goes down to a leaf, then the last node climbs back from there); returns its id."""
        top = ids[0]
        size -= 1
        key, job = keys[size], ids[size]
        hole = 0
        while True:
            child = 2 * hole + 1
            if child >= size:
                break
            if child + 1 < size and _before(keys[child + 1], ids[child + 1], keys[child], ids[child]):
                child += 1
            keys[hole], ids[hole] = keys[child], ids[child]
            hole = child
        while hole > 0:
            parent = (hole - 1) >> 1
            if not _before(key, job, keys[parent], ids[parent]):
                break
            keys[hole], ids[hole] = keys[parent], ids[parent]
            hole = parent
        keys[hole], ids[hole] = key, job
        return top

    @_inline
    def priority_one(k, scores, sim, slots, sel, keys, ids, waiting):
        """PriorityMode.choose for cluster ``k``: descending score (ties by arrival), queue
        last, packed; the scan pops jobs from a heap until the GPUs are full (the pops come in
        the order of a full sort: keys and ids are unique pairs). ``keys``, ``ids`` (slots)
        and ``waiting`` (gpus.max() + 2) are scratch."""
        slot_job, queued, gang, gpus = slots.slot_job, slots.queued, sim.gang, sim.gpus
        width = slot_job.shape[1]
        size = 0
        waiting[:] = 0
        for s in range(width):
            j = slot_job[k, s]
            if j >= 0:
                keys[size] = -np.float64(scores[k, s])
                ids[size] = j
                size += 1
                waiting[gang[k, j]] += 1
        for i in range(size // 2 - 1, -1, -1):
            _sift_down(keys, ids, size, i)
        free = gpus[k]
        smallest = 1  # smallest gang among unpopped jobs (or beyond gpus when none)
        while smallest < waiting.size - 1 and waiting[smallest] == 0:
            smallest += 1
        while size > 0 and free >= smallest:  # once nothing left fits, the rest is skipped
            j = _pop(keys, ids, size)
            size -= 1
            g = gang[k, j]
            waiting[g] -= 1
            while smallest < waiting.size - 1 and waiting[smallest] == 0:
                smallest += 1
            if g <= free:
                free -= g
                sel[k, j] = True
        for j in range(queued.shape[1]):
            if free == 0:
                break
            if queued[k, j] and gang[k, j] <= free:
                free -= gang[k, j]
                sel[k, j] = True

    @_jit  # not inlined: the one-type path stays as lean as before
    def priority_typed_one(k, scores, sim, slots, sel, keys, ids, order, free):
        """TypedPriorityMode.place for typed cluster ``k``: PriorityMode.order (descending
        score, ties by arrival, then the queue in arrival order), placed by the default rule
        (batch.jit.place_one). ``order`` (jobs) and ``free`` (types) are scratch too."""
        slot_job, queued = slots.slot_job, slots.queued
        size = 0
        for s in range(slot_job.shape[1]):
            j = slot_job[k, s]
            if j >= 0:
                keys[size] = -np.float64(scores[k, s])
                ids[size] = j
                size += 1
        for i in range(size // 2 - 1, -1, -1):
            _sift_down(keys, ids, size, i)
        n = 0
        while size > 0:
            order[n] = _pop(keys, ids, size)
            size -= 1
            n += 1
        for j in range(sim.num_jobs[k]):
            if queued[k, j]:
                order[n] = j
                n += 1
        core_jit.place_one(k, order, n, sim, sel, free)

    @_jit  # the single env's elastic step (env/vector/elastic.py): one cluster, plain arrays
    def elastic_priority_one(scores, prefs, by_id, slot_job, queue, allowed, counts, gpus, ids, picked):
        """ElasticPriorityMode.place (interface/elastic_actions.py): slotted jobs by
        descending score (ties: arrival order; ``by_id``, the slots by job id), each at the
        largest allowed count up to the one its preference asks for that still fits (its
        smallest allowed count when none is at or below it), then the queue in arrival order
        at its smallest allowed count; ``allowed`` (jobs, counts). The jobs go to ``ids``,
        their count indices to ``picked``, in the order taken; returns how many."""
        num_counts = counts.size
        n = by_id.size
        keys = np.empty(n)
        for i in range(n):
            keys[i] = -np.float64(scores[by_id[i]])
        order = np.argsort(keys, kind="mergesort")
        free = gpus
        taken = 0
        for i in range(n + queue.size):
            j = slot_job[by_id[order[i]]] if i < n else queue[i - n]
            smallest = 0
            while smallest < num_counts - 1 and not allowed[j, smallest]:
                smallest += 1
            top = smallest
            if i < n:
                u = min(max(np.float64(prefs[by_id[order[i]]]), -1.0), 1.0)
                top = int(min(num_counts - 1, np.floor((u + 1) / 2 * num_counts)))
            below = False
            for k in range(top, -1, -1):
                if allowed[j, k]:
                    below = True
                    if counts[k] <= free:
                        ids[taken], picked[taken] = j, k
                        taken += 1
                        free -= counts[k]
                        break
            if not below and counts[smallest] <= free:
                ids[taken], picked[taken] = j, smallest
                taken += 1
                free -= counts[smallest]
        return taken

    @_jit  # the single env's elastic step (env/vector/elastic.py): one cluster, plain arrays
    def elastic_select_one(entries, by_id, slot_job, allowed, counts, gpus, ids, picked):
        """ElasticSelectMode.place (interface/elastic_actions.py): the slotted jobs whose entry
        asks for a count they may use (``allowed``, slots x C; entry ``k + 1``: count ``k``),
        taken in arrival order (``by_id``) while their count fits. The jobs go to ``ids``,
        their count indices to ``picked``; returns (how many, repairs: the other non-zero
        entries)."""
        wanted = 0
        for s in range(entries.size):
            if entries[s] > 0:
                wanted += 1
        free = gpus
        taken = 0
        for i in range(by_id.size):
            s = by_id[i]
            k = entries[s] - 1
            if k >= 0 and allowed[s, k] and counts[k] <= free:
                ids[taken], picked[taken] = slot_job[s], k
                taken += 1
                free -= counts[k]
        return taken, wanted - taken

    @_inline
    def scores_finite(k, scores, slot_job):
        """Whether every occupied slot of cluster ``k`` has a finite score."""
        for s in range(slot_job.shape[1]):
            if slot_job[k, s] >= 0 and not np.isfinite(np.float64(scores[k, s])):
                return False
        return True

    @_inline
    def select_one(k, wanted, sim, slots, sel, order, free, typed):
        """SelectMode.choose for cluster ``k``: wanted slotted jobs in arrival order, packed
        (TypedSelectMode.place on a typed cluster: placed by the default rule); returns the
        repairs (bits dropped). ``order`` (jobs) and ``free`` (types) are scratch; ``typed``:
        the cluster has GPU types."""
        slot_job, job_slot, gang, gpus = slots.slot_job, slots.job_slot, sim.gang, sim.gpus
        width = slot_job.shape[1]
        absent = 0
        for s in range(width):
            if wanted[k, s] and slot_job[k, s] < 0:
                absent += 1
        count = 0
        for j in range(job_slot.shape[1]):
            s = job_slot[k, j]
            if s >= 0 and wanted[k, s]:
                order[count] = j
                count += 1
        if typed:
            return absent + count - core_jit.place_one(k, order, count, sim, sel, free)
        return absent + count - _scan(k, order, count, gang, gpus, sel)

    @_inline
    def area(arrival, completion, k, n, start, end, buffer):
        """rewards.jobs_in_system_integral_s of cluster ``k``: the arrived jobs' overlaps
        with [start, end], summed as numpy does (``buffer`` is scratch)."""
        arrived = 0
        while arrived < n and arrival[k, arrived] < end:
            arrived += 1
        for i in range(arrived):
            c = completion[k, i]
            overlap = c if c < end else end
            if c != c:
                overlap = end
            overlap -= max(arrival[k, i], start)
            buffer[i] = max(overlap, 0.0)
        return pairwise_sum(buffer, arrived)
