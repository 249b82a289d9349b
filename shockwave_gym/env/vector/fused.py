"""The env's step compiled (numba): :func:`advance` decodes the actions (or takes the
sequential mode's picks), runs the rounds, admits arrivals, pays the rewards, seats jobs,
derives the estimates and skips the rounds without a decision, for every cluster of the
vector env's state struct in one call; :func:`advance_rows` adds the observation's raw rows
(:mod:`~shockwave_gym.env.vector.features`) for the single env's step (K = 1).

The reward kernels here are the second of the two implementations of the rewards (the first
is :mod:`shockwave_gym.env.rewards`). The per-cluster helpers are
:mod:`~shockwave_gym.batch.jit`'s and :mod:`~shockwave_gym.env.vector.jit`'s, so every value
is computed by the same float64 operations as the reference, in the same order.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.batch import jit as core_jit
from shockwave_gym.env.vector import features
from shockwave_gym.env.vector import jit as vec_jit
from shockwave_gym.env.vector.estimates import V2_FEATURES
from shockwave_gym.metrics import UNFAIR_THRESHOLD
from shockwave_gym.state import ACTIVE, DONE

AVAILABLE = core_jit.AVAILABLE

#: Reward term codes of :func:`advance`'s ``term_code`` (-1 ends a cluster's list).
JCT, MAKESPAN, FTF, FTF_EXCESS = 0, 1, 2, 3
#: The built-in reward terms the kernels pay, by name, and their codes.
TERM_CODES = {"jct": JCT, "makespan": MAKESPAN, "ftf": FTF, "ftf_excess": FTF_EXCESS}
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
    known = {REWARDS[name]: code for name, code in TERM_CODES.items()}
    if any(fn not in known for _, fn, _ in reward_fn.terms):
        return None
    return [known[fn] for _, fn, _ in reward_fn.terms], [float(weight) for _, _, weight in reward_fn.terms]


def _variant(fn, name: str, **frozen):
    """``fn`` under its own name (so its own compile cache entry) with the globals ``frozen``
    replaced: numba reads a function's globals as constants when it compiles it."""
    import types

    namespace = {**fn.__globals__, **frozen}
    twin = types.FunctionType(fn.__code__, namespace, name, fn.__defaults__, fn.__closure__)
    twin.__qualname__, twin.__doc__, twin.__module__ = name, fn.__doc__, fn.__module__
    return twin


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
    _priority_typed_one = vec_jit.priority_typed_one
    _select_one = vec_jit.select_one
    _scores_finite = vec_jit.scores_finite
    _area = vec_jit.area
    _job_rows_v2 = features.job_rows_v2

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

    @_jit  # not inlined: the one-type path stays as lean as before
    def _unforced_typed(k, sim, sel):
        """typed_actions.unforced_placement for typed cluster ``k``: when every active job
        fits on its own fastest type at once, ``sel[k]`` holds them, on those types (True)."""
        status, gang, typed, runnable = sim.status, sim.gang, sim.typed, sim.type_runnable
        demand = np.zeros(sim.num_types[k], np.int64)
        for j in range(sim.num_jobs[k]):
            if status[k, j] == ACTIVE:
                e = min(sim.pos[k, j], sim.seg_end[k, j] - 1)
                best, best_rate = 0, -np.inf
                for t in range(sim.num_types[k]):
                    if runnable[k, j, t] and typed[e, 3, t] > best_rate:
                        best, best_rate = t, typed[e, 3, t]
                sim.job_type[k, j] = best
                demand[best] += gang[k, j]
        for t in range(demand.size):
            if demand[t] > sim.type_capacity[k, t]:
                return False
        for j in range(sel.shape[1]):
            sel[k, j] = status[k, j] == ACTIVE
        return True

    @_inline
    def _skips(k, st, select, typed):
        """skip_trivial: whether cluster ``k``'s next round is one no action could change
        (ClusterVectorEnv._forced_rounds); if so, ``st.sel[k]`` holds its active jobs."""
        sim, slots = st.sim, st.slots
        if sim.num_done[k] >= sim.num_jobs[k] or sim.round_index[k] >= st.max_rounds[k]:
            return False
        if select and slots.queue_count[k] > 0:
            return False
        if typed:
            return _unforced_typed(k, sim, st.sel)
        if slots.demand_gpus[k] > sim.gpus[k]:
            return False
        sel, status = st.sel, sim.status
        for j in range(sel.shape[1]):
            sel[k, j] = status[k, j] == ACTIVE
        return True

    @_inline
    def _one_round(k, st, typed, paid, completed, buffer, excess):
        """The round of ``st.sel[k]`` and what the env does after a round: record it, admit
        arrivals, pay the reward, seat jobs (the estimates are derived once the rounds are
        over: nothing in between reads them). Returns the reward."""
        sim = st.sim
        at = sim.round_index[k]
        start, end, busy, finished = _step_one(k, st.sel, sim, typed, paid, completed)
        sim.round_start_s[k, at] = start
        sim.round_end_s[k, at] = end
        sim.round_gpus_busy[k, at] = busy
        if sim.num_done[k] < sim.num_jobs[k]:
            _admit_one(k, sim)
        value = _reward(k, st, start, completed, finished, buffer, excess)
        _slots_one(k, sim, st.slots)
        return value

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
        counts = np.zeros(sim.gpus.max() + 2 + sim.type_capacity.shape[1], np.int64)  # waiting, then free per type
        waiting, free, order = counts[: sim.gpus.max() + 2], counts[sim.gpus.max() + 2 :], np.empty(width, np.int64)
        paid, completed, buffer, excess = np.empty(width), np.empty(width, np.int64), np.empty(width), np.empty(width)
        num_types = sim.num_types
        acting, fresh, reward, rounds, pending = io.acting, io.fresh, io.reward, io.rounds, io.pending
        for k in range(acting.size):
            if acting[k]:
                typed = _ANY_TYPES and num_types[k] > 0  # a constant False in advance_one_type
                first = not resume
                if first and mode != GIVEN:  # the agent's round: sel[k] from its scores or select bits
                    for j in range(width):
                        sel[k, j] = False
                    if select:
                        io.repairs[k] = _select_one(k, io.wanted, sim, slots, sel, order, free, typed)
                    elif typed:
                        _priority_typed_one(k, io.scores, sim, slots, sel, keys, ids, order, free)
                    else:
                        _priority_one(k, io.scores, sim, slots, sel, keys, ids, waiting)
                while True:  # then with skip the rounds no action could change
                    if not first:
                        if not _skips(k, st, select, typed):
                            break
                        if sim.round_index[k] >= capacity:
                            pending[k] = True
                            break
                    value = _one_round(k, st, typed, paid, completed, buffer, excess)
                    reward[k] = value if first else reward[k] + value
                    rounds[k] = 1 if first else rounds[k] + 1
                    first = False
                    if not skip:
                        break
                _derive_one(k, sim, tables, est)
            elif fresh[k]:
                _derive_one(k, sim, tables, est)
                _slots_one(k, sim, slots)

    @_inline
    def _round_lists(st):
        """Cluster 0's last round as its record lists it: the jobs that ran (ascending ids),
        their run and restart seconds (rows 0 and 1 of one array), those that completed."""
        sim = st.sim
        ran, status, n = sim.ran_last_round, sim.status, sim.num_jobs[0]
        count, done = 0, 0
        for j in range(n):
            if ran[0, j]:
                count += 1
                if status[0, j] == DONE:
                    done += 1
        ids, seconds, completed = np.empty(count, np.int64), np.empty((2, count)), np.empty(done, np.int64)
        count, done = 0, 0
        for j in range(n):
            if ran[0, j]:
                ids[count], seconds[0, count], seconds[1, count] = j, sim.last_run_s[0, j], sim.last_overhead_s[0, j]
                count += 1
                if status[0, j] == DONE:
                    completed[done] = j
                    done += 1
        return ids, seconds, completed

    def advance_rows(boxed, io, mode, kept, free, cluster_out):
        """:func:`advance` of one round (no skipping, no resume) in cluster 0, then
        features.job_rows_v2, in one call: the single env's step (env/vector/single.py).
        Returns the raw rows and the round's lists (:func:`_round_lists`); nothing but
        ``io.bad`` when the action is refused (empty arrays)."""
        advance(boxed, io, False, False, mode)
        if io.bad[0]:
            none = np.empty(0, np.int64)
            return np.empty((V2_FEATURES, 0)), np.empty((2, 0)), none, np.empty((2, 0)), none
        full, dynamic = _job_rows_v2(boxed, kept, free, cluster_out)
        ids, seconds, completed = _round_lists(boxed)
        return full, dynamic, ids, seconds, completed

    _ANY_TYPES = True
    _ADVANCE, _ADVANCE_ROWS = advance, advance_rows
    advance = _jit(_ADVANCE)
    advance_rows = _jit(_ADVANCE_ROWS)
    # The same kernels compiled for batches of one-type clusters only: ``typed`` is then a
    # compile-time False, so no per-job GPU-type branch is left in the round (with it at run
    # time, the one-type vector step at K = 64 ran about 15% slower).
    advance_one_type = _jit(_variant(_ADVANCE, "advance_one_type", _ANY_TYPES=False))
    advance_rows_one_type = _jit(_variant(_ADVANCE_ROWS, "advance_rows_one_type", advance=advance_one_type))


def kernels(any_types: bool):
    """``(advance, advance_rows)`` for a batch with clusters of several GPU types, or the
    variants compiled for one-type clusters only (the same code, faster there)."""
    return (advance, advance_rows) if any_types else (advance_one_type, advance_rows_one_type)
