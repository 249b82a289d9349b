"""Shockwave's ``numerics="authors"`` emulation and the ``shockwave-fair`` variant."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest

from shockwave_agents import make_agent
from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.numerics import (
    RoundClockCalibration,
    effective_relaxed_instance,
    gap_swallows_makespan,
    planner_epochs_done,
    profile_durations_s,
    whole_epoch_estimates,
    whole_epoch_mean_s,
)
from shockwave_agents.shockwave.predictor import ShockwavePredictor
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError
from shockwave_gym.interface import predicted_remaining_s, predictor_for
from shockwave_gym.runner import run_episode
from shockwave_gym.simulator import Simulator
from shockwave_gym.traces import load_trace

TRACE = "teaching-12"  # jobs 1 and 7 are two-epoch ResNet-50 jobs


def played(rounds: int, oracle: bool = False) -> Simulator:
    trace = load_trace(TRACE, gpus=4)
    sim = Simulator(trace.jobs, SimConfig(gpus=4), trace_name=trace.name, oracle=oracle)
    fifo = make_agent("fifo")
    fifo.reset(sim.view, 0)
    for _ in range(rounds):
        sim.step(fifo.act(sim.view))
    return sim


def mid_epoch_jobs(view) -> np.ndarray:
    active = np.asarray(view.active_job_ids)
    partial = view.epoch_progress[active] - view.epochs_done[active]
    return active[(partial > 0.05) & (partial < 0.95)]


def test_the_planner_sees_whole_epochs_only_with_the_authors_numerics():
    view = played(6).view
    jobs = mid_epoch_jobs(view)
    assert jobs.size > 0
    faithful = planner_epochs_done(view, jobs, "faithful")
    authors = planner_epochs_done(view, jobs, "authors")
    np.testing.assert_array_equal(faithful, view.epoch_progress[jobs])
    np.testing.assert_array_equal(authors, view.epochs_done[jobs])
    assert np.all(authors < faithful) and np.all(authors == np.floor(faithful))


@pytest.mark.parametrize("oracle", [False, True])
def test_the_authors_estimate_leaves_out_the_current_epoch(oracle):
    view = played(6, oracle=oracle).view
    jobs = np.asarray(view.active_job_ids)
    ones = np.ones(jobs.size)
    remaining, work_done = whole_epoch_estimates(view, jobs, ones)
    rest_of_current = (1.0 - view.current_epoch_fraction_done[jobs]) * view.current_epoch_duration_s[jobs]
    full = np.asarray(view.remaining_s if oracle else predicted_remaining_s(view), dtype=np.float64)[jobs]
    np.testing.assert_allclose(remaining, np.maximum(full - rest_of_current, 0.0), rtol=1e-9, atol=1e-6)
    completed = np.nan_to_num(view.mean_epoch_duration_s[jobs]) * view.epochs_done[jobs]
    np.testing.assert_allclose(work_done, completed)
    assert np.all(work_done <= view.work_done_s[jobs] + 1e-9)
    # the drift factor scales both
    scaled, done_scaled = whole_epoch_estimates(view, jobs, 2.0 * ones)
    np.testing.assert_allclose(scaled, 2.0 * remaining)
    np.testing.assert_allclose(done_scaled, 2.0 * work_done)


def test_the_authors_oracle_estimate_by_hand():
    """With true remaining times, the authors' estimate is the epochs after the current one:
    for a static job (every epoch as long as the current) (E - e - 1) epochs of its current
    duration, and 0 for a job in its last epoch."""
    view = played(6, oracle=True).view
    jobs = np.asarray(view.active_job_ids)
    remaining, _ = whole_epoch_estimates(view, jobs, np.ones(jobs.size))
    by_job = dict(zip(jobs.tolist(), remaining.tolist(), strict=True))
    static = [j for j in jobs.tolist() if view.spec(j).mode == "static"]
    assert {5, 7} <= set(static)
    for j in static:
        expected = (view.num_epochs[j] - view.epochs_done[j] - 1) * view.current_epoch_duration_s[j]
        assert by_job[j] == pytest.approx(expected, rel=1e-9)
    last = [j for j in jobs.tolist() if view.epochs_done[j] == view.num_epochs[j] - 1]
    assert 1 in last  # teaching-12's job 1: 2 epochs, the second under way
    for j in last:
        assert by_job[j] == pytest.approx(0.0, abs=1e-6)


def test_the_predictor_hands_the_authors_estimates_to_the_planner_and_noise_still_applies():
    view = played(6).view
    jobs = np.asarray(view.active_job_ids)
    clean = ShockwavePredictor().estimate(view, jobs, whole_epochs=True)
    expected, _ = whole_epoch_estimates(view, jobs, clean.duration_scale)
    np.testing.assert_allclose(clean.remaining_s, expected)
    faithful = ShockwavePredictor().estimate(view, jobs)
    np.testing.assert_allclose(faithful.mean_epoch_s, clean.mean_epoch_s)  # d_j is the same
    noisy = ShockwavePredictor(noise=0.5, seed=3).estimate(view, jobs, whole_epochs=True)
    ratio = noisy.remaining_s[expected > 10] / expected[expected > 10]
    assert ratio.size > 0 and np.all(np.isclose(ratio, 0.5) | np.isclose(ratio, 1.5))


def instance(log_weights, k=1e-3, remaining_s=10_000.0, n=3) -> PlanningInstance:
    return PlanningInstance(
        job_ids=np.arange(n), gang=np.ones(n, dtype=np.int64), epochs_total=np.full(n, 10.0),
        epochs_done=np.zeros(n), mean_epoch_s=np.full(n, 100.0), remaining_s=np.full(n, remaining_s),
        gpus=2, rounds=20, round_s=120.0, nsw_coef=1.0 / (n * 20), makespan_coef_per_s=k,
        log_weights=np.asarray(log_weights, dtype=np.float64),
    )


def test_the_gap_swallows_the_makespan_term_only_next_to_a_heavy_priority():
    # makespan range k * max R = 10; the heaviest NSW term's range is w * 13.8 / 60
    light = instance([0.0, 0.0, 12 * math.log(1.5)])
    heavy = instance([0.0, 0.0, 100 * math.log(1.5)])  # 1.5^100 ~ 4e17
    assert not gap_swallows_makespan(light, 1e-3)
    assert gap_swallows_makespan(heavy, 1e-3)
    assert not gap_swallows_makespan(heavy, 0.0)  # 0 switches the rule off
    threshold = math.log(10.0 / (1e-3 * 13.815510557964274 / 60))  # w at which the ranges meet
    assert gap_swallows_makespan(instance([0.0, 0.0, threshold + 1e-6]), 1e-3)
    assert not gap_swallows_makespan(instance([0.0, 0.0, threshold - 1e-3]), 1e-3)
    assert not gap_swallows_makespan(instance([0.0, 0.0, 200.0], k=0.0), 1e-3)  # no term to drop
    solved, dropped = effective_relaxed_instance(heavy, 1e-3)
    assert dropped and solved.makespan_coef_per_s == 0.0 and solved.nsw_coef == heavy.nsw_coef
    same, kept = effective_relaxed_instance(light, 1e-3)
    assert not kept and same is light


def test_numerics_options_are_validated_and_default_to_faithful():
    assert ShockwaveConfig().numerics == "faithful"
    with pytest.raises(InputError, match="numerics must be one of"):
        ShockwaveConfig(numerics="gurobi")
    with pytest.raises(InputError, match="authors_rel_gap must be a finite number"):
        ShockwaveConfig(authors_rel_gap=-1e-3)
    fair = ShockwaveConfig.fair()
    assert (fair.numerics, fair.objective, fair.makespan_weight, fair.authors_rel_gap) == ("authors", "normalized", 100.0, 0.0)
    assert ShockwaveConfig.fair(makespan_weight=300.0).makespan_weight == 300.0


def run(agent_name: str, **options):
    trace = load_trace(TRACE, gpus=4)
    return run_episode(trace, make_agent(agent_name, solver="highs", **options), SimConfig(gpus=4), progress=False)


def test_authors_numerics_change_the_schedule_and_the_gap_rule_is_counted():
    faithful = run("shockwave")
    authors = run("shockwave", numerics="authors", authors_rel_gap=0.0)
    assert faithful.metrics != authors.metrics
    assert "makespan_term_dropped_plans" not in faithful.agent_stats["planner_stats"]
    assert authors.agent_stats["planner_stats"]["makespan_term_dropped_plans"] == 0  # 0 = rule off
    every = run("shockwave", numerics="authors", authors_rel_gap=1.0e9)  # any late job swallows it
    stats = every.agent_stats["planner_stats"]
    assert 0 < stats["makespan_term_dropped_plans"] <= stats["plans"]


def test_shockwave_fair_is_registered_and_plays():
    outcome = run("shockwave-fair")
    assert outcome.agent_stats["planner_stats"]["variant"] == "shockwave-fair"
    assert outcome.agent_stats["planner_stats"]["config"]["numerics"] == "authors"
    assert np.all(np.isfinite(outcome.result.completion_s))


def test_few_epoch_jobs_get_their_head_start_under_the_authors_numerics():
    """The mechanism behind the authors' few-epoch jobs running almost at once: with whole-
    epoch progress and estimates, the two-epoch jobs of the trace finish much sooner."""
    from shockwave_gym.metrics import static_ftf

    def rho(**options):
        result = run("shockwave", **options).result
        return static_ftf(result, result.jct_s)

    faithful, authors = rho(), rho(numerics="authors")
    two_epoch = [1, 7]
    assert np.all(authors[two_epoch] < faithful[two_epoch] - 0.15)


def frontier_module() -> dict:
    import runpy
    from pathlib import Path

    return runpy.run_path(str(Path(__file__).resolve().parents[1] / "benchmarks" / "shockwave_frontier.py"))


def point(agent, numerics, k, makespan, unfair, jct=1.0, worst=1.0):
    metrics = {"makespan_s": makespan, "avg_jct_s": jct, "worst_ftf": worst, "unfair_fraction": unfair}
    return {"agent": agent, "numerics": numerics, "k": k, "ours": metrics, "admission_basis": metrics}


def test_frontier_pareto_and_target_check():
    frontier = frontier_module()
    sweep = [point("shockwave", "faithful", 1e-3, 100.0, 0.30), point("shockwave", "faithful", 0.0, 130.0, 0.05),
             point("shockwave", "faithful", 1e-4, 105.0, 0.20), point("shockwave", "authors", 1e-4, 110.0, 0.25)]
    front = frontier["pareto"](sweep, "makespan_s", "unfair_fraction")
    assert front == [{"numerics": "faithful", "k": 1e-3}, {"numerics": "faithful", "k": 0.0},
                     {"numerics": "faithful", "k": 1e-4}]  # the authors' point is beaten by k=1e-4
    met = frontier["target_check"]([*sweep, point("shockwave-fair", None, None, 101.0, 0.08)])
    assert met["unfair_met"] and met["makespan_met"] and met["sweep_points_at_least_as_good"] == []
    missed = frontier["target_check"]([*sweep, point("shockwave-fair", None, None, 106.0, 0.25)])
    assert not missed["unfair_met"] and missed["makespan_over_default"] > 1.02
    assert missed["sweep_points_at_least_as_good"] == [{"numerics": "faithful", "k": 1e-4}]
    assert frontier["target_check"](sweep) is None  # no shockwave-fair point
    with pytest.raises(SystemExit, match="PATH:GPUS"):
        frontier["parse_trace"]("no-such-trace")
    with pytest.raises(SystemExit, match="no such file"):
        frontier["parse_trace"]("/no/such/file.jsonl:32")
    assert frontier["parse_trace"]("canonical-analogue-120") == ("canonical-analogue-120", 32)


def test_frontier_figure_k_labels_do_not_overlap_and_coincident_points_share_one():
    import matplotlib

    frontier = frontier_module()
    backend = matplotlib.get_backend()
    # a crowded sweep: three k with the same outcome, and points a few pixels apart
    sweep = [point("shockwave", numerics, k, 25_000 + 40 * i + 5 * (numerics == "authors"), 0.30 - 0.002 * i,
                   jct=10_000 + 20 * i, worst=1.4 - 0.003 * i)
             for numerics in ("faithful", "authors") for i, k in enumerate((0.0, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3))]
    sweep[1]["ours"] = sweep[2]["ours"] = sweep[0]["ours"]  # the figure plots JCT from arrival, the authors' basis
    others = [point(agent, None, None, 25_100, 0.29, jct=10_050, worst=1.39) for agent in ("gavel", "shockwave-fair")]
    record = {"traces": [{"trace": "t", "gpus": 32, "points": sweep + others}],
              "authors_published_canonical": {}}
    figure = frontier["draw"](record, None)
    assert matplotlib.get_backend() == backend  # drawn on its own canvas
    renderer = figure.canvas.get_renderer()
    for ax in figure.axes:
        labels = [t for t in ax.texts if t.get_text()]
        texts = [t.get_text() for t in labels]
        faithful = [t.get_text() for t in labels if t.get_color() == "tab:blue"]
        assert faithful == ["0, 1e-05, 0.0001", "0.0003", "0.001", "0.003"]  # one label for the three alike
        boxes = [t.get_window_extent(renderer) for t in labels]
        for i, a in enumerate(boxes):
            assert ax.bbox.x0 <= a.x0 and a.x1 <= ax.bbox.x1, texts[i]  # inside the axes
            for j, b in enumerate(boxes[:i]):
                assert not a.overlaps(b), (texts[i], texts[j])


# --- the authors' whole-second profiles and round-clock calibration ----------------------


def test_profile_durations_are_whole_seconds_of_at_least_one():
    view = played(0).view
    core = predictor_for(view)
    profile = profile_durations_s(view)
    valid = core.size_valid
    np.testing.assert_array_equal(profile[valid], np.maximum(1.0, np.round(core.duration_at_s[valid])))
    assert np.all(profile[~valid] == 0.0) and np.all(profile[valid] >= 1.0)
    assert np.all(profile[valid] == np.floor(profile[valid]))
    rec = [j for j in range(view.num_jobs) if view.spec(j).model == "Recommendation"]
    assert rec and np.all(profile[rec][valid[rec]] == 1.0)  # 0.97-1.36 s epochs all become 1 s


def test_estimates_from_a_duration_table_by_hand():
    view = played(6).view
    jobs = np.asarray(view.active_job_ids)
    core = predictor_for(view)
    ones = np.ones(jobs.size)
    table = np.where(core.size_valid, core.duration_at_s, 0.0)
    # the throughput table itself gives back the default estimates
    remaining, work_done = whole_epoch_estimates(view, jobs, ones, table)
    default_remaining, default_done = whole_epoch_estimates(view, jobs, ones)
    np.testing.assert_allclose(remaining, default_remaining, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(work_done, default_done, rtol=1e-9, atol=1e-6)
    # a rounded table, one job by hand: (E - e - 1) future epochs at the posterior mean
    profile = profile_durations_s(view)
    remaining, work_done = whole_epoch_estimates(view, jobs, 2.0 * ones, profile)
    mean = whole_epoch_mean_s(view, jobs, ones, profile)
    for i, j in enumerate(jobs.tolist()):
        counts = view.observed_batch_size_counts[j]
        weights = core.prior[j] + counts
        expected = float((weights * profile[j]).sum() / weights.sum())
        future = max(int(view.num_epochs[j] - view.epochs_done[j]) - 1, 0)
        assert remaining[i] == pytest.approx(2.0 * future * expected, rel=1e-12)
        assert work_done[i] == pytest.approx(2.0 * float((counts * profile[j]).sum()), rel=1e-12)
        current = profile[j][list(core.sizes[j]).index(int(view.current_batch_size[j]))]
        by_hand = (float((counts * profile[j]).sum()) + current) / (view.epochs_done[j] + 1.0)
        assert mean[i] == pytest.approx(by_hand, rel=1e-12)


WAIT_TRACE = [  # one GPU: a static job for ~25 rounds, then an LM job that waited from t = 0
    {"job_type": "Transformer (batch size 32)", "total_iterations": 13600, "gang": 1, "mode": "static",
     "priority": 1, "slo_s": -1, "arrival_s": 0, "duration_s": 0},
    {"job_type": "LM (batch size 5)", "total_iterations": 286440, "gang": 1, "mode": "accordion",
     "priority": 1, "slo_s": -1, "arrival_s": 0, "duration_s": 0},
]


def waiting_lm_job(tmp_path):
    """FIFO on one GPU, with the calibration observing every boundary as the agent does;
    stops after the LM job's first round. Returns (view, calibration, that round)."""
    import json

    path = tmp_path / "wait.jsonl"
    path.write_text("".join(json.dumps(job) + "\n" for job in WAIT_TRACE))
    trace = load_trace(str(path), gpus=1)
    sim = Simulator(trace.jobs, SimConfig(gpus=1), trace_name=trace.name)
    fifo = make_agent("fifo")
    fifo.reset(sim.view, 0)
    calibration = RoundClockCalibration(sim.view, 0.4, profile_durations_s(sim.view))
    while True:
        calibration.observe(sim.view)
        if sim.view.run_time_s[1] > 0:
            return sim.view, calibration
        sim.step(fifo.act(sim.view))


def test_measurements_are_filed_under_the_global_round_and_count_from_round_zero(tmp_path):
    view, calibration = waiting_lm_job(tmp_path)
    first = view.round_index  # the boundary after the LM job's first round
    assert first > 20  # it waited about 25 rounds
    assert calibration.key_round[1] == first
    # its rate at the first measurement is taken to hold since round 0
    assert calibration.measured_epochs[1] == pytest.approx(first * 120.0 / view.current_epoch_duration_s[1])
    assert 0 < calibration.key_round[0] < first  # the static job, measured while it ran


def test_a_job_that_waited_is_inflated_and_a_static_job_is_not(tmp_path):
    view, calibration = waiting_lm_job(tmp_path)
    core = predictor_for(view)
    profile = profile_durations_s(view)
    scale = calibration.update(view, np.array([1]))
    # by hand: the LM job's profile (24 epochs, 5 -> 80) ends long before the span from round
    # 0 does, and runs on at its last epoch's duration (batch 80, accordion)
    epochs, progress = 24.0, float(view.epoch_progress[1])
    fraction = float(view.current_epoch_fraction_done[1])
    d5, d80 = profile[1][list(core.sizes[1]).index(5)], profile[1][list(core.sizes[1]).index(80)]
    weights = core.prior[1] + view.observed_batch_size_counts[1]
    future = float((weights * profile[1]).sum() / weights.sum())
    span = calibration.key_round[1] * 120.0
    assert int(view.current_batch_size[1]) == 5
    completed = float((view.observed_batch_size_counts[1] * profile[1]).sum())
    end = completed + fraction * d5 + (1 - fraction) * d5 + (epochs - progress - (1 - fraction)) * future
    walked = epochs + (span - end) / d80
    measured = calibration.measured_epochs[1]
    assert walked > 1.4 * measured
    assert scale[0] == pytest.approx(walked / measured, rel=1e-9)
    # the static job ran from round 0 at the profiled rate (whole seconds only): no drift
    assert calibration.update(view, np.array([0]))[0] == 1.0
    # the factor stays until a comparison drifts again
    calibration.measured_epochs[1] = walked
    assert calibration.update(view, np.array([1]))[0] == pytest.approx(walked / measured, rel=1e-9)


def test_the_calibration_and_rounding_are_authors_only_and_switchable():
    view = played(0).view
    agents = {
        "faithful": make_agent("shockwave", solver="highs"),
        "authors": make_agent("shockwave", solver="highs", numerics="authors"),
        "neither": make_agent("shockwave", solver="highs", numerics="authors", authors_clock_calibration=False,
                              authors_profile_rounding=False),
        "fair": make_agent("shockwave-fair", solver="highs"),
    }
    for agent in agents.values():
        agent.reset(view, 0)
    assert agents["faithful"]._calibration is None and agents["faithful"]._profile_s is None
    assert isinstance(agents["authors"]._calibration, RoundClockCalibration)
    np.testing.assert_array_equal(agents["authors"]._profile_s, profile_durations_s(view))
    for name in ("neither", "fair"):
        assert agents[name]._calibration is None and agents[name]._profile_s is None
    with pytest.raises(InputError, match="authors_clock_calibration must be true or false"):
        ShockwaveConfig(authors_clock_calibration="yes")


@functools.cache
def canonical_authors(**options):
    from shockwave_gym.throughput import ThroughputTable

    table = ThroughputTable.builtin("v100")
    trace = load_trace("authors-canonical-120", table, gpus=32)
    agent = make_agent("shockwave", numerics="authors", solver="highs", **options)
    return run_episode(trace, agent, SimConfig(gpus=32), table, progress=False)


def test_the_authors_numerics_rank_jobs_like_the_authors_and_starve_their_late_lm_jobs():
    """The canonical trace: per-job FTF (from arrival, the authors' basis) ranks as in the authors' published
    list, their headline figures hold, and their three starved late LM jobs are late here too,
    through the round-clock calibration (without it they are not)."""
    from scipy.stats import spearmanr

    from shockwave_gym.metrics import jobs_table
    from shockwave_gym.reference import authors_canonical

    theirs = authors_canonical().policy("shockwave")
    outcome = canonical_authors()
    rho = np.array([row["ftf"] for row in jobs_table(outcome.result)])
    assert spearmanr(rho, theirs.ftf).statistic >= 0.9
    m = outcome.metrics
    assert m["makespan_s"] == pytest.approx(theirs.makespan_s, rel=0.03)
    assert m["avg_jct_s"] == pytest.approx(theirs.avg_jct_s, rel=0.03)
    assert abs(m["unfair_fraction"] - theirs.unfair_fraction) <= 0.02
    starved = [99, 77, 31]
    assert np.all(np.asarray(theirs.ftf)[starved] > 1.4) and np.all(rho[starved] > 1.3)
    without = canonical_authors(authors_clock_calibration=False).result
    rho_without = np.array([row["ftf"] for row in jobs_table(without)])
    assert np.all(rho_without[starved] < 1.1)
