"""The exercise checker of ``04_course_scheduling_fairness.ipynb``: check a student's agent
with the package's own :func:`shockwave_gym.testing.check_agent`, then compare it with
baselines on the same trace.

What ``check_agent`` checks (see its docstring): every round's choice passes the
simulator's own validation (integer job ids, no duplicates, only active jobs, gangs that fit
the cluster), the episode finishes within ``max_rounds`` rounds, and a second fresh agent
with the same seed chooses the same schedule. Rounds where GPUs stay idle although a waiting
job would fit are *reported*, not failed: legal, but rarely wise.

This module adds the course's comparison table: the agent's metrics beside the baselines'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from shockwave_agents import make_agent
from shockwave_gym import SimConfig
from shockwave_gym.runner import run_episode
from shockwave_gym.testing import AgentCheckError, AgentReport
from shockwave_gym.testing import check_agent as check_agent_rules
from shockwave_gym.testing.agent import resolve_trace
from shockwave_gym.traces import Trace

__all__ = ["METRIC_COLUMNS", "AgentCheckError", "CheckReport", "check_agent"]

#: Columns of the comparison table, in display order.
METRIC_COLUMNS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_fraction", "worst_ftf_themis", "utilization")


@dataclass
class CheckReport:
    """Outcome of :func:`check_agent`: the agent's name, the comparison table (one row per
    agent, the checked one first) and the rounds in which it left a fitting job waiting on
    idle GPUs."""

    agent: str
    table: pd.DataFrame
    idle_rounds: list[int] = field(default_factory=list)
    checked: AgentReport | None = field(default=None, repr=False)

    def summary(self) -> str:
        return self.checked.summary() if self.checked else f"agent {self.agent!r}"


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
    if isinstance(trace, Trace) and gpus is None:
        raise AgentCheckError("gpus is required when trace is a Trace object")
    loaded, gpus, _ = resolve_trace(trace, gpus, None)
    report = check_agent_rules(make, loaded, gpus=gpus, seed=seed, max_rounds=max_rounds)
    label = report.agent if report.agent not in baselines else f"{report.agent} (checked)"
    rows = {label: report.metrics}
    config = SimConfig(gpus=gpus)
    for name in baselines:
        rows[name] = run_episode(loaded, make_agent(name), config, seed=seed, progress=False).metrics
    table = pd.DataFrame(rows).T.loc[:, list(METRIC_COLUMNS)].astype(float)
    return CheckReport(agent=label, table=table, idle_rounds=report.idle_rounds, checked=report)
