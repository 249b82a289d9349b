"""Property tests: random generated traces, random valid schedules, simulator invariants.

Traces come from :func:`shockwave_gym.traces.generate_trace` with short durations (so an
episode is a few dozen rounds), or are built directly with whole-second jobs and arrivals
on a grid (edge cases at round boundaries); schedules come from two random agents:

* ``work_conserving``: a random order of the active jobs, packed with backfill (no job that
  fits is left waiting);
* ``arbitrary``: any random subset of the active jobs that fits, often leaving GPUs idle,
  sometimes choosing nothing at all.
"""

from __future__ import annotations

import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shockwave_agents.base import pack_in_order
from shockwave_gym.jobs import JobSpec
from shockwave_gym.metrics import compute_metrics
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import GeneratorConfig, generate_trace

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_ROUNDS = 3000


GOLDEN_TABLE = ThroughputTable({("Transformer", 100, g): 100.0 for g in (1, 2, 4, 8)})


@st.composite
def integer_second_episodes(draw):
    """Jobs built directly: whole-second isolated times (1 s epochs on GOLDEN_TABLE) and
    arrivals on a 30 s grid, so completions, arrivals and the 115 s threshold often meet
    round boundaries exactly."""
    n = draw(st.integers(1, 20))
    arrivals = sorted(draw(st.lists(st.integers(0, 80), min_size=n, max_size=n)))
    jobs = [
        JobSpec(j, "Transformer", 100, 100 * draw(st.integers(1, 600)),
                draw(st.sampled_from([1, 1, 2, 4, 8])), "static", 30.0 * arrivals[j] - 30.0 * arrivals[0])
        for j in range(n)
    ]
    config = SimConfig(gpus=draw(st.integers(8, 12)), round_s=120.0,
                       restart_overhead_s=draw(st.sampled_from([0.0, 20.0])))
    return jobs, config, GOLDEN_TABLE


@st.composite
def generated_episodes(draw):
    """(trace jobs, SimConfig, table) for a small random cluster."""
    config = GeneratorConfig(
        num_jobs=draw(st.integers(1, 30)),
        seed=draw(st.integers(0, 2**31 - 1)),
        arrival_rate_per_hour=draw(st.sampled_from([6.0, 60.0, 600.0])),
        min_duration_h=0.02,
        max_duration_h=draw(st.sampled_from([0.1, 0.4, 1.0])),
        num_durations=20,
    )
    trace = generate_trace(config)
    sim_config = SimConfig(
        gpus=draw(st.integers(8, 12)),
        round_s=draw(st.sampled_from([60.0, 120.0])),
        restart_overhead_s=draw(st.sampled_from([0.0, 20.0])),
    )
    return trace.jobs, sim_config, None


def episodes() -> st.SearchStrategy:
    return st.one_of(generated_episodes(), integer_second_episodes())


def work_conserving(rng: np.random.Generator):
    def act(view):
        order = rng.permutation(np.asarray(view.active_job_ids))
        return pack_in_order(order, np.asarray(view.gang), view.gpus)

    return act


def arbitrary(rng: np.random.Generator):
    def act(view):
        active = np.asarray(view.active_job_ids)
        wanted = active[rng.random(active.size) < rng.random()]
        return pack_in_order(rng.permutation(wanted), np.asarray(view.gang), view.gpus)

    return act


def run_checked(sim: Simulator, act, max_rounds: int = MAX_ROUNDS) -> None:
    """Step ``sim`` with ``act`` and check every per-round invariant along the way."""
    s, cfg, view = sim.static, sim.config, sim.view
    prev_end = 0.0
    while not sim.done and sim.round_index < max_rounds:
        active_before = set(np.asarray(view.active_job_ids).tolist())
        work_before = sim.work_done_s.copy()
        epochs_before = np.asarray(view.epochs_done).copy()
        progress_before = np.asarray(view.epoch_progress).copy()
        run_before = sim.run_time_s.copy()
        record = sim.step(act(view))
        ids = record.job_ids

        # capacity and admission
        assert record.gpus_busy == int(s.gang[ids].sum()) <= cfg.gpus
        assert set(ids.tolist()) <= active_before
        assert np.all(s.arrival_s[ids] <= record.start_s)
        # the clock: rounds never overlap; a gap means the cluster was empty (idle jump)
        assert record.start_s >= prev_end
        if record.start_s > prev_end:
            arrived = s.arrival_s <= prev_end
            assert np.all(sim.completion_s[arrived] <= prev_end)
            assert record.start_s == s.arrival_s[~arrived].min()
        prev_end = record.end_s
        length = record.end_s - record.start_s
        assert 0 < length <= cfg.round_s + 1e-9 or ids.size == 0
        if ids.size and set(record.completed_ids.tolist()) == set(ids.tolist()):
            assert np.isclose(record.end_s, sim.completion_s[ids].max())
        else:
            assert np.isclose(length, cfg.round_s)
        # per-job run times, overheads and completion instants
        assert np.all(np.isin(record.overhead_s, [0.0, cfg.restart_overhead_s]))
        assert np.all(record.run_s >= record.overhead_s) and np.all(record.run_s <= length + 1e-9)
        done = record.completed_ids
        assert np.all((sim.completion_s[done] > record.start_s) & (sim.completion_s[done] <= record.end_s + 1e-9))
        # progress is monotone, bounded, and only selected jobs move
        assert np.all(sim.work_done_s >= work_before)
        assert np.all(sim.work_done_s <= s.isolated_time_s + 1e-6)
        moved = np.flatnonzero(sim.work_done_s != work_before)
        assert set(moved.tolist()) <= set(ids.tolist())
        assert np.all(np.asarray(view.epochs_done) >= epochs_before)
        assert np.all(np.asarray(view.epoch_progress) >= progress_before - 1e-9)
        assert np.all(sim.run_time_s >= run_before)


def check_final_accounting(sim: Simulator) -> None:
    s, result = sim.static, sim.result()
    metrics = compute_metrics(result)
    gang, iso = s.gang, s.isolated_time_s
    busy_from_rounds = sum(float((gang[r.job_ids] * r.run_s).sum()) for r in sim.history)
    useful_from_rounds = np.zeros(sim.num_jobs)
    for r in sim.history:
        np.add.at(useful_from_rounds, r.job_ids, r.run_s - r.overhead_s)
    np.testing.assert_allclose(useful_from_rounds, iso, rtol=1e-9, atol=1e-6)
    assert np.isclose(busy_from_rounds, float((gang * sim.run_time_s).sum()), rtol=1e-12)
    assert np.all(sim.completion_s - s.arrival_s >= iso - 1e-6)  # JCT >= isolated time
    makespan = float(sim.completion_s.max())
    assert metrics["makespan_s"] == makespan == sim.history[-1].end_s
    capacity = sim.config.gpus * makespan
    assert np.isclose(metrics["utilization"], float((gang * iso).sum()) / capacity)
    assert np.isclose(metrics["busy_utilization"], busy_from_rounds / capacity)
    assert metrics["utilization"] <= metrics["busy_utilization"] + 1e-12 <= 1.0 + 1e-9
    assert np.isclose(metrics["restart_overhead_gpu_s"], busy_from_rounds - float((gang * iso).sum()), atol=1e-6)
    assert metrics["rounds"] == len(sim.history)
    assert metrics["completed_jobs"] == sim.num_jobs and not metrics["truncated"]
    assert np.isclose(metrics["avg_jct_s"], float((sim.completion_s - s.arrival_s).mean()))
    for key in ("unfair_fraction", "unfair_fraction_themis"):
        assert 0.0 <= metrics[key] <= 1.0


@SETTINGS
@given(episode=episodes(), agent_seed=st.integers(0, 2**32 - 1))
def test_every_job_completes_under_a_work_conserving_agent(episode, agent_seed):
    sim = Simulator(*episode)
    run_checked(sim, work_conserving(np.random.default_rng(agent_seed)))
    assert sim.done, f"not done after {sim.round_index} rounds"
    check_final_accounting(sim)


@SETTINGS
@given(episode=episodes(), agent_seed=st.integers(0, 2**32 - 1))
def test_invariants_hold_under_arbitrary_valid_schedules(episode, agent_seed):
    sim = Simulator(*episode)
    run_checked(sim, arbitrary(np.random.default_rng(agent_seed)), max_rounds=200)
    metrics = compute_metrics(sim.result())
    assert metrics["completed_jobs"] == int(np.count_nonzero(~np.isnan(sim.completion_s)))
    assert metrics["truncated"] == (not sim.done)
    busy = float((sim.static.gang * sim.run_time_s).sum())
    assert np.isclose(busy, sum(float((sim.static.gang[r.job_ids] * r.run_s).sum()) for r in sim.history))
    if sim.done:
        check_final_accounting(sim)


@settings(max_examples=25, deadline=None)
@given(episode=episodes(), agent_seed=st.integers(0, 2**32 - 1), cut=st.integers(0, 30))
def test_copies_and_pickles_continue_identically(episode, agent_seed, cut):
    sim = Simulator(*episode)
    act = work_conserving(np.random.default_rng(agent_seed))
    while not sim.done and sim.round_index < cut:
        sim.step(act(sim.view))
    clones = [sim.copy(), pickle.loads(pickle.dumps(sim))]
    while not sim.done:
        choice = act(sim.view)
        for clone in clones:
            clone.step(choice)
        sim.step(choice)
    for clone in clones:
        assert clone.done
        np.testing.assert_array_equal(clone.completion_s, sim.completion_s)
        assert [r.end_s for r in clone.history] == [r.end_s for r in sim.history]


@settings(max_examples=25, deadline=None)
@given(episode=episodes(), agent_seed=st.integers(0, 2**32 - 1))
def test_same_choices_give_the_same_episode(episode, agent_seed):
    outcomes = []
    for _ in range(2):
        sim = Simulator(*episode)
        act = work_conserving(np.random.default_rng(agent_seed))
        while not sim.done:
            sim.step(act(sim.view))
        outcomes.append(compute_metrics(sim.result()))
    assert outcomes[0] == outcomes[1]
