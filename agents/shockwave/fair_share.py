"""Fair-share finish targets F_j: each job's history of fair-share finish estimates, with momentum.

On every arrival or completion the agent records, for each active job, the time it would
finish under an equal share of the cluster, ``arrival + (work done + predicted remaining) /
min(1, G / J)``. The target F_j blends the time-weighted mean of that history with the
latest estimate (:func:`momentum_finish_target`).
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_agents.shockwave.limits import fdot


def momentum_finish_target(series: list[tuple[int, float]], round_index: int, momentum: float) -> float:
    """F_j: ``momentum`` x the time-weighted mean of past fair-share finish estimates (each
    weighted by the rounds it stood until the next one, or until now) + the rest x the latest.
    """
    rounds = np.array([r for r, _ in series] + [round_index], dtype=np.float64)
    values = np.array([v for _, v in series], dtype=np.float64)
    windows = np.diff(rounds)
    total = windows.sum()
    average = fdot(values, windows / total) if total > 0 else float(values[-1])
    return momentum * average + (1.0 - momentum) * float(values[-1])


class FairShareTracker:
    """Per-job series of fair-share finish estimates, re-estimated on arrivals/completions."""

    def __init__(self) -> None:
        self.series: dict[int, list[tuple[int, float]]] = {}

    def record(self, round_index: int, job_ids: np.ndarray, estimates_s: np.ndarray) -> None:
        for job, value in zip(job_ids.tolist(), estimates_s.tolist(), strict=True):
            if math.isfinite(value):
                self.series.setdefault(job, []).append((round_index, value))

    def targets(self, round_index: int, job_ids: np.ndarray, momentum: float) -> np.ndarray:
        return np.array([
            momentum_finish_target(self.series[j], round_index, momentum) for j in job_ids.tolist()
        ])

    def forget(self, job_ids) -> None:
        for job in job_ids:
            self.series.pop(int(job), None)
