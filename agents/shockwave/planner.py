"""One Shockwave re-plan: the constrained program, the relaxed path, re-ranking, fallback.

Given a :class:`~.instance.PlanningInstance` (the active jobs, their estimates and fair-share
finish targets F_j), :meth:`Planner.plan`

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

Every step's status is recorded in the returned :class:`~.record.PlanOutcome`'s
:class:`~.record.PlanRecord`.

A typed instance (heterogeneous cluster, ours: docs/HETEROGENEOUS.md) takes the same steps
with per-type programs (:mod:`.program`), packing, greedy plans and re-ranking; its plan
also names each job's type in each round (``PlanOutcome.types``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.exact_counts import exact_counts_applies, solve_counts_exactly
from shockwave_agents.shockwave.greedy import greedy_plan, typed_greedy_plan, typed_top_up
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.limits import fdot
from shockwave_agents.shockwave.mip import MipProgram, ProgramError, ProgramForm
from shockwave_agents.shockwave.numerics import effective_relaxed_instance
from shockwave_agents.shockwave.objective import evaluate_plan
from shockwave_agents.shockwave.packing import pack_counts, pack_typed_counts
from shockwave_agents.shockwave.program import (
    build_program,
    counts_from_vector,
    program_vector,
    schedule_from_vector,
)
from shockwave_agents.shockwave.record import PlanOutcome, PlanPath, PlanRecord
from shockwave_agents.shockwave.reranker import Reranker
from shockwave_agents.shockwave.results import SolveResult, SolveStatus
from shockwave_agents.shockwave.typed_polish import polish_typed_plan
from shockwave_agents.shockwave.typed_rank import front_swap_typed, list_rank_typed
from shockwave_gym import portable_math

#: Typed schedule programs up to this many x[j, k, t] columns are solved (warm-started from
#: the repaired packing) when the typed counts do not pack and the repaired plan is not within
#: the gap of the counts bound; larger ones keep the repaired packing.
TYPED_SCHEDULE_MAX_COLUMNS = 600
#: Statuses after which the constrained program is relaxed without a warning.
_EXPECTED_FAILURES = (SolveStatus.INFEASIBLE, SolveStatus.NO_SOLUTION)


def ratio_basis(config: ShockwaveConfig, instance: PlanningInstance) -> str:
    """The lateness ratio's basis: ``typed_ratio_basis`` on a typed instance when set, else
    ``ratio_basis`` (so one-type planning never reads the typed option)."""
    if instance.typed and config.typed_ratio_basis is not None:
        return config.typed_ratio_basis
    return config.ratio_basis


def priority_log_weights(config: ShockwaveConfig, instance: PlanningInstance) -> tuple[np.ndarray, np.ndarray]:
    """(log priority per job, projected ratio per job) for the relaxed path.

    ``ratio_basis="finish_time"`` (the authors) divides absolute times, projected finish /
    F_j; ``"jct"`` divides the same quantities measured from each job's arrival (projected
    JCT / target JCT), so a late arrival's delay counts as much as an early one's.
    """
    projected = instance.now_s + instance.remaining_s / instance.share
    target = instance.finish_target_s
    if ratio_basis(config, instance) == "jct":
        projected, target = projected - instance.arrival_s, target - instance.arrival_s
    ratio = projected / np.maximum(target, 1e-9)
    late = ratio > config.rho_max
    exponent = np.where(instance.remaining_s < instance.round_s, config.lam_urgent, config.lam)
    weighted = late
    if instance.typed and config.typed_priority == "all":
        weighted = np.ones_like(late)
    log_w = np.where(weighted, exponent * portable_math.log(np.maximum(ratio, 1e-300)), 0.0)
    if instance.typed and config.typed_rho_weight > 0:
        log_w = log_w + config.typed_rho_weight * rho_rate_log_weights(instance)
    return np.minimum(log_w, config.priority_log_cap), ratio


def rho_rate_log_weights(instance: PlanningInstance) -> np.ndarray:
    """log(median target JCT / job j's target JCT), target JCT = F_j - arrival_j: a round of
    delay raises a job's fair-share rho by ``round_s / target JCT``, so a job whose fair-share
    time is short loses more rho per round it waits (typed instances, ``typed_rho_weight``)."""
    target = np.maximum(instance.finish_target_s - instance.arrival_s, instance.round_s)
    return portable_math.log(float(np.median(target)) / target)


def guaranteed_epochs(config: ShockwaveConfig, instance: PlanningInstance) -> np.ndarray | None:
    """The relaxed typed program's lower bound on planned epochs under ``typed_guarantee``
    (alpha): ``alpha`` x the job's fair-share work over the horizon, ``share_j T round_s``
    reference seconds, capped by its remaining epochs; None when the option is off or the
    instance is homogeneous."""
    if not instance.typed or config.typed_guarantee <= 0:
        return None
    share_s = config.typed_guarantee * np.asarray(instance.share, dtype=np.float64) * instance.rounds * instance.round_s
    return np.minimum(instance.max_epochs, share_s / instance.mean_epoch_s)


def fairness_lower_bounds(config: ShockwaveConfig, instance: PlanningInstance) -> tuple[np.ndarray | None, str]:
    """Minimum planned epochs implied by the fairness constraints, or (None, reason)."""
    horizon_end_s = instance.now_s + instance.round_s * config.planning_rounds
    allowed_s = (config.rho_max * instance.finish_target_s - horizon_end_s) * instance.share
    if np.any(allowed_s < 0):
        return None, f"horizon end exceeds rho_max * F_j for {int(np.sum(allowed_s < 0))} job(s)"
    lower = np.maximum(0.0, (instance.remaining_s - allowed_s) / instance.mean_epoch_s)
    if np.any(lower > np.maximum(instance.epochs_total - instance.epochs_done, 0.0) + 1e-9):
        return None, "a job would need more epochs than it has left"
    return lower, ""


@dataclass
class Attempt:
    """One program solved: the counts form first, the schedule form if the counts do not pack.

    ``result`` is None when the program could not be built; ``greedy`` is the warm start (the
    relaxed path's fallback plan); ``solver_nsw`` the NSW term of the solver's point, in the
    solver's objective units, for the gap's share.
    """

    schedule: np.ndarray | None = None
    result: SolveResult | None = None
    greedy: np.ndarray | None = None
    solver_nsw: float | None = None

    @property
    def status(self) -> SolveStatus:
        return self.result.status if self.result is not None else SolveStatus.ERROR


class Planner:
    """Makes plans with one solver backend under one configuration."""

    def __init__(self, config: ShockwaveConfig, backend):
        self.config = config
        self.backend = backend
        self.reranker = Reranker(config, backend)
        #: The instance behind the last plan (for inspection and benchmarks).
        self.last_instance: PlanningInstance | None = None
        #: Relaxed plans solved without the makespan term (``numerics="authors"`` only).
        self.makespan_dropped = 0

    def plan(self, instance: PlanningInstance, previous: np.ndarray | None = None) -> PlanOutcome:
        """A plan for ``instance``. ``previous`` is the last plan's remaining rounds as an
        (n, T) schedule over this instance's jobs (rounds it did not cover empty), offered
        to the relaxed solve as a warm start."""
        if instance.finish_target_s is None or instance.arrival_s is None:
            raise ValueError("planning needs finish_target_s and arrival_s on the instance")
        start = time.perf_counter()
        record = PlanRecord(jobs=instance.num_jobs, solver=self.backend.name)
        x, used, attempt = self._constrained_path(instance, record)
        if x is None:
            x, used, attempt = self._relaxed_path(instance, record, previous)
        if used.typed:  # after re-ranking, which moves only jobs planned on one type
            x = polish_typed_plan(used, x)
        self.last_instance = used
        value = evaluate_plan(used, x)
        record.objective, record.nsw_term, record.makespan_term = value.objective, value.nsw_term, value.makespan_term
        nsw = attempt.solver_nsw
        # a share of an (almost) zero NSW term, e.g. every job done within the plan, says nothing
        if record.gap is not None and nsw and abs(nsw) > 1e-9:
            record.gap_share_of_nsw = record.gap / abs(nsw)
        record.total_s = time.perf_counter() - start
        if instance.typed:
            running = x.any(axis=1)
            kind = np.argmax(x, axis=1)
            rounds = [instance.job_ids[running[:, t]] for t in range(x.shape[2])]
            types = [kind[running[:, t], t] for t in range(x.shape[2])]
            return PlanOutcome(rounds, record, types)
        rounds = [instance.job_ids[x[:, t]] for t in range(x.shape[1])]
        return PlanOutcome(rounds, record)

    def _constrained_path(self, instance: PlanningInstance, record: PlanRecord):
        """(schedule or None, instance solved, attempt) of the program with fairness bounds."""
        lower, reason = fairness_lower_bounds(self.config, instance)
        if lower is None:
            record.constrained_skipped = reason
            return None, None, None
        variant = instance.constrained(lower)
        attempt = self._solve(variant, record, warm=False)
        record.constrained_status = attempt.status
        if attempt.schedule is None:
            if attempt.result is not None and attempt.result.status not in _EXPECTED_FAILURES:
                record.warnings.append(f"constrained solve failed ({attempt.result.message}); relaxing")
            return None, variant, attempt
        record.path = PlanPath.CONSTRAINED
        x = attempt.schedule
        if self.config.rank_on_feasible_path:
            x = self.reranker.rank(variant, x, np.zeros(instance.num_jobs), record)
        return x, variant, attempt

    def _relaxed_path(self, instance: PlanningInstance, record: PlanRecord, previous: np.ndarray | None = None):
        """(schedule, instance solved, attempt) of the relaxed program, or the greedy plan."""
        log_weights, ratio = priority_log_weights(self.config, instance)
        record.late_jobs = int(np.sum(ratio > self.config.rho_max))
        record.max_ratio = float(np.max(ratio))
        variant = instance.prioritised(log_weights)
        guarantee = guaranteed_epochs(self.config, instance)
        if guarantee is not None:
            variant = variant.constrained(guarantee)
        if self.config.numerics == "authors":
            variant, dropped = effective_relaxed_instance(variant, self.config.authors_rel_gap)
            self.makespan_dropped += int(dropped)
        attempt = self._solve(variant, record, warm=True, previous=previous)
        if guarantee is not None and attempt.schedule is None:  # the guarantee did not fit: plan without it
            record.warnings.append("typed guarantee infeasible; planned without it")
            variant = variant.constrained(np.zeros(instance.num_jobs))
            attempt = self._solve(variant, record, warm=True, previous=previous)
        record.relaxed_status = attempt.status
        if attempt.schedule is not None:
            record.path = PlanPath.RELAXED
            if variant.typed and self.config.typed_rank == "list":
                speed = np.where(variant.runnable, variant.speed, 0.0)
                x = list_rank_typed(attempt.schedule, variant.gang, variant.type_capacity, log_weights, speed,
                                    variant.last_type)
                return x, variant, attempt
            x = self.reranker.rank(variant, attempt.schedule, log_weights, record)
            if variant.typed and self.config.typed_rank == "front":
                x = front_swap_typed(x, variant.gang, variant.type_capacity, log_weights)
            return x, variant, attempt
        message = attempt.result.message if attempt.result is not None else "program build failed"
        record.warnings.append(f"relaxed solve gave no plan ({message}); using the greedy plan")
        record.path = PlanPath.FALLBACK
        return attempt.greedy, variant, attempt

    def _solve(self, instance: PlanningInstance, record: PlanRecord, *, warm: bool,
               previous: np.ndarray | None = None) -> Attempt:
        """Solve ``instance``. The aggregated counts program is solved first; if its counts pack
        into rounds the packing is optimal for the schedule program as well. Otherwise the
        schedule program is solved, warm-started from the best schedule at hand."""
        t0 = time.perf_counter()
        attempt = Attempt(greedy=greedy_plan(instance, previous) if warm else None)
        try:
            program = build_program(instance, self._abs_gap(instance), form=ProgramForm.COUNTS)
        except ProgramError as exc:
            record.warnings.append(f"program not built: {exc}")
            record.build_s += time.perf_counter() - t0
            return attempt
        record.build_s += time.perf_counter() - t0
        record.variables = instance.num_jobs * instance.num_types * instance.rounds + 2 * instance.num_jobs + 1
        record.counts_variables = program.num_cols
        if attempt.greedy is not None:
            record.greedy_objective = evaluate_plan(instance, attempt.greedy).objective
        attempt.result = self._run_counts(instance, program, self._warm_start(instance, attempt, program), record)
        if not attempt.result.has_solution:
            return attempt
        counts, round0 = counts_from_vector(program, attempt.result.vector)
        if instance.typed:
            x = pack_typed_counts(counts, instance.gang, instance.type_capacity, instance.rounds, instance.last_type)
            if x is None:
                return self._repair_typed(instance, attempt, program, counts, record)
        else:
            x = pack_counts(counts, instance.gang, instance.gpus, instance.rounds, round0)
        if x is None:
            return self._solve_schedule_form(instance, attempt, record)
        record.form = ProgramForm.COUNTS
        return self._accept(attempt, program, x, record)

    def _repair_typed(self, instance: PlanningInstance, attempt: Attempt, program: MipProgram,
                      counts: np.ndarray, record: PlanRecord) -> Attempt:
        """Typed counts that do not pack: packed with repair and topped up
        (:func:`.packing.pack_typed_counts`, :func:`.greedy.typed_top_up`; the typed greedy
        plan instead if that is better and meets the fairness bounds) instead of solving
        the typed schedule program, whose n K T binaries HiGHS does not close in time at
        cluster scale (small ones, up to :data:`TYPED_SCHEDULE_MAX_COLUMNS` columns, are
        solved, warm-started from the repaired plan). The counts program's bound still bounds
        the schedule program, so the recorded gap is the repaired plan's distance from it."""
        speed = np.where(instance.runnable, instance.speed, 0.0)
        x = pack_typed_counts(counts, instance.gang, instance.type_capacity, instance.rounds, instance.last_type,
                              repair_speed=speed)
        x = typed_top_up(instance, x)
        greedy = attempt.greedy if attempt.greedy is not None else typed_greedy_plan(instance)
        values = [evaluate_plan(instance, c) for c in (x, greedy)]
        if values[1].feasible and (not values[0].feasible or values[1].objective > values[0].objective):
            x = greedy
        record.packing_repaired = True
        columns = instance.num_jobs * instance.num_types * instance.rounds
        bound = attempt.result.bound
        short = bound is None or bound - evaluate_plan(instance, x).objective > self._abs_gap(instance)
        if columns <= TYPED_SCHEDULE_MAX_COLUMNS and short:
            greedy, counts_result = attempt.greedy, attempt.result
            if greedy is None or evaluate_plan(instance, x).objective > evaluate_plan(instance, greedy).objective:
                attempt.greedy = x
            solved = self._solve_schedule_form(instance, attempt, record)
            if solved.schedule is not None:
                solved.greedy = greedy
                return solved
            attempt.greedy, attempt.result = greedy, counts_result
        record.form = ProgramForm.COUNTS
        self._accept(attempt, program, x, record)
        if attempt.result.bound is not None:
            record.gap = max(0.0, float(attempt.result.bound) - evaluate_plan(instance, x).objective)
        return attempt

    def _solve_schedule_form(self, instance: PlanningInstance, attempt: Attempt, record: PlanRecord) -> Attempt:
        """The counts did not pack: solve the schedule program itself."""
        record.form = ProgramForm.SCHEDULE
        t1 = time.perf_counter()
        program = build_program(instance, self._abs_gap(instance), form=ProgramForm.SCHEDULE)
        record.build_s += time.perf_counter() - t1
        attempt.result = self._run(program, self._warm_start(instance, attempt, program), record)
        if not attempt.result.has_solution:
            return attempt
        return self._accept(attempt, program, schedule_from_vector(program, attempt.result.vector), record)

    @staticmethod
    def _warm_start(instance: PlanningInstance, attempt: Attempt, program: MipProgram) -> np.ndarray | None:
        return program_vector(instance, attempt.greedy, program) if attempt.greedy is not None else None

    @staticmethod
    def _accept(attempt: Attempt, program: MipProgram, x: np.ndarray, record: PlanRecord) -> Attempt:
        """Keep ``x``, with the proven absolute gap and the NSW term, both in the solver's
        objective units (the instance's own units unless a huge priority span was compressed)."""
        result = attempt.result
        record.gap, record.bound = result.gap, result.bound
        z0, n = program.layout.z, program.layout.n
        attempt.solver_nsw = -fdot(program.c[z0:z0 + n], result.vector[z0:z0 + n]) * program.objective_unit
        attempt.schedule = x
        return attempt

    def _uses_exact_counts(self, instance: PlanningInstance, program: MipProgram) -> bool:
        method = self.config.counts_method
        if method == "mip" or self.backend.name == "greedy" or not exact_counts_applies(instance, program):
            return False
        return method == "exact" or instance.num_jobs >= self.config.exact_counts_min_jobs

    def _run_counts(self, instance: PlanningInstance, program: MipProgram, start: np.ndarray | None,
                    record: PlanRecord) -> SolveResult:
        """The counts program: solved exactly (:mod:`.exact_counts`) where the configuration
        says so; an unproven exact point (level budget spent) warm-starts the MIP solver."""
        if not self._uses_exact_counts(instance, program):
            return self._run(program, start, record)
        result = solve_counts_exactly(instance, program)
        self._count(result, record)
        record.exact_solves += 1
        if result.status in (SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE):
            return result
        if result.has_solution:
            start = result.vector
        return self._run(program, start, record)

    def _abs_gap(self, instance: PlanningInstance) -> float:
        """Absolute gap in objective units: ``mip_abs_gap`` unit-weight log utilities."""
        return self.config.mip_abs_gap * instance.nsw_coef

    def _run(self, program: MipProgram, start: np.ndarray | None, record: PlanRecord) -> SolveResult:
        result = self.backend.solve(program, limits=self.config.main_limits(), warm_start=start)
        self._count(result, record)
        if result.status in (SolveStatus.NO_SOLUTION, SolveStatus.FEASIBLE):
            record.limit_hits += 1
        if result.fallback_reason is not None:
            record.solver_fallbacks += 1
        return result

    @staticmethod
    def _count(result: SolveResult, record: PlanRecord) -> None:
        """One main solve in the plan's record."""
        record.solves += 1
        record.solve_s += result.solve_s
        record.status = result.status
