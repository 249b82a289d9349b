"""One re-plan's instance: the active jobs' facts and estimates, the planner's context, and the
objective's terms, built once by the agent from the view.

The constrained and relaxed programs of a re-plan differ only in two terms, the lower bounds
on planned epochs that the fairness constraints imply and the relaxed path's priority
weights; :meth:`PlanningInstance.constrained` and :meth:`PlanningInstance.prioritised` give
those variants of the same instance.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_gym import portable_math


@dataclass(frozen=True)
class PlanningInstance:
    """Inputs of one re-plan. Per-job arrays have length n, in the order of ``job_ids``.

    Program terms: ``log_weights`` are natural logs of the NSW weights (0 = weight 1), so
    ratio^100 priorities never overflow. ``min_epochs`` is the lower bound on planned epochs
    that the finish-time-fairness constraints imply (None: 0). ``round0_loss_s`` is the run
    time a job loses if it runs in the first planned round, when the program models it
    (restart overhead; None: 0).

    Planner context (None / defaults when only the program is wanted): ``finish_target_s``
    (F_j), ``arrival_s``, ``share`` = min(1, G / J), ``now_s`` (the planner's clock) and
    ``restart_loss_s``, the overhead each job pays if it runs next round (for re-ranking).

    Heterogeneous clusters (docs/HETEROGENEOUS.md, "Shockwave on typed clusters"; ours):
    ``type_capacity`` (K,) is the GPU count of each type and ``speed`` (n, K) each job's
    progress per second on each type relative to its reference type (its fastest: 1 there,
    0 where it cannot run), so ``mean_epoch_s`` and ``remaining_s`` are reference-type
    seconds. ``share`` may then be per job (the rate, in reference seconds per second, of
    the job's fair share of every type). ``last_type`` (n,) is the type index each job ran
    on in the last round (-1: none), used to keep jobs on their type. With ``type_capacity``
    None the instance is homogeneous (``gpus`` GPUs of one type) and schedules are (n, T);
    typed schedules are (n, K, T) booleans.
    """

    job_ids: np.ndarray
    gang: np.ndarray
    epochs_total: np.ndarray
    epochs_done: np.ndarray
    mean_epoch_s: np.ndarray
    remaining_s: np.ndarray
    gpus: int
    rounds: int
    round_s: float
    nsw_coef: float
    makespan_coef_per_s: float
    log_weights: np.ndarray | None = None
    min_epochs: np.ndarray | None = None
    round0_loss_s: np.ndarray | None = None
    log_breakpoints: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    log_zero_floor: float = 1e-6
    finish_target_s: np.ndarray | None = None
    arrival_s: np.ndarray | None = None
    share: float = 1.0
    now_s: float = 0.0
    restart_loss_s: np.ndarray | None = None
    type_capacity: np.ndarray | None = None
    speed: np.ndarray | None = None
    last_type: np.ndarray | None = None

    @property
    def typed(self) -> bool:
        """True for a heterogeneous (per-type) instance."""
        return self.type_capacity is not None

    @property
    def num_types(self) -> int:
        return 1 if self.type_capacity is None else int(self.type_capacity.size)

    @property
    def schedule_shape(self) -> tuple[int, ...]:
        """(n, T) for homogeneous instances, (n, K, T) for typed ones."""
        if self.type_capacity is None:
            return (self.num_jobs, self.rounds)
        return (self.num_jobs, self.num_types, self.rounds)

    @property
    def runnable(self) -> np.ndarray:
        """(n, K) booleans: job j can run on type k (positive speed, gang fits the type)."""
        if self.type_capacity is None:
            return (self.gang <= self.gpus)[:, None]
        return (self.speed > 0) & (self.gang[:, None] <= self.type_capacity[None, :])

    def reference_run_s(self, x: np.ndarray) -> np.ndarray:
        """Reference-type seconds of work each job gets from schedule ``x`` (its own shape),
        before restart loss."""
        x = np.asarray(x, dtype=np.float64)
        if self.type_capacity is None:
            return self.round_s * x.sum(axis=1)
        return self.round_s * np.einsum("jkt,jk->j", x, self.speed)

    def round0(self, x: np.ndarray) -> np.ndarray:
        """(n,) booleans: job j runs in the first planned round of ``x``."""
        x = np.asarray(x, dtype=bool)
        return x[:, 0] if self.type_capacity is None else x[:, :, 0].any(axis=1)

    @property
    def num_jobs(self) -> int:
        return int(self.job_ids.size)

    @property
    def max_epochs(self) -> np.ndarray:
        """Upper bound on planned epochs: the epochs left."""
        return np.maximum(self.epochs_total - self.epochs_done, 0.0)

    @property
    def lower_epochs(self) -> np.ndarray:
        return np.zeros(self.num_jobs) if self.min_epochs is None else self.min_epochs

    @property
    def loss_s(self) -> np.ndarray:
        return np.zeros(self.num_jobs) if self.round0_loss_s is None else self.round0_loss_s

    @property
    def weights_log(self) -> np.ndarray:
        return np.zeros(self.num_jobs) if self.log_weights is None else self.log_weights

    def segments(self) -> tuple[np.ndarray, np.ndarray]:
        """Slopes a_i and intercepts c_i of the piecewise-linear log's pieces."""
        points = np.asarray(self.log_breakpoints)
        values = portable_math.log(np.maximum(points, self.log_zero_floor))
        slopes = np.diff(values) / np.diff(points)
        return slopes, values[:-1] - slopes * points[:-1]

    def constrained(self, min_epochs: np.ndarray) -> PlanningInstance:
        """The constrained program's instance: planned epochs bounded below by ``min_epochs``."""
        return replace(self, min_epochs=min_epochs)

    def prioritised(self, priority_log: np.ndarray) -> PlanningInstance:
        """The relaxed program's instance: NSW weights multiplied by exp(``priority_log``)."""
        weights = priority_log if self.log_weights is None else priority_log + self.log_weights
        return replace(self, log_weights=weights)


def objective_coefficients(
    config: ShockwaveConfig, gang: np.ndarray, remaining_s: np.ndarray, round_s: float
) -> tuple[float, float]:
    """(nsw_coef, makespan_coef_per_s) of the objective variant, for the jobs given.

    ``authors``: (1 / (J T), k): the published objective. ``normalized``: the mean log
    utility (1 / J, or per GPU with ``gang_weighted_nsw``) against ``makespan_weight`` times
    the max remaining time as a share of the longest predicted remaining time, so both terms
    are O(1).
    """
    n = gang.size
    if config.objective == "authors":
        return 1.0 / (n * config.planning_rounds), config.k
    reference_s = max(float(np.max(remaining_s)), round_s)
    members = float(gang.sum()) if config.gang_weighted_nsw else float(n)
    return 1.0 / members, config.makespan_weight / reference_s


def nsw_log_weights(config: ShockwaveConfig, gang: np.ndarray) -> np.ndarray | None:
    """Log NSW weights before priorities: log(gang) with ``gang_weighted_nsw``, else None (1)."""
    return portable_math.log(gang.astype(np.float64)) if config.gang_weighted_nsw else None
