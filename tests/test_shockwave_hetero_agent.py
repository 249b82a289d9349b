"""Shockwave on heterogeneous clusters, end to end.

- A V100-only cluster through the heterogeneous path (``--cluster v100=32``) gives
  Shockwave's metrics bit for bit as ``--gpus 32`` (the agent takes its homogeneous path on
  one type; the typed program with one type is the homogeneous program, see
  tests/test_shockwave_hetero_program.py).
- On a mixed cluster the agent returns explicit placements within every type's capacity,
  and puts the job that gains most from the V100 on it.
"""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_agents.shockwave.agent import make_shockwave, make_shockwave_normalized
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError
from shockwave_gym.hetero_simulator import HeteroSimulator
from shockwave_gym.jobs import JobSpec
from shockwave_gym.placement import Placement
from shockwave_gym.runner import run_episode
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs
from shockwave_gym.traces import load_trace


def test_v100_only_cluster_gives_the_homogeneous_metrics_bit_for_bit():
    trace = load_trace("teaching-12", gpus=32)
    homogeneous = run_episode(trace, make_shockwave(), SimConfig(gpus=32), seed=0, progress=False)
    hetero = run_episode(trace, make_shockwave(), SimConfig(cluster=ClusterSpec.parse("v100=32")),
                         seed=0, progress=False)
    assert {k: hetero.metrics[k] for k in homogeneous.metrics} == homogeneous.metrics
    np.testing.assert_array_equal(homogeneous.result.completion_s, hetero.result.completion_s)
    assert hetero.agent_stats["planner_stats"]["paths"] == homogeneous.agent_stats["planner_stats"]["paths"]


def _run_typed(agent, trace, cluster: str):
    """Run ``agent`` on ``cluster``, checking every action it returns."""
    spec = ClusterSpec.parse(cluster)
    capacity = np.array(spec.counts)
    seen = []

    class Checked:
        name = agent.name

        def reset(self, view, seed=None):
            agent.reset(view, seed)

        def act(self, view):
            action = agent.act(view)
            assert isinstance(action, Placement)
            load = np.zeros(capacity.size, dtype=np.int64)
            np.add.at(load, action.gpu_types, view.gang[action.job_ids])
            assert np.all(load <= capacity)
            assert np.all(view.runnable[action.job_ids, action.gpu_types])
            seen.append(load)
            return action

        def stats(self):
            return agent.stats()

    outcome = run_episode(trace, Checked(), SimConfig(cluster=spec), seed=0, progress=False)
    return outcome, np.array(seen)


@pytest.mark.parametrize("factory", [make_shockwave, make_shockwave_normalized])
def test_mixed_cluster_runs_typed_plans_within_each_types_capacity(factory):
    trace = load_trace("teaching-12", gpus=12)
    outcome, loads = _run_typed(factory(), trace, "v100=4,p100=4,k80=4")
    assert outcome.metrics["completed_jobs"] == 12
    assert loads.size and np.all(loads.max(axis=0) > 0)  # every type used at some point
    stats = outcome.agent_stats["planner_stats"]
    assert stats["plans"] > 0 and stats["paths"]["fallback"] == 0
    # the typed program: K = 3 columns per job and round
    records = stats["variables"]
    assert records["max"] >= 3 * 20


def test_restart_in_program_is_refused_on_a_mixed_cluster():
    trace = load_trace("teaching-12", gpus=12)
    with pytest.raises(InputError, match="restart_in_program"):
        run_episode(trace, make_shockwave(restart_in_program=True), SimConfig(cluster=ClusterSpec.parse(
            "v100=4,p100=4,k80=4")), seed=0, progress=False)


def _two_job_tables() -> TypedThroughputs:
    """ResNet-18 runs at 0.9 of its V100 speed on the K80, LM at 0.2."""
    rates = {"v100": {("ResNet-18", 64, 1): 10.0, ("LM", 20, 1): 10.0},
             "k80": {("ResNet-18", 64, 1): 9.0, ("LM", 20, 1): 2.0}}
    return TypedThroughputs({t: ThroughputTable(r, f"test {t}") for t, r in rates.items()})


def test_the_job_gaining_most_from_the_v100_gets_it():
    """One V100 and one K80; ResNet-18 loses 10% on the K80, LM 80%. With loose fairness
    bounds (rho_max = 3) the efficient plan decides: LM on the V100, ResNet-18 on the K80.
    (At rho_max = 1 the finish-time-fairness bounds force time sharing: a job that sits on
    the K80 falls behind the pace of its equal share of both GPUs, 0.5 + 0.5 x 0.9.)"""
    jobs = [
        JobSpec(job_id=0, model="ResNet-18", initial_batch_size=64, total_iterations=30 * 782, gang=1,
                mode="static", arrival_s=0.0),
        JobSpec(job_id=1, model="LM", initial_batch_size=20, total_iterations=30 * 2000, gang=1,
                mode="static", arrival_s=0.0),
    ]
    sim = HeteroSimulator(jobs, SimConfig(cluster=ClusterSpec.parse("v100=1,k80=1")), _two_job_tables())
    agent = make_shockwave(rho_max=3.0)
    agent.reset(sim.view, 0)
    types = sim.view.cluster.types
    for _ in range(5):
        action = agent.act(sim.view)
        assert action.as_dict(types) == {0: "k80", 1: "v100"}
        sim.step(action)
    assert agent.plan_records[0].path == "constrained"


def test_tight_fairness_bounds_make_the_jobs_share_the_v100():
    """The same two jobs at rho_max = 1: ResNet-18 must keep its equal-share pace, so it
    gets the V100 for part of the horizon (the counts hand-checked: it needs 2,280 s of
    V100-equivalent work in the 20 rounds, i.e. at least 10 rounds on the V100)."""
    jobs = [
        JobSpec(job_id=0, model="ResNet-18", initial_batch_size=64, total_iterations=30 * 782, gang=1,
                mode="static", arrival_s=0.0),
        JobSpec(job_id=1, model="LM", initial_batch_size=20, total_iterations=30 * 2000, gang=1,
                mode="static", arrival_s=0.0),
    ]
    sim = HeteroSimulator(jobs, SimConfig(cluster=ClusterSpec.parse("v100=1,k80=1")), _two_job_tables())
    agent = make_shockwave()
    agent.reset(sim.view, 0)
    agent.act(sim.view)
    on_v100 = np.array([0 in r[t == 0].tolist() for r, t in zip(agent._plan, agent._plan_types, strict=True)])
    assert agent.plan_records[0].path == "constrained"
    assert 10 <= on_v100.sum() < 20
