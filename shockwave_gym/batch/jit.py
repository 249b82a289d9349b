"""Compiled (numba) inner loops of :class:`~shockwave_gym.batch.rounds.BatchSimulator`.

Optional: without numba the simulator runs its numpy path, with the same results. Each loop
does per element exactly the float64 operations of the numpy path (no fast-math, so no
reassociation or fused multiply-adds), and :func:`pairwise_sum` adds in numpy's 1-D order.
Why a JIT: a batched numpy step costs hundreds of array calls whatever K, and their fixed
cost alone exceeds the budget of a CartPole-speed step (docs/VECTOR_ENV.md has the figures).
"""

from __future__ import annotations

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - exercised where numba is not installed
    numba = None

AVAILABLE = numba is not None

if AVAILABLE:
    _jit = numba.njit(cache=True, error_model="numpy", nogil=True)

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
    def step_one(k, sel, num_jobs, iso, work, ran_last, round_index, round_s, threshold, overhead_s,
                 gang, completion, status, run_time, rounds_run, last_run, last_overhead, time_s,
                 num_done, overhead_gpu_s, exact_overhead, job_base, pos, seg_end, span, end_global, done_code,
                 paid, completed):
        """One round in cluster ``k``; returns (start, round end, GPUs busy, jobs completed).
        The ids of the jobs that completed go to ``completed`` in ascending order; ``paid`` is
        scratch of the jobs' width."""
        n = num_jobs[k]
        rs = round_s[k]
        start = time_s[k]
        any_sel = False
        all_finish = True
        longest = -np.inf
        for j in range(n):
            if sel[k, j]:
                any_sel = True
                remaining = iso[k, j] - work[k, j]
                pays = round_index[k] >= 1 and not ran_last[k, j] and min(rs, remaining) > threshold[k]
                overhead = overhead_s[k] if pays else 0.0
                finish_offset = overhead + remaining
                if finish_offset <= rs:
                    if finish_offset > longest:
                        longest = finish_offset
                else:
                    all_finish = False
        round_len = longest if any_sel and all_finish else rs
        busy = 0
        count = 0
        finished = 0
        for j in range(n):
            if sel[k, j]:
                remaining = iso[k, j] - work[k, j]
                pays = round_index[k] >= 1 and not ran_last[k, j] and min(rs, remaining) > threshold[k]
                overhead = overhead_s[k] if pays else 0.0
                finish_offset = overhead + remaining
                finishes = finish_offset <= rs
                run = finish_offset if finishes else round_len
                work[k, j] = work[k, j] + (run - overhead)
                if finishes:
                    work[k, j] = iso[k, j]
                    completion[k, j] = start + finish_offset
                    status[k, j] = done_code
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
                # advance the current epoch past every end <= base + work + 1 us: gallop
                # from where it was (most rounds cross few epochs), then bisect
                target = job_base[k, j] + work[k, j] + 1e-6
                lo = pos[k, j]
                hi = min(seg_end[k, j], lo + span[k, j])
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
                pos[k, j] = lo
            elif ran_last[k, j]:
                last_run[k, j] = 0.0
                last_overhead[k, j] = 0.0
                ran_last[k, j] = False
        if exact_overhead:
            total = 0.0
            for i in range(count):
                total += paid[i]
        else:
            total = pairwise_sum(paid, count)
        overhead_gpu_s[k] += total
        time_s[k] = start + round_len
        round_index[k] += 1
        return start, start + round_len, busy, finished

    @_jit
    def step_rows(rows, sel, num_jobs, iso, work, ran_last, round_index, round_s, threshold, overhead_s,
                  gang, completion, status, run_time, rounds_run, last_run, last_overhead, time_s,
                  num_done, overhead_gpu_s, exact_overhead, start_out, end_out, busy_out,
                  job_base, pos, seg_end, span, end_global, done_code):
        """One round in every cluster of ``rows`` (BatchSimulator.step's numpy path, per element)."""
        width = sel.shape[1]
        paid = np.empty(width)
        completed = np.empty(width, np.int64)
        for k in range(rows.size):
            if not rows[k]:
                continue
            start, end, busy, _ = step_one(
                k, sel, num_jobs, iso, work, ran_last, round_index, round_s, threshold, overhead_s, gang,
                completion, status, run_time, rounds_run, last_run, last_overhead, time_s, num_done,
                overhead_gpu_s, exact_overhead, job_base, pos, seg_end, span, end_global, done_code, paid, completed)
            start_out[k] = start
            end_out[k] = end
            busy_out[k] = busy

    @_inline
    def admit_one(k, arrival, time_s, next_arrival, num_done, num_jobs, status, active_code):
        """Admit arrivals up to now in cluster ``k``; jump to the next arrival when idle (R1)."""
        n = num_jobs[k]
        while True:
            nxt = next_arrival[k]
            while nxt < n and arrival[k, nxt] <= time_s[k]:
                status[k, nxt] = active_code
                nxt += 1
            next_arrival[k] = nxt
            if num_done[k] < nxt or nxt >= n:
                break
            time_s[k] = arrival[k, nxt]

    @_jit
    def admit_rows(rows, arrival, time_s, next_arrival, num_done, num_jobs, status, active_code):
        """Admit arrivals up to now in ``rows``; jump idle clusters to their next arrival (R1)."""
        for k in range(rows.size):
            if rows[k]:
                admit_one(k, arrival, time_s, next_arrival, num_done, num_jobs, status, active_code)

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
