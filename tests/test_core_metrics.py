"""Episode metrics on tiny episodes computed by hand (docs/SEMANTICS.md, "Metrics and finish-time fairness"), and CSV export.

Jobs are static "Transformer (batch size 100)" jobs on a 100 it/s table: 1 s epochs, so a
job of E epochs has exactly E seconds of isolated work.
"""

from __future__ import annotations

import csv
import math

import numpy as np
import pytest

from shockwave_gym.jobs import JobSpec
from shockwave_gym.metrics import (
    compute_metrics,
    jobs_table,
    mean_active_jobs,
    timeline_table,
    to_csv,
)
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.throughput import ThroughputTable

TABLE = ThroughputTable({("Transformer", 100, g): 100.0 for g in (1, 2, 4, 8)}, source="metrics table")


def job(job_id: int, iso_s: int, arrival_s: float = 0.0, gang: int = 1) -> JobSpec:
    return JobSpec(job_id, "Transformer", 100, 100 * iso_s, gang, "static", arrival_s)


def play(jobs, gpus, schedule):
    sim = Simulator(jobs, SimConfig(gpus=gpus), TABLE)
    for choice in schedule:
        sim.step(choice)
    return sim


@pytest.fixture
def staggered():
    # 1 GPU. A: 300 s, arrives 0. B: 100 s, arrives 100 (admitted at the 120 s boundary).
    # A runs 0-120, 120-240, 240-300 (completes 300); B runs 300-400 (100 s piece, exempt).
    sim = play([job(0, 300), job(1, 100, arrival_s=100.0)], 1, [[0], [0], [0], [1]])
    assert sim.done and sim.completion_s.tolist() == [300.0, 400.0]
    return sim.result()


def test_static_ftf_by_hand(staggered):
    m = compute_metrics(staggered)
    # N/G = 2: rho_A = 300 / (300 x 2) = 0.5, rho_B = (400 - 100) / (100 x 2) = 1.5
    assert m["worst_ftf"] == pytest.approx(1.5)
    assert m["unfair_fraction"] == pytest.approx(0.5)
    rows = jobs_table(staggered)
    assert [r["ftf"] for r in rows] == pytest.approx([0.5, 1.5])


def test_admission_basis_by_hand(staggered):
    # B arrives at 100 s, mid-round; the next boundary is 120 s, so the authors' basis
    # counts its JCT as 400 - 120 = 280 s (rho 280 / (100 x 2) = 1.4). A arrives on the first
    # boundary (0 s): both bases agree.
    m = compute_metrics(staggered)
    assert staggered.admission_s.tolist() == [0.0, 120.0]
    assert m["avg_jct_admission_s"] == pytest.approx((300 + 280) / 2)
    assert m["avg_jct_s"] == pytest.approx((300 + 300) / 2)
    assert m["worst_ftf_admission"] == pytest.approx(1.4)
    assert m["unfair_fraction_admission"] == pytest.approx(0.5)
    rows = jobs_table(staggered)
    assert [r["jct_admission_s"] for r in rows] == pytest.approx([300.0, 280.0])
    assert [r["ftf_admission"] for r in rows] == pytest.approx([0.5, 1.4])


def test_admission_after_an_idle_jump_is_the_arrival_and_unreached_jobs_have_none():
    # Job 1 arrives at 1000 s, long after job 0 (50 s) finished: the clock jumps to 1000 s,
    # which is a boundary, so it is admitted on arrival. Truncated after one round, job 2
    # (arriving at 5000 s) was never admitted: NaN, and no metric counts it.
    sim = play([job(0, 50), job(1, 50, arrival_s=1000.0), job(2, 50, arrival_s=5000.0)], 1, [[0], [1]])
    result = sim.result()
    assert result.admission_s[:2].tolist() == [0.0, 1000.0] and math.isnan(result.admission_s[2])
    m = compute_metrics(result)
    assert m["completed_jobs"] == 2 and m["avg_jct_admission_s"] == m["avg_jct_s"] == 50.0


def test_themis_ftf_by_hand(staggered):
    # active jobs n(t): 1 on [0,100), 2 on [100,300), 1 on [300,400)
    # A over [0,300]: (100 x 1 + 200 x 2) / 300 = 5/3 -> rho = 300 / (300 x 5/3) = 0.6
    # B over [100,400]: (200 x 2 + 100 x 1) / 300 = 5/3 -> rho = 300 / (100 x 5/3) = 1.8
    assert mean_active_jobs(staggered.arrival_s, staggered.completion_s) == pytest.approx([5 / 3, 5 / 3])
    m = compute_metrics(staggered)
    assert m["worst_ftf_themis"] == pytest.approx(1.8)
    assert m["unfair_fraction_themis"] == pytest.approx(0.5)
    assert [r["ftf_themis"] for r in jobs_table(staggered)] == pytest.approx([0.6, 1.8])


def test_unfair_threshold_is_configurable(staggered):
    m = compute_metrics(staggered, unfair_threshold=1.6)
    assert m["unfair_fraction"] == 0.0  # 1.5 <= 1.6
    assert m["unfair_fraction_themis"] == pytest.approx(0.5)  # 1.8 > 1.6


def test_jct_makespan_and_utilization_by_hand(staggered):
    m = compute_metrics(staggered)
    assert m["makespan_s"] == 400.0
    assert m["avg_jct_s"] == pytest.approx(300.0)  # (300 + 300) / 2
    assert m["geomean_jct_s"] == pytest.approx(300.0)
    assert m["utilization"] == pytest.approx(1.0)  # (300 + 100) / (1 x 400)
    assert (m["rounds"], m["num_jobs"], m["completed_jobs"], m["truncated"]) == (4, 2, 2, False)


def test_restart_overhead_counts_as_idle_in_utilization():
    # Two 300 s jobs alternating on 1 GPU (see test_core_rounds): three restarts of 20 s;
    # completions 560 and 660; every second of the 660 is held by a job.
    sim = play([job(0, 300), job(1, 300)], 1, [[0], [1], [0], [1], [0], [1]])
    m = compute_metrics(sim.result())
    assert m["makespan_s"] == 660.0
    assert m["utilization"] == pytest.approx(600 / 660)
    assert m["busy_utilization"] == pytest.approx(1.0)
    assert m["restart_overhead_gpu_s"] == 60.0
    # static: N/G = 2 -> 560/600 and 660/600; Themis: A sees 2 active throughout -> 560/600;
    # B sees 2 on [0,560) and 1 on [560,660): 1220/660 -> 660/(300 x 1220/660)
    assert m["worst_ftf"] == pytest.approx(1.1)
    assert m["worst_ftf_themis"] == pytest.approx(660 * 660 / (300 * 1220))
    assert m["geomean_jct_s"] == pytest.approx(math.sqrt(560 * 660))


def test_contention_below_cluster_size_is_clamped_to_one():
    # 4 GPUs, A (100 s) alone in r0 (0-100; B arrived at 50 waits). B (200 s) starts at
    # 100, pays 20 s (round 1, new), gains 100 by 220, then 100 s left -> completes 320.
    # N/G = 0.5 -> factor 1: rho_A = 1, rho_B = 270/200 = 1.35; Themis the same.
    sim = play([job(0, 100), job(1, 200, arrival_s=50.0)], 4, [[0], [1], [1]])
    assert sim.completion_s.tolist() == [100.0, 320.0]
    m = compute_metrics(sim.result())
    assert m["worst_ftf"] == pytest.approx(1.35)
    assert m["worst_ftf_themis"] == pytest.approx(1.35)
    assert m["unfair_fraction"] == pytest.approx(0.5)
    assert m["utilization"] == pytest.approx(300 / (4 * 320))
    assert m["busy_utilization"] == pytest.approx((100 + 220) / (4 * 320))


def test_gang_weights_utilization():
    # a 2-GPU job of 100 s and a 1-GPU job of 100 s together on 4 GPUs: round ends at 100
    sim = play([job(0, 100, gang=2), job(1, 100)], 4, [[0, 1]])
    m = compute_metrics(sim.result())
    assert m["utilization"] == pytest.approx((2 * 100 + 100) / (4 * 100))


def test_truncated_episode_reports_completed_jobs_and_nulls():
    sim = play([job(0, 50), job(1, 1000)], 1, [[0]])
    m = compute_metrics(sim.result())
    assert (m["completed_jobs"], m["truncated"]) == (1, True)
    assert m["makespan_s"] == 50.0
    none_done = compute_metrics(play([job(0, 1000)], 1, [[0]]).result())
    assert none_done["makespan_s"] is None and none_done["avg_jct_s"] is None
    assert none_done["worst_ftf"] is None and none_done["unfair_fraction"] is None
    assert none_done["utilization"] == 0.0  # no useful work completed, 120 s elapsed


def test_jobs_csv_round_trip(tmp_path, staggered):
    path = tmp_path / "jobs.csv"
    text = to_csv(jobs_table(staggered), path)
    assert path.read_text(encoding="utf-8") == text
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    assert [int(r["job_id"]) for r in rows] == [0, 1]
    assert [float(r["completion_s"]) for r in rows] == [300.0, 400.0]
    assert [float(r["jct_s"]) for r in rows] == [300.0, 300.0]
    assert [float(r["isolated_time_s"]) for r in rows] == [300.0, 100.0]
    assert [float(r["ftf"]) for r in rows] == pytest.approx([0.5, 1.5])


def test_timeline_csv_round_trip(tmp_path, staggered):
    rows = list(csv.DictReader(to_csv(timeline_table(staggered)).splitlines()))
    assert [r["job_ids"] for r in rows] == ["0", "0", "0", "1"]
    assert [float(r["start_s"]) for r in rows] == [0.0, 120.0, 240.0, 300.0]
    assert [float(r["end_s"]) for r in rows] == [120.0, 240.0, 300.0, 400.0]
    assert [int(r["gpus_busy"]) for r in rows] == [1, 1, 1, 1]


def test_unfinished_job_exports_an_empty_completion(tmp_path):
    sim = play([job(0, 50), job(1, 1000)], 1, [[0]])
    rows = list(csv.DictReader(to_csv(jobs_table(sim.result())).splitlines()))
    assert rows[1]["completion_s"] == "" and rows[1]["ftf"] == ""
    assert float(rows[0]["completion_s"]) == 50.0


def test_empty_rows_give_empty_csv():
    assert to_csv([]) == ""


def test_mean_active_jobs_ignores_disjoint_lifetimes():
    got = mean_active_jobs(np.array([0.0, 10.0, 100.0]), np.array([10.0, 20.0, 200.0]))
    assert got.tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("agent", ["srtf", "gavel", "las", "themis"])
def test_restart_overhead_is_the_rounds_sums_added_in_order(agent):
    """The vectorised restart overhead equals, float for float, summing each round's
    gang x overhead and then the rounds left to right; the episodes have rounds with none,
    one and several restarts."""
    from shockwave_agents import make_agent
    from shockwave_gym.metrics import restart_overhead_gpu_s
    from shockwave_gym.runner import run_episode
    from shockwave_gym.simulator import SimConfig
    from shockwave_gym.traces import load_trace

    result = run_episode(load_trace("canonical-analogue-120"), make_agent(agent), SimConfig(gpus=32), seed=0).result
    per_round = [float((result.gang[ids] * o).sum()) for ids, o in zip(result.round_job_ids, result.round_overhead_s, strict=True)]
    paid = [int(np.count_nonzero(o)) for o in result.round_overhead_s]
    assert 0 in paid and 1 in paid and max(paid) > 1
    expected = 0
    for value in per_round:
        expected = expected + value
    assert restart_overhead_gpu_s(result) == expected


def _array_mean_active_jobs(a, c):
    """The array expression mean_active_jobs takes without the compiled loops."""
    overlap = np.minimum(c[:, None], c[None, :]) - np.maximum(a[:, None], a[None, :])
    total = np.clip(overlap, 0.0, None).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(c - a > 0, total / (c - a), 1.0)


def test_compiled_overlap_sums_are_the_array_expression_bit_for_bit():
    jit = pytest.importorskip("shockwave_gym.batch.jit")
    if not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    from shockwave_gym.metrics import _compiled_overlaps

    assert _compiled_overlaps() is jit.overlap_row_sums  # loaded, so mean_active_jobs uses it
    rng = np.random.default_rng(7)
    for n in (1, 2, 7, 8, 9, 64, 127, 128, 129, 300, 1025):
        a = np.round(rng.uniform(0.0, 5e4, n), 2)
        c = a + rng.exponential(4e3, n) * (rng.random(n) > 0.1)  # some zero-length lifetimes
        got = mean_active_jobs(a, c)
        want = _array_mean_active_jobs(a, c)
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), n
    # non-finite input takes the array expression, NaN where it gives NaN
    a, c = np.array([0.0, 5.0, np.nan]), np.array([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(mean_active_jobs(a, c), _array_mean_active_jobs(a, c))
