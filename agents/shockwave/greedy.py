"""Greedy plans: the solver's warm start, and the fallback when no solver delivers a plan.

Two simple round-by-round heuristics are built and the better one (by the exact objective,
:func:`~.objective.evaluate_plan`) is returned:

- *priority / longest-remaining-first*: in each round, jobs in order of priority weight, then
  of predicted remaining time after the rounds already given to them. This attacks the
  ``k * max remaining`` term, which dominates the authors' objective.
- *marginal NSW*: in each round, jobs in order of the log-utility gain of one more round,
  weighted by priority and per GPU. This attacks the Nash-social-welfare term.

At a re-plan that follows another, the previous plan shifted to the new first round, with the
GPUs it leaves free filled by the first heuristic, is a third candidate (the warm start then
carries over what the last solve found). All respect capacity and gang sizes (smaller jobs backfill GPUs a larger one cannot use) and
never give a job more rounds than it can use. Neither respects the finish-time-fairness
bounds, so a greedy plan is no incumbent for the constrained program (docs/SEMANTICS.md).
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import pack_in_order
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.objective import evaluate_plan, piecewise_log
from shockwave_gym import portable_math


def rounds_needed(instance: PlanningInstance) -> np.ndarray:
    """Rounds each job can use in the horizon: enough to run all its remaining epochs."""
    work_s = instance.max_epochs * instance.mean_epoch_s + instance.loss_s
    need = np.ceil(np.maximum(work_s, 0.0) / instance.round_s - 1e-9).astype(np.int64)
    return np.minimum(need, instance.rounds)


def _round_run_s(instance: PlanningInstance, t: int) -> np.ndarray:
    return instance.round_s - (instance.loss_s if t == 0 else 0.0)


def greedy_longest_remaining(instance: PlanningInstance, start: np.ndarray | None = None) -> np.ndarray:
    """Priority first, then longest predicted remaining time after the plan so far. With
    ``start`` (a feasible (n, T) schedule, e.g. the previous plan shifted), only the GPUs it
    leaves free in each round are filled."""
    n, horizon = instance.num_jobs, instance.rounds
    x = np.zeros((n, horizon), dtype=bool) if start is None else np.array(start, dtype=bool)
    need = rounds_needed(instance)
    remaining = instance.remaining_s.astype(np.float64).copy()
    if start is not None:
        remaining -= instance.round_s * x.sum(axis=1) - instance.loss_s * x[:, 0]
    weight = instance.weights_log
    for t in range(horizon):
        open_jobs = np.flatnonzero((x.sum(axis=1) < need) & ~x[:, t])
        if open_jobs.size == 0:
            if start is None:
                break
            continue
        order = open_jobs[np.lexsort((-remaining[open_jobs], -weight[open_jobs]))]
        free = instance.gpus - int(instance.gang[x[:, t]].sum())
        chosen = pack_in_order(order, instance.gang, free)
        x[chosen, t] = True
        remaining[chosen] -= _round_run_s(instance, t)[chosen] if t == 0 else instance.round_s
    return x


def greedy_marginal_welfare(instance: PlanningInstance) -> np.ndarray:
    """Largest weighted log-utility gain per GPU from one more round, round by round."""
    n, horizon = instance.num_jobs, instance.rounds
    x = np.zeros((n, horizon), dtype=bool)
    need = rounds_needed(instance)
    run_s = np.zeros(n)
    weight = portable_math.exp(instance.weights_log - instance.weights_log.max()) if n else np.zeros(0)
    for t in range(horizon):
        open_jobs = np.flatnonzero(x.sum(axis=1) < need)
        if open_jobs.size == 0:
            break
        step = _round_run_s(instance, t)
        step = step[open_jobs] if np.ndim(step) else np.full(open_jobs.size, step)
        before = np.minimum(instance.max_epochs[open_jobs], run_s[open_jobs] / instance.mean_epoch_s[open_jobs])
        after = np.minimum(instance.max_epochs[open_jobs], (run_s[open_jobs] + step) / instance.mean_epoch_s[open_jobs])
        total = instance.epochs_total[open_jobs]
        done = instance.epochs_done[open_jobs]
        gain = piecewise_log(instance, np.clip((done + after) / total, 0, 1)) - piecewise_log(
            instance, np.clip((done + before) / total, 0, 1)
        )
        score = weight[open_jobs] * gain / instance.gang[open_jobs]
        order = open_jobs[np.lexsort((-instance.remaining_s[open_jobs], -score))]
        chosen = pack_in_order(order, instance.gang, instance.gpus)
        x[chosen, t] = True
        full_step = _round_run_s(instance, t)
        run_s[chosen] += full_step[chosen] if np.ndim(full_step) else full_step
    return x


def _place_on_types(instance: PlanningInstance, order: np.ndarray, free: np.ndarray, last: np.ndarray | None) -> np.ndarray:
    """Type index per job of ``order`` (-1: not placed), in order: each on the fastest type it
    can run on with room for its gang (its last type on ties), backfilling like
    :func:`pack_in_order`. ``free`` (K,) is updated."""
    out = np.full(order.size, -1, dtype=np.int64)
    runnable = instance.runnable
    for i, j in enumerate(order.tolist()):
        size = int(instance.gang[j])
        ok = runnable[j] & (free >= size)
        if not ok.any():
            continue
        speed = np.where(ok, instance.speed[j], -1.0)
        best = np.flatnonzero(speed >= speed.max() - 1e-12)
        k = int(last[j]) if last is not None and int(last[j]) in best.tolist() else int(best[0])
        out[i] = k
        free[k] -= size
    return out


def typed_greedy_plan(instance: PlanningInstance) -> np.ndarray:
    """The typed counterpart of :func:`greedy_plan`: the better of the two heuristics, round by
    round, each job on the fastest type with room (:func:`_place_on_types`); (n, K, T)."""
    candidates = [_typed_greedy(instance, welfare=False), _typed_greedy(instance, welfare=True)]
    values = [evaluate_plan(instance, x).objective for x in candidates]
    return candidates[int(np.argmax(values))]


def typed_top_up(instance: PlanningInstance, start: np.ndarray) -> np.ndarray:
    """The feasible typed schedule ``start`` with the GPUs it leaves free in each round given
    to jobs with work left, longest remaining first (more work never lowers the objective)."""
    return _typed_greedy(instance, welfare=False, start=start)


def _typed_greedy(instance: PlanningInstance, *, welfare: bool, start: np.ndarray | None = None) -> np.ndarray:
    """Longest-remaining-first (``welfare`` False) or marginal-welfare order in each round; a
    job stays open while it has reference-type work left for the plan to cover. With
    ``start``, only the GPUs it leaves free are filled."""
    n, kinds, horizon = instance.num_jobs, instance.num_types, instance.rounds
    x = np.zeros((n, kinds, horizon), dtype=bool) if start is None else np.array(start, dtype=bool)
    left_s = np.maximum(instance.max_epochs * instance.mean_epoch_s, 0.0)
    run_s = instance.reference_run_s(x) - instance.loss_s * x[:, :, 0].sum(axis=1)
    left_s -= run_s
    top_speed = np.max(np.where(instance.runnable, instance.speed, 0.0), axis=1)
    weight_log = instance.weights_log
    weight = portable_math.exp(weight_log - weight_log.max()) if n else np.zeros(0)
    last = instance.last_type
    gang = instance.gang.astype(np.int64)
    for t in range(horizon):
        open_jobs = np.flatnonzero((left_s > 1e-9) & (top_speed > 0) & ~x[:, :, t].any(axis=1))
        if open_jobs.size == 0:
            if start is None:
                break
            continue
        if welfare:
            step = instance.round_s * top_speed[open_jobs]
            d = instance.mean_epoch_s[open_jobs]
            total, done = instance.epochs_total[open_jobs], instance.epochs_done[open_jobs]
            cap = instance.max_epochs[open_jobs]
            before = np.minimum(cap, run_s[open_jobs] / d)
            after = np.minimum(cap, (run_s[open_jobs] + step) / d)
            gain = piecewise_log(instance, np.clip((done + after) / total, 0, 1)) - piecewise_log(
                instance, np.clip((done + before) / total, 0, 1))
            score = weight[open_jobs] * gain / instance.gang[open_jobs]
            order = open_jobs[np.lexsort((-instance.remaining_s[open_jobs], -score))]
        else:
            remaining = instance.remaining_s[open_jobs] - run_s[open_jobs]
            order = open_jobs[np.lexsort((-remaining, -weight_log[open_jobs]))]
        free = np.asarray(instance.type_capacity, dtype=np.int64) - gang @ x[:, :, t].astype(np.int64)
        placed = _place_on_types(instance, order, free, last if t == 0 else None)
        for j, k in zip(order[placed >= 0].tolist(), placed[placed >= 0].tolist(), strict=True):
            x[j, k, t] = True
            work = instance.round_s * instance.speed[j, k] - (instance.loss_s[j] if t == 0 else 0.0)
            run_s[j] += work
            left_s[j] -= work
    return x


def greedy_plan(instance: PlanningInstance, previous: np.ndarray | None = None) -> np.ndarray:
    """The best of the two heuristics (and, given ``previous``, the previous plan shifted to
    this re-plan and topped up) by the exact objective; (n, T) booleans. Earlier candidates
    win ties. A typed instance gets :func:`typed_greedy_plan` (``previous`` is not used)."""
    if instance.typed:
        return typed_greedy_plan(instance)
    candidates = [greedy_longest_remaining(instance), greedy_marginal_welfare(instance)]
    if previous is not None:
        candidates.append(greedy_longest_remaining(instance, start=previous))
    values = [evaluate_plan(instance, x) for x in candidates]
    scores = [v.objective if (v.feasible or i < 2) else -np.inf for i, v in enumerate(values)]
    return candidates[int(np.argmax(scores))]
