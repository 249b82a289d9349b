"""Scored tasks: the benchmark's objectives, declared once (docs/TASKS.md).

A :class:`Task` names an objective with fixed weights over the env's reward terms
(:mod:`shockwave_gym.env.rewards`). The same declaration serves three readers:

* the env's reward: ``gym.make(..., task="balanced")`` pays the task's weighted terms, so an
  episode that is not truncated returns exactly ``-task.cost(...)`` (up to float summation
  order) with the env's default ``jct`` normaliser;
* training (``shockwave-gym train --task``), which scales the return by a constant;
* the harness, which scores every cell by the task's cost (:meth:`Task.cost`, computed from
  the episode's metrics) and normalises it between FIFO and a clairvoyant reference:
  ``score = (cost_FIFO - cost) / (cost_FIFO - cost_reference)``.

The score is an affine function of the cost, and the cost is minus the episode return, so
for a given trace the return and the score are one affine map apart
(``score = (cost_FIFO + return) / (cost_FIFO - cost_reference)``).

Costs, per term, for an episode of N jobs on G GPUs with rounds of ``round_s`` seconds:

* ``jct``: sum of JCT / (round_s x G) = N x avg JCT / (round_s x G);
* ``fair_share``: sum_j (rho_j - 1) = N x (mean rho - 1), rho the fair-share rho
  (docs/METRICS.md);
* ``makespan``: (makespan - first arrival) / round_s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from shockwave_gym.errors import InputError

#: The metric each reward term's cost is read from (``shockwave_gym.metrics`` keys).
TERM_METRICS: Mapping[str, str] = MappingProxyType(
    {"jct": "avg_jct_s", "fair_share": "rho_mean", "makespan": "makespan_s"})


def term_cost(term: str, metrics: Mapping, *, first_arrival_s: float, round_s: float) -> float:
    """One reward term's episode cost (minus its return) from the episode's metrics."""
    n, gpus = metrics["num_jobs"], metrics["gpus"]
    value = metrics.get(TERM_METRICS[term])
    if value is None:
        return math.nan
    if term == "jct":
        return n * value / (round_s * gpus)
    if term == "fair_share":
        return n * (value - 1.0)
    return (value - first_arrival_s) / round_s


@dataclass(frozen=True)
class Task:
    """A named objective: fixed weights over reward terms, lower cost is better."""

    name: str
    weights: Mapping[str, float]
    title: str
    #: the metric a one-term task is judged on (its cost is an affine map of it); None: the cost
    metric: str | None = None
    description: str = field(default="", compare=False)

    def __post_init__(self):
        unknown = set(self.weights) - set(TERM_METRICS)
        if unknown:
            raise InputError(f"task {self.name!r}: terms {sorted(unknown)} have no episode cost")
        object.__setattr__(self, "weights", MappingProxyType(dict(self.weights)))

    @property
    def reward(self) -> dict[str, float]:
        """The env's ``reward=`` argument for this task."""
        return dict(self.weights)

    def cost(self, metrics: Mapping, *, first_arrival_s: float, round_s: float) -> float:
        """The episode's cost: minus the return of :attr:`reward` (NaN if truncated)."""
        if metrics.get("truncated"):
            return math.nan
        total = 0.0
        for term, weight in self.weights.items():
            total += weight * term_cost(term, metrics, first_arrival_s=first_arrival_s, round_s=round_s)
        return total


#: Balanced task weights (per unit of each term's cost; docs/TASKS.md says how they were
#: fixed: on the suites' validation split, never the test split).
BALANCED_WEIGHTS: Mapping[str, float] = MappingProxyType({"jct": 1.0, "fair_share": 1.8, "makespan": 2.1})

TASKS: Mapping[str, Task] = MappingProxyType({
    "jct": Task("jct", {"jct": 1.0}, "avg JCT", metric="avg_jct_s",
                description="total job completion time (the JCT reward alone)"),
    "fairness": Task("fairness", {"fair_share": 1.0}, "fairness (mean rho)", metric="rho_mean",
                     description="excess fair-share rho summed over jobs (the dense fair_share reward)"),
    "balanced": Task("balanced", BALANCED_WEIGHTS, "balanced",
                     description="JCT, fair-share rho and makespan with fixed weights"),
})

#: The task ``gym.make`` rewards by default.
DEFAULT_TASK = "jct"


def get_task(name: str | Task) -> Task:
    """The task named ``name`` (or ``name`` itself)."""
    if isinstance(name, Task):
        return name
    if name not in TASKS:
        raise InputError(f"unknown task {name!r}; tasks: {', '.join(TASKS)}")
    return TASKS[name]
