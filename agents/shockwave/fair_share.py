"""Fair-share finish targets F_j: each job's history of fair-share finish estimates, with momentum.

On every arrival or completion the agent records, for each active job, the time it would
finish under an equal share of the cluster, ``arrival + (work done + predicted remaining) /
min(1, G / J)`` (on a typed cluster, divided by :func:`typed_share_rate` instead). The
target F_j blends the time-weighted mean of that history with the latest estimate
(:func:`momentum_finish_target`).
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


def typed_share_rate(speed: np.ndarray, capacity: np.ndarray, gang: np.ndarray, rule: str) -> np.ndarray:
    """Each active job's fair-share rate on a typed cluster, in reference seconds per second
    (docs/SHOCKWAVE_HETERO.md, "Fairness").

    ``speed`` (n, K) is the job's type-k speed relative to its reference type (0 where it
    cannot run), ``capacity`` (K,) the GPUs per type, ``gang`` (n,) the gang sizes.

    - ``"water_filling"``: the fair-share reference's equal share (docs/METRICS.md): the job
      holds ``s_j = min(g_j, lam)`` of the ``G`` GPUs (water-filling over the active jobs'
      gangs), so it runs ``s_j / g_j`` of the time, spread over the types it can run on in
      proportion to their GPUs: ``(s_j / g_j) sum_k w_jk speed[j, k]`` with
      ``w_jk = G_k / sum_{u: speed[j, u] > 0} G_u``.
    - ``"per_job"``: ``min(1, G / J) sum_k (G_k / G) speed[j, k]``: every job is entitled to
      the same share of rounds whatever its gang, and types it cannot use count as zero.
    """
    from shockwave_gym.fair_reference import fluid_shares

    speed = np.asarray(speed, dtype=np.float64)
    capacity = np.asarray(capacity, dtype=np.float64)
    total = float(capacity.sum())
    if rule == "per_job":
        mix = capacity / total  # summed exactly, row by row (no BLAS reduction)
        return min(1.0, total / max(speed.shape[0], 1)) * np.array([fdot(row, mix) for row in speed])
    if rule != "water_filling":
        raise ValueError(f"unknown typed share rule {rule!r}")
    gang = np.asarray(gang, dtype=np.int64)
    held = fluid_shares(gang, total) / gang
    usable = np.where(speed > 0, capacity[None, :], 0.0)
    weights = usable / np.maximum(usable.sum(axis=1, keepdims=True), 1e-12)
    return held * (speed * weights).sum(axis=1)
