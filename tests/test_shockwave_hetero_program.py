"""Shockwave's typed (heterogeneous) planning program on hand-built instances.

The typed program (per-type capacity, one type per job and round, per-type speeds in the
progress rows) must reach the optimum that brute-force enumeration of every typed schedule
finds with the exact objective, in both forms; respect every type's capacity; put the job
that gains most from the fast type on it; and, with a single type of speed 1, be the
homogeneous program itself, matrix for matrix.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.greedy import typed_greedy_plan
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.mip import ProgramForm
from shockwave_agents.shockwave.objective import evaluate_plan, typed_capacity_ok
from shockwave_agents.shockwave.packing import pack_typed_counts
from shockwave_agents.shockwave.planner import Planner
from shockwave_agents.shockwave.program import build_program, program_vector, schedule_from_vector
from shockwave_agents.shockwave.solvers import HighsBackend


def typed_instance(seed: int, n: int = 3, horizon: int = 2, capacity=(1, 2), *, weights=False,
                   objective="authors") -> PlanningInstance:
    rng = np.random.default_rng(seed)
    gang = rng.choice([1, 2], size=n, p=[0.6, 0.4]).astype(np.int64)
    total = rng.integers(3, 20, size=n).astype(np.float64)
    done = np.floor(total * rng.uniform(0.0, 0.6, size=n))
    mean_epoch = rng.uniform(30.0, 150.0, size=n)
    remaining = (total - done) * mean_epoch * rng.uniform(0.9, 1.1, size=n)
    speed = np.column_stack([np.ones(n), rng.uniform(0.15, 0.9, size=n)])
    speed[rng.random(n) < 0.2, 1] = 0.0  # some jobs cannot run on the slow type
    if objective == "authors":
        nsw_coef, makespan = 1.0 / (n * horizon), 1e-3
    else:
        nsw_coef, makespan = 1.0 / n, 3.0 / remaining.max()
    return PlanningInstance(
        job_ids=np.arange(n), gang=gang, epochs_total=total, epochs_done=done, mean_epoch_s=mean_epoch,
        remaining_s=remaining, gpus=int(sum(capacity)), rounds=horizon, round_s=120.0, nsw_coef=nsw_coef,
        makespan_coef_per_s=makespan, log_weights=rng.uniform(0.0, 3.0, size=n) if weights else None,
        type_capacity=np.array(capacity, dtype=np.int64), speed=speed,
        finish_target_s=np.full(n, 1e9), arrival_s=np.zeros(n), share=1.0,
    )


def brute_force(instance: PlanningInstance):
    """Best exact objective over every feasible typed schedule: per job and round, idle or
    one of the K types."""
    n, kinds, horizon = instance.schedule_shape
    best, best_x = None, None
    for choice in itertools.product(range(kinds + 1), repeat=n * horizon):
        x = np.zeros((n, kinds, horizon), dtype=bool)
        for (j, t), c in zip(itertools.product(range(n), range(horizon)), choice, strict=True):
            if c:
                x[j, c - 1, t] = True
        value = evaluate_plan(instance, x)
        if value.feasible and (best is None or value.objective > best + 1e-12):
            best, best_x = value.objective, x
    return best, best_x


def solve(instance: PlanningInstance, form: ProgramForm) -> np.ndarray:
    program = build_program(instance, 1e-9 * instance.nsw_coef, form=form)
    result = HighsBackend().solve(program)
    assert result.has_solution
    if form is ProgramForm.SCHEDULE:
        return schedule_from_vector(program, result.vector)
    n, kinds = instance.num_jobs, instance.num_types
    counts = np.round(result.vector[: n * kinds]).astype(np.int64).reshape(n, kinds)
    return pack_typed_counts(counts, instance.gang, instance.type_capacity, instance.rounds)


CASES = [(1, {}), (2, {"weights": True}), (3, {"objective": "normalized"}), (4, {"n": 4, "capacity": (2, 2)}),
         (5, {"weights": True, "objective": "normalized"})]


@pytest.mark.parametrize(("seed", "kw"), CASES)
def test_schedule_form_reaches_brute_force_optimum(seed, kw):
    instance = typed_instance(seed, **kw)
    best, _ = brute_force(instance)
    x = solve(instance, ProgramForm.SCHEDULE)
    value = evaluate_plan(instance, x)
    assert value.feasible
    assert value.objective == pytest.approx(best, abs=1e-6 * instance.nsw_coef + 1e-9)


@pytest.mark.parametrize(("seed", "kw"), CASES)
def test_counts_form_packs_to_the_optimum_or_declines(seed, kw):
    instance = typed_instance(seed, **kw)
    best, _ = brute_force(instance)
    x = solve(instance, ProgramForm.COUNTS)
    if x is not None:  # the greedy packing may fail; the planner then solves the schedule form
        value = evaluate_plan(instance, x)
        assert value.feasible
        assert value.objective == pytest.approx(best, abs=1e-6 * instance.nsw_coef + 1e-9)


def test_planner_plans_reach_the_optimum_and_name_types():
    instance = typed_instance(4, n=4, capacity=(2, 2))
    best, _ = brute_force(instance)
    planner = Planner(ShockwaveConfig(), HighsBackend())
    outcome = planner.plan(instance)
    assert outcome.types is not None and len(outcome.types) == instance.rounds
    x = np.zeros(instance.schedule_shape, dtype=bool)
    for t, (jobs, kinds) in enumerate(zip(outcome.rounds, outcome.types, strict=True)):
        x[jobs, kinds, t] = True
    assert typed_capacity_ok(instance, x)
    # the relaxed path re-ranks (rounds move, counts stay), so the objective is the optimum's
    assert evaluate_plan(instance, x).objective == pytest.approx(best, abs=1e-6 * instance.nsw_coef + 1e-9)


def _crowded_instance() -> PlanningInstance:
    """14 jobs with gangs 1-8 on three 12-GPU types: more demand than the cluster has."""
    rng = np.random.default_rng(7)
    n = 14
    return PlanningInstance(
        job_ids=np.arange(n), gang=rng.choice([1, 2, 4, 8], size=n), epochs_total=np.full(n, 50.0),
        epochs_done=np.zeros(n), mean_epoch_s=np.full(n, 100.0), remaining_s=np.full(n, 5000.0),
        gpus=36, rounds=6, round_s=120.0, nsw_coef=1 / (6 * n), makespan_coef_per_s=1e-3,
        type_capacity=np.array([12, 12, 12]),
        speed=np.column_stack([np.ones(n), rng.uniform(0.3, 0.8, n), rng.uniform(0.1, 0.5, n)]),
        finish_target_s=np.full(n, 1e9), arrival_s=np.zeros(n),
    )


def _typed_plan(instance: PlanningInstance, outcome) -> np.ndarray:
    x = np.zeros(instance.schedule_shape, dtype=bool)
    index = {int(j): i for i, j in enumerate(instance.job_ids.tolist())}
    for t, (jobs, kinds) in enumerate(zip(outcome.rounds, outcome.types, strict=True)):
        x[[index[j] for j in jobs.tolist()], kinds, t] = True
    return x


def test_per_type_capacity_is_respected_by_planner_greedy_and_repaired_packing():
    instance = _crowded_instance()
    program = build_program(instance, 1e-9 * instance.nsw_coef, form=ProgramForm.COUNTS)
    result = HighsBackend().solve(program)
    counts = np.round(result.vector[:instance.num_jobs * 3]).astype(np.int64).reshape(instance.num_jobs, 3)
    # 8-GPU gangs on 12-GPU types: these optimal counts do not pack exactly
    assert pack_typed_counts(counts, instance.gang, instance.type_capacity, instance.rounds) is None
    repaired = pack_typed_counts(counts, instance.gang, instance.type_capacity, instance.rounds,
                                 repair_speed=instance.speed)
    assert typed_capacity_ok(instance, repaired)
    # repair only moves or drops rounds: no job gets more rounds than the counts gave it
    assert np.all(repaired.sum(axis=(1, 2)) <= counts.sum(axis=1))
    outcome = Planner(ShockwaveConfig(), HighsBackend()).plan(instance)
    x = _typed_plan(instance, outcome)
    load = np.einsum("j,jkt->kt", instance.gang.astype(float), x.astype(float))
    assert typed_capacity_ok(instance, x) and load.max() <= 12
    assert np.all(load >= 10)  # demand exceeds the cluster: every type nearly full in every round
    assert outcome.record.packing_repaired
    assert evaluate_plan(instance, x).objective <= result.objective + 1e-9  # the counts bound holds
    greedy = typed_greedy_plan(instance)
    assert typed_capacity_ok(instance, greedy)
    assert not typed_capacity_ok(instance, np.ones(instance.schedule_shape, dtype=bool))


def test_job_gaining_most_from_v100_gets_the_v100():
    """Two single-GPU jobs, one V100 and one K80, both with more work than the plan covers.
    Job 0 runs at 0.9 of its V100 speed on the K80, job 1 at 0.2: the optimum puts job 1 on
    the V100 and job 0 on the K80 in every round (hand check: swapping costs job 1 0.8 of a
    round of V100 work per round and gains job 0 only 0.1)."""
    horizon = 4
    instance = PlanningInstance(
        job_ids=np.array([10, 11]), gang=np.array([1, 1]), epochs_total=np.array([100.0, 100.0]),
        epochs_done=np.zeros(2), mean_epoch_s=np.array([60.0, 60.0]), remaining_s=np.array([6000.0, 6000.0]),
        gpus=2, rounds=horizon, round_s=120.0, nsw_coef=1 / 8, makespan_coef_per_s=1e-3,
        type_capacity=np.array([1, 1]), speed=np.array([[1.0, 0.9], [1.0, 0.2]]),
        finish_target_s=np.full(2, 1e9), arrival_s=np.zeros(2),
    )
    for form in ProgramForm:
        x = solve(instance, form)
        assert x[1, 0].all() and x[0, 1].all() and not x[1, 1].any() and not x[0, 0].any()
    outcome = Planner(ShockwaveConfig(), HighsBackend()).plan(instance)
    assert len(outcome.rounds) == horizon
    for jobs, kinds in zip(outcome.rounds, outcome.types, strict=True):
        assert dict(zip(jobs.tolist(), kinds.tolist(), strict=True)) == {10: 1, 11: 0}


def test_one_type_of_speed_one_is_the_homogeneous_program():
    """A typed instance with one type (speed 1, capacity G) builds the homogeneous program,
    matrix for matrix, in both forms."""
    rng = np.random.default_rng(3)
    n = 6
    base = PlanningInstance(
        job_ids=np.arange(n), gang=rng.choice([1, 2, 4], size=n), epochs_total=rng.integers(5, 40, n).astype(float),
        epochs_done=np.zeros(n), mean_epoch_s=rng.uniform(30, 200, n), remaining_s=rng.uniform(500, 9000, n),
        gpus=8, rounds=5, round_s=120.0, nsw_coef=1 / 30, makespan_coef_per_s=1e-3,
        log_weights=rng.uniform(0, 2, n), min_epochs=np.zeros(n),
    )
    from dataclasses import replace

    typed = replace(base, type_capacity=np.array([8]), speed=np.ones((n, 1)))
    for form in ProgramForm:
        a, b = build_program(base, 1e-6, form=form), build_program(typed, 1e-6, form=form)
        assert (a.A != b.A).nnz == 0 and a.A.shape == b.A.shape
        for field in ("c", "row_lo", "row_hi", "col_lo", "col_hi", "integer"):
            assert np.array_equal(getattr(a, field), getattr(b, field)), field
    x = rng.random((n, 5)) < 0.4
    assert evaluate_plan(base, x).objective == evaluate_plan(typed, x[:, None, :]).objective
    program = build_program(typed, 1e-6, form=ProgramForm.SCHEDULE)
    homogeneous = build_program(base, 1e-6, form=ProgramForm.SCHEDULE)
    assert np.array_equal(program_vector(typed, x[:, None, :], program), program_vector(base, x, homogeneous))


def test_polish_moves_a_lone_job_to_the_fastest_free_type_and_trims_surplus():
    """A lone job with 374 s of work (P100 seconds) on an idle v100/p100/k80 cluster: a plan
    that runs it on the K80 for the whole horizon is as good to the objective as any plan
    covering its work; polished, it runs on the P100 (its fastest) for 4 rounds only."""
    from shockwave_agents.shockwave.typed_polish import polish_typed_plan

    instance = PlanningInstance(
        job_ids=np.array([0]), gang=np.array([1]), epochs_total=np.array([10.0]), epochs_done=np.zeros(1),
        mean_epoch_s=np.array([37.4]), remaining_s=np.array([374.0]), gpus=3, rounds=10, round_s=120.0,
        nsw_coef=0.1, makespan_coef_per_s=1e-3, type_capacity=np.array([1, 1, 1]),
        speed=np.array([[0.54, 1.0, 0.44]]),
    )
    slow = np.zeros(instance.schedule_shape, dtype=bool)
    slow[0, 2, :] = True
    polished = polish_typed_plan(instance, slow)
    assert polished[0, 1, :4].all() and polished.sum() == 4
    assert evaluate_plan(instance, polished).objective == evaluate_plan(instance, slow).objective


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_polish_never_lowers_the_objective_and_keeps_capacity(seed):
    from shockwave_agents.shockwave.typed_polish import polish_typed_plan

    instance = _crowded_instance()
    rng = np.random.default_rng(seed)
    x = typed_greedy_plan(instance)
    x &= rng.random(x.shape) < 0.6  # a feasible plan with holes
    polished = polish_typed_plan(instance, x)
    assert typed_capacity_ok(instance, polished)
    assert evaluate_plan(instance, polished).objective >= evaluate_plan(instance, x).objective - 1e-12
