"""Elastic jobs in the simulator beyond the golden runs: the action checks, the fair-share
reference at the reference count, rigid schedulers (Shockwave included) running elastic jobs
at their reference count, and typed clusters (docs/SEMANTICS.md, "Elastic jobs")."""

import dataclasses

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InvalidActionError
from shockwave_gym.hetero_simulator import make_simulator
from shockwave_gym.metrics import compute_metrics
from shockwave_gym.placement import Allocation
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import load_trace


def _elastic(name: str = "teaching-12"):
    trace = load_trace(name)
    jobs = tuple(dataclasses.replace(job, gangs=(1, 2, 4)) for job in trace.jobs)
    return dataclasses.replace(trace, jobs=jobs, name=f"{name}-elastic"), trace


def test_bad_allocations_name_the_job_and_the_rule():
    trace, _ = _elastic()
    sim = make_simulator(trace.jobs, SimConfig(gpus=4))
    job = int(sim.active_job_ids()[0])
    with pytest.raises(InvalidActionError, match="one of \\[1, 2, 4, 8\\]"):
        sim.step({job: 3})
    with pytest.raises(InvalidActionError, match=f"job {job} cannot run on 8"):
        sim.step({job: 8})  # 8 is not declared (and the cluster has 4)
    while sim.active_job_ids().size < 2:
        sim.step([])
    with pytest.raises(InvalidActionError, match="needs 8 v100 GPUs"):
        sim.step(Allocation(sim.active_job_ids()[:2], [4, 4]))
    with pytest.raises(InvalidActionError, match="not active"):
        sim.step({trace.num_jobs - 1: 1})


def test_fair_share_reference_is_the_rigid_reading_s():
    elastic, rigid = _elastic()
    results = []
    for trace in (elastic, rigid):
        outcome = run_episode(trace, make_agent("fifo"), SimConfig(gpus=4), progress=False)
        results.append(outcome.result)
    assert np.array_equal(results[0].fair_time_s, results[1].fair_time_s)
    assert np.array_equal(results[0].isolated_time_s, results[1].isolated_time_s)
    # fifo gives job ids: the elastic reading runs exactly as the rigid one
    assert compute_metrics(results[0]) == compute_metrics(results[1])


def test_shockwave_stays_rigid_on_an_elastic_trace():
    elastic, rigid = _elastic()
    a = run_episode(elastic, make_agent("shockwave"), SimConfig(gpus=4), progress=False)
    b = run_episode(rigid, make_agent("shockwave"), SimConfig(gpus=4), progress=False)
    assert np.array_equal(a.result.completion_s, b.result.completion_s)
    gang = a.result.gang
    for ids, counts in zip(a.result.round_job_ids, a.result.round_gpu_counts, strict=True):
        assert counts.tolist() == gang[ids].tolist()


@pytest.mark.parametrize("agent", ["pollux", "sia", "elastic-srpt", "elastic-max-min"])
def test_elastic_baselines_run_on_a_typed_cluster(agent):
    trace, _ = _elastic()
    cluster = ClusterSpec.from_counts({"v100": 2, "p100": 2})
    outcome = run_episode(trace, make_agent(agent), SimConfig(cluster=cluster), progress=False)
    assert outcome.metrics["completed_jobs"] == trace.num_jobs
    assert outcome.metrics["utilization_p100"] is not None
    counts = np.concatenate(outcome.result.round_gpu_counts)
    types = np.concatenate(outcome.result.round_gpu_types)
    for t in (0, 1):  # no round holds more GPUs of a type than it has
        for _ids, c, ty in zip(outcome.result.round_job_ids, outcome.result.round_gpu_counts,
                              outcome.result.round_gpu_types, strict=True):
            assert int(c[ty == t].sum()) <= 2
    assert counts.size == types.size


def test_busy_and_restart_gpu_seconds_count_the_round_counts():
    trace, _ = _elastic()
    outcome = run_episode(trace, make_agent("pollux"), SimConfig(gpus=4), progress=False)
    result = outcome.result
    held = sum(float((c * r).sum()) for c, r in zip(result.round_gpu_counts, result.round_run_s, strict=True))
    assert result.gpu_time_s.sum() == pytest.approx(held)
    assert outcome.metrics["busy_utilization"] == pytest.approx(held / (4 * outcome.metrics["makespan_s"]))


def test_harness_records_keep_the_round_counts():
    from shockwave_gym.harness.records import result_from_json, result_to_json

    trace, _ = _elastic()
    outcome = run_episode(trace, make_agent("elastic-srpt"), SimConfig(gpus=4), progress=False)
    back = result_from_json(result_to_json(outcome.result))
    assert compute_metrics(back) == outcome.metrics
    assert [c.tolist() for c in back.round_gpu_counts] == [c.tolist() for c in outcome.result.round_gpu_counts]


@pytest.mark.parametrize("cluster", [None, "v100=2,p100=2,k80=4"])
def test_allocations_on_rigid_jobs_give_each_job_its_gang(cluster):
    """An elastic allocator's action on a trace without elastic jobs: counts equal to the
    gangs run as the ids (or, with every type named, as that placement); any other count is
    refused naming the job, never silently ignored."""
    trace = load_trace("teaching-12")
    config = SimConfig(gpus=8) if cluster is None else SimConfig(cluster=ClusterSpec.parse(cluster))
    sim = make_simulator(trace.jobs, config)
    while sim.active_job_ids().size == 0:
        sim.step([])
    job = int(sim.active_job_ids()[0])
    gang = int(sim.static.gang[job])
    twin = make_simulator(trace.jobs, config)
    while twin.time_s < sim.time_s:
        twin.step([])
    with pytest.raises(InvalidActionError, match=f"job {job} is rigid \\(gang {gang}\\)"):
        sim.step(Allocation([job], [gang + 1]))
    types = None if cluster is None else [1]  # p100: not the default rule's fastest type
    record = sim.step(Allocation([job], [gang], types))
    expected = twin.step([job] if cluster is None else {job: "p100"})
    assert record.job_ids.tolist() == expected.job_ids.tolist() == [job]
    assert sim.work_done_s.tolist() == twin.work_done_s.tolist()
    if cluster is not None:
        assert record.gpu_types.tolist() == expected.gpu_types.tolist() == [1]


def test_the_elastic_program_baselines_run_a_rigid_typed_trace():
    trace = load_trace("teaching-12")
    config = SimConfig(cluster=ClusterSpec.parse("v100=2,p100=2,k80=4"))
    for name in ("sia", "elastic-max-min", "pollux", "elastic-srpt"):
        outcome = run_episode(trace, make_agent(name), config)
        assert outcome.metrics["completed_jobs"] == trace.num_jobs, name
