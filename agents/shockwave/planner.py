"""One Shockwave re-plan: the constrained program, the relaxed path, re-ranking, fallback.

Given the active jobs' estimates and fair-share finish targets F_j, :meth:`Planner.plan`

1. builds the constrained program: the finish-time-fairness constraint of each job,
   ``horizon_end + max(0, R_j - p_j d_j) / share <= rho_max * F_j``, is a lower bound on its
   planned epochs (or makes the program infeasible outright when ``horizon_end`` alone
   exceeds ``rho_max * F_j``, which on the canonical trace happens at every re-plan);
2. if that is infeasible, or times out without an incumbent, or the solver fails, takes the
   relaxed path: no fairness constraints, and each job whose projected ratio
   ``(now + R_j / share) / F_j`` exceeds ``rho_max`` gets priority ``ratio^lam``
   (``ratio^lam_urgent`` with less than one round of work left), handled in log space;
   the solve is warm-started from the greedy plan;
3. after a relaxed solve, re-ranks: same number of rounds per job, higher-priority jobs
   earlier (the authors' second program);
4. if no solver produced a plan, uses the greedy plan and records a warning.

Every step's status is recorded in the returned :class:`PlanOutcome`'s ``record``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.greedy import greedy_plan
from shockwave_agents.shockwave.packing import build_rank_program, pack_counts, rank_greedily
from shockwave_agents.shockwave.program import (
    PlanningInstance,
    ProgramError,
    build_program,
    counts_from_vector,
    evaluate_plan,
    program_vector,
    schedule_from_vector,
)
from shockwave_agents.shockwave.solvers import INFEASIBLE, NO_SOLUTION

FEASIBLE_PATH, RELAXED_PATH, FALLBACK_PATH = "feasible", "relaxed", "fallback"


@dataclass
class PlanInputs:
    """What a re-plan needs about the active jobs (arrays in ``job_ids`` order)."""

    job_ids: np.ndarray
    gang: np.ndarray
    epochs_total: np.ndarray
    epochs_done: np.ndarray
    mean_epoch_s: np.ndarray
    remaining_s: np.ndarray
    finish_target_s: np.ndarray  # F_j
    arrival_s: np.ndarray
    share: float  # min(1, G / J)
    now_s: float  # the planner's clock (round index * round_s for the authors)
    gpus: int
    round_s: float
    restart_loss_s: np.ndarray | None = None  # overhead each job pays if it runs next round
    round0_loss_s: np.ndarray | None = None  # the same, when modelled inside the program


@dataclass
class PlanOutcome:
    """The plan (job ids per future round) and what it took to make it."""

    rounds: list[np.ndarray]
    record: dict = field(default_factory=dict)


def objective_coefficients(config: ShockwaveConfig, inputs: PlanInputs) -> tuple[float, float]:
    """(nsw_coef, makespan_coef_per_s) of the objective variant.

    ``authors``: (1 / (J T), k): the published objective. ``normalized``: the mean log
    utility (1 / J, or per GPU with ``gang_weighted_nsw``) against ``makespan_weight`` times
    the max remaining time as a share of the longest predicted remaining time, so both terms
    are O(1).
    """
    n = inputs.job_ids.size
    if config.objective == "authors":
        return 1.0 / (n * config.planning_rounds), config.k
    reference_s = max(float(np.max(inputs.remaining_s)), inputs.round_s)
    members = float(inputs.gang.sum()) if config.gang_weighted_nsw else float(n)
    return 1.0 / members, config.makespan_weight / reference_s


def priority_log_weights(config: ShockwaveConfig, inputs: PlanInputs) -> tuple[np.ndarray, np.ndarray]:
    """(log priority per job, projected ratio per job) for the relaxed path.

    ``ratio_basis="finish_time"`` (the authors) divides absolute times, projected finish /
    F_j; ``"jct"`` divides the same quantities measured from each job's arrival (projected
    JCT / target JCT), so a late arrival's delay counts as much as an early one's.
    """
    projected = inputs.now_s + inputs.remaining_s / inputs.share
    target = inputs.finish_target_s
    if config.ratio_basis == "jct":
        projected, target = projected - inputs.arrival_s, target - inputs.arrival_s
    ratio = projected / np.maximum(target, 1e-9)
    late = ratio > config.rho_max
    exponent = np.where(inputs.remaining_s < inputs.round_s, config.lam_urgent, config.lam)
    log_w = np.where(late, exponent * np.log(np.maximum(ratio, 1e-300)), 0.0)
    return np.minimum(log_w, config.priority_log_cap), ratio


class Planner:
    """Makes plans with one solver backend under one configuration."""

    def __init__(self, config: ShockwaveConfig, backend):
        self.config = config
        self.backend = backend
        #: The instance behind the last plan (for inspection and benchmarks).
        self.last_instance: PlanningInstance | None = None

    def _instance(self, inputs: PlanInputs, log_weights=None, min_epochs=None) -> PlanningInstance:
        nsw_coef, makespan_coef = objective_coefficients(self.config, inputs)
        if self.config.gang_weighted_nsw:
            gang_log = np.log(inputs.gang.astype(np.float64))
            log_weights = gang_log if log_weights is None else log_weights + gang_log
        return PlanningInstance(
            job_ids=inputs.job_ids, gang=inputs.gang, epochs_total=inputs.epochs_total,
            epochs_done=inputs.epochs_done, mean_epoch_s=inputs.mean_epoch_s,
            remaining_s=inputs.remaining_s, gpus=inputs.gpus, rounds=self.config.planning_rounds,
            round_s=inputs.round_s, nsw_coef=nsw_coef, makespan_coef_per_s=makespan_coef,
            log_weights=log_weights, min_epochs=min_epochs, round0_loss_s=inputs.round0_loss_s,
            log_breakpoints=self.config.log_breakpoints, log_zero_floor=self.config.log_zero_floor,
        )

    def fairness_lower_bounds(self, inputs: PlanInputs) -> tuple[np.ndarray | None, str]:
        """Minimum planned epochs implied by the fairness constraints, or (None, reason)."""
        horizon_end_s = inputs.now_s + inputs.round_s * self.config.planning_rounds
        allowed_s = (self.config.rho_max * inputs.finish_target_s - horizon_end_s) * inputs.share
        if np.any(allowed_s < 0):
            return None, f"horizon end exceeds rho_max * F_j for {int(np.sum(allowed_s < 0))} job(s)"
        lower = np.maximum(0.0, (inputs.remaining_s - allowed_s) / inputs.mean_epoch_s)
        if np.any(lower > np.maximum(inputs.epochs_total - inputs.epochs_done, 0.0) + 1e-9):
            return None, "a job would need more epochs than it has left"
        return lower, ""

    def plan(self, inputs: PlanInputs) -> PlanOutcome:
        cfg = self.config
        start = time.perf_counter()
        n = inputs.job_ids.size
        record = {"jobs": int(n), "solver": self.backend.name, "warnings": [], "solves": 0,
                  "solve_s": 0.0, "build_s": 0.0, "rank_s": 0.0, "time_limit_hits": 0}
        x = None
        instance = None
        lower, reason = self.fairness_lower_bounds(inputs)
        record["constrained"] = reason or "attempted"
        if lower is not None:
            instance = self._instance(inputs, min_epochs=lower)
            x, result = self._solve(instance, record, warm=False)
            record["constrained_status"] = result.status if result is not None else "error"
            if x is not None:
                record["path"] = FEASIBLE_PATH
                if cfg.rank_on_feasible_path:
                    x = self._rank(instance, x, np.zeros(n), record, inputs)
            elif result is not None and result.status not in (INFEASIBLE, NO_SOLUTION):
                record["warnings"].append(f"constrained solve failed ({result.message}); relaxing")
        log_weights = None
        if x is None:
            log_weights, ratio = priority_log_weights(cfg, inputs)
            record["late_jobs"] = int(np.sum(ratio > cfg.rho_max))
            record["max_ratio"] = float(np.max(ratio))
            instance = self._instance(inputs, log_weights=log_weights)
            x, result = self._solve(instance, record, warm=True)
            record["relaxed_status"] = result.status if result is not None else "error"
            if x is not None:
                record["path"] = RELAXED_PATH
                x = self._rank(instance, x, log_weights, record, inputs)
            else:
                message = result.message if result is not None else "program build failed"
                record["warnings"].append(f"relaxed solve gave no plan ({message}); using the greedy plan")
                x = record.pop("_greedy")
                record["path"] = FALLBACK_PATH
        record.pop("_greedy", None)
        self.last_instance = instance
        value = evaluate_plan(instance, x)
        record.update(objective=value.objective, nsw_term=value.nsw_term, makespan_term=value.makespan_term)
        gap, nsw = record.get("gap"), record.pop("_solver_nsw", None)
        # a share of an (almost) zero NSW term, e.g. every job done within the plan, says nothing
        record["gap_share_of_nsw"] = (gap / abs(nsw)) if gap is not None and nsw and abs(nsw) > 1e-9 else None
        record["total_s"] = time.perf_counter() - start
        rounds = [inputs.job_ids[x[:, t]] for t in range(x.shape[1])]
        return PlanOutcome(rounds, record)

    def _solve(self, instance: PlanningInstance, record: dict, *, warm: bool):
        """Solve ``instance``; returns (schedule or None, SolveResult or None).

        The aggregated counts program is solved first; if its counts pack into rounds the
        packing is optimal for the schedule program as well. Otherwise the schedule program
        is solved, warm-started from the best schedule at hand.
        """
        t0 = time.perf_counter()
        greedy = greedy_plan(instance) if warm else None
        record["_greedy"] = greedy
        try:
            counts_program = build_program(instance, self._abs_gap(instance), form="counts")
        except ProgramError as exc:
            record["warnings"].append(f"program not built: {exc}")
            record["build_s"] += time.perf_counter() - t0
            return None, None
        record["build_s"] += time.perf_counter() - t0
        record.update(variables=instance.num_jobs * instance.rounds + 2 * instance.num_jobs + 1,
                      counts_variables=counts_program.num_cols)
        if greedy is not None:
            record["greedy_objective"] = evaluate_plan(instance, greedy).objective
        start = program_vector(instance, greedy, counts_program) if greedy is not None else None
        result = self._run(counts_program, start, record)
        if not result.has_solution:
            return None, result
        counts, round0 = counts_from_vector(counts_program, result.vector)
        x = pack_counts(counts, instance.gang, instance.gpus, instance.rounds, round0)
        if x is not None:
            record["form"] = "counts"
            self._record_gap(counts_program, result, record)
            return x, result
        # the counts do not pack: solve the schedule program itself
        record["form"] = "schedule"
        t1 = time.perf_counter()
        program = build_program(instance, self._abs_gap(instance), form="schedule")
        record["build_s"] += time.perf_counter() - t1
        start = program_vector(instance, greedy, program) if greedy is not None else None
        result = self._run(program, start, record)
        if not result.has_solution:
            return None, result
        self._record_gap(program, result, record)
        return schedule_from_vector(program, result.vector), result

    @staticmethod
    def _record_gap(program, result, record: dict) -> None:
        """Proven absolute gap, and the NSW term, both in the solver's objective units (the
        instance's own units unless a huge priority span was compressed)."""
        record["gap"], record["bound"] = result.gap, result.bound
        z0, n = program.layout["z"], program.layout["n"]
        record["_solver_nsw"] = float(-program.c[z0:z0 + n] @ result.vector[z0:z0 + n]) * program.objective_unit

    def _abs_gap(self, instance: PlanningInstance) -> float:
        """Absolute gap in objective units: ``mip_abs_gap`` unit-weight log utilities."""
        return self.config.mip_abs_gap * instance.nsw_coef

    def _run(self, program, start, record: dict):
        result = self.backend.solve(program, time_limit_s=self.config.time_limit_s, warm_start=start)
        record["solves"] += 1
        record["solve_s"] += result.solve_s
        record["status"] = result.status
        if result.status in (NO_SOLUTION, "feasible"):
            record["time_limit_hits"] += 1
        return result

    def _rank(self, instance: PlanningInstance, x: np.ndarray, log_weights: np.ndarray, record: dict,
              inputs: PlanInputs) -> np.ndarray:
        """The re-ranking program; keeps ``x`` if it cannot improve or fails."""
        t0 = time.perf_counter()
        round0_cost = None
        if self.config.restart_aware and inputs.restart_loss_s is not None:
            round0_cost = inputs.restart_loss_s / inputs.round_s
        built = build_rank_program(instance.gang, x, log_weights, instance.gpus,
                                   keep_round0=bool(np.any(instance.loss_s > 0)), round0_cost=round0_cost)
        if built is None:
            return x
        program, movable, first = built
        greedy = rank_greedily(instance.gang, x, log_weights, instance.gpus, keep_round0=first == 1)
        start = x if greedy is None else greedy
        warm = start[movable, first:].astype(np.float64).ravel()
        result = self.backend.solve(program, time_limit_s=self.config.rank_time_limit_s, warm_start=warm)
        record["rank_s"] += time.perf_counter() - t0
        record["rank_status"] = result.status
        if not result.has_solution:
            if result.status not in (NO_SOLUTION,):
                record["warnings"].append(f"re-ranking failed ({result.message}); keeping the solver's order")
            return x
        ranked = x.copy()
        ranked[movable, first:] = result.vector.reshape(movable.size, x.shape[1] - first) > 0.5
        return ranked


def momentum_finish_target(series: list[tuple[int, float]], round_index: int, momentum: float) -> float:
    """F_j: ``momentum`` x the time-weighted mean of past fair-share finish estimates (each
    weighted by the rounds it stood until the next one, or until now) + the rest x the latest.
    """
    rounds = np.array([r for r, _ in series] + [round_index], dtype=np.float64)
    values = np.array([v for _, v in series], dtype=np.float64)
    windows = np.diff(rounds)
    total = windows.sum()
    average = float(values @ (windows / total)) if total > 0 else float(values[-1])
    return momentum * average + (1.0 - momentum) * float(values[-1])


class FairShareTracker:
    """Per-job series of fair-share finish estimates, re-estimated on arrivals/completions."""

    def __init__(self) -> None:
        self.series: dict[int, list[tuple[int, float]]] = {}

    def record(self, round_index: int, job_ids: np.ndarray, estimates_s: np.ndarray) -> None:
        for job, value in zip(job_ids.tolist(), estimates_s.tolist(), strict=True):
            if math.isfinite(value):
                self.series.setdefault(job, []).append((round_index, value))

    def targets(self, round_index: int, job_ids: np.ndarray, momentum: float) -> np.ndarray:
        return np.array([
            momentum_finish_target(self.series[j], round_index, momentum) for j in job_ids.tolist()
        ])

    def forget(self, job_ids) -> None:
        for job in job_ids:
            self.series.pop(int(job), None)
