"""``check_agent``: is this a valid, deterministic scheduler that finishes a trace?

Every choice is checked by the simulator's own validation
(:meth:`~shockwave_gym.simulator.Simulator.validate_selection`) before the round runs, so the
checker accepts exactly what the simulator accepts. Usage::

    from shockwave_gym.testing import check_agent
    report = check_agent(lambda: MyAgent(), "teaching-12")
    print(report.summary())
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from shockwave_gym.config import SimConfig, round_options
from shockwave_gym.errors import InvalidActionError
from shockwave_gym.metrics import compute_metrics
from shockwave_gym.regimes import Regime, apply_regime
from shockwave_gym.simulator import Simulator
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import BUNDLED_GPUS, Trace, load_trace


class AgentCheckError(Exception):
    """The agent made a choice no scheduler may make, was not deterministic under a seed,
    or did not finish the trace. The message names the round."""


@dataclass
class AgentReport:
    """What :func:`check_agent` found: the agent's metrics on the trace, its rounds, the
    rounds where it left a fitting job waiting on idle GPUs (legal, rarely wise), and its
    mean decision time."""

    agent: str
    trace: str
    gpus: int
    metrics: dict
    choices: list[tuple[int, ...]] = field(repr=False)
    idle_rounds: list[int] = field(default_factory=list)
    decision_ms: float = 0.0

    def summary(self) -> str:
        lines = [
            f"agent {self.agent!r} on {self.trace} ({self.gpus} GPUs): valid choices in all "
            f"{len(self.choices)} rounds, finished, deterministic under its seed"
        ]
        if self.idle_rounds:
            shown = ", ".join(map(str, self.idle_rounds[:8])) + (" ..." if len(self.idle_rounds) > 8 else "")
            lines.append(f"note: {len(self.idle_rounds)} round(s) left GPUs idle while a waiting job fit (rounds {shown})")
        else:
            lines.append("work-conserving: no round left GPUs idle while a waiting job fit")
        return "\n".join(lines)


def resolve_trace(
    trace: str | Path | Trace, gpus: int | None, throughputs: ThroughputTable | None
) -> tuple[Trace, int, ThroughputTable]:
    """(trace, GPUs, table) for a bundled name, a path or a :class:`Trace`."""
    table = throughputs if throughputs is not None else ThroughputTable.builtin_v100()
    if gpus is None:
        name = trace.name if isinstance(trace, Trace) else str(trace)
        gpus = BUNDLED_GPUS.get(name)
        if gpus is None:
            raise AgentCheckError(f"gpus is required for trace {name!r} (only bundled traces have a default)")
    if not isinstance(trace, Trace):
        trace = load_trace(trace, table, gpus)
    return trace, gpus, table


def _play(agent, trace: Trace, config: SimConfig, table: ThroughputTable, seed: int, max_rounds: int,
          regime: Regime | None = None):
    sim = Simulator(apply_regime(trace.jobs, regime), config, table, trace_name=trace.name)
    view = sim.view
    agent.reset(view, seed)
    choices, idle, decision_s = [], [], 0.0
    while not sim.done:
        if sim.round_index >= max_rounds:
            raise AgentCheckError(
                f"only {sim.num_done} of {sim.num_jobs} jobs finished within {max_rounds} rounds: "
                "does the agent leave jobs waiting forever?"
            )
        start = time.perf_counter()
        raw = agent.act(view)
        decision_s += time.perf_counter() - start
        try:
            ids = sim.validate_selection(raw)
        except (InvalidActionError, TypeError, ValueError) as exc:
            raise AgentCheckError(f"round {sim.round_index}: {exc}") from None
        active = view.active_job_ids
        waiting = active[~np.isin(active, ids)]
        if waiting.size and view.gang[waiting].min() <= view.gpus - int(view.gang[ids].sum()):
            idle.append(sim.round_index)
        choices.append(tuple(ids.tolist()))
        sim.step(ids)
    return sim, choices, idle, decision_s


def check_agent(
    make: Callable[[], object],
    trace: str | Path | Trace = "teaching-12",
    *,
    gpus: int | None = None,
    throughputs: ThroughputTable | None = None,
    seed: int = 0,
    max_rounds: int | None = None,
    regime: Regime | None = None,
) -> AgentReport:
    """Play two fresh agents from ``make()`` on ``trace`` with ``seed``; raise
    :class:`AgentCheckError` on the first invalid choice, on a run that does not finish
    within ``max_rounds``, or when the two runs choose differently.

    Pass a factory (a class or a function), not an instance: determinism is checked
    across fresh agents. ``regime`` (:class:`~shockwave_gym.regimes.Regime`) plays the trace
    in an information regime (docs/SEMANTICS.md, "Information regimes").
    """
    if not callable(make) or (hasattr(make, "act") and not isinstance(make, type)):
        raise TypeError("check_agent takes a factory, e.g. check_agent(lambda: MyAgent(), ...)")
    trace, gpus, table = resolve_trace(trace, gpus, throughputs)
    config = SimConfig(gpus=gpus, **round_options(max_rounds=max_rounds))
    max_rounds = config.max_rounds
    first_agent = make()
    sim, choices, idle, decision_s = _play(first_agent, trace, config, table, seed, max_rounds, regime)
    _, again, _, _ = _play(make(), trace, config, table, seed, max_rounds, regime)
    if again != choices:
        differ = next(i for i, (a, b) in enumerate(zip(choices, again, strict=False)) if a != b)
        raise AgentCheckError(
            f"two fresh agents with seed {seed} chose differently (first at round {differ}): "
            "seed any randomness in reset(view, seed)"
        )
    return AgentReport(
        agent=getattr(first_agent, "name", type(first_agent).__name__),
        trace=trace.name,
        gpus=gpus,
        metrics=compute_metrics(sim.result()),
        choices=choices,
        idle_rounds=idle,
        decision_ms=1000.0 * decision_s / max(len(choices), 1),
    )
