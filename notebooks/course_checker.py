"""The exercise checker of ``04_course_scheduling_fairness.ipynb``: run a student's agent and
say whether it is a valid scheduler, then compare it with baselines.

Contract of :func:`check_agent`:

- the agent plays the trace to the end with :func:`shockwave_gym.runner.run_episode`;
- every round's choice is checked *before* the simulator sees it: integer job ids, no
  duplicates, only active jobs, gangs that fit the cluster. The first violation raises
  :class:`AgentCheckError` naming the round and the offending ids;
- the episode must finish within ``max_rounds`` rounds (an agent that idles forever fails);
- a second run with a fresh agent must give the same schedule (agents must be deterministic
  given ``reset(view, seed)``);
- rounds where GPUs stay idle although a waiting job would fit are *reported* (not failed):
  leaving GPUs idle is legal, but rarely wise.

It returns a :class:`CheckReport` whose ``table`` holds the agent's metrics beside the
baselines' on the same trace.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from shockwave_agents import make_agent
from shockwave_gym import SimConfig
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import BUNDLED_GPUS, Trace, load_trace

#: Columns of the comparison table, in display order.
METRIC_COLUMNS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction", "worst_ftf_themis", "utilization")


class AgentCheckError(Exception):
    """The agent made a choice no scheduler may make, or did not finish the trace."""


@dataclass
class CheckReport:
    """Outcome of :func:`check_agent`: the agent's name, the comparison table (one row per
    agent, the checked one first) and the rounds in which it left a fitting job waiting on
    idle GPUs."""

    agent: str
    table: pd.DataFrame
    idle_rounds: list[int] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"agent {self.agent!r}: valid choices in every round, finished, deterministic"]
        if self.idle_rounds:
            shown = ", ".join(map(str, self.idle_rounds[:8])) + (" ..." if len(self.idle_rounds) > 8 else "")
            lines.append(f"note: {len(self.idle_rounds)} round(s) left GPUs idle while a waiting job fit (rounds {shown})")
        else:
            lines.append("work-conserving: no round left GPUs idle while a waiting job fit")
        return "\n".join(lines)


class _CheckedAgent:
    """Wraps an agent: validates each choice against the view and records idle rounds."""

    def __init__(self, agent):
        self.agent = agent
        self.name = getattr(agent, "name", type(agent).__name__)
        self.idle_rounds: list[int] = []
        self.choices: list[tuple[int, ...]] = []

    def reset(self, view, seed=None) -> None:
        self.agent.reset(view, seed)

    def stats(self) -> dict:
        return self.agent.stats()

    def act(self, view) -> np.ndarray:
        raw = self.agent.act(view)
        round_index = view.round_index
        try:
            ids = np.asarray(list(raw))
        except TypeError:
            raise AgentCheckError(f"round {round_index}: act() must return job ids, got {type(raw).__name__}") from None
        if ids.size and not np.issubdtype(ids.dtype, np.integer):
            raise AgentCheckError(f"round {round_index}: job ids must be integers, got {ids.tolist()!r}")
        ids = ids.astype(np.int64)
        if np.unique(ids).size != ids.size:
            raise AgentCheckError(f"round {round_index}: duplicate job ids in {ids.tolist()}")
        active = view.active_job_ids
        inactive = ids[~np.isin(ids, active)]
        if inactive.size:
            raise AgentCheckError(
                f"round {round_index}: jobs {inactive.tolist()} are not active (active: {active.tolist()})"
            )
        used = int(view.gang[ids].sum())
        if used > view.gpus:
            raise AgentCheckError(
                f"round {round_index}: jobs {ids.tolist()} need {used} GPUs, the cluster has {view.gpus}"
            )
        waiting = active[~np.isin(active, ids)]
        if waiting.size and view.gang[waiting].min() <= view.gpus - used:
            self.idle_rounds.append(round_index)
        self.choices.append(tuple(sorted(ids.tolist())))
        return ids


def _load(trace: str | Trace, gpus: int | None) -> tuple[Trace, int]:
    if isinstance(trace, Trace):
        if gpus is None:
            raise AgentCheckError("gpus is required when trace is a Trace object")
        return trace, gpus
    gpus = gpus if gpus is not None else BUNDLED_GPUS.get(trace)
    if gpus is None:
        raise AgentCheckError(f"gpus is required for trace {trace!r} (only bundled traces have a default)")
    return load_trace(trace, gpus=gpus), gpus


def check_agent(
    make: Callable[[], object],
    trace: str | Trace = "teaching-12",
    gpus: int | None = None,
    baselines: Sequence[str] = ("fifo", "gavel"),
    max_rounds: int = 5_000,
    seed: int = 0,
) -> CheckReport:
    """Check the agent built by ``make()`` on ``trace`` and compare it with ``baselines``
    (registered agent names). Raises :class:`AgentCheckError` on the first problem."""
    trace, gpus = _load(trace, gpus)
    config = SimConfig(gpus=gpus)
    runs = []
    for _ in range(2):
        checked = _CheckedAgent(make())
        outcome = run_episode(trace, checked, config, seed=seed, max_rounds=max_rounds, progress=False)
        if outcome.metrics["completed_jobs"] < trace.num_jobs:
            raise AgentCheckError(
                f"only {outcome.metrics['completed_jobs']} of {trace.num_jobs} jobs finished within "
                f"{max_rounds} rounds: does the agent leave jobs waiting forever?"
            )
        runs.append((checked, outcome))
    (first, outcome), (second, _) = runs
    if first.choices != second.choices:
        differ = next(i for i, (a, b) in enumerate(zip(first.choices, second.choices, strict=False)) if a != b)
        raise AgentCheckError(f"two runs with the same seed chose differently (first at round {differ}): "
                              "use a seeded random generator created in reset()")
    label = first.name if first.name not in baselines else f"{first.name} (checked)"
    rows = {label: outcome.metrics}
    for name in baselines:
        rows[name] = run_episode(trace, make_agent(name), config, seed=seed, progress=False).metrics
    table = pd.DataFrame(rows).T.loc[:, list(METRIC_COLUMNS)].astype(float)
    return CheckReport(agent=label, table=table, idle_rounds=first.idle_rounds)
