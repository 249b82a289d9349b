"""The Shockwave agent: re-plan triggers, fair-share targets, work-conserving fill, stats.

At each round boundary the agent

- re-plans when a job arrived or completed since the last call, every
  ``replan_every_rounds`` rounds (a fixed cadence, as in the authors' scheduler), or when the
  current plan has run out;
- on arrivals/completions first records a new fair-share finish estimate for every active
  job, ``arrival + (work done + predicted remaining) / min(1, G / J)``;
- builds the re-plan's :class:`~.instance.PlanningInstance` once, from the view and the
  predictor's estimates, and hands it to the :class:`~.planner.Planner`;
- runs the plan's set for this round (jobs that finished are dropped) and gives GPUs left
  over to unplanned jobs, longest predicted remaining time first, if their gang fits.

On a cluster of several GPU types (docs/HETEROGENEOUS.md, "Shockwave on typed clusters";
our extension) the re-plan's instance is typed: per-type capacity, per-type speeds from
:mod:`.type_speeds`, fair shares of every type; the plan names each job's type in each
round, and the agent returns an explicit placement (planned jobs on their planned types,
left-over GPUs of each type filled the same way, each job on the type where it does most
work this round, restart overhead counted). A one-type cluster takes the homogeneous path.

Job lengths come from the information regime (docs/SEMANTICS.md, "Information regimes"):
every length the planner, the predictor and the typed speeds read is
:func:`shockwave_gym.interface.believed_total_epochs`: the trace's epochs in the ``exact``
regime (the paper's setting, unchanged), otherwise the belief's ``E[T | T > k]`` given the
``k`` completed epochs, so Shockwave runs in ``estimate`` and ``unknown``, with or without
early endings.

It reads only the view. ``stats()`` returns ``{"planner_stats": {...}}``, a summary of every
plan (jobs, variables, solve times, gaps, paths taken), which ``shockwave-gym run --json``
merges into its output.
"""

from __future__ import annotations

import warnings

import numpy as np

from shockwave_agents.base import Agent, pack_in_order
from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.fair_share import FairShareTracker, typed_share_rate
from shockwave_agents.shockwave.instance import (
    PlanningInstance,
    nsw_log_weights,
    objective_coefficients,
)
from shockwave_agents.shockwave.licences import SolverFallbackWarning
from shockwave_agents.shockwave.numerics import (
    RoundClockCalibration,
    planner_epochs_done,
    profile_durations_s,
)
from shockwave_agents.shockwave.planner import Planner
from shockwave_agents.shockwave.predictor import JobEstimates, ShockwavePredictor
from shockwave_agents.shockwave.record import PlanRecord
from shockwave_agents.shockwave.solvers import select_backend
from shockwave_agents.shockwave.stats import summarise_plans
from shockwave_agents.shockwave.type_speeds import TypeSpeeds
from shockwave_gym.errors import InputError
from shockwave_gym.interface import believed_total_epochs, predictor_for
from shockwave_gym.placement import Placement

#: Smallest fair-share rate on a typed cluster (reference seconds per second).
MIN_TYPED_SHARE = 1e-6


class PlannerWarning(UserWarning):
    """A plan fell back to the greedy schedule or a solver misbehaved."""


class ShockwaveAgent(Agent):
    """Shockwave (NSDI '23): proactive planning for dynamically adapting jobs."""

    name = "shockwave"

    def __init__(self, config: ShockwaveConfig | None = None, name: str | None = None, backend=None):
        self.config = config or ShockwaveConfig()
        if name is not None:
            self.name = name
        self._backend_override = backend
        self.plan_records: list[PlanRecord] = []
        self.backend_note = ""

    # --- episode state -------------------------------------------------------------------

    def reset(self, view, seed: int | None = None) -> None:
        cfg = self.config
        if self._backend_override is not None:
            backend, self.backend_note = self._backend_override, ""
        else:
            choice = select_backend(cfg.solver, cfg.threads)
            backend, self.backend_note = choice.backend, choice.note
            if choice.warning:
                warnings.warn(choice.warning, SolverFallbackWarning, stacklevel=2)
        self.planner = Planner(cfg, backend)
        self.predictor = ShockwavePredictor(cfg.noise, cfg.noise_mode, cfg.drift_threshold, seed)
        self.fair_share = FairShareTracker()
        self.plan_records = []
        self._plan: list[np.ndarray] = []
        self._plan_start = 0
        self._last_periodic = 0
        self._last_active = np.zeros(0, dtype=np.int64)
        self._fill_remaining_s = np.zeros(view.num_jobs)
        self._plan_types: list[np.ndarray] | None = None
        cluster = getattr(view, "cluster", None)
        self._type_speeds = None
        if cluster is not None and len(cluster.types) > 1:
            if cfg.restart_in_program:
                raise InputError("Shockwave: restart_in_program is not supported on a heterogeneous cluster")
            bundle = view.throughputs_by_type
            self._type_speeds = TypeSpeeds(view, [bundle.table(t) for t in cluster.types], view.type_gpus)
        self._calibration = None
        self._profile_s = None  # the authors' epoch durations per reachable size, if rounded
        if cfg.numerics == "authors" and self._type_speeds is None:
            if cfg.authors_profile_rounding:
                self._profile_s = profile_durations_s(view)
            if cfg.authors_clock_calibration:
                core = predictor_for(view)
                table_s = np.where(core.size_valid, core.duration_at_s, 0.0)
                durations = table_s if self._profile_s is None else self._profile_s
                self._calibration = RoundClockCalibration(view, cfg.drift_threshold, durations)
        self._started = True

    def act(self, view) -> np.ndarray:
        if not getattr(self, "_started", False):
            self.reset(view)
        active = np.asarray(view.active_job_ids, dtype=np.int64)
        if self._calibration is not None:
            self._calibration.observe(view)
        if active.size == 0:
            return active
        changed = not np.array_equal(active, self._last_active)
        if changed:
            gone = np.setdiff1d(self._last_active, active)
            self.fair_share.forget(gone)
        periodic = view.round_index - self._last_periodic >= self.config.replan_every_rounds
        if periodic:
            self._last_periodic = view.round_index
        exhausted = view.round_index - self._plan_start >= len(self._plan)
        if changed or periodic or exhausted:
            self._replan(view, active, reestimate=changed or not self.fair_share.series)
        self._last_active = active.copy()
        planned = self._plan[view.round_index - self._plan_start]
        if self._type_speeds is not None:
            types = self._plan_types[view.round_index - self._plan_start]
            keep = view.is_active[planned]
            return self._fill_typed(view, active, planned[keep], types[keep])
        planned = planned[view.is_active[planned]]
        return self._fill(view, active, planned)

    # --- planning ------------------------------------------------------------------------

    def _clock_s(self, view) -> float:
        if self.config.horizon_clock == "rounds":
            return float(view.round_index * view.round_s)
        return float(view.time_s)

    def _instance(self, view, active: np.ndarray, estimates: JobEstimates, targets: np.ndarray) -> PlanningInstance:
        """The re-plan's instance, built once from the view and the estimates."""
        cfg = self.config
        gang = np.asarray(view.gang[active], dtype=np.int64)
        loss = np.zeros(active.size)
        if view.round_index >= 1:
            loss = np.where(view.ran_last_round[active], 0.0, float(view.restart_overhead_s))
        nsw_coef, makespan_coef = objective_coefficients(cfg, gang, estimates.remaining_s, view.round_s)
        return PlanningInstance(
            job_ids=active, gang=gang, epochs_total=believed_total_epochs(view)[active].astype(np.float64),
            epochs_done=planner_epochs_done(view, active, cfg.numerics),
            mean_epoch_s=estimates.mean_epoch_s, remaining_s=estimates.remaining_s, gpus=view.gpus,
            rounds=cfg.planning_rounds, round_s=view.round_s, nsw_coef=nsw_coef, makespan_coef_per_s=makespan_coef,
            log_weights=nsw_log_weights(cfg, gang), round0_loss_s=loss if cfg.restart_in_program else None,
            log_breakpoints=cfg.log_breakpoints, log_zero_floor=cfg.log_zero_floor,
            finish_target_s=targets, arrival_s=view.arrival_s[active].astype(np.float64),
            share=min(1.0, view.gpus / active.size), now_s=self._clock_s(view), restart_loss_s=loss,
        )

    def _typed_instance(self, view, active: np.ndarray, reestimate: bool) -> tuple[PlanningInstance, np.ndarray]:
        """The typed re-plan's instance and the remaining-time estimates it uses. A job's
        fair-share rate (reference seconds per second) is :func:`.fair_share.typed_share_rate`
        under ``config.typed_share``: by default the fair-share reference's equal share of
        GPUs (gangs water-filled over the cluster), spread over the types the job can use."""
        cfg = self.config
        est = self._type_speeds.estimate(view, active, whole_epochs=cfg.numerics == "authors")
        remaining = self.predictor.noisy(active, est.remaining_s)
        capacity = np.asarray(view.type_gpus, dtype=np.int64)
        speed = np.where(view.runnable[active], est.speed, 0.0)
        gang = np.asarray(view.gang[active], dtype=np.int64)
        share = typed_share_rate(speed, capacity, gang, cfg.typed_share)
        share = np.maximum(share, MIN_TYPED_SHARE)  # a job no type can take now still gets a finite target
        if reestimate:
            finish_s = view.arrival_s[active] + (est.work_done_s + remaining) / share
            self.fair_share.record(view.round_index, active, finish_s)
        targets = self.fair_share.targets(view.round_index, active, cfg.share_momentum)
        overhead = float(view.restart_overhead_s) if view.round_index >= 1 else 0.0
        nsw_coef, makespan_coef = objective_coefficients(cfg, gang, remaining, view.round_s)
        makespan_coef *= cfg.typed_makespan_scale
        instance = PlanningInstance(
            job_ids=active, gang=gang, epochs_total=believed_total_epochs(view)[active].astype(np.float64),
            epochs_done=planner_epochs_done(view, active, cfg.numerics),
            mean_epoch_s=est.mean_epoch_s, remaining_s=remaining, gpus=view.gpus,
            rounds=cfg.planning_rounds, round_s=view.round_s, nsw_coef=nsw_coef, makespan_coef_per_s=makespan_coef,
            log_weights=nsw_log_weights(cfg, gang), log_breakpoints=cfg.log_breakpoints,
            log_zero_floor=cfg.log_zero_floor, finish_target_s=targets,
            arrival_s=view.arrival_s[active].astype(np.float64), share=share, now_s=self._clock_s(view),
            restart_loss_s=np.full(active.size, overhead), type_capacity=capacity, speed=speed,
            last_type=np.asarray(view.last_type[active], dtype=np.int64),
        )
        return instance, remaining

    def _replan(self, view, active: np.ndarray, *, reestimate: bool) -> None:
        if self._type_speeds is not None:
            instance, remaining = self._typed_instance(view, active, reestimate)
            self._adopt(view, self.planner.plan(instance), active, remaining)
            return
        scale = None if self._calibration is None else self._calibration.update(view, active)
        estimates = self.predictor.estimate(
            view, active, whole_epochs=self.config.numerics == "authors", duration_scale=scale,
            durations_s=self._profile_s,
        )
        if reestimate:
            share = min(1.0, view.gpus / active.size)
            finish_s = view.arrival_s[active] + (estimates.work_done_s + estimates.remaining_s) / share
            self.fair_share.record(view.round_index, active, finish_s)
        targets = self.fair_share.targets(view.round_index, active, self.config.share_momentum)
        outcome = self.planner.plan(self._instance(view, active, estimates, targets), self._previous(view, active))
        self._adopt(view, outcome, active, estimates.remaining_s)

    def _adopt(self, view, outcome, active: np.ndarray, remaining_s: np.ndarray) -> None:
        """Follow ``outcome``'s plan from this round on; record it."""
        record = outcome.record
        record.round, record.time_s = int(view.round_index), float(view.time_s)
        for message in record.warnings:
            warnings.warn(f"shockwave round {view.round_index}: {message}", PlannerWarning, stacklevel=3)
        if self.config.record_plans:
            self.plan_records.append(record)
        self._plan = outcome.rounds
        self._plan_types = outcome.types
        self._plan_start = view.round_index
        self._fill_remaining_s[active] = remaining_s

    def _previous(self, view, active: np.ndarray) -> np.ndarray | None:
        """The current plan's rounds from this one on, as an (active jobs, T) schedule."""
        rest = self._plan[view.round_index - self._plan_start:] if self.config.warm_from_previous else []
        if not rest:
            return None
        x = np.zeros((active.size, self.config.planning_rounds), dtype=bool)
        for t, jobs in enumerate(rest[:self.config.planning_rounds]):
            x[np.isin(active, jobs), t] = True
        return x

    def _fill(self, view, active: np.ndarray, planned: np.ndarray) -> np.ndarray:
        """The planned set (packed to fit) plus unplanned jobs, longest remaining first
        (with ``restart_aware``, jobs that ran last round first)."""
        gang = view.gang
        chosen = pack_in_order(planned, gang, view.gpus)
        free = view.gpus - int(gang[chosen].sum())
        if free > 0:
            others = np.setdiff1d(active, chosen)
            keys = [-self._fill_remaining_s[others]]
            if self.config.restart_aware:
                keys.append(~view.ran_last_round[others])
            order = others[np.lexsort(keys)]
            extra = pack_in_order(order, gang, free)
            chosen = np.concatenate([chosen, extra])
        return np.sort(chosen)

    def _fill_typed(self, view, active: np.ndarray, planned: np.ndarray, types: np.ndarray) -> Placement:
        """The planned jobs on their planned types (those that still fit), then unplanned jobs
        in the homogeneous fill's order, each on the type with room where it does the most
        reference work this round: its throughput there, less the restart overhead's share
        of the round unless it ran there last round (ties: the earlier type)."""
        free = np.asarray(view.type_gpus, dtype=np.int64).copy()
        gang = view.gang
        jobs, kinds = [], []
        for j, k in zip(planned.tolist(), types.tolist(), strict=True):
            if gang[j] <= free[k] and view.runnable[j, k]:
                jobs.append(j)
                kinds.append(k)
                free[k] -= gang[j]
        others = np.setdiff1d(active, np.asarray(jobs, dtype=np.int64))
        keys = [-self._fill_remaining_s[others]]
        if self.config.restart_aware:
            keys.append(~view.ran_last_round[others])
        round_s, overhead = float(view.round_s), float(view.restart_overhead_s)
        for j in others[np.lexsort(keys)].tolist():
            ok = view.runnable[j] & (free >= gang[j])
            if not ok.any():
                continue
            run_share = np.where(np.arange(free.size) == view.last_type[j], 1.0, max(0.0, 1.0 - overhead / round_s))
            value = np.where(ok, view.throughput_by_type[j] * run_share, -1.0)
            k = int(np.argmax(value))
            jobs.append(j)
            kinds.append(k)
            free[k] -= gang[j]
        order = np.argsort(np.asarray(jobs, dtype=np.int64), kind="stable")
        return Placement(np.asarray(jobs, dtype=np.int64)[order], np.asarray(kinds, dtype=np.int64)[order])

    # --- reporting -----------------------------------------------------------------------

    def stats(self) -> dict:
        summary = summarise_plans(self.plan_records)
        summary["variant"] = self.name
        planner = getattr(self, "planner", None)
        summary["solver"] = planner.backend.name if planner is not None else None
        if self.backend_note:
            summary["solver_note"] = self.backend_note
        reason = getattr(planner.backend, "first_reason", None) if planner is not None else None
        if reason:
            summary["solver_fallback_reason"] = reason
        summary["config"] = self.config.as_dict()
        if self.config.numerics == "authors" and planner is not None:
            summary["makespan_term_dropped_plans"] = planner.makespan_dropped
        return {"planner_stats": summary}


def make_shockwave(**options) -> ShockwaveAgent:
    """The faithful variant: the authors' objective and canonical defaults (+ overrides)."""
    return ShockwaveAgent(ShockwaveConfig.authors(**options), name="shockwave")


def make_shockwave_normalized(**options) -> ShockwaveAgent:
    """Our variant: NSW and makespan terms on comparable scales (see ShockwaveConfig)."""
    return ShockwaveAgent(ShockwaveConfig.normalized(**options), name="shockwave-normalized")


def make_shockwave_fair(**options) -> ShockwaveAgent:
    """Our frontier variant: normalized, whole-epoch numerics, lighter makespan term."""
    return ShockwaveAgent(ShockwaveConfig.fair(**options), name="shockwave-fair")
