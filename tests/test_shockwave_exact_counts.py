"""The exact counts solver (agents/shockwave/exact_counts.py) against independent answers.

- :func:`divisible_knapsack` against a dynamic program over the capacity;
- :func:`solve_counts_exactly` against brute-force enumeration of every 0/1 schedule
  (scored by :func:`evaluate_plan`, which shares no code with the solver) on tiny instances,
  and against HiGHS on the same counts program on larger ones, plain, prioritised and
  with fairness floors;
- the planner's routing: ``counts_method``, ``exact_counts_min_jobs``, the greedy backend,
  and the hand-over to HiGHS when the level budget runs out.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import pytest
from helpers.shockwave_instances import random_instance

from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.exact_counts import (
    divisible_knapsack,
    exact_counts_applies,
    solve_counts_exactly,
)
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.mip import ProgramForm
from shockwave_agents.shockwave.objective import evaluate_plan
from shockwave_agents.shockwave.planner import Planner
from shockwave_agents.shockwave.program import build_program, counts_from_vector
from shockwave_agents.shockwave.record import PlanRecord
from shockwave_agents.shockwave.solvers import GreedyOnlyBackend, HighsBackend, SolveStatus
from shockwave_gym.errors import InputError


def knapsack_dp(values, weights, capacity) -> float:
    best = np.zeros(capacity + 1)
    for v, w in zip(values.tolist(), weights.tolist(), strict=True):
        if w <= capacity:
            best[w:] = np.maximum(best[w:], best[:capacity + 1 - w] + v)
    return float(best[capacity])


@pytest.mark.parametrize("seed", range(40))
def test_divisible_knapsack_matches_dynamic_programming(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 40))
    sizes = [(1, 2, 4, 8), (1, 2), (2, 4), (1, 3, 6), (4,)][seed % 5]
    weights = rng.choice(sizes, size=size)
    # repeated values exercise the ties
    values = rng.choice(rng.uniform(0.1, 5.0, size=6), size=size) if seed % 3 == 0 else rng.uniform(0.01, 5.0, size=size)
    capacity = int(rng.integers(0, int(weights.sum()) + 3))
    chosen = divisible_knapsack(values, weights, capacity)
    assert chosen.dtype == bool and chosen.shape == values.shape
    assert int(weights[chosen].sum()) <= capacity
    assert float(values[chosen].sum()) == pytest.approx(knapsack_dp(values, weights, capacity), abs=1e-9)


def test_gang_sizes_that_do_not_divide_each_other_are_left_to_the_mip_solver():
    """The bundling is exact only when each weight divides the next (1 | 3 does, 2 | 3 does
    not), so exact_counts_applies refuses gangs of 2 and 3 together."""
    for gang, applies in (([1, 3, 1], True), ([2, 3, 2], False), ([1, 2, 8], True), ([4, 6, 1], False)):
        instance = instance_with(seed=0, gang=np.array(gang), gpus=8)
        assert exact_counts_applies(instance, build_program(instance, form=ProgramForm.COUNTS)) is applies
    too_big = instance_with(seed=0, gang=np.array([1, 8, 1]), gpus=4)
    assert not exact_counts_applies(too_big, build_program(too_big, form=ProgramForm.COUNTS))


def instance_with(seed: int, n: int = 3, horizon: int = 3, gpus: int = 4, *, gang=None, weights=False,
                  lower=False, objective="authors", spread=1.0) -> PlanningInstance:
    """test_shockwave_program's random instance with gangs of 1, 2 and 4 and wider draws."""
    return random_instance(seed, n, horizon, gpus, weights=weights, lower=lower, objective=objective, gang=gang,
                           gang_sizes=((1, 0.6), (2, 0.3), (4, 0.1)), max_epochs=40, max_epoch_s=200.0,
                           max_log_weight=30.0 * spread, max_floor=1.5)


def brute_force(instance: PlanningInstance) -> float | None:
    """The counts program's optimum: every count vector within the total capacity, scored by
    :func:`evaluate_plan` on a schedule with those row sums (on an unbounded cluster, since
    the counts program bounds only the total; its objective does not depend on G)."""
    unbounded = replace(instance, gpus=10**6)
    best = None
    for counts in itertools.product(range(instance.rounds + 1), repeat=instance.num_jobs):
        counts = np.array(counts)
        if int(instance.gang @ counts) > instance.gpus * instance.rounds:
            continue
        x = np.arange(instance.rounds)[None, :] < counts[:, None]
        value = evaluate_plan(unbounded, x)
        if value.feasible and (best is None or value.objective > best):
            best = value.objective
    return best


def tolerance(instance: PlanningInstance) -> float:
    return 1e-4 * instance.nsw_coef + 1e-9


# priorities within DYNAMIC_RANGE (spread 0.4: log weights up to 12), so the program's
# objective is the instance's own and brute force scores the same thing
TINY = [dict(seed=s, **kw) for s, kw in [
    (1, {}), (2, {}), (3, {"weights": True, "spread": 0.4}), (4, {"n": 5, "gpus": 4}), (5, {"lower": True}),
    (6, {"lower": True, "n": 4}), (7, {"objective": "normalized"}),
    (8, {"objective": "normalized", "weights": True, "spread": 0.4, "n": 4}),
    (9, {"weights": True, "spread": 0.4, "lower": True}), (10, {"weights": True, "spread": 0.4, "n": 5}),
]]


@pytest.mark.parametrize("case", TINY, ids=[str(i) for i in range(len(TINY))])
def test_exact_counts_reach_the_brute_force_optimum(case):
    instance = instance_with(**case)
    program = build_program(instance, form=ProgramForm.COUNTS)
    assert exact_counts_applies(instance, program)
    best = brute_force(instance)
    result = solve_counts_exactly(instance, program)
    if best is None:
        assert result.status == SolveStatus.INFEASIBLE
        return
    assert result.status == SolveStatus.OPTIMAL, result.message
    counts, _ = counts_from_vector(program, result.vector)
    assert int(instance.gang @ counts) <= instance.gpus * instance.rounds
    x = np.arange(instance.rounds)[None, :] < counts[:, None]
    assert evaluate_plan(replace(instance, gpus=10**6), x).objective == pytest.approx(best, abs=tolerance(instance))
    assert result.objective == pytest.approx(best, abs=tolerance(instance))
    assert result.bound >= best - tolerance(instance)


LARGER = [dict(seed=s, **kw) for s, kw in [
    (21, {}), (22, {"weights": True}), (23, {"lower": True}), (24, {"objective": "normalized"}),
    (25, {"objective": "normalized", "weights": True, "lower": True}), (26, {"weights": True, "spread": 0.1}),
    (27, {"gpus": 16}), (28, {"weights": True, "gpus": 16, "horizon": 12}),
]]


@pytest.mark.parametrize("case", LARGER, ids=[str(i) for i in range(len(LARGER))])
def test_exact_counts_agree_with_highs_on_larger_programs(case):
    options = {"n": 40, "horizon": 8, "gpus": 8} | case
    instance = instance_with(**options)
    program = build_program(instance, 1e-4 * instance.nsw_coef, form=ProgramForm.COUNTS)
    exact = solve_counts_exactly(instance, program)
    highs = HighsBackend().solve(program)
    assert highs.status in (SolveStatus.OPTIMAL, SolveStatus.INFEASIBLE)
    if highs.status == SolveStatus.INFEASIBLE:
        assert exact.status == SolveStatus.INFEASIBLE
        return
    assert exact.status == SolveStatus.OPTIMAL, exact.message
    gap = program.abs_gap * program.objective_unit
    # exact is never worse than HiGHS's optimum, nor better than HiGHS's proven bound
    assert exact.objective >= highs.objective - gap
    assert exact.objective <= highs.bound + gap
    assert exact.bound >= highs.objective - gap


def test_unreachable_floor_and_capacity_are_reported_infeasible():
    instance = instance_with(seed=3, n=4, gpus=1, horizon=2)
    floors = instance.max_epochs  # every epoch left within two rounds on one GPU: impossible
    variant = instance.constrained(floors)
    result = solve_counts_exactly(variant, build_program(variant, form=ProgramForm.COUNTS))
    assert result.status == SolveStatus.INFEASIBLE and result.vector is None
    assert HighsBackend().solve(build_program(variant, form=ProgramForm.COUNTS)).status \
        == SolveStatus.INFEASIBLE


def test_only_the_homogeneous_counts_program_without_round0_rows_applies():
    instance = instance_with(seed=4, n=4)
    assert exact_counts_applies(instance, build_program(instance, form=ProgramForm.COUNTS))
    assert not exact_counts_applies(instance, build_program(instance, form=ProgramForm.SCHEDULE))
    lossy = PlanningInstance(**{**instance.__dict__, "round0_loss_s": np.full(4, 10.0)})
    assert not exact_counts_applies(lossy, build_program(lossy, form=ProgramForm.COUNTS))


def planner_inputs(n: int, seed: int = 5) -> PlanningInstance:
    base = instance_with(seed=seed, n=n, horizon=6, gpus=8, weights=True)
    return PlanningInstance(**{**base.__dict__, "finish_target_s": np.full(n, 10.0),
                               "arrival_s": np.zeros(n), "share": min(1.0, 8 / n), "now_s": 0.0})


@pytest.mark.parametrize(("method", "min_jobs", "expected"), [
    ("auto", 200, 0), ("auto", 10, 1), ("exact", 200, 1), ("mip", 0, 0)])
def test_planner_routes_counts_programs_by_method_and_size(method, min_jobs, expected):
    config = ShockwaveConfig(counts_method=method, exact_counts_min_jobs=min_jobs)
    outcome = Planner(config, HighsBackend()).plan(planner_inputs(30))
    assert outcome.record.exact_solves == expected
    assert outcome.record.solves >= 1 and outcome.record.path.value == "relaxed"


def test_exact_and_highs_plans_have_the_same_objective():
    instance = planner_inputs(30)
    values = []
    for method in ("exact", "mip"):
        outcome = Planner(ShockwaveConfig(counts_method=method), HighsBackend()).plan(instance)
        values.append(outcome.record.objective)
    assert values[0] == pytest.approx(values[1], abs=tolerance(instance))
    assert values[0] >= values[1] - tolerance(instance)


def test_greedy_backend_is_not_overruled_by_the_exact_solver():
    outcome = Planner(ShockwaveConfig(counts_method="exact"), GreedyOnlyBackend()).plan(planner_inputs(30))
    assert outcome.record.exact_solves == 0 and outcome.record.path.value == "fallback"


def test_spent_level_budget_hands_the_program_to_highs(monkeypatch):
    from shockwave_agents.shockwave import planner as planner_module
    from shockwave_agents.shockwave.exact_counts import solve_counts_exactly as real

    monkeypatch.setattr(planner_module, "solve_counts_exactly", lambda i, p: real(i, p, max_levels=1))
    instance = instance_with(seed=22, n=40, horizon=8, gpus=8, weights=True)
    program = build_program(instance, form=ProgramForm.COUNTS)
    unproven = real(instance, program, max_levels=1)
    assert unproven.status == SolveStatus.FEASIBLE  # one level does not prove this instance
    record = PlanRecord(jobs=instance.num_jobs, solver="highs")
    planner = Planner(ShockwaveConfig(counts_method="exact"), HighsBackend())
    result = planner._run_counts(instance, program, None, record)
    assert record.exact_solves == 1 and record.solves == 2
    assert result.solver == "highs" and result.objective >= unproven.objective - 1e-9


@pytest.mark.parametrize(("field", "value"), [("counts_method", "fast"), ("exact_counts_min_jobs", -1),
                                               ("exact_counts_min_jobs", 2.5), ("exact_counts_min_jobs", True)])
def test_bad_counts_options_are_refused(field, value):
    with pytest.raises(InputError, match=field):
        ShockwaveConfig(**{field: value})
