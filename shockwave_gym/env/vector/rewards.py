"""The built-in rewards (:mod:`shockwave_gym.env.rewards`) for K clusters at once.

Each term is the single reward's formula on the same values; sums over jobs add the same
jobs in the same (ascending id) order with numpy's 1-D grouping
(:func:`~shockwave_gym.batch.pairwise_row_sums`), so every cluster's reward is bit for bit
what its own env would return. A custom reward callable cannot be batched: use the single
env (or ``vectorization_mode="sync"``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from shockwave_gym.batch import pairwise_row_sums
from shockwave_gym.env.rewards import REWARDS, WeightedReward
from shockwave_gym.env.vector import jit, numpy_loops
from shockwave_gym.errors import InputError
from shockwave_gym.metrics import UNFAIR_THRESHOLD
from shockwave_gym.state import DONE


@dataclass
class BatchTransition:
    """One decision interval per cluster: arrays over (K,) or (K, jobs)."""

    sim: object  # the BatchSimulator, after the round
    start_s: np.ndarray
    end_s: np.ndarray
    active_before: np.ndarray
    active: np.ndarray
    rho_hat: np.ndarray
    max_jobs: int
    jct_normaliser_s: np.ndarray
    compiled: bool = False
    rows: np.ndarray | None = None  # the clusters whose rewards are read (None: all)


def _compact_sums(values: np.ndarray, mask: np.ndarray, compiled: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per row, the 1-D numpy sum of ``values[mask]`` (in column order) and the count."""
    if compiled:
        out, counts = np.zeros(values.shape[0]), np.zeros(values.shape[0], np.int64)
        jit.masked_sums(values, mask, out, counts)
        return out, counts
    counts = np.count_nonzero(mask, axis=1)
    packed = np.zeros(values.shape)
    r, c = np.nonzero(mask)
    packed[r, (np.cumsum(mask, axis=1) - 1)[r, c]] = values[r, c]
    return pairwise_row_sums(packed, counts), counts


def jct_terms(t: BatchTransition) -> np.ndarray:
    sim = t.sim
    if t.compiled:
        area = np.zeros(t.start_s.size)
        rows = np.ones(t.start_s.size, bool) if t.rows is None else t.rows
        jit.jct_areas(sim.arrival_s, sim.completion_s, sim.num_jobs, t.start_s, t.end_s, area, rows)
        return -area / t.jct_normaliser_s
    arrived = np.count_nonzero(sim.arrival_s < t.end_s[:, None], axis=1)
    with np.errstate(invalid="ignore"):
        overlap = np.fmin(sim.completion_s, t.end_s[:, None])
        overlap -= np.maximum(sim.arrival_s, t.start_s[:, None])
        np.maximum(overlap, 0.0, out=overlap)
    return -pairwise_row_sums(overlap, arrived) / t.jct_normaliser_s


def makespan_terms(t: BatchTransition) -> np.ndarray:
    return -(t.end_s - t.start_s) / t.sim.round_s


def _completed_rho(t: BatchTransition) -> tuple[np.ndarray, np.ndarray]:
    """(completed (K, jobs) bool, their rho), the jobs that completed in the interval."""
    sim = t.sim
    completed = t.active_before & (sim.status == DONE)
    rho = np.zeros(completed.shape)
    loops = jit if t.compiled else numpy_loops
    loops.themis_rho(sim.arrival_s, sim.completion_s, sim.work_done_s, sim.num_jobs, sim.gpus, completed, rho)
    return completed, rho


def ftf_terms(t: BatchTransition) -> np.ndarray:
    completed, rho = _completed_rho(t)
    return -np.count_nonzero(completed & (rho > UNFAIR_THRESHOLD), axis=1).astype(np.float64)


def ftf_excess_terms(t: BatchTransition) -> np.ndarray:
    completed, rho = _completed_rho(t)
    excess = np.where(completed, np.maximum(rho - 1.0, 0.0), 0.0)
    total, counts = _compact_sums(excess, completed, t.compiled)
    return np.where(counts > 0, -total, 0.0)


_BATCHED = {REWARDS["jct"]: jct_terms, REWARDS["makespan"]: makespan_terms, REWARDS["ftf"]: ftf_terms,
            REWARDS["ftf_excess"]: ftf_excess_terms}


def term_codes(reward: BatchReward) -> tuple[list[int], list[float]]:
    """The terms of ``reward`` as the compiled step's codes (fused.JCT, ...) and weights."""
    from shockwave_gym.env.vector import fused

    codes = {jct_terms: fused.JCT, makespan_terms: fused.MAKESPAN, ftf_terms: fused.FTF,
             ftf_excess_terms: fused.FTF_EXCESS}
    return [codes[fn] for fn, _ in reward.terms], [float(weight) for _, weight in reward.terms]


class BatchReward:
    """A :class:`~shockwave_gym.env.rewards.WeightedReward` of built-in terms, batched."""

    def __init__(self, reward: WeightedReward):
        self.terms = []
        for name, fn, weight in reward.terms:
            batched = _BATCHED.get(fn)
            if batched is None and name in REWARDS:
                raise InputError(
                    f"reward term {name!r} is not batched in the vector env; use the single env or "
                    f"vectorization_mode='sync' (batched terms: {', '.join(n for n in REWARDS if REWARDS[n] in _BATCHED)})"
                )
            if batched is None:
                raise InputError(
                    f"reward term {name!r} is a custom callable, which the vector env cannot batch; "
                    f"use built-in rewards ({', '.join(REWARDS)}) or vectorization_mode='sync'"
                )
            self.terms.append((batched, weight))

    def __call__(self, t: BatchTransition) -> np.ndarray:
        total = np.zeros(t.start_s.shape)
        for fn, weight in self.terms:
            total = total + weight * fn(t)
        return total
