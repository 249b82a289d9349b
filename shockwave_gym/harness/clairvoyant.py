"""The clairvoyant reference of the headroom table: **not a scheduler**. It reads the oracle
view (true remaining times) and, through simulator copies, the trace's future arrivals, to
find a good schedule for one objective on one trace. It marks "1" on the normalised scale
(:mod:`shockwave_gym.harness.scores`); it is not a bound, and an agent may score above it.

Two constructions, both over a *portfolio* of round rules (:data:`PORTFOLIO`):

- **best of the portfolio** (:func:`portfolio_best`): run every rule to the end, keep the
  best objective value;
- **fortified rollout lookahead** (:func:`rollout_reference`): at each decision point, copy the
  simulator, play every rule from there to the end (the true future: arrivals included) and
  follow the first decisions of the best complete schedule found so far. A rule that finds a
  better completion than the stored schedule replaces it; otherwise the stored schedule is
  kept (the "fortified" rollout of Bertsekas, Tsitsiklis and Wu, "Rollout algorithms for
  combinatorial optimization", J. Heuristics 1997). The simulator is deterministic, so the
  stored schedule replays to exactly its value: the result is never worse than the best of
  the portfolio, and better whenever switching rules mid-episode pays.

Decision points are every ``stride`` rounds, ``stride`` chosen so there are about
``decisions`` of them over the best rule's episode: the cost is about
``len(portfolio) x rounds x decisions / 2`` simulated rounds, independent of machine speed.

Objectives: avg JCT, makespan and mean fair-share rho (``rho_mean``: T_fair does not depend
on the schedule, so it is a weighted JCT sum), and the cost of any scored task
(:data:`shockwave_gym.tasks.TASKS`, by name: ``"balanced"``), computed from the finished
simulation as :meth:`~shockwave_gym.tasks.Task.cost` computes it from an episode's metrics.
The ``jct`` and ``fairness`` tasks' costs are increasing affine maps of avg JCT and mean rho on
a given trace, so those metric objectives give their references. The portfolio: FIFO, LAS,
SRTF and weighted SRPT both on the predicted and on the true remaining time (``*-oracle``),
and largest remaining GPU-area first (:class:`LargestAreaFirst`, the longest-processing-time
rule of makespan scheduling, clairvoyant); for mean rho also the ``fair-share`` policy, so
that reference is never worse than the leaderboard's ``fair-share`` cell; for the balanced
task ``fair-share`` and ``max-rho`` (its fairness term; ``laf-oracle`` serves its makespan
term, the SRPT rules its JCT term). Shockwave is not in the portfolio: its planner solves a
program every round, which a rollout would repeat ``decisions`` times per rule;
:func:`shockwave_oracle` runs it once per trace as a separate candidate.

Information regimes (:mod:`shockwave_gym.regimes`): the reference is clairvoyant, so what a
regime hides does not matter to it, only which jobs it runs. ``regime=`` gives the regime
whose *true* jobs are scheduled (:func:`true_jobs_regime`: its early endings, exact
knowledge); without early endings they are the trace's jobs, and the reference is the exact
suite's.

Heterogeneous clusters: ``SimConfig(cluster=...)`` runs the typed simulator; the rules pack
with :func:`~shockwave_gym.interface.pack_for_cluster` (the simulator's default placement) and
Shockwave plans typed, so the same constructions apply.

Elastic jobs (docs/SEMANTICS.md, "Elastic jobs"): on a trace with an elastic job the
portfolio also holds the elastic rules that choose counts (:data:`ELASTIC_RULES`:
``elastic-srpt``, ``sia``, ``pollux`` and ``elastic-max-min``), so the reference is never
worse than any of their leaderboard cells on its objective; the other rules run elastic jobs at their reference
count, as they do on the leaderboard.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from shockwave_agents.base import Agent
from shockwave_gym.config import SimConfig
from shockwave_gym.elastic import is_elastic_trace
from shockwave_gym.errors import InputError
from shockwave_gym.hetero_simulator import make_simulator
from shockwave_gym.interface import pack_for_cluster
from shockwave_gym.placement import Allocation
from shockwave_gym.regimes import Regime, apply_regime
from shockwave_gym.tasks import TASKS

#: Metric objectives the reference optimises (lower is better), as metric keys.
METRIC_OBJECTIVES = ("avg_jct_s", "makespan_s", "rho_mean")
#: Every objective: the metric keys and the scored tasks' names (their episode cost).
OBJECTIVES = (*METRIC_OBJECTIVES, *TASKS)


class LargestAreaFirst(Agent):
    """Largest true remaining GPU-area (remaining isolated time x gang) first, with backfilling:
    the clairvoyant longest-processing-time rule (a makespan heuristic). Needs an oracle view."""

    name = "laf-oracle"

    def act(self, view):
        active = view.active_job_ids
        area = view.remaining_s * np.asarray(view.gang, dtype=np.float64)
        order = active[np.argsort(-area[active], kind="stable")]
        return pack_for_cluster(order, view, backfill=True)


def _registered(name: str, **options) -> Callable[[], Agent]:
    def make() -> Agent:
        from shockwave_agents.registry import make_agent

        return make_agent(name, **options)
    return make


#: name -> factory of a fresh agent. Order matters only for ties (the first rule wins).
PORTFOLIO: dict[str, Callable[[], Agent]] = {
    "wsrpt-oracle": _registered("wsrpt", oracle=True),
    "srtf-oracle": _registered("srtf", oracle=True),
    "wsrpt": _registered("wsrpt"),
    "srtf": _registered("srtf"),
    "las": _registered("las"),
    "fifo": _registered("fifo"),
    "laf-oracle": LargestAreaFirst,
}
#: Rules added to the portfolio for one objective: for mean rho the ``fair-share`` policy
#: (played from the start it is exactly the leaderboard's ``fair-share`` cell).
#: For the balanced task the rules good at its fairness term: ``fair-share`` and ``max-rho``.
EXTRA_RULES: dict[str, dict[str, Callable[[], Agent]]] = {
    "rho_mean": {"fair-share": _registered("fair-share")},
    "fairness": {"fair-share": _registered("fair-share")},
    "balanced": {"fair-share": _registered("fair-share"), "max-rho": _registered("max-rho")},
}


#: Rules added to the portfolio on a trace with elastic jobs (for every objective): the four
#: elastic baselines (docs/AGENTS.md, "Elastic baselines"), so that the reference is never
#: worse than any of their cells there.
ELASTIC_RULES: dict[str, Callable[[], Agent]] = {
    "elastic-srpt": _registered("elastic-srpt"),
    "sia": _registered("sia"),
    "pollux": _registered("pollux"),
    "elastic-max-min": _registered("elastic-max-min"),
}


def true_jobs_regime(regime: Regime | None) -> Regime | None:
    """The regime whose jobs the reference schedules for a run in ``regime``: the same true
    jobs (its early endings and their seed) with exact knowledge; ``None`` (the trace's own
    jobs) when no job ends early."""
    if regime is None or regime.early_endings == 0.0:
        return None
    return Regime("exact", early_endings=regime.early_endings, seed=regime.seed, prior=regime.prior)


def _rules(objective: str, elastic: bool) -> dict[str, Callable[[], Agent]]:
    """The default portfolio of ``objective`` (``elastic``: on a trace with elastic jobs), in
    tie-break order."""
    return {**PORTFOLIO, **EXTRA_RULES.get(objective, {}), **(ELASTIC_RULES if elastic else {})}


def portfolio_names(objective: str, elastic: bool = False) -> list[str]:
    """The names of :func:`_rules`' portfolio, in tie-break order."""
    return list(_rules(objective, elastic))


def objective_value(sim, objective: str) -> float:
    """``avg_jct_s`` (mean completion - arrival), ``makespan_s`` (last completion) or
    ``rho_mean`` (mean of JCT / T_fair, the fair-share rho) of a finished simulation, as
    :func:`~shockwave_gym.metrics.compute_metrics` defines them, or a task's cost
    (:meth:`~shockwave_gym.tasks.Task.cost` of those metrics, the first arrival the jobs'
    earliest); ``inf`` if some job did not finish."""
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    completion = sim.completion_s
    if np.isnan(completion).any():
        return math.inf
    if objective in TASKS:
        arrival = sim.static.arrival_s
        metrics = {key: objective_value(sim, key) for key in METRIC_OBJECTIVES}
        metrics.update(num_jobs=int(completion.size), gpus=int(sim.config.gpus))
        return TASKS[objective].cost(metrics, first_arrival_s=float(np.min(arrival)), round_s=sim.config.round_s)
    if objective == "avg_jct_s":
        return float((completion - sim.static.arrival_s).mean())
    if objective == "rho_mean":
        from shockwave_gym.metrics import simulator_fair_time_s

        return float(((completion - sim.static.arrival_s) / simulator_fair_time_s(sim)).mean())
    return float(np.max(completion))


def _copy(sim):
    """A copy sharing the static (read-only) arrays, tables and config."""
    memo = {id(value): value for key, value in sim.__dict__.items()
            if key in ("static", "throughputs", "config", "_arrivals", "_round_constants", "typed_throughputs",
                       "hetero", "configs", "column_arrays")}
    clone = copy.deepcopy(sim, memo)
    clone.__dict__.pop("_view", None)
    return clone


@dataclass
class Rollout:
    """One rule played from a state to the end: its value and its decisions."""

    rule: str
    value: float
    actions: list[np.ndarray | Allocation]
    rounds: int


def play_rule(sim, rule: str, factory: Callable[[], Agent], objective: str,
              max_rounds: int | None = None) -> Rollout:
    """Play a fresh ``factory()`` agent on a copy of ``sim`` (left untouched) to the end
    (or ``max_rounds``; ``None``: :class:`~shockwave_gym.config.SimConfig`'s round limit)."""
    max_rounds = SimConfig.max_rounds if max_rounds is None else max_rounds
    clone = _copy(sim)
    view = clone.view
    agent = factory()
    agent.reset(view, 0)
    actions = []
    while not clone.done and clone.round_index < max_rounds:
        choice = agent.act(view)
        if isinstance(choice, Allocation):  # an elastic rule's counts (and types)
            types = None if choice.gpu_types is None else np.array(choice.gpu_types, dtype=np.int64)
            choice = Allocation(np.array(choice.job_ids, dtype=np.int64), np.array(choice.counts, dtype=np.int64), types)
        else:
            choice = np.asarray(choice, dtype=np.int64).copy()
        clone.step(choice)
        actions.append(choice)
    return Rollout(rule, objective_value(clone, objective), actions, len(actions))


@dataclass
class ReferenceResult:
    """A reference schedule: its metrics (``compute_metrics`` of the replayed schedule), how it
    was found, and what it cost (simulated rounds, deterministic; wall seconds, machine-dependent)."""

    objective: str
    method: str
    value: float
    metrics: dict
    portfolio_values: dict[str, float]
    best_rule: str
    switches: int
    simulated_rounds: int
    wall_s: float
    #: simulated rounds of the portfolio's runs from the start (what ``portfolio-best`` costs)
    portfolio_rounds: int = 0
    rules_used: list[str] = field(default_factory=list)


def _simulator(trace, config: SimConfig, regime: Regime | None = None):
    jobs = apply_regime(trace.jobs, true_jobs_regime(regime))
    return make_simulator(jobs, config, None, trace_name=trace.name, oracle=True)


def _replay(trace, config: SimConfig, actions: Sequence[np.ndarray], regime: Regime | None = None) -> dict:
    from shockwave_gym.metrics import compute_metrics

    sim = _simulator(trace, config, regime)
    for choice in actions:
        sim.step(choice)
    if not sim.done:
        raise RuntimeError(f"{trace.name}: the reference schedule did not finish every job")
    return compute_metrics(sim.result())


def _portfolio(names: Sequence[str] | None, objective: str, trace) -> dict[str, Callable[[], Agent]]:
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    known = _rules(objective, is_elastic_trace(trace.jobs))
    if names is None:
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"unknown portfolio rule(s) {unknown}; choose from {', '.join(known)}")
    return {n: known[n] for n in names}


def portfolio_best(trace, config: SimConfig, objective: str, portfolio: Sequence[str] | None = None,
                   regime: Regime | None = None) -> ReferenceResult:
    """Every rule of the portfolio played from the start; the best one's schedule (on the true
    jobs of ``regime``, :func:`true_jobs_regime`)."""
    start = time.perf_counter()
    rules = _portfolio(portfolio, objective, trace)
    sim = _simulator(trace, config, regime)
    runs = [play_rule(sim, name, make, objective) for name, make in rules.items()]
    best = min(runs, key=lambda r: r.value)  # min keeps the first of equals
    return ReferenceResult(objective, "portfolio-best", best.value, _replay(trace, config, best.actions, regime),
                           {r.rule: r.value for r in runs}, best.rule, 0, sum(r.rounds for r in runs),
                           time.perf_counter() - start, sum(r.rounds for r in runs), [best.rule])


def rollout_reference(trace, config: SimConfig, objective: str, portfolio: Sequence[str] | None = None,
                      decisions: int = 16, regime: Regime | None = None) -> ReferenceResult:
    """The fortified rollout lookahead (module doc) with about ``decisions`` decision points,
    on the true jobs of ``regime`` (:func:`true_jobs_regime`)."""
    if decisions < 1:
        raise InputError(f"decisions must be >= 1, got {decisions}")
    start = time.perf_counter()
    rules = _portfolio(portfolio, objective, trace)
    sim = _simulator(trace, config, regime)
    runs = [play_rule(sim, name, make, objective) for name, make in rules.items()]
    simulated = portfolio_rounds = sum(r.rounds for r in runs)
    first = min(runs, key=lambda r: r.value)
    stride = max(1, math.ceil(first.rounds / decisions))
    best_value, plan, plan_rule = first.value, list(first.actions), first.rule
    taken: list[np.ndarray] = []
    used, switches = [first.rule], 0
    while not sim.done and plan:
        for choice in plan[:stride]:
            sim.step(choice)
        taken += plan[:stride]
        plan = plan[stride:]
        if sim.done or not plan:
            break
        for name, make in rules.items():
            run = play_rule(sim, name, make, objective)
            simulated += run.rounds
            if run.value < best_value:
                best_value, plan, switches = run.value, run.actions, switches + (name != plan_rule)
                plan_rule = name
                if name not in used:
                    used.append(name)
    metrics = _replay(trace, config, taken + plan, regime)
    value = metric_objective(metrics, objective, trace, config)
    if value is None or value > best_value * (1 + 1e-12) + 1e-9:
        raise RuntimeError(f"{trace.name}: the replayed schedule ({value}) is worse than its "
                           f"rollout value ({best_value})")
    return ReferenceResult(objective, "rollout", value, metrics, {r.rule: r.value for r in runs},
                           first.rule, switches, simulated, time.perf_counter() - start, portfolio_rounds, used)


def metric_objective(metrics: dict, objective: str, trace, config: SimConfig) -> float | None:
    """An objective's value from an episode's metrics (a task's cost: first arrival from the
    trace, ``round_s`` from ``config``); ``None`` for a metric the episode did not give."""
    if objective in TASKS:
        first = trace.first_arrival_s
        cost = TASKS[objective].cost(metrics, first_arrival_s=first, round_s=config.round_s)
        return None if math.isnan(cost) else cost
    return metrics[objective]


#: The metrics :func:`shockwave_oracle` keeps: every objective's and the tasks' inputs.
ORACLE_METRICS = (*METRIC_OBJECTIVES, "num_jobs", "gpus", "truncated")


def shockwave_oracle(trace, config: SimConfig, regime: Regime | None = None) -> dict:
    """Shockwave's planner with true profiles: the default ``shockwave`` agent on the oracle view
    (its predictor then returns the true remaining time), on the true jobs of ``regime``
    (:func:`true_jobs_regime`). One episode gives every objective; returns its metrics
    (:data:`ORACLE_METRICS`), the planner's work-limit hits and the wall seconds."""
    from shockwave_agents.registry import make_agent
    from shockwave_gym.runner import run_episode

    outcome = run_episode(trace, make_agent("shockwave"), config, seed=0, oracle=True, progress=False,
                          regime=true_jobs_regime(regime))
    stats = outcome.agent_stats.get("planner_stats", {})
    return {"metrics": {key: outcome.metrics[key] for key in ORACLE_METRICS},
            "limit_hits": int(stats.get("limit_hits", 0)), "wall_s": outcome.wall_s}
