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
on the schedule, so it is a weighted JCT sum). The portfolio: FIFO, LAS, SRTF and weighted
SRPT both on the predicted and on the true remaining time (``*-oracle``), and largest
remaining GPU-area first (:class:`LargestAreaFirst`, the longest-processing-time rule of
makespan scheduling, clairvoyant); for mean rho also the ``fair-share`` policy, so that
reference is never worse than the leaderboard's ``fair-share`` cell. Shockwave is not in the portfolio: its planner solves a program every round,
which a rollout would repeat ``decisions`` times per rule.
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
from shockwave_gym.errors import InputError
from shockwave_gym.hetero_simulator import make_simulator
from shockwave_gym.interface import pack_for_cluster

#: Objectives the reference optimises (lower is better), as metric keys.
OBJECTIVES = ("avg_jct_s", "makespan_s", "rho_mean")


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
EXTRA_RULES: dict[str, dict[str, Callable[[], Agent]]] = {"rho_mean": {"fair-share": _registered("fair-share")}}


def portfolio_names(objective: str) -> list[str]:
    """The default portfolio of ``objective``, in tie-break order."""
    return [*PORTFOLIO, *EXTRA_RULES.get(objective, {})]


def objective_value(sim, objective: str) -> float:
    """``avg_jct_s`` (mean completion - arrival), ``makespan_s`` (last completion) or
    ``rho_mean`` (mean of JCT / T_fair, the fair-share rho) of a finished simulation, as
    :func:`~shockwave_gym.metrics.compute_metrics` defines them; ``inf`` if some job did not finish."""
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    completion = sim.completion_s
    if np.isnan(completion).any():
        return math.inf
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
                       "hetero")}
    clone = copy.deepcopy(sim, memo)
    clone.__dict__.pop("_view", None)
    return clone


@dataclass
class Rollout:
    """One rule played from a state to the end: its value and its decisions."""

    rule: str
    value: float
    actions: list[np.ndarray]
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
        choice = np.asarray(agent.act(view), dtype=np.int64).copy()
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


def _simulator(trace, config: SimConfig):
    return make_simulator(trace.jobs, config, None, trace_name=trace.name, oracle=True)


def _replay(trace, config: SimConfig, actions: Sequence[np.ndarray]) -> dict:
    from shockwave_gym.metrics import compute_metrics

    sim = _simulator(trace, config)
    for choice in actions:
        sim.step(choice)
    if not sim.done:
        raise RuntimeError(f"{trace.name}: the reference schedule did not finish every job")
    return compute_metrics(sim.result())


def _portfolio(names: Sequence[str] | None, objective: str) -> dict[str, Callable[[], Agent]]:
    if objective not in OBJECTIVES:
        raise InputError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    known = {**PORTFOLIO, **EXTRA_RULES.get(objective, {})}
    if names is None:
        return known
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(f"unknown portfolio rule(s) {unknown}; choose from {', '.join(known)}")
    return {n: known[n] for n in names}


def portfolio_best(trace, config: SimConfig, objective: str, portfolio: Sequence[str] | None = None) -> ReferenceResult:
    """Every rule of the portfolio played from the start; the best one's schedule."""
    start = time.perf_counter()
    rules = _portfolio(portfolio, objective)
    sim = _simulator(trace, config)
    runs = [play_rule(sim, name, make, objective) for name, make in rules.items()]
    best = min(runs, key=lambda r: r.value)  # min keeps the first of equals
    return ReferenceResult(objective, "portfolio-best", best.value, _replay(trace, config, best.actions),
                           {r.rule: r.value for r in runs}, best.rule, 0, sum(r.rounds for r in runs),
                           time.perf_counter() - start, sum(r.rounds for r in runs), [best.rule])


def rollout_reference(trace, config: SimConfig, objective: str, portfolio: Sequence[str] | None = None,
                      decisions: int = 16) -> ReferenceResult:
    """The fortified rollout lookahead (module doc) with about ``decisions`` decision points."""
    if decisions < 1:
        raise InputError(f"decisions must be >= 1, got {decisions}")
    start = time.perf_counter()
    rules = _portfolio(portfolio, objective)
    sim = _simulator(trace, config)
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
    metrics = _replay(trace, config, taken + plan)
    if metrics[objective] is None or metrics[objective] > best_value * (1 + 1e-12) + 1e-9:
        raise RuntimeError(f"{trace.name}: the replayed schedule ({metrics[objective]}) is worse than its "
                           f"rollout value ({best_value})")
    return ReferenceResult(objective, "rollout", metrics[objective], metrics, {r.rule: r.value for r in runs},
                           first.rule, switches, simulated, time.perf_counter() - start, portfolio_rounds, used)


def shockwave_oracle(trace, config: SimConfig) -> dict:
    """Shockwave's planner with true profiles: the default ``shockwave`` agent on the oracle view
    (its predictor then returns the true remaining time). One episode gives every objective;
    returns its metrics, the planner's wall-clock limit hits and the wall seconds. Its planner
    stops a solve at a wall-clock limit, so a hit makes the result machine-dependent."""
    from shockwave_agents.registry import make_agent
    from shockwave_gym.runner import run_episode

    outcome = run_episode(trace, make_agent("shockwave"), config, seed=0, oracle=True, progress=False)
    stats = outcome.agent_stats.get("planner_stats", {})
    return {"metrics": {key: outcome.metrics[key] for key in OBJECTIVES},
            "limit_hits": int(stats.get("limit_hits", 0)), "wall_s": outcome.wall_s}
