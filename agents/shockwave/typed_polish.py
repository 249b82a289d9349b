"""Polishing a typed plan: faster types where there is room, no surplus rounds, freed GPUs used.

The planning objective counts a job's progress over the whole horizon, so it is indifferent
between plans that both cover a job's remaining work inside the horizon, even when one of
them runs it on a K80 for seven rounds and the other on a free P100 for four (a lone job on
an idle cluster is the extreme case). :func:`polish_typed_plan` removes that waste without
lowering the objective (docs/HETEROGENEOUS.md, "Shockwave on typed clusters"):

1. **upgrade**: round by round, a planned job moves to the fastest type it can run on with
   room for its gang, if that is faster than its planned type (the jobs that gain most
   first); more work never lowers the objective;
2. **trim**: a job's rounds after the ones that already cover its remaining work (and a
   first round's restart loss) are dropped, latest first; they add nothing;
3. **top up**: the GPUs that frees go to jobs with work left (:func:`.greedy.typed_top_up`).

Each step keeps every type's capacity and one type per job and round.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.shockwave.greedy import typed_top_up
from shockwave_agents.shockwave.instance import PlanningInstance

#: Work (reference seconds) below which a job's need counts as covered.
COVERED_TOLERANCE_S = 1e-6


def upgrade_types(instance: PlanningInstance, x: np.ndarray) -> np.ndarray:
    """``x`` (n, K, T) with planned jobs moved to faster types that have room (step 1)."""
    x = np.array(x, dtype=bool)
    speed = np.where(instance.runnable, instance.speed, 0.0)
    gang = instance.gang.astype(np.int64)
    capacity = np.asarray(instance.type_capacity, dtype=np.int64)
    for t in range(instance.rounds):
        free = capacity - gang @ x[:, :, t].astype(np.int64)
        running = np.flatnonzero(x[:, :, t].any(axis=1))
        if running.size == 0 or not np.any(free > 0):
            continue
        kind = np.argmax(x[running, :, t], axis=1)
        gain = speed[running].max(axis=1) - speed[running, kind]
        for i in np.argsort(-gain, kind="stable").tolist():
            j, k = int(running[i]), int(kind[i])
            better = (speed[j] > speed[j, k]) & (free >= gang[j])
            if not better.any():
                continue
            k2 = int(np.argmax(np.where(better, speed[j], -1.0)))
            x[j, k, t], x[j, k2, t] = False, True
            free[k] += gang[j]
            free[k2] -= gang[j]
    return x


def trim_surplus(instance: PlanningInstance, x: np.ndarray) -> np.ndarray:
    """``x`` without each job's rounds after those that cover its remaining work (step 2)."""
    x = np.array(x, dtype=bool)
    need = np.maximum(instance.max_epochs * instance.mean_epoch_s, 0.0) + instance.loss_s
    work = instance.round_s * np.einsum("jkt,jk->jt", x.astype(np.float64), instance.speed)
    before = np.cumsum(work, axis=1) - work  # work planned before each round
    surplus = before >= need[:, None] - COVERED_TOLERANCE_S
    x[np.broadcast_to(surplus[:, None, :], x.shape)] = False
    return x


def polish_typed_plan(instance: PlanningInstance, x: np.ndarray) -> np.ndarray:
    """Steps 1-3 on the feasible typed plan ``x``; the objective never decreases."""
    return typed_top_up(instance, trim_surplus(instance, upgrade_types(instance, x)))
