"""Baseline agents: allocation rules against hand-computed cases and the LPs they solve,
SRTF/LAS ordering, lazy cvxpy import, and every agent on the bundled traces to the end."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_agents.gavel import ossp as ossp_module
from shockwave_agents.gavel.allox import allox_assignment
from shockwave_agents.gavel.gandiva_fair import equal_share_allocation
from shockwave_agents.gavel.gavel import max_min_fair_allocation
from shockwave_agents.gavel.mst import max_throughput_allocation
from shockwave_agents.gavel.ossp import min_total_duration_allocation
from shockwave_agents.gavel.themis import isolated_share, solve_finish_time_fairness
from shockwave_agents.las import LasAgent
from shockwave_agents.srtf import SrtfAgent
from shockwave_gym.errors import InputError
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import SimConfig
from shockwave_gym.traces import BUNDLED_GPUS, load_trace

BASELINES = {
    "gavel": "GavelAgent", "themis": "ThemisAgent", "allox": "AlloxAgent", "ossp": "OsspAgent",
    "mst": "MstAgent", "gandiva_fair": "GandivaFairAgent", "srtf": "SrtfAgent", "las": "LasAgent",
    "fair-share": "FairShareAgent",
}


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_registry_builds_each_baseline(name):
    agent = make_agent(name)
    assert type(agent).__name__ == BASELINES[name] and agent.name == name


def test_bad_agent_options_are_input_errors():
    with pytest.raises(InputError, match="alpha"):
        make_agent("allox", alpha=3)
    with pytest.raises(InputError, match="remaining"):
        make_agent("themis", remaining="foo")
    with pytest.raises(InputError, match="min_recompute_interval_s"):
        make_agent("gavel", min_recompute_interval_s=-1)
    with pytest.raises(InputError, match="increasing"):
        make_agent("las", queue_thresholds_gpu_s=[100.0, 50.0])


@pytest.mark.parametrize("name", ["themis", "ossp", "allox"])
def test_predicted_remaining_option_runs(name):
    trace = load_trace("teaching-12", gpus=4)
    outcome = run_episode(trace, make_agent(name, remaining="predicted"), SimConfig(gpus=4), progress=False)
    assert outcome.metrics["completed_jobs"] == len(trace.jobs)


def test_closed_form_agents_do_not_import_cvxpy():
    code = (
        "import sys\n"
        "from shockwave_agents import make_agent\n"
        "from shockwave_gym.runner import run_episode\n"
        "from shockwave_gym.simulator import SimConfig\n"
        "from shockwave_gym.traces import load_trace\n"
        "trace = load_trace('teaching-12', gpus=4)\n"
        "for name in ('gavel', 'mst', 'gandiva_fair', 'allox', 'srtf', 'las', 'fifo'):\n"
        "    run_episode(trace, make_agent(name), SimConfig(gpus=4), progress=False)\n"
        "make_agent('themis'); make_agent('ossp')\n"
        "assert 'cvxpy' not in sys.modules, 'cvxpy imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# --- allocation rules -------------------------------------------------------------------


def test_gavel_closed_form_by_hand():
    gang = np.array([1, 2, 4])
    assert max_min_fair_allocation(gang, 4).tolist() == [1.0, 0.5, 0.25]  # t* = min sf = 1
    np.testing.assert_allclose(max_min_fair_allocation(gang, 2), [2 / 3, 1 / 3, 1 / 6])  # G/N
    # a priority weight of 2 doubles the job's level
    np.testing.assert_allclose(max_min_fair_allocation(np.array([1, 1]), 1, np.array([1.0, 2.0])), [1 / 3, 2 / 3])


@pytest.mark.parametrize("gpus", [4, 8])
def test_gavel_closed_form_solves_the_lp(gpus):
    import cvxpy as cp

    gang = np.array([1, 2, 4, 1, 8, 2], dtype=float)
    x = cp.Variable(gang.size)
    problem = cp.Problem(cp.Maximize(cp.min(cp.multiply(gang, x))), [x >= 0, x <= 1, gang @ x <= gpus])
    problem.solve(solver=cp.ECOS)
    ours = max_min_fair_allocation(gang, gpus)
    assert float(np.min(gang * ours)) == pytest.approx(problem.value, rel=1e-6)
    assert float(gang @ ours) <= gpus + 1e-12 and ours.max() <= 1.0
    if gpus / gang.size <= gang.min():  # G/N <= min sf: the optimum is unique
        np.testing.assert_allclose(ours, x.value, atol=1e-6)


def test_mst_fractional_knapsack_by_hand_and_against_the_lp():
    import cvxpy as cp

    thr, gang = np.array([10.0, 8.0, 6.0, 6.0]), np.array([1, 2, 1, 1])
    # densities 10, 4, 6, 6: job 0 whole, the tied class {2, 3} splits the last GPU
    assert max_throughput_allocation(thr, gang, 2).tolist() == [1.0, 0.0, 0.5, 0.5]
    rng = np.random.default_rng(3)
    thr, gang = rng.uniform(1, 20, 12), rng.choice([1, 2, 4], 12)
    x = cp.Variable(12)
    problem = cp.Problem(cp.Maximize(thr @ x), [x >= 0, x <= 1, gang @ x <= 9])
    problem.solve(solver=cp.ECOS)
    ours = max_throughput_allocation(thr, gang, 9)
    assert float(gang @ ours) <= 9 + 1e-12 and ours.max() <= 1.0
    assert float(thr @ ours) == pytest.approx(problem.value, rel=1e-6)


def test_gandiva_fair_equal_shares():
    assert equal_share_allocation(3, 4).tolist() == [1.0, 1.0, 1.0]
    assert equal_share_allocation(8, 4).tolist() == [0.5] * 8
    assert equal_share_allocation(0, 4).size == 0


def test_allox_assignment_is_shortest_processing_time_first():
    waited = np.zeros(4)
    # fewer jobs than GPUs: each alone, each first
    assert allox_assignment(np.array([3.0, 1.0]), waited[:2], 4).tolist() == [0, 1]
    # 4 jobs on 2 GPUs: the two longest run last (position 1), the two shortest first
    first = allox_assignment(np.array([4.0, 1.0, 3.0, 2.0]), waited, 2)
    assert sorted(first.tolist()) == [1, 3]
    assert allox_assignment(np.array([1.0]), waited[:1], 0).size == 0


def test_allox_shares_are_zero_or_one_gpu_and_carry_over():
    trace = load_trace("canonical-analogue-120", gpus=32)
    agent = make_agent("allox")
    seen: dict[int, list[float]] = {}
    original = agent.compute_allocation

    def recording(view, job_ids):
        x = original(view, job_ids)
        for job_id, share in zip(job_ids.tolist(), x.tolist(), strict=True):
            seen.setdefault(job_id, []).append(share)
        return x

    agent.compute_allocation = recording
    run_episode(trace, agent, SimConfig(gpus=32), progress=False)
    gang = np.array([spec.gang for spec in trace.jobs])
    for job_id, shares in seen.items():
        assert set(shares) <= {0.0, 1.0 / gang[job_id]}
        # once a job has a GPU's worth of share it keeps it until it completes
        if 1.0 / gang[job_id] in shares:
            assert all(s > 0 for s in shares[shares.index(1.0 / gang[job_id]):])


def test_ossp_closed_form_bisection_matches_asking_ecos_every_step(monkeypatch):
    rng = np.random.default_rng(7)
    thr, gang = rng.uniform(1, 30, 15), rng.choice([1, 1, 2, 4], 15)
    remaining = rng.uniform(1e3, 1e6, 15)
    fast = min_total_duration_allocation(thr, gang, remaining, 8)
    monkeypatch.setattr(ossp_module, "AMBIGUOUS_REL", float("inf"))  # ECOS decides each T
    slow = min_total_duration_allocation(thr, gang, remaining, 8)
    np.testing.assert_array_equal(fast, slow)
    need_s = max((remaining / thr).max(), (gang * remaining / thr).sum() / 8)
    bound_s = ossp_module.bisect_duration_bound(lambda t: t > need_s)
    assert need_s < bound_s <= 1.05 * need_s * 1.0001
    # the point meets every job's rate at that bound and fits the cluster
    assert np.all(thr * fast >= remaining / bound_s * (1 - 1e-6))
    assert float(gang @ fast) <= 8 * (1 + 1e-6)


def test_ossp_bisection_grows_the_interval_when_nothing_fits():
    bound_s = ossp_module.bisect_duration_bound(lambda t: t > 3e6)
    assert 3e6 < bound_s <= 3e6 * 1.05


def test_themis_solution_beats_the_isolated_share():
    rng = np.random.default_rng(11)
    m, gpus = 10, 4
    thr, gang = rng.uniform(1, 30, m), rng.choice([1, 2], m).astype(float)
    remaining, waited = rng.uniform(1e4, 1e5, m), rng.uniform(0, 3000, m)
    share = isolated_share(gang, gpus)
    denominator = remaining / (thr * share) + rng.uniform(0, 500, m)
    status, x = solve_finish_time_fairness(thr, gang, remaining, waited, denominator, gpus)
    assert status == "optimal"

    def worst_ratio(alloc):
        return float(np.max((waited + remaining / (thr * alloc)) / denominator))

    assert float(gang @ x) <= gpus * (1 + 1e-6) and x.max() <= 1 + 1e-6
    assert worst_ratio(np.clip(x, 1e-12, 1)) <= worst_ratio(share) + 1e-6
    # a non-positive denominator is not a convex program: no point (the agent falls back)
    denominator[0] = -1.0
    assert solve_finish_time_fairness(thr, gang, remaining, waited, denominator, gpus) == ("not_dcp", None)


# --- SRTF and LAS -----------------------------------------------------------------------


def fake_view(**fields):
    return SimpleNamespace(**fields)


def test_srtf_runs_shortest_predicted_first_with_backfill(monkeypatch):
    # the rule under test, fed a fake view whose predictions are given directly
    monkeypatch.setattr("shockwave_agents.srtf.predicted_remaining_s", lambda v: v.predicted_remaining_s)
    view = fake_view(
        active_job_ids=np.array([0, 1, 2, 3]),
        predicted_remaining_s=np.array([500.0, 100.0, 300.0, 100.0]),
        gang=np.array([1, 4, 2, 1]),
        gpus=4,
    )
    # order 1 (tie with 3, lower id first), 3, 2, 0: job 1 takes all four GPUs
    assert SrtfAgent().act(view).tolist() == [1]
    # 1 (2 GPUs), 3 (1), 2 does not fit in the last one, 0 backfills it
    view.gang = np.array([1, 2, 2, 1])
    assert SrtfAgent().act(view).tolist() == [1, 3, 0]
    view.gang = np.array([1, 3, 2, 1])
    assert SrtfAgent().act(view).tolist() == [1, 3]
    assert SrtfAgent(backfill=False).act(fake_view(
        active_job_ids=np.array([0, 1]), predicted_remaining_s=np.array([1.0, 2.0]),
        gang=np.array([8, 1]), gpus=4)).tolist() == []


def test_las_queues_then_fifo_inside_a_queue():
    view = fake_view(
        active_job_ids=np.array([0, 1, 2, 3]),
        attained_service_gpu_s=np.array([5000.0, 100.0, 0.0, 3000.0]),
        gang=np.array([1, 1, 1, 1]),
        gpus=2,
    )
    # jobs 1, 2, 3 are below 3600 GPU-s: FIFO among them -> 1, 2
    assert LasAgent().act(view).tolist() == [1, 2]
    # continuous LAS: least service first -> 2, 1
    assert sorted(LasAgent(queue_thresholds_gpu_s=()).act(view).tolist()) == [1, 2]
    view.gpus = 1
    assert LasAgent(queue_thresholds_gpu_s=()).act(view).tolist() == [2]
    with pytest.raises(ValueError, match="increasing"):
        LasAgent(queue_thresholds_gpu_s=(100.0, 50.0))


# --- every agent on the bundled traces ----------------------------------------------------


@pytest.mark.parametrize("trace_name", ["teaching-12", "canonical-analogue-120"])
@pytest.mark.parametrize("name", [*sorted(BASELINES), "fifo"])
def test_every_agent_completes_the_bundled_trace(name, trace_name):
    gpus = BUNDLED_GPUS[trace_name]
    trace = load_trace(trace_name, gpus=gpus)
    outcome = run_episode(trace, make_agent(name), SimConfig(gpus=gpus), progress=False)
    assert outcome.metrics["completed_jobs"] == len(trace.jobs)
    assert not outcome.metrics["truncated"]
    assert np.all(np.isfinite(outcome.result.completion_s))
    assert np.all(outcome.result.round_gpus_busy <= gpus)


def test_gavel_family_runs_are_deterministic():
    trace = load_trace("teaching-12", gpus=4)
    for name in ("themis", "allox"):
        a = run_episode(trace, make_agent(name), SimConfig(gpus=4), progress=False)
        b = run_episode(trace, make_agent(name), SimConfig(gpus=4), progress=False)
        np.testing.assert_array_equal(a.result.completion_s, b.result.completion_s)
