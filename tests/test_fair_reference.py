"""The fair-share reference (shockwave_gym/fair_reference.py): hand-computed fluid schedules,
water-filling properties, the heterogeneous reference work, and the metric keys built on it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shockwave_agents.registry import make_agent
from shockwave_gym.adaptation import register_mode
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.fair_reference import fair_time_s, fluid_completion_s, fluid_shares
from shockwave_gym.hetero_simulator import HeteroSimulator
from shockwave_gym.jobs import JobSpec
from shockwave_gym.metrics import compute_metrics, jobs_table
from shockwave_gym.runner import run_episode
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs
from shockwave_gym.traces import load_trace


def test_gangs_1_2_4_on_4_gpus_with_an_arrival_while_others_run():
    """A (gang 1, 100 s) and B (gang 2, 200 s) at 0; C (gang 4, 400 s) at 100.
    [0, 100): demand 3 <= 4, both at full rate; A ends at 100, B has 100 s left.
    [100, 200): B and C ask 6 > 4: lam = 2 (B holds 2 = its gang, C holds 2 of 4: rate 1/2);
    B ends at 200, C has done 50. [200, 550): C alone at full rate: 350 s -> 550."""
    completion = fluid_completion_s(np.array([0.0, 0.0, 100.0]), np.array([1, 2, 4]),
                                    np.array([100.0, 200.0, 400.0]), 4)
    assert completion.tolist() == [100.0, 200.0, 550.0]
    assert fair_time_s(np.array([0.0, 0.0, 100.0]), np.array([1, 2, 4]),
                       np.array([100.0, 200.0, 400.0]), 4).tolist() == [100.0, 200.0, 450.0]


def test_water_filling_gives_the_leftover_to_the_large_gang():
    """Gang 1 (100 s) and gang 4 (300 s) at 0 on 4 GPUs: water-filling gives 1 and 3 GPUs
    (Gavel's isolated share would give each G/m = 2, of which the gang-1 job uses 1).
    [0, 100): the gang-4 job at 3/4: 75 s done; then 225 s alone: ends at 325.
    A third job (gang 2, 50 s) arriving at 40: lam = 1.5 (1 + 1.5 + 1.5 = 4) until it ends."""
    assert fluid_completion_s(np.array([0.0, 0.0]), np.array([1, 4]), np.array([100.0, 300.0]), 4).tolist() \
        == [100.0, 325.0]
    assert fluid_shares(np.array([1, 4]), 4).tolist() == [1.0, 3.0]
    assert fluid_shares(np.array([1, 4, 2]), 4).tolist() == [1.0, 1.5, 1.5]
    # [0, 40): gang 1 at full rate, gang 4 at 3/4 (30 s done).
    # [40, 100): lam = 1.5: gang 1 full (ends at 100), gang 4 at 1.5/4 (30 + 22.5 = 52.5),
    # gang 2 at 1.5/2 (45 of 50 done).
    # [100, 105): gang 2 and gang 4 ask 6 > 4: lam = 2: gang 2 full, ends at 105 (5 s left);
    # gang 4 at 1/2: 52.5 + 2.5 = 55. [105, 350): gang 4 alone, 245 s left.
    c = fluid_completion_s(np.array([0.0, 0.0, 40.0]), np.array([1, 4, 2]), np.array([100.0, 300.0, 50.0]), 4)
    assert c.tolist() == pytest.approx([100.0, 350.0, 105.0], abs=1e-9)


def test_idle_gaps_and_a_job_larger_than_the_cluster():
    # a gap: the second job arrives after the first ended; a gang-8 job on 4 GPUs runs at 1/2
    c = fluid_completion_s(np.array([0.0, 500.0]), np.array([2, 8]), np.array([100.0, 100.0]), 4)
    assert c.tolist() == [100.0, 700.0]


gang_lists = st.lists(st.integers(1, 16), min_size=1, max_size=40)


@settings(max_examples=200, deadline=None)
@given(gangs=gang_lists, gpus=st.integers(1, 64))
def test_water_filling_shares_never_exceed_the_cluster(gangs, gpus):
    gang = np.array(gangs)
    shares = fluid_shares(gang, gpus)
    assert shares.sum() <= gpus + 1e-9
    assert shares.sum() == pytest.approx(min(gpus, gang.sum()))
    assert (shares <= gang).all() and (shares > 0).all()
    # equal split of what is left: every job below its gang holds the same share, the largest
    below = shares < gang
    if below.any():
        assert np.ptp(shares[below]) == pytest.approx(0.0, abs=1e-9)
        assert shares[below].min() >= shares[~below].max(initial=0.0) - 1e-9


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_fluid_schedule_properties_over_generated_traces(data):
    n = data.draw(st.integers(1, 25))
    gpus = data.draw(st.integers(1, 16))
    arrival = np.sort(np.array(data.draw(st.lists(st.integers(0, 2000), min_size=n, max_size=n)), dtype=float))
    gang = np.array(data.draw(st.lists(st.sampled_from([1, 2, 4, 8]), min_size=n, max_size=n)))
    work = np.array(data.draw(st.lists(st.integers(1, 3000), min_size=n, max_size=n)), dtype=float)
    completion = fluid_completion_s(arrival, gang, work, gpus)
    # never faster than alone; the held shares over time never exceed G, and they deliver
    # exactly each job's work (integrated over the schedule's own event times)
    assert (completion - arrival >= work * np.maximum(1.0, gang / gpus) - 1e-6).all()
    events = np.unique(np.concatenate([arrival, completion]))
    done = np.zeros(n)
    for lo, hi in zip(events[:-1], events[1:], strict=True):
        active = np.flatnonzero((arrival <= lo) & (completion > lo + 1e-9))
        if active.size == 0:
            continue
        shares = fluid_shares(gang[active], gpus)
        assert shares.sum() <= gpus + 1e-9
        done[active] += shares / gang[active] * (hi - lo)
    assert done == pytest.approx(work, rel=1e-9, abs=1e-6)


def test_two_thousand_jobs_are_computed_once_and_cached():
    rng = np.random.default_rng(7)
    arrival = np.sort(rng.uniform(0, 3e5, 2000))
    gang = rng.choice([1, 2, 4, 8], 2000)
    work = rng.uniform(100, 3e4, 2000)
    first = fair_time_s(arrival, gang, work, 32)  # its cost: benchmarks/fair_reference_speed.py
    assert fair_time_s(arrival, gang, work, 32) is first
    assert np.isfinite(first).all() and not first.flags.writeable


# --- heterogeneous reference work ------------------------------------------------------------

register_mode("fair-ref-double-at-2", schedule=lambda spec: np.where(np.arange(spec.num_epochs) < 2, 50, 100),
              reachable=lambda spec: (50, 100), overwrite=True)
_TABLES = TypedThroughputs({
    "v100": ThroughputTable({("ResNet-18", 50, 1): 10.0, ("ResNet-18", 100, 1): 8.0,
                             ("ResNet-18", 50, 2): 16.0}, "test v100"),
    "p100": ThroughputTable({("ResNet-18", 50, 1): 5.0, ("ResNet-18", 100, 1): 2.0,
                             ("ResNet-18", 50, 2): 9.0}, "test p100"),
})


def _job(job_id, gang=1, mode="fair-ref-double-at-2", arrival=0.0):
    return JobSpec(job_id=job_id, model="ResNet-18", initial_batch_size=50, total_iterations=4000, gang=gang,
                   mode=mode, arrival_s=arrival)


def test_heterogeneous_reference_work_follows_a_batch_size_change():
    """4 epochs of ResNet-18 (50,000 samples): two at batch 50 (1000 iterations), two at 100
    (500). v100=1, p100=1: w = 1/2 each. Batch 50: 0.5*10 + 0.5*5 = 7.5 it/s -> 133.33 s;
    batch 100: 0.5*8 + 0.5*2 = 5 it/s -> 100 s. W = 2*133.33 + 2*100 = 466.67 s (a fixed batch
    of 50 would give 533.33; the mean of the per-type isolated times (325 + 900) / 2 = 612.5)."""
    sim = HeteroSimulator([_job(0)], SimConfig(cluster=ClusterSpec.parse("v100=1,p100=1")), _TABLES)
    while not sim.done:
        sim.step({0: "v100"})
    result = sim.result()
    expected = 2 * 1000 / 7.5 + 2 * 500 / 5.0
    assert result.fair_work_s[0] == pytest.approx(expected, rel=1e-12)
    assert result.fair_time_s[0] == pytest.approx(expected, rel=1e-12)
    # alone on the v100 it ran its V100 isolated time, 2*100 + 2*62.5 = 325 s
    assert compute_metrics(result)["rho_max"] == pytest.approx(325.0 / expected)


def test_a_type_too_small_for_the_gang_gets_no_weight():
    """Gang 2 on v100=2, p100=1: the p100 type cannot hold it, so its reference work is the
    V100 time alone (4 epochs of 1000 iterations at 16 it/s = 250 s)."""
    sim = HeteroSimulator([_job(0, gang=2, mode="static")], SimConfig(cluster=ClusterSpec.parse("v100=2,p100=1")),
                          _TABLES)
    while not sim.done:
        sim.step({0: "v100"})
    assert sim.result().fair_work_s[0] == 4 * 1000 / 16.0


@pytest.mark.parametrize("agent", ["srtf", "fair-share"])
def test_v100_only_heterogeneous_cluster_gives_the_homogeneous_reference_bit_for_bit(agent):
    trace = load_trace("teaching-12")
    homogeneous = run_episode(trace, make_agent(agent), SimConfig(gpus=4), seed=0)
    hetero = run_episode(trace, make_agent(agent), SimConfig(cluster=ClusterSpec.parse("v100=4")), seed=0)
    assert np.array_equal(hetero.result.fair_work_s, homogeneous.result.isolated_time_s)
    assert np.array_equal(hetero.result.fair_time_s, homogeneous.result.fair_time_s)
    for key in ("rho_mean", "rho_p95", "rho_max", "rho_over_1_05", "rho_over_1_25", "gang_ftf_mean", "gang_ftf_max"):
        assert hetero.metrics[key] == homogeneous.metrics[key]


# --- the metric keys ----------------------------------------------------------------------------

def test_rho_and_gang_aware_keys_by_hand():
    """Two gang-1 jobs of 100 s on 1 GPU, both at 0, run one after the other in 100 s rounds.
    Reference: both at 1/2: both end at 200 (T_fair 200). JCTs 100 and 200: rho 0.5 and 1.0.
    Gang-aware: n = 2 over the first job's life, 1.5 over the second's (2 for 100 s, 1 for 100 s):
    rho 100 / (100 * 2) = 0.5 and 200 / (100 * 1.5) = 1.333."""
    jobs = [JobSpec(j, "ResNet-18", 50, total_iterations=1000, gang=1, mode="static", arrival_s=0.0) for j in (0, 1)]
    table = ThroughputTable({("ResNet-18", 50, 1): 10.0}, "test")  # 1000 iterations at 10/s: 100 s
    from shockwave_gym.simulator import Simulator

    sim = Simulator(jobs, SimConfig(gpus=1, round_s=100.0, restart_overhead_s=0.0), table)
    sim.step([0])
    sim.step([1])
    m = compute_metrics(sim.result())
    assert (m["rho_mean"], m["rho_max"]) == (0.75, 1.0)
    assert m["rho_p95"] == pytest.approx(0.5 + 0.95 * 0.5)
    assert (m["rho_over_1_05"], m["rho_over_1_25"]) == (0.0, 0.0)
    assert m["gang_ftf_max"] == pytest.approx(200 / 150)
    assert m["gang_ftf_mean"] == pytest.approx((0.5 + 200 / 150) / 2)
    assert m["gang_ftf_over_1_05"] == 0.5
    rows = jobs_table(sim.result())
    assert [r["fair_time_s"] for r in rows] == [200.0, 200.0]
    assert [r["rho"] for r in rows] == [0.5, 1.0]


def test_the_worked_example_of_the_metric_card():
    """docs/METRICS.md, "Worked example": A (gang 1, 100 s, at 0), B (gang 4, 300 s, at 0) and
    C (gang 2, 50 s, at 40) on 4 GPUs; the policy runs B alone, then A and C."""
    from shockwave_gym.simulator import Simulator

    table = ThroughputTable({("ResNet-18", 50, 1): 10.0, ("ResNet-18", 50, 4): 10.0 / 3.0,
                             ("ResNet-18", 50, 2): 20.0}, "card")
    jobs = [JobSpec(0, "ResNet-18", 50, total_iterations=1000, gang=1, mode="static", arrival_s=0.0),
            JobSpec(1, "ResNet-18", 50, total_iterations=1000, gang=4, mode="static", arrival_s=0.0),
            JobSpec(2, "ResNet-18", 50, total_iterations=1000, gang=2, mode="static", arrival_s=40.0)]
    sim = Simulator(jobs, SimConfig(gpus=4, round_s=50.0, restart_overhead_s=0.0), table)
    while not sim.done:
        sim.step([1] if sim.view.is_active[1] else sim.view.active_job_ids)
    result = sim.result()
    assert result.completion_s.tolist() == [400.0, 300.0, 350.0]
    assert result.fair_time_s.tolist() == pytest.approx([100.0, 350.0, 65.0])
    rows = jobs_table(result)
    assert [r["rho"] for r in rows] == pytest.approx([4.0, 300 / 350, 310 / 65])
    assert [r["ftf"] for r in rows] == pytest.approx([4.0, 1.0, 6.2])  # N/G = 3/4: no contention
    assert [r["ftf_themis"] for r in rows] == pytest.approx([4.0, 1.0, 6.2])  # n/G < 1 for all
    assert [r["gang_ftf"] for r in rows] == pytest.approx([4.0, 300 / (300 * 860 / 300), 310 / (50 * 880 / 310 * 2 / 4)])
    m = compute_metrics(result)
    assert m["rho_mean"] == pytest.approx((4.0 + 300 / 350 + 310 / 65) / 3)
    assert m["rho_over_1_05"] == pytest.approx(2 / 3) and m["unfair_fraction"] == pytest.approx(2 / 3)
