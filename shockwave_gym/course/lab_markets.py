"""Lab 3, markets: grade a Nash-social-welfare allocation ``nsw_allocation(instance) -> x``.

An instance is one planning window of Shockwave's market, relaxed to continuous rounds: job
``j`` has done ``done[j]`` of its ``total[j]`` epochs, runs ``rate[j]`` epochs per round it is
granted, on ``gang[j]`` GPUs; the window has ``rounds`` rounds on ``gpus`` GPUs. An
allocation ``x[j]`` (rounds granted) is feasible when ``0 <= x[j] <= rounds``,
``done[j] + rate[j] x[j] <= total[j]`` and ``sum_j gang[j] x[j] <= gpus * rounds``. Job ``j``'s
utility is its share of epochs done, ``u[j] = (done[j] + rate[j] x[j]) / total[j]``; NSW is
``sum_j log u[j]``.

The task, credited per instance: (1) **optimal**: NSW within 1e-4 of the optimum; (2)
**proportionally fair**: against the equal-share and the utilitarian allocations, the sum
of relative utility gains ``sum_j (u_j(y) - u_j(x)) / u_j(x)`` is at most 1e-3 (the
first-order condition that characterises the NSW optimum). The placeholder, an equal share of
the GPUs, fails both. The grader's optimum is the closed form of the KKT conditions
(water-filling: ``x[j] = clip(1 / (lambda gang[j]) - done[j] / rate[j], 0, cap[j])``, with
``lambda`` found by bisection), not the students' convex-programming route.
"""

from __future__ import annotations

import numpy as np

from shockwave_gym import portable_math
from shockwave_gym.course.child import MarketInstance
from shockwave_gym.course.report import Criterion, GradeReport, per_case

#: The task criteria, as (name, points).
TASK = (("optimal", 60), ("proportionally fair", 40))
PUBLIC_SEEDS = (1, 2, 3)
OPTIMALITY_TOLERANCE = 1e-4
FAIRNESS_TOLERANCE = 1e-3
FEASIBILITY_TOLERANCE = 1e-5


def make_instance(seed: int, num_jobs: int = 6) -> MarketInstance:
    """A random instance: 4 GPUs, a 20-round window, gangs 1-4, some jobs far along."""
    rng = np.random.default_rng(seed)
    total = rng.integers(20, 200, num_jobs).astype(float)
    done = np.floor(total * rng.uniform(0.0, 0.8, num_jobs))
    done[rng.integers(num_jobs)] = 0.0  # one job has not started: log u -> -inf without rounds
    return MarketInstance(f"market-seed{seed}", 4, 20, rng.choice([1, 1, 2, 4], num_jobs).astype(float),
                          rng.uniform(0.5, 4.0, num_jobs), done, total)


def payload(cases) -> list[dict]:
    """What the child gets of the instances: their numbers, as data (no name: it holds the seed)."""
    return [instance.data() for instance in cases]


def public_cases():
    return [make_instance(seed) for seed in PUBLIC_SEEDS]


def hidden_cases(seeds):
    return [make_instance(int(seed)) for seed in seeds]


def nsw(instance: MarketInstance, x) -> float:
    return float(portable_math.log(np.maximum(instance.utility(x), 1e-12)).sum())


def optimum(instance: MarketInstance) -> np.ndarray:
    """The NSW-optimal allocation, by water-filling on the KKT conditions."""
    capacity = instance.gpus * instance.rounds

    def allocation(lam: float) -> np.ndarray:
        return np.clip(1.0 / (lam * instance.gang) - instance.done / instance.rate, 0.0, instance.cap)

    if (instance.gang * instance.cap).sum() <= capacity:
        return instance.cap.copy()
    low, high = 1e-12, 1e12
    for _ in range(200):  # geometric bisection on the GPU price
        mid = np.sqrt(low * high)
        low, high = (mid, high) if (instance.gang * allocation(mid)).sum() > capacity else (low, mid)
    return allocation(high)


def equal_share(instance: MarketInstance) -> np.ndarray:
    """Every job the same GPU share (capped at what it can use): the placeholder's idea."""
    share = instance.gpus * instance.rounds / instance.num_jobs
    return np.minimum(share / instance.gang, instance.cap)


def utilitarian(instance: MarketInstance) -> np.ndarray:
    """Most total utility: fill the cluster with the best utility per GPU-round first."""
    x, free = np.zeros(instance.num_jobs), float(instance.gpus * instance.rounds)
    for j in np.argsort(-(instance.rate / instance.total / instance.gang), kind="stable"):
        x[j] = min(instance.cap[j], free / instance.gang[j])
        free -= x[j] * instance.gang[j]
    return x


def feasibility_problem(instance: MarketInstance, x) -> str | None:
    """Why ``x`` is not a feasible allocation of ``instance``, or ``None``."""
    x = np.asarray(x, dtype=float)
    tol = FEASIBILITY_TOLERANCE * max(1.0, instance.rounds)
    if x.shape != (instance.num_jobs,):
        return f"{instance.name}: expected shape ({instance.num_jobs},), got {x.shape}"
    if not np.all(np.isfinite(x)):
        return f"{instance.name}: allocation has non-finite entries"
    if np.any(x < -tol) or np.any(x > instance.cap + tol):
        return f"{instance.name}: x[j] must be in [0, min(rounds, epochs left / rate)]"
    used = float((instance.gang * x).sum())
    if used > instance.gpus * instance.rounds + tol:
        return f"{instance.name}: uses {used:.3f} GPU-rounds of {instance.gpus * instance.rounds}"
    return None


#: Names whose use means the submission hands in the grader's own optimum.
FORBIDDEN_NAMES = ("optimum", "lab_markets", "shockwave_gym.course")


def _allocation(answer, instance: MarketInstance) -> np.ndarray | None:
    """A handed-back allocation as an array of its shape, or ``None`` if it is malformed."""
    if not isinstance(answer, dict) or not isinstance(answer.get("shape"), list):
        return None
    shape = answer["shape"]
    if len(shape) > 8 or not all(type(n) is int and n >= 0 for n in shape):
        return None
    values = answer.get("values")
    if values is None:  # too large to hand back: only its shape matters
        return np.broadcast_to(np.float64(np.nan), tuple(shape))
    if not isinstance(values, list) or not all(type(v) in (int, float) for v in values):
        return None
    array = np.asarray(values, dtype=float)
    return array.reshape(shape) if array.size == int(np.prod(shape)) else None


def grade(answers, cases, report: GradeReport) -> None:
    """Add lab 3's criteria to ``report`` for ``answers``: the allocations of ``cases``
    handed back by :func:`shockwave_gym.course.child.markets_answers`."""
    allocations, problem = {}, None
    handed = answers.get("answers") if isinstance(answers, dict) else None
    if not isinstance(handed, list):
        handed, problem = [], "the handed-back answers are malformed"
    for index, instance in enumerate(cases):
        if problem is not None:
            break
        if index >= len(handed):
            failed = answers.get("problem")
            ok = isinstance(failed, dict) and failed.get("case") == index and isinstance(failed.get("text"), str)
            problem = f"{instance.name}: {failed['text']}" if ok else "the handed-back answers miss instances"
            break
        allocation = _allocation(handed[index], instance)
        if allocation is None:
            problem = f"{instance.name}: the handed-back allocation is malformed"
            break
        allocations[instance.name] = allocation
        problem = feasibility_problem(instance, allocation)
    report.add(Criterion("feasible", 0, problem is None, problem or "a feasible allocation on every instance"))
    if problem is not None:
        return
    gaps = {i.name: nsw(i, optimum(i)) - nsw(i, allocations[i.name]) for i in cases}
    worst = max(gaps, key=gaps.get)
    report.add(per_case("optimal", 60, {name: gap <= OPTIMALITY_TOLERANCE for name, gap in gaps.items()},
                        f"NSW within {OPTIMALITY_TOLERANCE:g} of the optimum",
                        f"largest gap: {worst} {gaps[worst]:.2e}"))
    gains = {}
    for i in cases:
        u = np.maximum(i.utility(allocations[i.name]), 1e-12)
        gains[i.name] = max(float(((i.utility(y(i)) - u) / u).sum()) for y in (equal_share, utilitarian))
    worst = max(gains, key=gains.get)
    report.add(per_case("proportionally fair", 40, {name: gain <= FAIRNESS_TOLERANCE for name, gain in gains.items()},
                        f"no other allocation gains > {FAIRNESS_TOLERANCE:g} summed relative utility",
                        f"largest: {worst} {gains[worst]:.2e}"))
