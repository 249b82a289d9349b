"""Normalised scores: where an agent lies between FIFO (0) and the clairvoyant reference (1).

Per trace and objective (a metric where lower is better)::

    score = (m_FIFO - m_agent) / (m_FIFO - m_ref)

computed only where the reference leaves room, ``m_FIFO - m_ref >= min_room x m_FIFO``
(``min_room`` = 5%). On another trace the score would divide small differences by a small
number; such a trace is reported as "no room" and left out of that objective's aggregates.
An agent better than the reference scores above 1; one worse than FIFO below 0.

Aggregates: a suite's score is the mean of its traces' scores (traces with room only); the
overall score is the mean of the suite scores (each suite with room counts once, whatever its
number of traces). The *headroom line* of a suite is the best classical baseline's suite score;
a suite where it is at least :data:`SATURATED` (0.95) is *saturated* for that objective: the
classical rules already get within 5% of the reference's gain over FIFO there.

Scored tasks (:data:`shockwave_gym.tasks.TASKS`): ``m`` is the task's episode cost
(:meth:`~shockwave_gym.tasks.Task.cost`, :func:`task_cost`). For a one-term task (``jct``,
``fairness``) the cost is an increasing affine map of one metric on a given trace (avg JCT,
mean rho), so its score equals that metric's score; the room rule is then judged on the
metric (:func:`task_has_room`), so the no-room traces are that metric's too (the fairness
cost ``N x (mean rho - 1)`` has an offset, which would move a 5% threshold). The balanced
task's room is judged on its cost.

The reference's cost (``m_ref``) comes from :mod:`shockwave_gym.harness.clairvoyant`, one
per trace and task. Suite scores carry a bootstrap interval over the traces with room
(:func:`score_interval`, :func:`shockwave_gym.harness.paired.mean_interval`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: the score's zero
FLOOR = "fifo"
#: minimum room, as a share of FIFO's metric, for a trace to be scored
MIN_ROOM = 0.05
#: a suite whose best classical baseline scores at least this is saturated for the objective
SATURATED = 0.95


def has_room(m_floor: float, m_ref: float, min_room: float = MIN_ROOM) -> bool:
    """``m_floor - m_ref >= min_room x m_floor`` (both finite; lower is better)."""
    if not (math.isfinite(m_floor) and math.isfinite(m_ref)):
        return False
    return m_floor - m_ref >= min_room * abs(m_floor)


def normalised_score(m_agent: float, m_floor: float, m_ref: float, min_room: float = MIN_ROOM) -> float | None:
    """``(m_floor - m_agent) / (m_floor - m_ref)``; ``None`` ("no room") where
    :func:`has_room` is false; NaN for an agent whose metric is not finite."""
    if not has_room(m_floor, m_ref, min_room):
        return None
    if m_agent is None or not math.isfinite(m_agent):
        return math.nan
    return (m_floor - m_agent) / (m_floor - m_ref)


@dataclass(frozen=True)
class SuiteScores:
    """One objective's scores in one suite: per agent the mean over the traces with room."""

    suite: str
    traces: tuple[str, ...]
    no_room: tuple[str, ...]
    per_trace: dict[str, dict[str, float]]  # agent -> trace -> score (traces with room)
    mean: dict[str, float]  # agent -> mean score (NaN when no trace has room)
    headroom: float  # the best classical baseline's mean score (NaN without room or baselines)
    best_baseline: str | None

    @property
    def saturated(self) -> bool:
        return math.isfinite(self.headroom) and self.headroom >= SATURATED


def suite_scores(suite: str, metrics: Mapping[str, Mapping[str, float]], reference: Mapping[str, float],
                 baselines: Iterable[str] = (), floor: str = FLOOR, min_room: float = MIN_ROOM,
                 room: Mapping[str, bool] | None = None) -> SuiteScores:
    """Scores in one suite. ``metrics``: agent -> trace -> metric (the floor agent among them);
    ``reference``: trace -> the reference's metric; ``baselines``: the agents the headroom line
    takes its best from. ``room`` (trace -> bool) overrides :func:`has_room` on ``metrics``
    (a task judged on its metric, :func:`task_has_room`)."""
    if floor not in metrics:
        raise ValueError(f"the floor agent {floor!r} has no metrics in suite {suite!r}")
    traces = tuple(sorted(reference))
    if room is None:
        room = {t: t in metrics[floor] and has_room(metrics[floor][t], reference[t], min_room) for t in traces}
    room = tuple(t for t in traces if room.get(t, False) and t in metrics[floor])
    per_trace = {
        agent: {t: _score(values[t], metrics[floor][t], reference[t]) for t in room if t in values}
        for agent, values in metrics.items()
    }
    mean = {agent: _mean(list(scores.values())) if len(scores) == len(room) else math.nan
            for agent, scores in per_trace.items()}
    candidates = [(mean[a], a) for a in baselines if a in mean and math.isfinite(mean[a])]
    best = max(candidates, key=lambda c: (c[0], [-ord(ch) for ch in c[1]])) if candidates else None
    return SuiteScores(suite, traces, tuple(t for t in traces if t not in room), per_trace, mean,
                       best[0] if best else math.nan, best[1] if best else None)


def _score(m_agent, m_floor: float, m_ref: float) -> float:
    if m_agent is None or not math.isfinite(m_agent):
        return math.nan
    return (m_floor - m_agent) / (m_floor - m_ref)


def task_cost(task, metrics: Mapping, *, first_arrival_s: float, round_s: float) -> float:
    """``task``'s (a :class:`~shockwave_gym.tasks.Task` or its name) episode cost; NaN for an
    episode that did not finish."""
    from shockwave_gym.tasks import get_task

    return get_task(task).cost(metrics, first_arrival_s=first_arrival_s, round_s=round_s)


def task_has_room(task, floor_metrics: Mapping, ref_metrics: Mapping, *, first_arrival_s: float, round_s: float,
                  min_room: float = MIN_ROOM) -> bool:
    """The room rule for a task: on its metric for a one-term task (:attr:`Task.metric`), else
    on its cost."""
    from shockwave_gym.tasks import get_task

    task = get_task(task)
    if task.metric is not None:
        floor, ref = floor_metrics.get(task.metric), ref_metrics.get(task.metric)
        if floor is None or ref is None:
            return False
        return has_room(floor, ref, min_room)
    return has_room(task.cost(floor_metrics, first_arrival_s=first_arrival_s, round_s=round_s),
                    task.cost(ref_metrics, first_arrival_s=first_arrival_s, round_s=round_s), min_room)


def score_interval(scores: Iterable[float]):
    """Mean of per-trace scores with a 95% percentile bootstrap interval over the traces
    (:func:`~shockwave_gym.harness.paired.mean_interval`)."""
    from shockwave_gym.harness.paired import mean_interval

    return mean_interval(list(scores))


def overall_scores(suites: Iterable[SuiteScores]) -> dict[str, float]:
    """Agent -> mean of its suite scores over the suites with room (NaN if none)."""
    suites = [s for s in suites if len(s.no_room) < len(s.traces)]
    agents = dict.fromkeys(a for s in suites for a in s.mean)
    return {agent: _mean([s.mean.get(agent, math.nan) for s in suites]) for agent in agents}


def _mean(values: list[float]) -> float:
    if not values or any(not math.isfinite(v) for v in values):
        return math.nan
    return math.fsum(values) / len(values)
