"""Checkpoint selection: one number per validation evaluation, lower is better.

A training run evaluates the deterministic policy on the validation traces every
``eval_every`` steps and keeps the weights with the lowest score. Validation traces mix
cluster sizes and loads, whose raw seconds differ by orders of magnitude, so every score is
built from per-trace ratios to FIFO on the same trace (FIFO plays each validation trace
once, at the start), then averaged over traces:

* ``jct``: mean over traces of ``avg JCT / FIFO's avg JCT``;
* ``fair``: mean of ``worst FTF / FIFO's worst FTF`` plus the mean unfair fraction, both
  with the Themis rho (``worst_ftf_themis``, ``unfair_fraction_themis`` in [0, 1]: the rho of
  the ``ftf`` / ``ftf_excess`` rewards), plus ``10 x`` how far the mean JCT ratio exceeds 1
  (the fair policy must not pay for fairness with a JCT worse than FIFO's);
* a scored task's name (``fairness``, ``balanced``; :mod:`shockwave_gym.tasks`): mean over
  traces of ``task cost / FIFO's task cost`` (the task's ``jct`` is the ``jct`` score above:
  its cost is proportional to the avg JCT).
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_gym.errors import InputError
from shockwave_gym.tasks import TASKS, get_task

OBJECTIVES = ("jct", "fair", *(name for name in TASKS if name != "jct"))
#: Weight of the JCT-above-FIFO penalty in the ``fair`` score.
FAIR_JCT_PENALTY = 10.0


def check_objective(name: str) -> str:
    if name not in OBJECTIVES:
        raise InputError(f"select objective must be one of {', '.join(OBJECTIVES)}, got {name!r}")
    return name


def _ratios(per_trace: dict, reference: dict, key: str) -> list[float]:
    ratios = []
    for name, row in per_trace.items():
        value, base = row.get(key), (reference.get(name) or {}).get(key)
        if value is None or base is None or not base > 0:
            return []
        ratios.append(value / base)
    return ratios


def score(objective: str, per_trace: dict, fifo_per_trace: dict) -> float | None:
    """The selection score of one evaluation (``per_trace`` and ``fifo_per_trace`` as in
    :func:`~shockwave_gym.training.evaluation.evaluate_agent`'s result); ``None`` when a
    metric is missing (an episode that did not finish)."""
    if objective in TASKS and objective != "jct":
        return _task_score(objective, per_trace, fifo_per_trace)
    jct = _ratios(per_trace, fifo_per_trace, "avg_jct_s")
    if not jct:
        return None
    if objective == "jct":
        return float(np.mean(jct))
    ftf = _ratios(per_trace, fifo_per_trace, "worst_ftf_themis")
    unfair = [row.get("unfair_fraction_themis") for row in per_trace.values()]
    if not ftf or any(u is None or not math.isfinite(u) for u in unfair):
        return None
    return float(np.mean(ftf) + np.mean(unfair) + FAIR_JCT_PENALTY * max(0.0, np.mean(jct) - 1.0))


def episode_cost(task, row: dict) -> float:
    """The task's cost of one episode's row of
    :func:`~shockwave_gym.training.evaluation.evaluate_agent` (``task``: a
    :class:`~shockwave_gym.tasks.Task`)."""
    return task.cost(row, first_arrival_s=row["first_arrival_s"], round_s=row["round_s"])


def _task_score(name: str, per_trace: dict, fifo_per_trace: dict) -> float | None:
    """Mean over traces of the task's cost over FIFO's (None if a cost is missing or FIFO's is
    not positive)."""
    task = get_task(name)
    ratios = []
    for trace, row in per_trace.items():
        base = fifo_per_trace.get(trace)
        if base is None:
            return None
        cost, fifo = episode_cost(task, row), episode_cost(task, base)
        if not (math.isfinite(cost) and math.isfinite(fifo) and fifo > 0):
            return None
        ratios.append(cost / fifo)
    return float(np.mean(ratios)) if ratios else None
