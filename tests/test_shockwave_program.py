"""The Shockwave planning program against brute-force enumeration of every schedule.

Tiny instances (3-4 jobs, 3 rounds) are small enough to evaluate all 2^(n T) schedules with
the exact objective (:func:`evaluate_plan`); the MIP in both forms (binary x[j,t], and the
aggregated counts program followed by packing), and an independent cvxpy formulation solved
by HiGHS through cvxpy, must all reach the brute-force optimum.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from helpers.shockwave_instances import random_instance

from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.cvxpy_backend import solve_instance_reference
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.mip import (
    DYNAMIC_RANGE,
    MipProgram,
    ProgramError,
    ProgramForm,
    normalised_coefficients,
)
from shockwave_agents.shockwave.objective import evaluate_plan, piecewise_log
from shockwave_agents.shockwave.packing import build_rank_program, pack_counts, rank_greedily
from shockwave_agents.shockwave.planner import Planner
from shockwave_agents.shockwave.program import build_program, schedule_from_vector
from shockwave_agents.shockwave.record import PlanRecord
from shockwave_agents.shockwave.solvers import INFEASIBLE, OPTIMAL


def brute_force(instance: PlanningInstance) -> tuple[float | None, np.ndarray | None]:
    """Best exact objective over every feasible 0/1 schedule (None if none is feasible)."""
    best, best_x = None, None
    size = instance.num_jobs * instance.rounds
    for bits in itertools.product((0, 1), repeat=size):
        x = np.array(bits, dtype=bool).reshape(instance.num_jobs, instance.rounds)
        value = evaluate_plan(instance, x)
        if value.feasible and (best is None or value.objective > best + 1e-12):
            best, best_x = value.objective, x
    return best, best_x


def tolerance(instance: PlanningInstance) -> float:
    return 1e-4 * instance.nsw_coef + 1e-7


CASES = [
    dict(seed=s, **kw)
    for s, kw in [
        (1, {}), (2, {}), (3, {"weights": True}), (4, {"weights": True, "n": 4, "gpus": 3}),
        (5, {"lower": True}), (6, {"loss": True}), (7, {"objective": "normalized"}),
        (8, {"objective": "normalized", "weights": True, "loss": True, "n": 4, "gpus": 3}),
    ]
]


@pytest.mark.parametrize("case", CASES, ids=[str(i) for i in range(len(CASES))])
def test_both_program_forms_reach_the_brute_force_optimum(case, backend):
    instance = random_instance(**case)
    best, _ = brute_force(instance)
    program = build_program(instance, form="schedule")
    result = backend.solve(program)
    if best is None:
        assert result.status == INFEASIBLE
        return
    assert result.status == OPTIMAL
    x = schedule_from_vector(program, result.vector)
    assert evaluate_plan(instance, x).feasible
    assert evaluate_plan(instance, x).objective == pytest.approx(best, abs=tolerance(instance))
    assert result.objective == pytest.approx(best, abs=tolerance(instance))
    # the planner's path: counts program, then packing (or the schedule program if needed)
    planner = Planner(ShockwaveConfig(), backend)
    record = PlanRecord(jobs=instance.num_jobs, solver=backend.name)
    attempt = planner._solve(instance, record, warm=instance.min_epochs is None)
    x_counts, counts_result = attempt.schedule, attempt.result
    assert counts_result.status == OPTIMAL and record.form in (ProgramForm.COUNTS, ProgramForm.SCHEDULE)
    assert evaluate_plan(instance, x_counts).feasible
    assert evaluate_plan(instance, x_counts).objective == pytest.approx(best, abs=tolerance(instance))
    assert counts_result.bound >= best - tolerance(instance)  # a valid bound for the schedule program


@pytest.mark.parametrize("seed", [11, 12, 13])
def test_cvxpy_reference_formulation_agrees(seed, backend):
    instance = random_instance(seed, n=3, horizon=3, gpus=2, weights=True, loss=seed == 13)
    best, _ = brute_force(instance)
    status, value, x = solve_instance_reference(instance, "HIGHS")
    assert status == "optimal"
    assert value == pytest.approx(best, abs=tolerance(instance))
    direct = backend.solve(build_program(instance))
    assert direct.objective == pytest.approx(value, abs=tolerance(instance))


@pytest.mark.parametrize("seed", [21, 22])
def test_cvxpy_direct_and_planner_agree_on_larger_instances(seed, backend):
    instance = random_instance(seed, n=8, horizon=5, gpus=4, weights=True)
    status, value, _ = solve_instance_reference(instance, "HIGHS")
    direct = backend.solve(build_program(instance, form="schedule"))
    assert status == "optimal" and direct.status == OPTIMAL
    assert direct.objective == pytest.approx(value, abs=tolerance(instance))
    # the counts program is a relaxation: its bound is at least the schedule optimum ...
    counts = backend.solve(build_program(instance, form="counts"))
    assert counts.objective >= value - tolerance(instance)
    # ... and the planner (counts, packing, schedule program if the counts do not pack) is exact
    planner = Planner(ShockwaveConfig(), backend)
    record = PlanRecord(jobs=instance.num_jobs, solver=backend.name)
    x = planner._solve(instance, record, warm=True).schedule
    assert evaluate_plan(instance, x).objective == pytest.approx(value, abs=tolerance(instance))
    if counts.objective > value + tolerance(instance):  # no packing of those counts exists
        assert record.form is ProgramForm.SCHEDULE


def test_piecewise_log_is_exact_at_breakpoints_and_below_log_between():
    instance = random_instance(1)
    points = np.array([0.2, 0.4, 0.6, 0.8, 1.0])
    np.testing.assert_allclose(piecewise_log(instance, points), np.log(points), atol=1e-12)
    assert piecewise_log(instance, np.array([0.0]))[0] == pytest.approx(math.log(1e-6))
    between = np.array([0.3, 0.5, 0.9])
    assert np.all(piecewise_log(instance, between) <= np.log(between))


def test_evaluate_plan_by_hand():
    # one job, 10 epochs of 60 s, 2 done, R = 480 s; two of three rounds -> 240 s = 4 epochs
    instance = PlanningInstance(
        job_ids=np.array([0]), gang=np.array([1]), epochs_total=np.array([10.0]),
        epochs_done=np.array([2.0]), mean_epoch_s=np.array([60.0]), remaining_s=np.array([480.0]),
        gpus=1, rounds=3, round_s=120.0, nsw_coef=1.0, makespan_coef_per_s=1e-3,
    )
    value = evaluate_plan(instance, np.array([[1, 0, 1]]))
    assert value.planned_epochs[0] == pytest.approx(4.0)
    # u = 0.6 is a breakpoint: z = log 0.6; remaining 480 - 240 = 240 s
    assert value.nsw_term == pytest.approx(math.log(0.6))
    assert value.max_remaining_s == pytest.approx(240.0)
    assert value.objective == pytest.approx(math.log(0.6) - 0.24)


def test_huge_priorities_are_normalised_into_a_safe_range(backend):
    instance = random_instance(31, n=4, horizon=3, gpus=2)
    # ratio^100 with ratio 5: a weight of ~1e70 that would overflow any solver
    log_weights = np.array([100 * math.log(5.0), 0.0, 0.0, 12 * math.log(1.2)])
    heavy = PlanningInstance(**{**instance.__dict__, "log_weights": log_weights})
    program = build_program(heavy)
    z = program.c[program.layout.z:program.layout.z + 4]
    assert np.all(np.isfinite(program.c)) and np.max(np.abs(program.c)) == pytest.approx(1.0)
    assert np.min(np.abs(z)) >= 1.0 / DYNAMIC_RANGE * (1 - 1e-9)
    assert np.argmin(z) == 0  # heaviest job has the most negative cost (minimisation)
    result = backend.solve(program)
    assert result.status == OPTIMAL
    x = schedule_from_vector(program, result.vector)
    need = math.ceil((heavy.max_epochs[0] * heavy.mean_epoch_s[0]) / 120.0 - 1e-9)
    assert x[0].sum() == min(need, 3)  # the heavy job gets every round it can use


def test_normalised_coefficients_keep_order_and_range():
    coefs, top = normalised_coefficients(np.array([0.0, -5.0, -200.0, -np.inf]))
    assert top == 0.0 and coefs[0] == 1.0 and coefs[3] == 0.0
    assert coefs[0] > coefs[1] > coefs[2] >= 1.0 / DYNAMIC_RANGE * (1 - 1e-9)
    small, _ = normalised_coefficients(np.array([0.0, -2.0]))
    assert small[1] == pytest.approx(math.exp(-2.0))  # no compression inside the range


def test_unsafe_numbers_are_refused():
    bad = MipProgram(c=np.array([1e16]), A=sp.csc_matrix(np.ones((1, 1))), row_lo=np.array([-np.inf]),
                     row_hi=np.array([1.0]), col_lo=np.zeros(1), col_hi=np.ones(1), integer=np.array([True]))
    with pytest.raises(ProgramError):
        bad.check_safe()
    instance = random_instance(1)
    broken = PlanningInstance(**{**instance.__dict__, "mean_epoch_s": np.zeros(3)})
    with pytest.raises(ProgramError):
        build_program(broken)


# --- packing counts into rounds, and re-ranking -----------------------------------------


def test_packing_respects_counts_and_capacity():
    rng = np.random.default_rng(5)
    packed = 0
    for _ in range(200):
        n, horizon, gpus = 12, 6, 8
        gang = rng.choice([1, 2, 4], size=n, p=[0.6, 0.3, 0.1])
        source = rng.random((n, horizon)) < 0.4
        for t in range(horizon):  # make the random schedule fit, so its counts are packable
            while (gang * source[:, t]).sum() > gpus:
                source[rng.choice(np.flatnonzero(source[:, t])), t] = False
        x = pack_counts(source.sum(axis=1), gang, gpus, horizon)
        if x is None:
            continue
        packed += 1
        np.testing.assert_array_equal(x.sum(axis=1), source.sum(axis=1))
        assert np.all(gang @ x <= gpus)
    assert packed >= 190


def test_packing_reports_counts_that_cannot_be_packed():
    # G = 4, T = 2: a 4-GPU job, a 2-GPU job and a 1-GPU job needing both rounds fill 8 = G T
    # GPU-rounds, yet no schedule exists (the 4-GPU job fills a whole round)
    assert pack_counts(np.array([1, 1, 2]), np.array([4, 2, 1]), 4, 2) is None


def brute_force_rank(gang, schedule, log_weights, gpus):
    counts = schedule.sum(axis=1)
    pi = np.exp(log_weights) / np.maximum(counts, 1)
    rows = []
    for c in counts:
        rows.append([np.isin(np.arange(schedule.shape[1]), comb) for comb in itertools.combinations(range(schedule.shape[1]), c)])
    best = None
    for choice in itertools.product(*rows):
        x = np.array(choice)
        if np.all(gang @ x <= gpus):
            cost = float((pi[:, None] * x * np.arange(x.shape[1])).sum())
            best = cost if best is None else min(best, cost)
    return best


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rank_program_reaches_the_brute_force_order(seed, backend):
    rng = np.random.default_rng(seed)
    n, horizon, gpus = 5, 4, 3
    gang = rng.choice([1, 2], size=n, p=[0.7, 0.3])
    schedule = np.zeros((n, horizon), dtype=bool)
    for t in range(horizon):
        for j in rng.permutation(n):
            if rng.random() < 0.6 and (gang * schedule[:, t]).sum() + gang[j] <= gpus:
                schedule[j, t] = True
    log_weights = rng.uniform(0, 3, size=n)
    built = build_rank_program(gang, schedule, log_weights, gpus, rel_gap=0.0)
    assert built is not None
    program, movable, first = built
    result = backend.solve(program)
    assert result.status == OPTIMAL
    ranked = schedule.copy()
    ranked[movable, first:] = result.vector.reshape(movable.size, horizon - first) > 0.5
    np.testing.assert_array_equal(ranked.sum(axis=1), schedule.sum(axis=1))
    assert np.all(gang @ ranked <= gpus)
    pi = np.exp(log_weights) / np.maximum(schedule.sum(axis=1), 1)
    cost = float((pi[:, None] * ranked * np.arange(horizon)).sum())
    assert cost == pytest.approx(brute_force_rank(gang, schedule, log_weights, gpus), rel=1e-6)
    greedy = rank_greedily(gang, schedule, log_weights, gpus)
    if greedy is not None:
        np.testing.assert_array_equal(greedy.sum(axis=1), schedule.sum(axis=1))
        assert np.all(gang @ greedy <= gpus)
