"""Rewards: named functions of one round's transition, weighted and summed.

A reward function takes a :class:`RoundTransition` and returns a float. Built-ins:

* ``jct`` - minus the integral of the number of jobs in the system (arrived, unfinished,
  queued ones included) over the decision interval [t_k, t_{k+1}], which includes idle
  jumps to the next arrival, divided by ``jct_normaliser_s`` (the env's default:
  ``round_s x GPUs``, so a round with one job per GPU costs 1 whatever ``max_jobs`` is).
  Over an episode that is not truncated, the rewards sum to exactly
  ``-sum(JCT) / jct_normaliser_s``.
* ``makespan`` - minus the interval's length over the round length: the rewards sum to
  ``-(makespan - first arrival) / round_s``.
* ``ftf`` - -1 for every job that completed in the interval unfairly: rho_j > 1.05 (the
  metrics' threshold), with rho_j its finish-time fairness in the contention-based measure of the
  Shockwave paper's code (gang-blind; the ``*_themis`` keys): ``rho_j = JCT_j / (W_j x max(1, n_j / GPUs))``, W_j the work done (its isolated
  run time, since it completed) and n_j the mean number of active jobs over its lifetime.
  Over an episode the rewards sum to ``-(number of unfair jobs)`` = ``-N x
  unfair_fraction_themis``: a policy scores better if and only if fewer of its jobs miss
  their fair share.
* ``ftf_excess`` - ``-max(0, rho_j - 1)`` for every job that completed in the interval: the
  rewards sum to the excess unfairness ``-sum_j max(0, rho_j - 1)``, which the worst jobs
  dominate (it follows ``worst_ftf_themis``). It can rank a policy that makes many jobs a
  little late (random play) above one that makes few jobs very late (FIFO); ``ftf`` ranks
  by how many.
* ``fair_share`` - the dense fair-share term: over the interval, ``-sum_j (time j was active
  under the policy - time j was active in the fair-share reference) / T_fair_j``, the reference
  of the metrics' ``rho_*`` keys (:mod:`shockwave_gym.fair_reference`; the env reads the hidden
  isolated times to compute it). On the interval that ends the episode the reference's time
  after the end is counted too, so over an episode that is not truncated the rewards sum to
  exactly ``-sum_j (JCT_j / T_fair_j - 1) = -sum_j (rho_j - 1)``. Single env only: ``gym.make_vec`` gives
  K single envs for it (``env/vector/fallback.py``).

The default is :data:`DEFAULT_REWARD`, the weights of the declared default task
(:data:`shockwave_gym.tasks.DEFAULT_TASK`, ``jct``: ``{"jct": 1.0}``), so a default episode
that is not truncated returns minus that task's cost. ``reward=`` accepts a name, a
``{name or callable: weight}`` dict, or a callable ``f(transition) -> float``; the env's
``task=`` takes a task's weights instead (:mod:`shockwave_gym.tasks`).

Removed terms (named in the error if asked for): ``nsw`` (the increase of sum log(max(0.01,
epochs done / total)) over a round) telescopes over an episode to sum_j (log 1 - log 0.01)
for every completed job, a constant independent of the policy; the old dense ``ftf`` (the
projected rho-hat of waiting jobs) ranked a random policy above FIFO, which is fairer by the
metric. docs/ENV.md, "Rewards", has the formulas; benchmarks/env_learning.py measures them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from shockwave_gym.errors import InputError
from shockwave_gym.interface.ftf import ftf_estimate
from shockwave_gym.metrics import UNFAIR_THRESHOLD
from shockwave_gym.tasks import DEFAULT_TASK, get_task

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
    fair_time_s: np.ndarray | None = None  # T_fair of every job (the fair-share reference), if needed

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


def completed_in(t: RoundTransition) -> np.ndarray:
    """Ids (ascending) of the jobs that completed during the interval."""
    ids = t.active_before
    return ids[~t.view.is_active[ids]]


def themis_rho(view, job_ids: np.ndarray) -> np.ndarray:
    """rho of completed ``job_ids`` as the metrics' contention-based measure (``*_themis`` keys) computes it, from the
    trace's arrivals and completions so far (every job alive during a completed job's
    lifetime has either completed or is still active, so its overlap is known)."""
    arrival, completion, work = view.arrival_s, view.completion_s, view.work_done_s
    out = np.empty(job_ids.size)
    for i, j in enumerate(job_ids.tolist()):
        a, c = float(arrival[j]), float(completion[j])
        life = c - a
        area = jobs_in_system_integral_s(arrival, completion, a, c)
        contention = area / life if life > 0 else 1.0
        out[i] = life / (float(work[j]) * max(1.0, contention / view.gpus))
    return out


def ftf_reward(t: RoundTransition) -> float:
    done = completed_in(t)
    if done.size == 0:
        return 0.0
    return -float(np.count_nonzero(themis_rho(t.view, done) > UNFAIR_THRESHOLD))


def ftf_excess_reward(t: RoundTransition) -> float:
    done = completed_in(t)
    if done.size == 0:
        return 0.0
    excess = themis_rho(t.view, done) - _ONE
    return -float(np.add.reduce(np.maximum(excess, _ZERO, out=excess)))


def fair_share_reward(t: RoundTransition) -> float:
    if t.fair_time_s is None:
        raise InputError("the fair_share reward needs T_fair per job: the env computes it when the term is asked for")
    view = t.view
    arrival, completion, fair = view.arrival_s, view.completion_s, t.fair_time_s
    arrived = int(arrival.searchsorted(t.end_s, side="left"))
    if arrived == 0:
        return 0.0
    a = arrival[:arrived]
    begin = np.maximum(a, t.start_s)
    held = np.maximum(np.fmin(completion[:arrived], t.end_s) - begin, _ZERO)  # NaN (active) -> end
    reference_end = a + fair[:arrived]
    if not view.done:
        reference_end = np.minimum(reference_end, t.end_s)
    reference = np.maximum(reference_end - begin, _ZERO)
    return -float(np.add.reduce((held - reference) / fair[:arrived]))


def uses_fair_time(reward) -> bool:
    """Whether ``reward`` (a :class:`WeightedReward`) has the ``fair_share`` term."""
    return any(fn is fair_share_reward for _, fn, _ in getattr(reward, "terms", ()))


_REMOVED = {
    "nsw": "its return is a constant independent of the policy (the log-utility increments telescope to "
           "sum_j (log 1 - log 0.01) over the completed jobs)",
}


REWARDS: dict[str, Callable[[RoundTransition], float]] = {
    "jct": jct_reward,
    "makespan": makespan_reward,
    "ftf": ftf_reward,
    "ftf_excess": ftf_excess_reward,
    "fair_share": fair_share_reward,
}
#: The default task's reward weights (declared once, in :mod:`shockwave_gym.tasks`).
DEFAULT_REWARD: dict[str, float] = get_task(DEFAULT_TASK).reward


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
    if key in _REMOVED:
        raise InputError(f"reward {key!r} was removed: {_REMOVED[key]}; built-in rewards: {', '.join(REWARDS)}")
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
