"""The round rules compiled (numba): one round (:func:`step_one`) and the admission of
arrivals (:func:`admit_one`) in one cluster of a :class:`~shockwave_gym.batch.rounds.BatchSimulator`,
and the state struct the kernels take (:func:`box`).

The second of the two implementations of the rules (the first is the readable
:class:`~shockwave_gym.simulator.Simulator`): each loop does per element exactly the float64
operations of the reference (no fast-math, so no reassociation or fused multiply-adds), and
:func:`pairwise_sum` adds in numpy's 1-D order. Optional: without numba the env runs the
reference.
On a cluster of several GPU types the same round places jobs by the default rule
(:func:`place_one`), maps reference work to time on each job's type epoch by epoch and back
(:func:`_type_time`, :func:`_reference_work`: the hooks of
:class:`~shockwave_gym.hetero_simulator.HeteroSimulator`) and restarts a job that moves type;
those helpers are not inlined, so the one-type path runs as before.
Why a JIT: a batched numpy step costs hundreds of array calls whatever K, and their fixed
cost alone exceeds the budget of a CartPole-speed step (docs/VECTOR_ENV.md has the figures).
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.state import ACTIVE, DONE

try:
    import numba
except ImportError:  # pragma: no cover - exercised where numba is not installed
    numba = None

AVAILABLE = numba is not None

if AVAILABLE:
    from numba.core import types as _types
    from numba.experimental import structref as _structref
    from numba.extending import overload

    _jit = numba.njit(cache=True, error_model="numpy", nogil=True)

    @_structref.register
    class StructType(_types.StructRef):
        """A numba struct (by reference) with one named field per field of a named tuple of
        arrays (a nested named tuple becomes a nested struct): see :func:`box`."""

        def preprocess_fields(self, fields):
            return tuple((name, _types.unliteral(typ)) for name, typ in fields)

    class Struct(_structref.StructRefProxy):
        """A kernel state struct as Python holds it: one reference, however many arrays."""

    _structref.define_boxing(StructType, Struct)

    def _struct_type(tuple_type):
        """The StructType of a named tuple type (nested named tuples: nested structs)."""
        return StructType([(name, _struct_type(typ) if isinstance(typ, _types.BaseNamedTuple) else typ)
                           for name, typ in zip(tuple_type.fields, tuple_type.types, strict=True)])

    def _to_struct(t):
        raise NotImplementedError("compiled only")

    @overload(_to_struct)
    def _to_struct_impl(t):
        lines = ["def impl(t):", "    s = new(struct_type)"]
        for name, typ in zip(t.fields, t.types, strict=True):
            nested = isinstance(typ, _types.BaseNamedTuple)
            lines.append(f"    s.{name} = to_struct(t.{name})" if nested else f"    s.{name} = t.{name}")
        lines.append("    return s")
        scope = {"new": _structref.new, "struct_type": _struct_type(t), "to_struct": _to_struct}
        exec("\n".join(lines), scope)  # one assignment per field: numba has no setattr by name
        return scope["impl"]

    @_jit
    def box(t):
        """The kernels' state struct of ``t``, a named tuple of arrays and numbers (nested
        named tuples become nested structs): the same fields by the same names, the arrays
        shared, not copied. Kernels read it as they would ``t``; passing it costs one
        reference, where a named tuple is typed field by field at every call and copied
        (every array's reference count) into every helper it is passed to. Build it again
        when an array of ``t`` is replaced."""
        return _to_struct(t)

    @_jit
    def _pairwise_block(a, lo, n):
        res = 0.0
        if n < 8:
            for i in range(lo, lo + n):
                res += a[i]
            return res
        r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
        r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
        i = 8
        main = n - n % 8
        while i < main:
            r0 += a[lo + i]
            r1 += a[lo + i + 1]
            r2 += a[lo + i + 2]
            r3 += a[lo + i + 3]
            r4 += a[lo + i + 4]
            r5 += a[lo + i + 5]
            r6 += a[lo + i + 6]
            r7 += a[lo + i + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += a[lo + i]
            i += 1
        return res

    @_jit
    def pairwise_sum(a, n):
        """``np.sum(a[:n])`` bit for bit (numpy's pairwise order, blocks of 128)."""
        if n <= 128:  # one block: what the loop below computes, without its stacks
            return _pairwise_block(a, 0, n)
        # iterative form of numpy's recursion: split while longer than 128
        stack_lo = np.empty(64, np.int64)
        stack_n = np.empty(64, np.int64)
        partial = np.empty(64)
        state = np.zeros(64, np.int64)  # 0: fresh, 1: left done
        top = 0
        stack_lo[0], stack_n[0], state[0] = 0, n, 0
        result = 0.0
        while top >= 0:
            lo, m = stack_lo[top], stack_n[top]
            if m <= 128:
                value = _pairwise_block(a, lo, m)
                top -= 1
                while top >= 0 and state[top] == 1:
                    value = partial[top] + value
                    top -= 1
                if top < 0:
                    result = value
                    break
                partial[top] = value
                state[top] = 1
                half = stack_n[top] // 2
                half -= half % 8
                top += 1
                stack_lo[top], stack_n[top], state[top] = stack_lo[top - 1] + half, stack_n[top - 1] - half, 0
                continue
            half = m // 2
            half -= half % 8
            top += 1
            stack_lo[top], stack_n[top], state[top] = lo, half, 0
        return result

    _inline = numba.njit(cache=True, error_model="numpy", nogil=True, inline="always")

    @_inline
    def _restart_overhead(round_index, ran_last, remaining, round_s, threshold_s, restart_s):
        """A job's restart loss this round (R3): it pays unless it ran last round or runs
        too briefly (per-job helpers take scalars: a struct passed per job would be copied)."""
        pays = round_index >= 1 and not ran_last and min(round_s, remaining) > threshold_s
        return restart_s if pays else 0.0

    @_jit  # not inlined: the one-type path stays as lean as before
    def _type_time(k, j, t, sim):
        """(time done, total time) of job ``j`` of cluster ``k`` on GPU type ``t`` (-1: one
        type, reference work itself): hetero_state.TypedJobArrays.to_type_time for one job."""
        if t < 0 or sim.type_identity[k, j, t]:
            return sim.work_done_s[k, j], sim.isolated_time_s[k, j]
        e = min(sim.pos[k, j], sim.seg_end[k, j] - 1)
        typed, packed = sim.typed, sim.packed
        ratio = typed[e, 0, t] / packed[e, 0]
        return typed[e, 1, t] + (sim.work_done_s[k, j] - packed[e, 1]) * ratio, sim.type_iso_s[k, j, t]

    @_jit  # not inlined: the one-type path stays as lean as before
    def _reference_work(k, j, t, tau, sim):
        """Inverse of :func:`_type_time`: reference work of job ``j`` at ``tau`` seconds of
        type-``t`` time (TypedJobArrays.to_reference_work for one job)."""
        if t < 0 or sim.type_identity[k, j, t]:
            return tau
        typed, packed = sim.typed, sim.packed
        query = sim.type_base_s[k, j, t] + tau + 1e-6
        lo, hi = sim.first[k, j], sim.seg_end[k, j]
        while lo < hi:  # the first epoch whose end on type t is beyond the query
            mid = (lo + hi) >> 1
            if typed[mid, 2, t] <= query:
                lo = mid + 1
            else:
                hi = mid
        e = min(lo, sim.seg_end[k, j] - 1)
        ratio = packed[e, 0] / typed[e, 0, t]
        return min(packed[e, 1] + (tau - typed[e, 1, t]) * ratio, sim.isolated_time_s[k, j])

    @_jit  # not inlined: the one-type path stays as lean as before
    def _stayed(k, j, t, sim):
        """Whether job ``j`` ran last round on the type it runs on now (R3)."""
        return sim.ran_last_round[k, j] and (t < 0 or sim.last_type[k, j] == t)

    @_jit  # not inlined: the one-type path stays as lean as before
    def _book_type(k, t, gang, run, overhead, sim):
        """Per type, the GPU-seconds held and worked (metrics' utilisation per type)."""
        sim.type_gpu_s[k, 0, t] += gang * run
        sim.type_gpu_s[k, 1, t] += gang * (run - overhead)

    @_jit  # not inlined: the one-type path stays as lean as before
    def place_one(k, order, n, sim, sel, free):
        """The default placement rule (placement.place_in_order, with backfill) over the jobs
        ``order[:n]`` of typed cluster ``k``: each to its fastest runnable type (rate at its
        current batch size; ties: cluster order) with room for its gang, in ``sel[k]`` and
        ``sim.job_type[k]``; a job that fits no type is skipped. ``free`` is scratch of the
        types' width. Returns the number of jobs placed."""
        typed, runnable, gang = sim.typed, sim.type_runnable, sim.gang
        for t in range(sim.num_types[k]):
            free[t] = sim.type_capacity[k, t]
        placed = 0
        for i in range(n):
            j = order[i]
            e = min(sim.pos[k, j], sim.seg_end[k, j] - 1)
            best, best_rate = -1, -np.inf
            for t in range(sim.num_types[k]):
                if runnable[k, j, t] and free[t] >= gang[k, j] and typed[e, 3, t] > best_rate:
                    best, best_rate = t, typed[e, 3, t]
            if best >= 0:
                free[best] -= gang[k, j]
                sel[k, j] = True
                sim.job_type[k, j] = best
                placed += 1
        return placed

    @_inline
    def _job_start(k, j, typed, sim, work, iso, ran_last):
        """Job ``j`` of cluster ``k`` at the round's start: (its type, -1 on one type; time
        done and total time on it; whether it ran there last round)."""
        if typed:
            t = sim.job_type[k, j]
            done, total = _type_time(k, j, t, sim)
            return t, done, total, _stayed(k, j, t, sim)
        return -1, work[k, j], iso[k, j], ran_last[k, j]

    @_inline
    def _round_length(k, sel, sim, typed):
        """The round's length in cluster ``k`` (R4): the longest finish when every selected
        job finishes within the round, else the round. ``typed``: the cluster has GPU types
        (only then is the struct read per job)."""
        iso, work, ran_last = sim.isolated_time_s, sim.work_done_s, sim.ran_last_round
        rs, threshold, restart, index = sim.round_s[k], sim.restart_threshold_s[k], sim.restart_overhead_s[k], sim.round_index[k]
        any_sel = False
        all_finish = True
        longest = -np.inf
        for j in range(sim.num_jobs[k]):
            if sel[k, j]:
                any_sel = True
                _, done, total, stayed = _job_start(k, j, typed, sim, work, iso, ran_last)
                remaining = total - done
                finish_offset = _restart_overhead(index, stayed, remaining, rs, threshold, restart) + remaining
                if finish_offset <= rs:
                    if finish_offset > longest:
                        longest = finish_offset
                else:
                    all_finish = False
        return longest if any_sel and all_finish else rs

    @_inline
    def _epoch_after(end_global, target, lo, hi):
        """The first flat epoch index in [lo, hi) whose end is beyond ``target`` (base + work
        + 1 us): gallop from ``lo`` (most rounds cross few epochs), then bisect."""
        step = 1
        while lo < hi:
            probe = lo + step - 1
            if probe >= hi:
                break
            if end_global[probe] <= target:
                lo = probe + 1  # every end up to the probe is reached
                step *= 2
            else:
                hi = probe  # the answer is at or before the probe
                break
        while lo < hi:
            mid = (lo + hi) >> 1
            if end_global[mid] <= target:
                lo = mid + 1
            else:
                hi = mid
        return lo

    @_inline
    def _run_selected(k, sel, sim, typed, start, round_len, paid, completed):
        """The selected jobs of cluster ``k`` (``typed``: of GPU types) run the round;
        returns (GPUs busy, jobs run, jobs completed)."""
        iso, work, ran_last, gang, status = sim.isolated_time_s, sim.work_done_s, sim.ran_last_round, sim.gang, sim.status
        run_time, rounds_run, last_run, last_overhead = sim.run_time_s, sim.rounds_run, sim.last_run_s, sim.last_overhead_s
        pos, end_global, job_base, seg_end, span = sim.pos, sim.end_global, sim.job_base_s, sim.seg_end, sim.span
        completion, num_done = sim.completion_s, sim.num_done
        rs, threshold, restart, index = sim.round_s[k], sim.restart_threshold_s[k], sim.restart_overhead_s[k], sim.round_index[k]
        busy = 0
        count = 0
        finished = 0
        for j in range(sim.num_jobs[k]):
            if not sel[k, j]:
                if ran_last[k, j]:  # did not run: its last-round entries go back to zero
                    last_run[k, j] = 0.0
                    last_overhead[k, j] = 0.0
                    ran_last[k, j] = False
                    if typed:
                        sim.last_type[k, j] = -1
                continue
            t, done, total, stayed = _job_start(k, j, typed, sim, work, iso, ran_last)
            remaining = total - done
            overhead = _restart_overhead(index, stayed, remaining, rs, threshold, restart)
            finish_offset = overhead + remaining
            finishes = finish_offset <= rs
            run = finish_offset if finishes else round_len
            work[k, j] = done + (run - overhead)
            if typed:
                work[k, j] = _reference_work(k, j, t, work[k, j], sim)
                _book_type(k, t, gang[k, j], run, overhead, sim)
                sim.last_type[k, j] = t
            if finishes:
                work[k, j] = iso[k, j]
                completion[k, j] = start + finish_offset
                status[k, j] = DONE
                num_done[k] += 1
                completed[finished] = j
                finished += 1
            run_time[k, j] = run_time[k, j] + run
            rounds_run[k, j] += 1
            last_run[k, j] = run
            last_overhead[k, j] = overhead
            ran_last[k, j] = True
            busy += gang[k, j]
            paid[count] = gang[k, j] * overhead
            count += 1
            lo = pos[k, j]
            pos[k, j] = _epoch_after(end_global, job_base[k, j] + work[k, j] + 1e-6, lo, min(seg_end[k, j], lo + span[k, j]))
        return busy, count, finished

    @_inline
    def step_one(k, sel, sim, typed, paid, completed):
        """One round in cluster ``k`` of the jobs ``sel[k]`` (``typed``: on the types in
        ``sim.job_type[k]``, the cluster having GPU types); returns (start, round end, GPUs
        busy, jobs completed). The ids of the jobs that completed go to ``completed`` in
        ascending order; ``paid`` is scratch of the jobs' width."""
        start = sim.time_s[k]
        round_len = _round_length(k, sel, sim, typed)
        busy, count, finished = _run_selected(k, sel, sim, typed, start, round_len, paid, completed)
        if sim.exact_overhead:
            total = 0.0
            for i in range(count):
                total += paid[i]
        else:
            total = pairwise_sum(paid, count)
        sim.overhead_gpu_s[k] += total
        sim.time_s[k] = start + round_len
        sim.round_index[k] += 1
        return start, start + round_len, busy, finished

    @_inline
    def admit_one(k, sim):
        """Admit arrivals up to now in cluster ``k``; jump to the next arrival when idle (R1)."""
        n = sim.num_jobs[k]
        arrival, status, time_s, next_arrival, num_done = sim.arrival_s, sim.status, sim.time_s, sim.next_arrival, sim.num_done
        while True:
            nxt = next_arrival[k]
            while nxt < n and arrival[k, nxt] <= time_s[k]:
                status[k, nxt] = ACTIVE
                nxt += 1
            next_arrival[k] = nxt
            if num_done[k] < nxt or nxt >= n:
                break
            time_s[k] = arrival[k, nxt]

    @_jit
    def step_columns(sim, ids, columns, counts, gpu_time, sel, paid, completed):
        """One round of cluster 0 in which jobs ``ids`` (ascending) run in configuration
        columns ``columns``, then the arrivals admitted (R1): the rounds of
        :class:`~shockwave_gym.elastic.ElasticSimulator` on one GPU type, column ``c`` a
        count of ``counts[c % counts.size]`` GPUs. A column maps reference work to time and
        restarts a job that changes column as a GPU type does in :func:`step_one`; a job's
        GPU-seconds (``gpu_time``, per job) and the GPUs busy are its count's. ``sel``
        (1, jobs), ``paid`` and ``completed`` are scratch. Returns (start, round end, GPUs
        busy, jobs completed: their ids in ``completed``)."""
        for j in range(sim.num_jobs[0]):
            sel[0, j] = False
        for i in range(ids.size):
            sel[0, ids[i]] = True
            sim.job_type[0, ids[i]] = columns[i]
        start, end, _, finished = step_one(0, sel, sim, True, paid, completed)
        busy = 0
        for i in range(ids.size):
            count = counts[columns[i] % counts.size]
            busy += count
            gpu_time[ids[i]] += sim.last_run_s[0, ids[i]] * count
        if sim.num_done[0] < sim.num_jobs[0]:
            admit_one(0, sim)
        return start, end, busy, finished

    @_jit
    def admit_rows(rows, boxed):
        """Admit arrivals up to now in ``rows``; jump idle clusters to their next arrival (R1)."""
        sim = boxed
        for k in range(rows.size):
            if rows[k]:
                admit_one(k, sim)

    @_jit
    def overlap_row_sums(a, c, out):
        """``out[j] = np.clip(np.minimum(c[j], c) - np.maximum(a[j], a), 0, None).sum()`` bit
        for bit for finite ``a`` and ``c``: row j of the pairwise lifetime overlaps of
        :func:`~shockwave_gym.metrics.mean_active_jobs`, summed in numpy's order."""
        n = a.size
        row = np.empty(n)
        for j in range(n):
            for i in range(n):
                start = a[j] if a[j] > a[i] else a[i]
                end = c[j] if c[j] < c[i] else c[i]
                overlap = end - start
                row[i] = overlap if overlap > 0.0 else 0.0
            out[j] = pairwise_sum(row, n)
