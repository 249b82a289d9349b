"""Heterogeneous Gavel-family allocations and the per-type round mechanism."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_agents.gavel.gavel import hetero_max_min_allocation
from shockwave_agents.gavel.mst import hetero_max_throughput_allocation
from shockwave_agents.gavel.themis import solve_finish_time_fairness_typed
from shockwave_agents.gavel.typed_mechanism import TypedGavelMechanism
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import load_trace

# a small instance: 4 jobs, types (v100, p100, k80) with 2, 1, 2 GPUs; job 3 cannot use k80
TPUT = np.array([[10.0, 6.0, 2.0], [4.0, 3.5, 3.0], [20.0, 9.0, 5.0], [8.0, 8.0, 0.0]])
GANG = np.array([1, 1, 2, 1])
CAP = np.array([2, 1, 2])
WEIGHTS = np.array([1.0, 1.0, 2.0, 1.0])


def _equal_share(tput, gang, cap):
    shares = cap[None, :] / (len(gang) * gang[:, None].astype(float))
    shares = shares / np.maximum(shares.sum(axis=1), 1.0)[:, None]
    return (shares * tput).sum(axis=1)


def _cvxpy_max_min(tput, gang, cap, eq, weights):
    """The same program written independently in cvxpy (min over jobs as a cp.min)."""
    m, k = tput.shape
    x = cp.Variable((m, k), nonneg=True)
    ratios = cp.multiply(cp.sum(cp.multiply(tput, x), axis=1), 1.0 / (eq * weights))
    constraints = [cp.sum(x, axis=1) <= 1, gang.astype(float) @ x <= cap, cp.multiply((tput <= 0).astype(float), x) == 0]
    level = cp.Problem(cp.Maximize(cp.min(ratios)), constraints)
    level.solve(solver=cp.CLARABEL)
    second = cp.Problem(cp.Maximize(cp.sum(ratios)), [*constraints, ratios >= level.value * (1 - 1e-9)])
    second.solve(solver=cp.CLARABEL)
    return level.value, second.value


def test_hetero_max_min_equals_an_independent_cvxpy_optimum():
    eq = _equal_share(TPUT, GANG, CAP)
    level, x = hetero_max_min_allocation(TPUT, GANG, CAP, eq, WEIGHTS)
    want_level, want_sum = _cvxpy_max_min(TPUT, GANG, CAP, eq, WEIGHTS)
    assert level == pytest.approx(want_level, rel=1e-6)
    ratios = (x * TPUT).sum(axis=1) / eq
    assert (ratios / WEIGHTS).min() == pytest.approx(want_level, rel=1e-6)
    assert (ratios / WEIGHTS).sum() == pytest.approx(want_sum, rel=1e-6)
    # feasible: capacity per type, one share per job, nothing on a type a job cannot use
    assert np.all(GANG @ x <= CAP + 1e-9)
    assert np.all(x.sum(axis=1) <= 1 + 1e-9)
    assert x[3, 2] == 0.0


def test_hetero_max_min_hand_checked_instance():
    """Two 1-GPU jobs, one V100 and one K80 (Gavel's motivating case). Job 0 runs 4x faster on
    the V100 (4 vs 1 it/s), job 1 equally fast on both (1 it/s). Equal shares (half of each
    type): eq = (2.5, 1). Job 1 can never beat ratio 1 (it runs at 1 it/s wherever it is), so
    the level is 1; among the allocations keeping both at 1 or more, job 0 alone on the V100
    and job 1 alone on the K80 maximises the sum: ratios (1.6, 1)."""
    tput = np.array([[4.0, 1.0], [1.0, 1.0]])
    level, x = hetero_max_min_allocation(tput, np.array([1, 1]), np.array([1, 1]), np.array([2.5, 1.0]))
    assert level == pytest.approx(1.0)
    np.testing.assert_allclose(x, [[1.0, 0.0], [0.0, 1.0]], atol=1e-8)


def test_hetero_max_throughput_equals_cvxpy():
    x = hetero_max_throughput_allocation(TPUT, GANG, CAP)
    var = cp.Variable(TPUT.shape, nonneg=True)
    problem = cp.Problem(cp.Maximize(cp.sum(cp.multiply(TPUT, var))),
                         [cp.sum(var, axis=1) <= 1, GANG.astype(float) @ var <= CAP, var <= 1,
                          cp.multiply((TPUT <= 0).astype(float), var) == 0])
    problem.solve(solver=cp.CLARABEL)
    assert (x * TPUT).sum() == pytest.approx(problem.value, rel=1e-7)
    assert np.all(GANG @ x <= CAP + 1e-9)


def test_hetero_themis_program_is_feasible_and_fair():
    remaining = np.array([1000.0, 800.0, 5000.0, 300.0])
    eq = _equal_share(TPUT, GANG, CAP)
    status, x = solve_finish_time_fairness_typed(TPUT, GANG, remaining, np.zeros(4), remaining / eq, CAP)
    assert status == "optimal"
    assert np.all(GANG @ x <= CAP + 1e-6)
    assert abs(x[3, 2]) < 1e-6
    rho = (remaining / (x * TPUT).sum(axis=1)) / (remaining / eq)
    # the worst ratio is at most the equal share's (1 for every job)
    assert rho.max() <= 1.0 + 1e-6


class _View:
    def __init__(self, gang, tput, runnable):
        self.gang, self.throughput_by_type, self.runnable = gang, tput, runnable


def test_typed_mechanism_places_pairs_by_priority_then_leftovers_by_the_default_rule():
    m = TypedGavelMechanism(3, np.array([1, 1]), min_recompute_interval_s=1000.0, initial_credit_s=60.0)
    m.admit(np.array([0, 1, 2]))
    assert m.should_recompute(0.0)
    m.reset(0.0)
    m.set_allocation(np.array([0, 1, 2]), np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]]))
    view = _View(np.array([1, 1, 1]), np.array([[5.0, 1.0], [2.0, 1.0], [9.0, 9.0]]), np.ones((3, 2), bool))
    placement = m.select(view)
    assert placement.as_dict() == {1: 0, 0: 1}  # X puts job 0 on the k80 although the v100 is faster
    # job 2 has X = 0 everywhere: it only gets what the pairs leave (nothing here)
    m.record_run(np.array([0, 1]), np.array([1, 0]), np.array([120.0, 120.0]))
    p = m.priorities(np.array([0, 1]))
    assert p[0, 1] == pytest.approx(1.0 / (180.0 / 300.0))  # X / (T / W): W = 3 x 60 + 120
    assert p[1, 1] == 0.0


def test_aware_gavel_beats_blind_gavel_on_the_bundled_heterogeneous_pair():
    """The acceptance figure of docs/HETEROGENEOUS.md ("Checks"), as a regression test."""
    trace = load_trace("hetero-120", gpus=36)
    config = SimConfig(cluster=ClusterSpec.parse("v100=12,p100=12,k80=12"))
    aware = run_episode(trace, make_agent("gavel"), config, progress=False).metrics
    blind = run_episode(trace, make_agent("gavel-blind"), config, progress=False).metrics
    assert aware["avg_jct_s"] < blind["avg_jct_s"]
    assert aware["makespan_s"] < blind["makespan_s"]


@pytest.mark.parametrize("agent", ["fifo", "srtf", "las", "gavel", "gavel-blind", "themis", "mst",
                                   "gandiva_fair", "allox", "ossp"])
def test_every_baseline_completes_a_mixed_cluster(agent):
    trace = load_trace("teaching-12", gpus=4)
    config = SimConfig(cluster=ClusterSpec.parse("v100=2,p100=1,k80=2"))
    outcome = run_episode(trace, make_agent(agent), config, progress=False)
    assert outcome.metrics["completed_jobs"] == 12
    assert outcome.metrics["busy_utilization_k80"] is not None
