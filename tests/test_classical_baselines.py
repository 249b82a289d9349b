"""Weighted SRPT, Tiresias and max-rho: schedules computed by hand on small traces,
``check_agent`` on the bundled traces, and the options they reject."""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_agents.las import LasAgent
from shockwave_agents.max_rho import MaxRhoAgent, rho_estimate
from shockwave_agents.srtf import SrtfAgent
from shockwave_agents.tiresias import TiresiasAgent
from shockwave_agents.wsrpt import WsrptAgent
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError
from shockwave_gym.jobs import JobSpec
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import Simulator
from shockwave_gym.testing import check_agent
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import load_trace

# static Transformer jobs at 100 iterations/s on every gang: 100 iterations per 1-second epoch,
# so a job of ``iso_s`` epochs has an isolated time of exactly ``iso_s`` seconds and the
# predictor (static mode: one reachable batch size) predicts its remaining time exactly
MODEL, BATCH = "Transformer", 100
TABLE = ThroughputTable({(MODEL, BATCH, g): 100.0 for g in (1, 2, 4, 8)}, source="golden table")
NEW_AGENTS = ("wsrpt", "tiresias", "max-rho")


def job(job_id: int, iso_s: int, arrival_s: float = 0.0, gang: int = 1) -> JobSpec:
    return JobSpec(job_id, MODEL, BATCH, total_iterations=100 * iso_s, gang=gang, mode="static", arrival_s=arrival_s)


def play(agent, jobs: list[JobSpec], gpus: int) -> tuple[list[list[int]], list[float]]:
    """Run to the end with 120 s rounds and no restart cost; (job ids of each round, completions)."""
    sim = Simulator(jobs, SimConfig(gpus=gpus, restart_overhead_s=0.0), TABLE)
    agent.reset(sim.view, 0)
    rounds = []
    while not sim.done:
        choice = sorted(np.asarray(agent.act(sim.view)).tolist())
        rounds.append(choice)
        sim.step(choice)
    return rounds, sim.completion_s.tolist()


def test_wsrpt_runs_the_smallest_remaining_gpu_area_first():
    """4 GPUs at t=0: job 0 (gang 4, 200 s: 800 GPU-s), 1 (gang 1, 600 s: 600), 2 (gang 1,
    300 s: 300), 3 (gang 2, 360 s: 720). Areas order 2, 1, 3, 0: jobs 1, 2, 3 fill the four
    GPUs (SRTF would run job 0, the shortest, alone on all four).
    0-120: {1, 2, 3}; areas left 1: 480, 2: 180, 3: 480 (tie with 1: lower id first), 0: 800.
    120-240: {1, 2, 3}; left 1: 360, 2: 60, 3: 240 GPU-s. 240-360: {1, 2, 3}: job 2 ends at
    300, job 3 at 360, job 1 has 240 s left. 360-480 and 480-600: job 1 alone (job 0 needs
    all four GPUs and is behind it: its 800 GPU-s exceed job 1's 240 and 120); job 1 ends at
    600. 600-720, 720-800: job 0, which ends at 800."""
    jobs = [job(0, 200, gang=4), job(1, 600), job(2, 300), job(3, 360, gang=2)]
    rounds, completion = play(WsrptAgent(), jobs, gpus=4)
    assert rounds == [[1, 2, 3]] * 3 + [[1]] * 2 + [[0]] * 2
    assert completion == [800.0, 600.0, 300.0, 360.0]
    assert play(SrtfAgent(), jobs, gpus=4)[0][0] == [0]  # the gang-blind order differs at once


def test_wsrpt_backfills_past_a_gang_that_does_not_fit():
    """3 GPUs: job 0 (gang 2, 100 s: 200 GPU-s) first, job 1 (gang 2, 150 s: 300) does not fit
    the one GPU left, job 2 (gang 1, 400 s: 400) backfills it."""
    jobs = [job(0, 100, gang=2), job(1, 150, gang=2), job(2, 400)]
    rounds, _ = play(WsrptAgent(), jobs, gpus=3)
    assert rounds[0] == [0, 2]
    assert play(WsrptAgent(backfill=False), jobs, gpus=3)[0][0] == [0]


def test_tiresias_promotes_a_starved_job():
    """1 GPU, one queue threshold at 240 GPU-s, PromoteKnob 1. Job 0 (480 s) runs 0-240 and
    reaches the threshold: lower queue. Jobs 1, 2, 3 (240 s each) arrive at 240, 480, 720,
    each in the top queue. LAS runs them in turn and job 0 waits to the end (960-1200).
    Tiresias: at 480 job 0 has waited 240 s since it last ran, >= 1 x its 240 s of run time,
    so it is promoted (its service count restarts at 0) and, first in arrival order in the
    top queue, runs 480-720 and ends at 720; job 2 then runs 720-960, job 3 960-1200."""
    jobs = [job(0, 480), job(1, 240, 240.0), job(2, 240, 480.0), job(3, 240, 720.0)]
    agent = TiresiasAgent(queue_thresholds_gpu_s=(240.0,), promote_knob=1.0)
    rounds, completion = play(agent, jobs, gpus=1)
    assert rounds == [[0], [0], [1], [1], [0], [0], [2], [2], [3], [3]]
    assert completion == [720.0, 480.0, 960.0, 1200.0]
    assert agent.stats() == {"promotions": 1}
    _, las_completion = play(LasAgent(queue_thresholds_gpu_s=(240.0,)), jobs, gpus=1)
    assert las_completion == [1200.0, 480.0, 720.0, 960.0]
    # a larger knob: at 480 the wait (240 s) is below 2 x 240 s; at 720 it is 480 s: promoted
    # then, ahead of job 3 (arrived at 720) by arrival order
    _, later = play(TiresiasAgent(queue_thresholds_gpu_s=(240.0,), promote_knob=2.0), jobs, gpus=1)
    assert later == [960.0, 480.0, 720.0, 1200.0]


def test_max_rho_serves_the_job_furthest_behind_its_fair_share():
    """1 GPU, jobs 0 (360 s) and 1 (120 s) at t=0; two active jobs of gang 1 on one GPU: the
    equal-share slowdown is 2. At 0 both estimates are (0 + R) / (R x 2) = 0.5: tie, job 0
    (arrival order) runs 0-120. At 120: job 0 (120 + 240) / (360 x 2) = 0.5, job 1
    (120 + 120) / (120 x 2) = 1: job 1 runs 120-240 and ends. Job 0 alone then ends at 480
    (FIFO: 360 and 480; SRTF: 480 and 120)."""
    rounds, completion = play(MaxRhoAgent(), [job(0, 360), job(1, 120)], gpus=1)
    assert rounds == [[0], [1], [0], [0]]
    assert completion == [480.0, 240.0]


def test_rho_estimate_is_gang_aware_by_hand():
    """2 GPUs, at t=0 a 1-GPU and a 2-GPU job, 100 s each: under an equal split of two jobs,
    the 1-GPU job runs at full rate (slowdown max(1, 2 x 1 / 2) = 1) and the 2-GPU job at half
    (max(1, 2 x 2 / 2) = 2). Job 1 then runs alone; the round ends when it does, at 100, and job
    0, alone and 100 s from its end, stands at (100 + 100) / 100."""
    sim = Simulator([job(0, 100), job(1, 100, gang=2)], SimConfig(gpus=2, restart_overhead_s=0.0), TABLE)
    np.testing.assert_allclose(rho_estimate(sim.view, np.array([0, 1])), [1.0, 0.5])
    sim.step([1])
    np.testing.assert_allclose(rho_estimate(sim.view, np.array([0])), [2.0])
    assert sim.time_s == 100.0


def test_bad_options_are_input_errors():
    with pytest.raises(InputError, match="promote_knob"):
        make_agent("tiresias", promote_knob=0)
    with pytest.raises(InputError, match="promote_knob"):
        make_agent("tiresias", promote_knob=float("nan"))
    with pytest.raises(InputError, match="threshold"):
        make_agent("tiresias", queue_thresholds_gpu_s=())
    with pytest.raises(InputError, match="does not take"):
        make_agent("wsrpt", gang_weight=2)


@pytest.mark.parametrize("trace_name", ["teaching-12", "canonical-analogue-120"])
@pytest.mark.parametrize("name", NEW_AGENTS)
def test_check_agent_passes_on_the_bundled_traces(name, trace_name):
    report = check_agent(lambda: make_agent(name), trace_name)
    assert report.agent == name
    assert report.metrics["completed_jobs"] == len(load_trace(trace_name).jobs)


@pytest.mark.parametrize("name", NEW_AGENTS)
def test_mixed_cluster_runs_to_the_end(name):
    trace = load_trace("teaching-12", gpus=5)
    config = SimConfig(cluster=ClusterSpec.parse("v100=2,p100=1,k80=2"))
    assert run_episode(trace, make_agent(name), config, progress=False).metrics["completed_jobs"] == 12
