"""The shared Gavel round mechanism (docs/SEMANTICS.md M1–M4) on hand-computed sequences.

The first half drives :class:`GavelMechanism` directly; the second half runs the mechanism
through the simulator on tiny traces whose every number can be checked by hand (a golden
table where one epoch lasts exactly 1 s, as in ``test_core_rounds.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_agents.gavel.gandiva_fair import GandivaFairAgent
from shockwave_agents.gavel.mechanism import GavelMechanism, GavelRoundAgent
from shockwave_gym.jobs import JobSpec
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.throughput import ThroughputTable

# --- credits, deficits, priorities (M2, M3) ----------------------------------------------


def test_credit_deficit_and_priority_sequence_by_hand():
    mech = GavelMechanism(3, gpus=2)
    mech.admit([0, 1])
    assert mech.stale and mech.should_recompute(0.0)
    mech.reset(0.0)  # elapsed 0, no allocation yet: D = 0, T = 60, W = 120
    mech.set_allocation(np.array([0, 1]), np.array([1.0, 0.5]))
    assert not mech.stale
    assert mech.time_so_far_s[:2].tolist() == [60.0, 60.0] and mech.worker_time_s == 120.0
    assert mech.priorities().tolist() == [2.0, 1.0]  # 1/(60/120), 0.5/(60/120)

    mech.record_run(np.array([0]), np.array([120.0]))  # T0 = 180, W = 240
    assert mech.priorities().tolist() == [1.0 / (180.0 / 240.0), 2.0]
    mech.record_run(np.array([1]), np.array([100.0]))  # T1 = 160, W = 340
    assert (mech.time_so_far_s[:2].tolist(), mech.worker_time_s) == ([180.0, 160.0], 340.0)

    mech.admit([2])  # a new job: T = 60, D = 0, no allocation, p = 0
    assert mech.priorities().tolist()[2] == 0.0
    # last reset is still at 0, so the interval test is skipped
    assert mech.should_recompute(240.0)
    mech.reset(240.0)
    # D0 += 1.0*240 - (180-60) = 120; D1 += 0.5*240 - (160-60) = 20; D2 += 0 - 0
    assert mech.deficit_s[:3].tolist() == [120.0, 20.0, 0.0]
    assert mech.time_so_far_s[:3].tolist() == [60.0, 60.0, 60.0]
    assert (mech.worker_time_s, mech.last_reset_s) == (180.0, 240.0)
    mech.set_allocation(np.array([0, 1, 2]), np.array([0.5, 0.5, 0.5]))

    # a completion marks the allocation stale, but the next recompute waits 1000 s
    mech.retire([1])
    assert mech.stale
    assert not mech.should_recompute(1239.0)
    assert mech.should_recompute(1240.0)
    mech.reset(1240.0)
    # D0 += 0.5*1000 - 0 = 620; job 2 likewise 500; job 1 is gone
    assert mech.deficit_s[[0, 2]].tolist() == [620.0, 500.0]
    assert mech.tracked_ids().tolist() == [0, 2] and mech.worker_time_s == 120.0


def test_no_recompute_without_an_arrival_or_completion():
    mech = GavelMechanism(2, gpus=1)
    mech.admit([0])
    mech.reset(0.0)
    mech.set_allocation(np.array([0]), np.array([1.0]))
    mech.record_run(np.array([0]), np.array([120.0]))  # a run alone never makes x stale
    assert not mech.should_recompute(5000.0)


def test_priority_is_x_over_t_over_w_in_that_order():
    # job 1: 0.1 / (100/700) = 0.7000000000000001, job 0: 0.35 / (350/700) = 0.7 exactly;
    # x * W / T would tie them at 0.7 and the larger x (job 0) would go first
    mech = GavelMechanism(3, gpus=1)
    mech.admit([0, 1, 2])
    mech.reset(0.0)
    mech.set_allocation(np.array([0, 1, 2]), np.array([0.35, 0.1, 0.2]))
    mech.record_run(np.array([0, 1, 2]), np.array([290.0, 40.0, 190.0]))
    assert mech.worker_time_s == 700.0
    p = mech.priorities()
    assert p[1] == 0.1 / (100.0 / 700.0) and p[1] > p[0] == 0.7
    assert mech.order().tolist()[:2] == [1, 0]


# --- sort key and selection (M4) ---------------------------------------------------------


def _mechanism_with(allocation, deficit, gpus=4, spare_jobs=1):
    n = len(allocation)
    mech = GavelMechanism(n + spare_jobs, gpus=gpus)
    mech.admit(np.arange(n))
    mech.reset(0.0)
    mech.set_allocation(np.arange(n), np.asarray(allocation, dtype=float))
    mech.deficit_s[:n] = deficit
    return mech


def test_sort_key_priority_then_deficit_then_allocation_then_id():
    # equal T, so p is proportional to x; ties on p fall to D, then x, then ascending id
    mech = _mechanism_with([0.5, 0.5, 0.5, 0.5, 1.0], [0.0, 10.0, 0.0, -5.0, 0.0])
    assert mech.order().tolist() == [4, 1, 0, 2, 3]


def test_selection_backfills_past_a_gang_that_does_not_fit():
    # order 0 (gang 2), 1 (gang 4: does not fit in the 2 left), 2 (gang 1), 3 (gang 1), 4
    mech = _mechanism_with([1.0, 0.9, 0.8, 0.7, 0.6], [0.0] * 5)
    gang = np.array([2, 4, 1, 1, 1])
    assert mech.select(gang).tolist() == [0, 2, 3]


def test_jobs_with_zero_allocation_that_are_reached_still_run():
    mech = _mechanism_with([1.0, 0.0, 0.0], [0.0, 0.0, 0.0], gpus=3)
    assert mech.priorities().tolist()[1:] == [0.0, 0.0]
    assert mech.select(np.array([1, 1, 1])).tolist() == [0, 1, 2]


def test_unallocated_job_holds_its_gpus_but_does_not_run():
    mech = _mechanism_with([0.0, 0.0], [0.0, -50.0], gpus=2)
    mech.admit([2])  # arrived after the recompute: key (0, 0, 0), ahead of job 1 (D < 0)
    gang = np.array([1, 1, 1])
    assert mech.order().tolist() == [0, 2, 1]
    assert mech.select(gang).tolist() == [0]  # job 2 takes the last GPU and does not run
    mech.hold_unallocated_gpus = False
    assert mech.select(gang).tolist() == [0, 1]


def test_set_allocation_rejects_bad_input():
    mech = GavelMechanism(2, gpus=1)
    mech.admit([0, 1])
    with pytest.raises(ValueError, match="shape"):
        mech.set_allocation(np.array([0, 1]), np.array([1.0]))
    with pytest.raises(ValueError, match="finite"):
        mech.set_allocation(np.array([0, 1]), np.array([1.0, np.nan]))


# --- through the simulator: executed seconds, M1 timing ----------------------------------

MODEL, BATCH = "Transformer", 100
TABLE = ThroughputTable({(MODEL, BATCH, g): 100.0 for g in (1, 2, 4, 8)}, source="golden table")


def job(job_id: int, iso_s: int, arrival_s: float = 0.0, gang: int = 1) -> JobSpec:
    """A static job of exactly ``iso_s`` seconds of isolated work (1-second epochs)."""
    return JobSpec(job_id, MODEL, BATCH, total_iterations=100 * iso_s, gang=gang, mode="static", arrival_s=arrival_s)


def play(agent: GavelRoundAgent, jobs, gpus: int, rounds: int):
    sim = Simulator(jobs, SimConfig(gpus=gpus), TABLE)
    agent.reset(sim.view)
    records = []
    for _ in range(rounds):
        if sim.done:
            break
        records.append(sim.step(agent.act(sim.view)))
    return sim, records


def test_restart_overhead_is_not_executed_time():
    # two equal jobs, one GPU, x = 0.5 each. Round 0: job 0 (ties by id), T0 = 180, W = 240.
    # Round 1: p = 0.5/(180/240) vs 0.5/(60/240): job 1 runs and pays 20 s: T1 = 160, W = 340.
    # Round 2: 0.5/(180/340) = 0.944 < 0.5/(160/340) = 1.0625: job 1 again (no overhead).
    # Round 3: T1 = 280, W = 460: job 0 (1.278 > 0.821).
    agent = GandivaFairAgent()
    _, records = play(agent, [job(0, 5000), job(1, 5000)], gpus=1, rounds=4)
    assert [r.job_ids.tolist() for r in records] == [[0], [1], [1], [0]]
    assert [r.overhead_s.tolist() for r in records] == [[0.0], [20.0], [0.0], [20.0]]
    mech = agent.mechanism  # as of the last decision: rounds 0-2 accounted
    assert mech.time_so_far_s[:2].tolist() == [180.0, 280.0] and mech.worker_time_s == 460.0


def test_counting_the_overhead_changes_the_sequence():
    # counting 20 s as executed: after round 1 T = (180, 180), W = 360 -> tie -> job 0
    agent = GandivaFairAgent(count_restart_overhead=True)
    _, records = play(agent, [job(0, 5000), job(1, 5000)], gpus=1, rounds=3)
    assert [r.job_ids.tolist() for r in records] == [[0], [1], [0]]


def test_a_job_arriving_between_recomputes_waits_for_the_next_one():
    # recomputes at 0 and 120 (job 1 arrived; last reset still 0), then not before 1120:
    # job 2 (arrival 300) first runs at 1200 although GPUs idle meanwhile
    jobs = [job(0, 20000), job(1, 20000, arrival_s=100.0), job(2, 20000, arrival_s=300.0)]
    agent = GandivaFairAgent()
    sim, records = play(agent, jobs, gpus=4, rounds=12)
    first_run = {}
    for r in records:
        for j in r.job_ids.tolist():
            first_run.setdefault(j, r.start_s)
    assert first_run == {0: 0.0, 1: 120.0, 2: 1200.0}
    assert all(r.gpus_busy == 2 for r in records if 360.0 <= r.start_s < 1200.0)
    assert agent.stats()["allocation_recomputes"] == 3
    # with the interval at 0 every arrival triggers a recompute at the next boundary
    agent = GandivaFairAgent(min_recompute_interval_s=0.0)
    _, records = play(agent, jobs, gpus=4, rounds=4)
    assert records[3].start_s == 360.0 and 2 in records[3].job_ids.tolist()


def test_selection_fits_the_cluster_and_uses_only_active_jobs():
    jobs = [job(i, 300 + 100 * i, arrival_s=40.0 * i, gang=(1, 2, 4)[i % 3]) for i in range(9)]
    agent = GandivaFairAgent()
    sim = Simulator(jobs, SimConfig(gpus=4), TABLE)
    agent.reset(sim.view)
    while not sim.done:
        choice = agent.act(sim.view)
        assert set(choice.tolist()) <= set(sim.view.active_job_ids.tolist())
        assert int(sim.view.gang[choice].sum()) <= 4
        sim.step(choice)
    assert sim.done
