"""The exact objective of a schedule on a :class:`~.instance.PlanningInstance`.

The planning objective (maximised) is ``nsw_coef * sum_j w_j log~(u_j) - makespan_coef_per_s *
max_j max(0, R_j - p_j d_j)``, with ``log~`` the piecewise-linear log and ``u_j`` job j's
share of its epochs done by the end of the plan. For a given 0/1 schedule the best planned
epochs are closed-form, so :func:`evaluate_plan` computes the exact objective of any schedule:
the greedy plans use it, the tests compare the MIP against brute-force enumeration with it,
and the planner reports it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_gym import portable_math


def piecewise_log(instance: PlanningInstance, utility: np.ndarray) -> np.ndarray:
    """The piecewise-linear log at ``utility`` (in [0, 1]): the min over the pieces."""
    slopes, intercepts = instance.segments()
    return np.min(slopes[None, :] * utility[:, None] + intercepts[None, :], axis=1)


@dataclass
class PlanValue:
    """The exact objective of a schedule, split into its terms (unscaled, maximised)."""

    objective: float
    nsw_term: float
    makespan_term: float
    planned_epochs: np.ndarray
    max_remaining_s: float
    feasible: bool


def typed_capacity_ok(instance: PlanningInstance, x: np.ndarray) -> bool:
    """A typed schedule (n, K, T) fits: every type's capacity in every round, at most one
    type per job and round, and no job on a type it cannot run on."""
    x = np.asarray(x, dtype=np.float64)
    load = np.einsum("j,jkt->kt", instance.gang.astype(np.float64), x)
    fits = bool(np.all(load <= instance.type_capacity[:, None] + 1e-9))
    one_type = bool(np.all(x.sum(axis=1) <= 1 + 1e-9))
    runnable = bool(np.all(x[~instance.runnable] == 0))
    return fits and one_type and runnable


def evaluate_plan(instance: PlanningInstance, x: np.ndarray) -> PlanValue:
    """Objective of the 0/1 schedule ``x`` (n, T), or (n, K, T) for a typed instance, with the
    best planned epochs for it.

    More planned epochs never hurt (they raise the utility and lower the remaining time),
    so p_j = min(E_j - e_j, planned run time / d_j) (on a typed instance the run time is in
    reference-type seconds: each round on type k counts ``speed[j, k]`` rounds). ``feasible`` is False when capacity or
    a ``min_epochs`` bound is violated.
    """
    if instance.typed:
        x = np.asarray(x, dtype=np.float64).reshape(instance.schedule_shape)
        capacity_ok = typed_capacity_ok(instance, x)
        run_s = instance.reference_run_s(x) - instance.loss_s * x[:, :, 0].sum(axis=1)
    else:
        x = np.asarray(x, dtype=np.float64).reshape(instance.num_jobs, instance.rounds)
        capacity_ok = bool(np.all(instance.gang @ x <= instance.gpus + 1e-9))
        run_s = instance.round_s * x.sum(axis=1) - instance.loss_s * x[:, 0]
    planned = np.minimum(instance.max_epochs, np.maximum(run_s, 0.0) / instance.mean_epoch_s)
    bounds_ok = bool(np.all(planned >= instance.lower_epochs - 1e-7))
    utility = np.clip((instance.epochs_done + planned) / instance.epochs_total, 0.0, 1.0)
    z = piecewise_log(instance, utility)
    nsw = float(instance.nsw_coef * np.sum(portable_math.exp(instance.weights_log) * z))
    remaining = instance.remaining_s - planned * instance.mean_epoch_s
    max_remaining = max(0.0, float(remaining.max())) if remaining.size else 0.0
    makespan = instance.makespan_coef_per_s * max_remaining
    return PlanValue(nsw - makespan, nsw, makespan, planned, max_remaining, capacity_ok and bounds_ok)
