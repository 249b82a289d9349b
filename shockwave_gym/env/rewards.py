"""Rewards: named functions of one round's transition, weighted and summed.

A reward function takes a :class:`RoundTransition` and returns a float. Built-ins:

* ``jct`` - minus the integral of the number of jobs in the system (arrived, unfinished,
  queued ones included) over the decision interval [t_k, t_{k+1}], which includes idle
  jumps to the next arrival, divided by ``jct_normaliser_s``. Over an episode that is not
  truncated, the rewards sum to exactly ``-sum(JCT) / jct_normaliser_s``.
* ``makespan`` - minus the interval's length over the round length: the rewards sum to
  ``-(makespan - first arrival) / round_s``.
* ``nsw`` - the increase of sum_j log(max(u_min, u_j)) over the jobs active when the round
  started, where u_j = epochs done / total epochs (Shockwave's Nash social welfare
  utility, with the true log floored at ``u_min`` = 0.01 instead of a piecewise-linear log),
  divided by ``max_jobs``.
* ``ftf`` - minus sum_j max(0, rho_hat_j - 1) over the jobs still active after the round,
  times the interval over the round length, divided by ``max_jobs``; rho_hat is the
  observation's :func:`~shockwave_gym.interface.observation.ftf_estimate` (observed data only).

The default is :data:`DEFAULT_REWARD` = ``{"jct": 1.0, "ftf": 0.1}``: average JCT first,
with a small push against jobs falling behind their fair share. ``reward=`` accepts a
name, a ``{name or callable: weight}`` dict, or a callable ``f(transition) -> float``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from shockwave_gym.errors import InputError
from shockwave_gym.interface.ftf import ftf_estimate

NSW_MIN_UTILITY = 0.01
_ZERO, _ONE = np.array(0.0), np.array(1.0)  # 0-d: faster than Python scalars in ufuncs


@dataclass(slots=True)
class RoundTransition:
    """One round from decision time ``start_s`` to the next decision time ``end_s``.

    ``view`` shows the state after the round (and after any idle jump); the ``*_before``
    arrays were read from the view before the round: ``active_before`` the active job ids,
    ``epoch_progress_before`` the epochs done (fractional) of every job. ``record`` is the core's
    :class:`~shockwave_gym.simulator.RoundRecord`.
    """

    view: object
    record: object
    start_s: float
    end_s: float
    active_before: np.ndarray
    epoch_progress_before: np.ndarray
    max_jobs: int
    jct_normaliser_s: float
    rho_hat: np.ndarray | None = None  # ftf_estimate(view) after the round, if computed

    def rho_hat_of(self, job_ids: np.ndarray) -> np.ndarray:
        """rho-hat of ``job_ids`` after the round (see :func:`ftf_estimate`)."""
        rho = self.rho_hat if self.rho_hat is not None else ftf_estimate(self.view)
        return rho[job_ids]

    @property
    def interval_s(self) -> float:
        return self.end_s - self.start_s


def jobs_in_system_integral_s(arrival_s: np.ndarray, completion_s: np.ndarray, start_s: float, end_s: float) -> float:
    """Integral over [start_s, end_s] of the number of arrived, unfinished jobs.

    ``arrival_s`` is sorted; ``completion_s`` is NaN for unfinished jobs.
    """
    arrived = int(arrival_s.searchsorted(end_s, side="left"))
    if arrived == 0:
        return 0.0
    overlap = np.fmin(completion_s[:arrived], end_s)  # NaN (unfinished) -> end_s
    overlap -= np.maximum(arrival_s[:arrived], start_s)
    return float(np.add.reduce(np.maximum(overlap, _ZERO, out=overlap)))


def jct_reward(t: RoundTransition) -> float:
    view = t.view
    area = jobs_in_system_integral_s(view.arrival_s, view.completion_s, t.start_s, t.end_s)
    return -area / t.jct_normaliser_s


def makespan_reward(t: RoundTransition) -> float:
    return -t.interval_s / t.view.round_s


def nsw_reward(t: RoundTransition) -> float:
    ids = t.active_before
    if ids.size == 0:
        return 0.0
    view = t.view
    after = view.epoch_progress[ids] / view.num_epochs[ids]
    before = t.epoch_progress_before[ids] / view.num_epochs[ids]
    gain = np.log(np.maximum(after, NSW_MIN_UTILITY)) - np.log(np.maximum(before, NSW_MIN_UTILITY))
    return float(gain.sum()) / t.max_jobs


def ftf_reward(t: RoundTransition) -> float:
    view = t.view
    ids = view.active_job_ids
    if ids.size == 0:
        return 0.0
    excess = t.rho_hat_of(ids) - _ONE
    return -float(np.add.reduce(np.maximum(excess, _ZERO, out=excess))) * (t.interval_s / view.round_s) / t.max_jobs


REWARDS: dict[str, Callable[[RoundTransition], float]] = {
    "jct": jct_reward,
    "makespan": makespan_reward,
    "nsw": nsw_reward,
    "ftf": ftf_reward,
}
DEFAULT_REWARD: dict[str, float] = {"jct": 1.0, "ftf": 0.1}


class WeightedReward:
    """Sum of ``weight * fn(transition)``; picklable when its functions are."""

    def __init__(self, terms: list[tuple[str, Callable[[RoundTransition], float], float]]):
        self.terms = terms

    def __call__(self, transition: RoundTransition) -> float:
        total = 0  # the same sum as sum(...) over the terms, without a generator
        for _, fn, weight in self.terms:
            total += weight * fn(transition)
        return float(total)

    def components(self, transition: RoundTransition) -> dict[str, float]:
        """Unweighted value of each term (for diagnostics)."""
        return {name: float(fn(transition)) for name, fn, _ in self.terms}

    def __repr__(self) -> str:
        return "WeightedReward(" + ", ".join(f"{n}={w:g}" for n, _, w in self.terms) + ")"


def _resolve(key) -> tuple[str, Callable[[RoundTransition], float]]:
    if callable(key):
        return getattr(key, "__name__", repr(key)), key
    if key in REWARDS:
        return key, REWARDS[key]
    raise InputError(f"unknown reward {key!r}; built-in rewards: {', '.join(REWARDS)} (or pass a callable)")


def make_reward(spec: str | Mapping | Callable | None) -> WeightedReward:
    """A :class:`WeightedReward` from a name, a ``{name or callable: weight}`` mapping, a
    callable, or ``None``/``"default"`` for :data:`DEFAULT_REWARD`."""
    if spec is None or (isinstance(spec, str) and spec == "default"):
        spec = DEFAULT_REWARD
    if isinstance(spec, str) or callable(spec):
        return WeightedReward([(*_resolve(spec), 1.0)])
    if isinstance(spec, Mapping):
        if not spec:
            raise InputError("reward weights must name at least one reward")
        terms = []
        for key, weight in spec.items():
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not np.isfinite(weight):
                raise InputError(f"reward weight for {key!r} must be a finite number, got {weight!r}")
            terms.append((*_resolve(key), float(weight)))
        return WeightedReward(terms)
    raise InputError(f"reward must be a name, a dict of weights or a callable, got {type(spec).__name__}")
