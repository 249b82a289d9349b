"""Golden tests for the round rules R1-R5 (docs/SEMANTICS.md), with hand-computed times.

Every job here is a static "Transformer (batch size 100)" job on a table whose rate is
100 iterations/s: 10,000 samples / 100 = 100 iterations per epoch, so one epoch lasts
exactly 1 s and a job of E epochs has an isolated time of exactly E seconds. All the times
below are therefore plain integers that can be checked by hand.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers.rounds import BATCH, MODEL, TABLE, job, sim_of

from shockwave_gym.adaptation import register_mode
from shockwave_gym.errors import InvalidActionError
from shockwave_gym.jobs import JobSpec
from shockwave_gym.simulator import SimConfig, Simulator


def test_golden_table_gives_one_second_epochs():
    sim = sim_of(job(0, 300))
    assert sim.static.isolated_time_s.tolist() == [300.0]
    assert sim.static.num_epochs.tolist() == [300]


# --- R1 clock, R2 round length, R4 exact completion -------------------------------------


def test_r2_r4_full_rounds_then_exact_completion_ends_the_round_early():
    # one 300 s job: 0-120, 120-240 (ran last round: no overhead), then 60 s left -> 300
    sim = sim_of(job(0, 300))
    r0 = sim.step([0])
    assert (r0.start_s, r0.end_s, r0.run_s.tolist(), r0.overhead_s.tolist()) == (0.0, 120.0, [120.0], [0.0])
    r1 = sim.step([0])
    assert (r1.start_s, r1.end_s, r1.overhead_s.tolist()) == (120.0, 240.0, [0.0])
    r2 = sim.step([0])
    assert (r2.start_s, r2.end_s, r2.run_s.tolist()) == (240.0, 300.0, [60.0])
    assert r2.completed_ids.tolist() == [0]
    assert sim.done and sim.completion_s.tolist() == [300.0]
    assert sim.time_s == 300.0


def test_r2_round_ends_when_the_last_selected_job_finishes():
    # 50 s and 70 s jobs together: the round ends at 70, each completes at its own instant
    sim = sim_of(job(0, 50), job(1, 70), gpus=2)
    record = sim.step([0, 1])
    assert record.end_s == 70.0
    assert sim.completion_s.tolist() == [50.0, 70.0]
    assert record.run_s.tolist() == [50.0, 70.0]


def test_r2_round_keeps_full_length_when_one_selected_job_does_not_finish():
    # 50 s job + 500 s job: the 50 s job completes at 50, its GPU idles until 120
    sim = sim_of(job(0, 50), job(1, 500), gpus=2)
    record = sim.step([0, 1])
    assert record.end_s == 120.0
    assert sim.completion_s[0] == 50.0
    assert record.run_s.tolist() == [50.0, 120.0]
    assert sim.time_s == 120.0
    assert sim.view.active_job_ids.tolist() == [1]


def test_r4_jct_is_completion_minus_arrival_and_makespan_is_last_completion():
    # job 1 arrives at 100; FIFO-like: job 0 (200 s) runs 0-120, 120-200 (ends the round
    # early); job 1 starts at 200, was not in the previous round, but its 100 s piece is
    # <= 115 s so it pays nothing: completes at 300. JCT = 200 and 200.
    sim = sim_of(job(0, 200), job(1, 100, arrival_s=100.0))
    sim.step([0])
    sim.step([0])
    assert sim.time_s == 200.0
    sim.step([1])
    result = sim.result()
    assert result.completion_s.tolist() == [200.0, 300.0]
    assert result.jct_s.tolist() == [200.0, 200.0]
    from shockwave_gym.metrics import compute_metrics

    assert compute_metrics(result)["makespan_s"] == 300.0


def test_r1_clock_jumps_to_the_next_arrival_when_nothing_is_runnable():
    # job 0 finishes at 100; job 1 arrives at 1,000: the next round starts at 1,000
    sim = sim_of(job(0, 100), job(1, 100, arrival_s=1000.0))
    sim.step([0])
    assert sim.time_s == 1000.0
    assert sim.view.active_job_ids.tolist() == [1]
    record = sim.step([1])
    assert (record.start_s, record.end_s) == (1000.0, 1100.0)
    assert sim.completion_s.tolist() == [100.0, 1100.0]


def test_r1_first_boundary_is_the_first_arrival_and_idle_jump_does_not_exempt_restart():
    # The trace starts at 50 s: the clock jumps there. After job 0 (100 s) completes at 150,
    # the clock jumps to job 1's arrival at 1,000. That is round 1 and job 1 was not in
    # round 0, so with 300 s of work it pays 20 s: it gains 100 s by 1,120.
    sim = sim_of(job(0, 100, arrival_s=50.0), job(1, 300, arrival_s=1000.0))
    assert sim.time_s == 50.0
    sim.step([0])
    assert sim.completion_s[0] == 150.0 and sim.time_s == 1000.0
    record = sim.step([1])
    assert record.overhead_s.tolist() == [20.0]
    assert record.end_s == 1120.0
    assert sim.work_done_s[1] == 100.0


def test_r1_arrival_mid_round_waits_for_the_next_boundary():
    sim = sim_of(job(0, 1000), job(1, 100, arrival_s=30.0), gpus=2)
    assert sim.view.active_job_ids.tolist() == [0]
    with pytest.raises(InvalidActionError):
        sim.step([0, 1])  # job 1 has not arrived at t=0
    sim.step([0])  # a GPU idles although job 1 arrived at 30 s
    assert sim.time_s == 120.0
    assert sim.view.active_job_ids.tolist() == [0, 1]
    record = sim.step([0, 1])
    assert record.start_s == 120.0
    assert sim.completion_s[1] == 220.0  # 100 s piece: no overhead


def test_r1_arrival_exactly_on_a_boundary_is_admitted_there():
    sim = sim_of(job(0, 1000), job(1, 10, arrival_s=120.0), gpus=2)
    sim.step([0])
    assert sim.view.is_active[1]


def test_r1_early_round_end_admits_arrivals_at_that_boundary():
    # job 0 finishes at 50 s; job 1 arrived at 30 s is admitted at the 50 s boundary and,
    # with 300 s of work and not having run in round 0, pays 20 s in round 1 (50-170).
    sim = sim_of(job(0, 50), job(1, 300, arrival_s=30.0))
    sim.step([0])
    assert sim.time_s == 50.0 and sim.view.active_job_ids.tolist() == [1]
    record = sim.step([1])
    assert (record.start_s, record.end_s, record.overhead_s.tolist()) == (50.0, 170.0, [20.0])
    assert sim.work_done_s[1] == 100.0


# --- R3 restart overhead and its three exceptions ---------------------------------------


def test_r3_alternating_jobs_pay_the_overhead_except_first_round_and_short_final_piece():
    # Two 300 s jobs on one GPU, alternating A B A B A B:
    #   r0 A   0-120  first round of the simulation: exempt        A work 120
    #   r1 B 120-240  pays 20                                      B work 100
    #   r2 A 240-360  pays 20                                      A work 220
    #   r3 B 360-480  pays 20                                      B work 200
    #   r4 A 480-560  80 s left <= 115: no overhead, completes 560
    #   r5 B 560-660  100 s left <= 115: no overhead, completes 660
    sim = sim_of(job(0, 300), job(1, 300))
    overheads, ends = [], []
    for choice in ([0], [1], [0], [1], [0], [1]):
        record = sim.step(choice)
        overheads.append(float(record.overhead_s[0]))
        ends.append(record.end_s)
    assert overheads == [0.0, 20.0, 20.0, 20.0, 0.0, 0.0]
    assert ends == [120.0, 240.0, 360.0, 480.0, 560.0, 660.0]
    assert sim.completion_s.tolist() == [560.0, 660.0]
    assert sim.run_time_s.tolist() == [320.0, 340.0]  # overhead is held GPU time


def test_r3_job_that_ran_last_round_pays_nothing():
    sim = sim_of(job(0, 1000), job(1, 1000), gpus=2)
    sim.step([0])
    record = sim.step([0, 1])
    assert record.overhead_s.tolist() == [0.0, 20.0]
    assert sim.work_done_s.tolist() == [240.0, 100.0]


def test_r3_ran_last_round_is_compared_by_job_id_not_by_gpu_count():
    # job 0 ran in round 0; in round 1 job 1 (same gang) runs instead; in round 2 job 0
    # returns and pays although the same number of GPUs was busy throughout.
    sim = sim_of(job(0, 1000), job(1, 1000))
    sim.step([0])
    sim.step([1])
    assert sim.step([0]).overhead_s.tolist() == [20.0]


def test_r3_first_round_is_exempt_for_every_selected_job():
    sim = sim_of(job(0, 1000, gang=2), job(1, 1000, gang=2), gpus=4)
    record = sim.step([0, 1])
    assert record.overhead_s.tolist() == [0.0, 0.0]
    assert sim.work_done_s.tolist() == [120.0, 120.0]


@pytest.mark.parametrize(
    ("iso_s", "overhead_s", "completion_s", "work_after_s"),
    [
        # 120 s done in round 0; an idle round 1 (120-240); the job returns in round 2.
        (120 + 115, 0.0, 240.0 + 115.0, 235.0),  # exactly 115 s left: short piece, no cost
        (120 + 116, 20.0, None, 220.0),  # 116 s left > 115: pays 20, gains 100
        (120 + 100, 0.0, 240.0 + 100.0, 220.0),  # 100 s piece: would finish even with 20 s
        (120 + 110, 0.0, 240.0 + 110.0, 230.0),  # 110 s: no cost (with it, it would not fit)
    ],
)
def test_r3_threshold_is_strictly_more_than_115_seconds(iso_s, overhead_s, completion_s, work_after_s):
    sim = sim_of(job(0, iso_s))
    sim.step([0])
    idle = sim.step([])  # nothing selected: a full idle round
    assert (idle.start_s, idle.end_s, idle.job_ids.size) == (120.0, 240.0, 0)
    record = sim.step([0])
    assert record.overhead_s.tolist() == [overhead_s]
    assert sim.work_done_s[0] == pytest.approx(work_after_s)
    if completion_s is None:
        assert not sim.done and record.end_s == 360.0
    else:
        assert sim.completion_s[0] == completion_s and record.end_s == completion_s


def test_r3_overhead_is_per_job_and_does_not_move_the_round_end():
    # r0 runs jobs 1 and 2; in r1 job 0 is new (pays 20 s, 1,000 s left) while job 1 ran
    # last round (no cost) and completes at 120 + 110 = 230. The round still ends at 240.
    sim = sim_of(job(0, 1000), job(1, 230), job(2, 1000), gpus=2)
    sim.step([1, 2])  # r0: job 1 -> 120 done, 110 left
    record = sim.step([0, 1])  # r1: job 0 pays (new), job 1 ran last round anyway
    assert record.overhead_s.tolist() == [20.0, 0.0]
    assert record.end_s == 240.0
    assert sim.completion_s[1] == 230.0


def test_r3_overhead_of_a_finishing_piece_counts_inside_the_round():
    # job 0 (260 s) has 140 s left after r0 and sits out r1; in r2 (240-360) it pays 20 s
    # and gains 100 s; it sits out r3; in r4 (from 480) its 40 s piece is exempt -> 520.
    sim = sim_of(job(0, 260), job(1, 10_000))
    sim.step([0])
    sim.step([1])
    record = sim.step([0])
    assert record.overhead_s.tolist() == [20.0]
    assert record.end_s == 360.0 and sim.work_done_s[0] == 220.0
    sim.step([1])
    final = sim.step([0])  # 40 s left: no overhead
    assert final.overhead_s.tolist() == [0.0]
    assert sim.completion_s[0] == 480.0 + 40.0


def test_r3_zero_overhead_disables_the_restart_cost():
    # A B A B A B with two 300 s jobs and no overhead: A has 240 s after r2, 60 s left in
    # r4 -> 480 + 60 = 540; B has 240 s after r3, 60 s left in r5 -> 540 + 60 = 600.
    sim = sim_of(job(0, 300), job(1, 300), restart_overhead_s=0.0)
    for choice in ([0], [1], [0], [1], [0], [1]):
        sim.step(choice)
    assert sim.completion_s.tolist() == [540.0, 600.0]
    assert all(float(r.overhead_s.sum()) == 0.0 for r in sim.history)


def test_r3_overhead_length_is_configurable():
    # 30 s overhead, A B A B A B B with two 300 s jobs:
    #   r0 A   0-120 exempt, A 120 | r1 B 120-240 pays 30, B 90 | r2 A 240-360 pays, A 210
    #   r3 B 360-480 pays, B 180   | r4 A 90 left <= 115: no cost, completes 570
    #   r5 B 570-690 120 left > 115: pays 30, gains 90 -> 270
    #   r6 B ran last round, 30 left: completes 720
    sim = sim_of(job(0, 300), job(1, 300), restart_overhead_s=30.0)
    for choice in ([0], [1], [0], [1], [0], [1], [1]):
        sim.step(choice)
    assert [float(r.overhead_s[0]) for r in sim.history] == [0, 30, 30, 30, 0, 30, 0]
    assert [r.end_s for r in sim.history] == [120, 240, 360, 480, 570, 690, 720]
    assert sim.completion_s.tolist() == [570.0, 720.0]


def test_r3_threshold_is_configurable():
    # with threshold 50 s (a share 50/120 of the round), an 80 s final piece of a job
    # returning after a pause pays 20 s
    sim = sim_of(job(0, 200), restart_min_run_share=50.0 / 120.0)
    sim.step([0])
    sim.step([])
    record = sim.step([0])
    assert record.overhead_s.tolist() == [20.0]
    assert sim.completion_s[0] == 240.0 + 20.0 + 80.0


def rotation_overheads(round_s: float) -> list[float]:
    """Three 600 s one-GPU jobs on 2 GPUs; in round k job k mod 3 sits out, so every round
    after the first restarts one job. Overhead paid per round."""
    sim = sim_of(job(0, 600), job(1, 600), job(2, 600), gpus=2, round_s=round_s)
    paid = []
    while not sim.done:
        out = sim.round_index % 3
        record = sim.step([j for j in sim.view.active_job_ids.tolist() if j != out][:2])
        paid.append(float(record.overhead_s.sum()))
    return paid


@pytest.mark.parametrize(
    ("round_s", "total_overhead_s", "rounds"),
    # the exemption scales with the round (115 s of 120 -> 57.5 s of 60, 230 s of 240), so
    # a full-round restart pays at every round length. With an absolute 115 s threshold a
    # 60 s round never paid (0 s) and a 240 s round charged 80 s. By hand at 240 s:
    # r0 runs 1, 2 (first round: exempt); r1 0 restarts (pays), 2 continues -> 2 at 480;
    # r2 1 restarts (pays), 0 continues -> 0 at 440, 1 at 460; r3 1 finishes its 140 s,
    # 2 restarts with 120 s left (<= 230: exempt); r4 0 restarts with 160 s left (exempt).
    [(60.0, 320.0, 18), (120.0, 140.0, 9), (240.0, 40.0, 5)],
)
def test_r3_restart_overhead_scales_with_the_round(round_s, total_overhead_s, rounds):
    paid = rotation_overheads(round_s)
    assert sum(paid) == total_overhead_s
    assert len(paid) == rounds
    assert paid[0] == 0.0 and all(p in (0.0, 20.0) for p in paid)


def test_round_length_is_configurable():
    sim = sim_of(job(0, 100), round_s=60.0)
    assert sim.step([0]).end_s == 60.0
    assert sim.step([0]).end_s == 100.0


def test_idle_round_with_active_jobs_lasts_a_full_round():
    sim = sim_of(job(0, 100))
    record = sim.step([])
    assert (record.start_s, record.end_s, record.gpus_busy) == (0.0, 120.0, 0)


# --- gangs must fit; invalid selections ---------------------------------------------------


# --- R5 batch-size changes at epoch boundaries of the profile schedule ----------------------

register_mode(
    "golden-double-at-2",
    schedule=lambda spec: np.where(np.arange(spec.num_epochs) < 2, BATCH, 2 * BATCH),
    reachable=lambda spec: (BATCH, 2 * BATCH),
    overwrite=True,
)


def test_r5_batch_size_changes_exactly_at_the_epoch_boundary():
    # 4 epochs: 100, 100 (1 s each at batch 100), then 200, 200 (0.5 s each): iso = 3 s.
    # Round length 2 s, no overhead: after round 0 (work 2 s) exactly two epochs are done
    # and the job runs at 200; in round 1 its last 1 s completes it at 3 s.
    spec = JobSpec(0, MODEL, BATCH, total_iterations=400, gang=1, mode="golden-double-at-2",
                   arrival_s=0.0)
    other = job(1, 1000)
    sim = Simulator([spec, other], SimConfig(gpus=2, round_s=2.0, restart_overhead_s=0.0), TABLE)
    assert sim.static.isolated_time_s[0] == 3.0
    view = sim.view
    assert view.current_batch_size[0] == BATCH
    sim.step([0, 1])  # work 2.0: exactly two epochs done, now at 200
    assert view.epochs_done[0] == 2
    assert view.current_batch_size[0] == 2 * BATCH
    sim.step([0, 1])
    assert sim.completion_s[0] == 2.0 + 1.0


# --- known core bugs (failing until simulator.validate_selection is fixed) ------------------
