"""Normalised scores, paired statistics and the clairvoyant reference of the headroom table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shockwave_gym.config import SimConfig
from shockwave_gym.harness.clairvoyant import (
    PORTFOLIO,
    objective_value,
    portfolio_best,
    rollout_reference,
)
from shockwave_gym.harness.paired import (
    geomean,
    iqm,
    paired_ratios,
    ratio_interval,
    stratified_iqm_interval,
)
from shockwave_gym.harness.scores import has_room, normalised_score, overall_scores, suite_scores
from shockwave_gym.traces import load_trace

# -- scores -----------------------------------------------------------------------------------


def test_score_formula_by_hand():
    # FIFO 1000 s, reference 800 s: room 200 s (20% of FIFO)
    assert normalised_score(1000.0, 1000.0, 800.0) == 0.0
    assert normalised_score(800.0, 1000.0, 800.0) == 1.0
    assert normalised_score(900.0, 1000.0, 800.0) == pytest.approx(0.5)
    assert normalised_score(760.0, 1000.0, 800.0) == pytest.approx(1.2)  # better than the reference
    assert normalised_score(1100.0, 1000.0, 800.0) == pytest.approx(-0.5)  # worse than FIFO
    assert math.isnan(normalised_score(math.nan, 1000.0, 800.0))


def test_no_room_rule_at_five_percent():
    assert has_room(1000.0, 950.0)  # exactly 5%: scored
    assert normalised_score(975.0, 1000.0, 950.0) == pytest.approx(0.5)
    assert not has_room(1000.0, 951.0)  # 4.9%: no room
    assert normalised_score(951.0, 1000.0, 951.0) is None
    assert normalised_score(900.0, 1000.0, 1010.0) is None  # reference worse than FIFO
    assert not has_room(1.4, 1.34)  # a rho of 1.4 against 1.34: 4.3%


def test_suite_scores_leave_no_room_traces_out_and_mark_saturation():
    metrics = {
        "fifo": {"a": 1000.0, "b": 100.0, "c": 2000.0},
        "srtf": {"a": 810.0, "b": 99.0, "c": 1620.0},
        "rl": {"a": 900.0, "b": 50.0, "c": 1800.0},
    }
    reference = {"a": 800.0, "b": 98.0, "c": 1600.0}  # trace b: 2% room
    s = suite_scores("s", metrics, reference, baselines=["srtf"])
    assert s.no_room == ("b",)
    assert set(s.per_trace["rl"]) == {"a", "c"}  # rl's big gain on b does not count
    assert s.mean["rl"] == pytest.approx(0.5)
    assert s.mean["srtf"] == pytest.approx((0.95 + 0.95) / 2)
    assert s.best_baseline == "srtf" and s.headroom == pytest.approx(0.95) and s.saturated
    t = suite_scores("t", {"fifo": {"x": 10.0}, "srtf": {"x": 9.6}}, {"x": 9.0}, baselines=["srtf"])
    assert t.headroom == pytest.approx(0.4) and not t.saturated
    empty = suite_scores("u", {"fifo": {"x": 10.0}, "srtf": {"x": 9.9}}, {"x": 9.9}, baselines=["srtf"])
    assert empty.no_room == ("x",) and math.isnan(empty.headroom)
    # overall: the mean of suite scores, suites without room left out
    assert overall_scores([s, t, empty])["srtf"] == pytest.approx((0.95 + 0.4) / 2)


# -- paired statistics -------------------------------------------------------------------------


def test_paired_ratios_pair_by_trace():
    assert paired_ratios({"a": 90.0, "b": 300.0, "c": 1.0}, {"a": 100.0, "b": 200.0}) == {"a": 0.9, "b": 1.5}


def test_bootstrap_interval_matches_the_normal_theory_on_a_large_sample():
    rng = np.random.default_rng(7)
    logs = rng.normal(math.log(0.9), 0.2, size=400)
    got = ratio_interval(np.exp(logs))
    half = 1.959964 * logs.std(ddof=1) / math.sqrt(logs.size)
    assert got.value == pytest.approx(math.exp(logs.mean()))
    assert got.low == pytest.approx(math.exp(logs.mean() - half), rel=4e-3)
    assert got.high == pytest.approx(math.exp(logs.mean() + half), rel=4e-3)
    assert ratio_interval(np.exp(logs)) == got  # seeded: the same interval twice


def test_pairing_removes_trace_to_trace_spread():
    # traces of very different size; the agent is 10% better on each: the paired interval is a point
    baseline = {f"t{i}": 1000.0 * 3.0 ** i for i in range(5)}
    agent = {t: 0.9 * v for t, v in baseline.items()}
    got = ratio_interval(list(paired_ratios(agent, baseline).values()))
    assert (got.value, got.low, got.high) == pytest.approx((0.9, 0.9, 0.9))
    mixed = ratio_interval([0.8, 0.9, 1.0, 0.85, 0.95])
    assert 0.8 < mixed.low < mixed.value < mixed.high < 1.0


def test_iqm_and_stratified_bootstrap():
    assert iqm([1, 2, 3, 4, 100, -50, 2.5, 3.5]) == pytest.approx(np.mean([2, 2.5, 3, 3.5]))
    suites = {f"s{i}": [r] * 5 for i, r in enumerate([0.5, 0.9, 0.92, 0.95, 2.0])}  # no spread inside suites
    got = stratified_iqm_interval(suites)
    assert got.value == pytest.approx(math.exp(np.mean(np.log([0.9, 0.92, 0.95]))))
    assert (got.low, got.high) == pytest.approx((got.value, got.value))  # nothing to resample
    rng = np.random.default_rng(3)
    noisy = {f"s{i}": list(np.exp(rng.normal(math.log(0.9), 0.1, size=5))) for i in range(9)}
    wide = stratified_iqm_interval(noisy)
    assert wide.low < wide.value < wide.high and wide.n == 45  # every trace of the 9 suites
    assert 0.8 < wide.low and wide.high < 1.0
    assert geomean([0.5, 2.0]) == pytest.approx(1.0)


# -- the clairvoyant reference -----------------------------------------------------------------


@pytest.mark.parametrize("objective", ["avg_jct_s", "makespan_s"])
def test_rollout_never_worse_than_the_best_rule_of_its_portfolio(objective):
    trace = load_trace("teaching-12", gpus=4)
    config = SimConfig(gpus=4)
    best = portfolio_best(trace, config, objective)
    ref = rollout_reference(trace, config, objective, decisions=8)
    assert set(best.portfolio_values) == set(PORTFOLIO)
    assert best.value == min(best.portfolio_values.values())
    assert best.metrics[objective] == pytest.approx(best.value, rel=1e-12)
    assert ref.value <= best.value
    assert ref.metrics[objective] == ref.value  # the replayed schedule's own metric
    assert ref.metrics["completed_jobs"] == len(trace.jobs)
    if objective == "makespan_s":  # switching rules mid-episode pays here (measured: 5,148 s vs 5,414 s)
        assert ref.value < 0.97 * best.value and len(ref.rules_used) > 1


@pytest.mark.parametrize("objective", ["avg_jct_s", "rho_mean"])
def test_elastic_trace_reference_holds_the_elastic_rules(objective):
    """On a trace with elastic jobs the portfolio adds the count-choosing rules, and the
    reference is never worse than either's episode (the leaderboard's cell); a rigid trace's
    portfolio is unchanged."""
    from shockwave_agents import make_agent
    from shockwave_gym.harness.clairvoyant import ELASTIC_RULES, portfolio_names
    from shockwave_gym.runner import run_episode
    from shockwave_gym.traces import GeneratorConfig, generate_trace

    trace = generate_trace(GeneratorConfig(num_jobs=14, seed=5, arrival_rate_per_hour=20.0, elastic_share=0.6,
                                           name="elastic-14"))
    config = SimConfig(gpus=8)
    ref = rollout_reference(trace, config, objective, decisions=4)
    assert {"elastic-srpt", "sia", "pollux", "elastic-max-min"} == set(ELASTIC_RULES)
    assert set(ELASTIC_RULES) <= set(ref.portfolio_values)
    for rule in ELASTIC_RULES:
        cell = run_episode(trace, make_agent(rule), config, progress=False).metrics[objective]
        assert ref.portfolio_values[rule] == pytest.approx(cell, rel=1e-12)
        assert ref.value <= cell * (1 + 1e-12)
    assert ref.metrics["completed_jobs"] == len(trace.jobs)
    rigid = portfolio_best(load_trace("teaching-12", gpus=4), SimConfig(gpus=4), objective)
    assert list(rigid.portfolio_values) == portfolio_names(objective)
    assert not set(ELASTIC_RULES) & set(rigid.portfolio_values)


def test_objective_value_refuses_unknown_objectives():
    from shockwave_gym.errors import InputError
    from shockwave_gym.hetero_simulator import make_simulator

    sim = make_simulator(load_trace("teaching-12", gpus=4).jobs, SimConfig(gpus=4))
    with pytest.raises(InputError, match="unknown objective"):
        objective_value(sim, "p99")
    with pytest.raises(InputError, match="unknown portfolio rule"):
        portfolio_best(load_trace("teaching-12", gpus=4), SimConfig(gpus=4), "makespan_s", portfolio=["gittins"])


def test_mean_rho_reference_includes_the_fair_share_policy_and_its_cell():
    from shockwave_agents.registry import make_agent
    from shockwave_gym.runner import run_episode

    trace = load_trace("teaching-12", gpus=4)
    config = SimConfig(gpus=4)
    cell = run_episode(trace, make_agent("fair-share"), config, seed=0, progress=False).metrics["rho_mean"]
    ref = rollout_reference(trace, config, "rho_mean", decisions=6)
    assert ref.portfolio_values["fair-share"] == pytest.approx(cell, rel=1e-12)
    assert ref.value <= min(ref.portfolio_values.values()) <= cell
    assert ref.metrics["rho_mean"] == pytest.approx(ref.value, rel=1e-12)


# -- scored tasks -------------------------------------------------------------------------------


def _episodes(trace, gpus: int, agents=("fifo", "srtf", "las", "fair-share", "wsrpt")) -> dict:
    from shockwave_agents.registry import make_agent
    from shockwave_gym.runner import run_episode

    config = SimConfig(gpus=gpus)
    return {a: run_episode(trace, make_agent(a), config, seed=0, progress=False).metrics for a in agents}


@pytest.mark.parametrize("task", ["jct", "fairness"])
def test_one_term_task_scores_equal_their_metric_scores(task):
    """The jct and fairness costs are increasing affine maps of avg JCT and mean rho on a trace:
    the normalised score is the same number, and so are the room decisions."""
    from shockwave_gym.harness.scores import task_cost, task_has_room
    from shockwave_gym.tasks import TASKS

    trace = load_trace("teaching-12", gpus=4)
    metrics = _episodes(trace, 4)
    metric = TASKS[task].metric
    first = min(j.arrival_s for j in trace.jobs)
    ref = rollout_reference(trace, SimConfig(gpus=4), metric, decisions=6).metrics
    costs = {a: task_cost(task, m, first_arrival_s=first, round_s=120.0) for a, m in metrics.items()}
    ref_cost = task_cost(task, ref, first_arrival_s=first, round_s=120.0)
    assert task_has_room(task, metrics["fifo"], ref, first_arrival_s=first, round_s=120.0) == has_room(
        metrics["fifo"][metric], ref[metric])
    compared = 0
    for agent in metrics:
        by_metric = normalised_score(metrics[agent][metric], metrics["fifo"][metric], ref[metric], min_room=0.0)
        by_cost = (costs["fifo"] - costs[agent]) / (costs["fifo"] - ref_cost)
        assert by_cost == pytest.approx(by_metric, rel=1e-9, abs=1e-12)
        compared += by_metric not in (0.0, 1.0)
    assert compared >= 2  # not only the trivial ends of the scale


def test_fairness_room_is_judged_on_mean_rho_not_on_its_cost():
    """The fairness cost N x (mean rho - 1) has an offset: 4% less mean rho is more than 5% less
    cost when rho is near 1. The room rule stays the metric's."""
    from shockwave_gym.harness.scores import task_has_room

    floor = {"rho_mean": 1.5, "num_jobs": 10, "gpus": 4, "avg_jct_s": 1.0, "makespan_s": 1.0}
    ref = dict(floor, rho_mean=1.44)  # 4% below FIFO's rho; 12% below FIFO's cost
    assert not task_has_room("fairness", floor, ref, first_arrival_s=0.0, round_s=120.0)
    assert task_has_room("jct", dict(floor, avg_jct_s=100.0), dict(floor, avg_jct_s=94.0),
                         first_arrival_s=0.0, round_s=120.0)


def test_balanced_reference_minimises_the_task_cost_and_beats_every_rule():
    from shockwave_gym.harness.clairvoyant import EXTRA_RULES, metric_objective
    from shockwave_gym.tasks import TASKS

    trace = load_trace("teaching-12", gpus=4)
    config = SimConfig(gpus=4)
    ref = rollout_reference(trace, config, "balanced", decisions=8)
    assert {"fair-share", "max-rho"} <= set(EXTRA_RULES["balanced"]) <= set(ref.portfolio_values)
    first = min(j.arrival_s for j in trace.jobs)
    assert ref.value == pytest.approx(TASKS["balanced"].cost(ref.metrics, first_arrival_s=first, round_s=120.0),
                                      rel=1e-12)
    assert ref.value == metric_objective(ref.metrics, "balanced", trace, config)
    assert ref.value <= min(ref.portfolio_values.values())
    metrics = _episodes(trace, 4, ("fifo", "fair-share", "max-rho", "wsrpt"))
    for m in metrics.values():  # their cells are the portfolio's runs from the start
        assert ref.value <= TASKS["balanced"].cost(m, first_arrival_s=first, round_s=120.0) * (1 + 1e-12)
    # the JCT-optimal schedule is not the balanced one here (the task is not avg JCT renamed)
    jct = rollout_reference(trace, config, "avg_jct_s", decisions=8)
    assert metric_objective(jct.metrics, "balanced", trace, config) > ref.value


def test_reference_runs_the_true_jobs_of_a_regime_with_early_endings():
    from shockwave_gym.harness.clairvoyant import shockwave_oracle, true_jobs_regime
    from shockwave_gym.regimes import Regime

    trace = load_trace("teaching-12", gpus=4)
    config = SimConfig(gpus=4)
    early = Regime("unknown", early_endings=0.5, seed=3)
    assert true_jobs_regime(Regime("unknown")) is None and true_jobs_regime(None) is None
    assert true_jobs_regime(early) == Regime("exact", early_endings=0.5, seed=3)
    plain = rollout_reference(trace, config, "avg_jct_s", decisions=4)
    hidden = rollout_reference(trace, config, "avg_jct_s", decisions=4, regime=Regime("unknown", seed=3))
    assert hidden.value == plain.value  # knowledge does not matter to the clairvoyant reference
    ended = rollout_reference(trace, config, "avg_jct_s", decisions=4, regime=early)
    assert ended.value < plain.value  # shorter true jobs
    from shockwave_agents.registry import make_agent
    from shockwave_gym.runner import run_episode

    # FIFO ignores lengths: its cell in the regime and the reference's fifo rule agree
    fifo = run_episode(trace, make_agent("fifo"), config, seed=0, progress=False, regime=early).metrics
    assert ended.portfolio_values["fifo"] == pytest.approx(fifo["avg_jct_s"], rel=1e-12)
    oracle = shockwave_oracle(trace, config, regime=early)
    assert oracle["metrics"]["num_jobs"] == 12 and not oracle["metrics"]["truncated"]


# -- Pareto figures -------------------------------------------------------------------------------


def test_pareto_points_and_frontier(tmp_path):
    from shockwave_gym.harness.pareto import frontier, save_pareto, suite_points

    m = lambda j, r, k: {"avg_jct_s": j, "rho_mean": r, "makespan_s": k}  # noqa: E731
    metrics = {"a": {"t1": m(100, 2.0, 10), "t2": m(300, 4.0, 30)}, "b": {"t1": m(150, 1.5, 20), "t2": m(150, 1.5, 20)},
               "c": {"t1": m(400, 5.0, 5), "t2": m(400, 5.0, 5)}, "partial": {"t1": m(1, 1.0, 1)}}
    points = suite_points(metrics)
    assert points == {"a": (200.0, 3.0, 20.0), "b": (150.0, 1.5, 20.0), "c": (400.0, 5.0, 5.0)}
    assert frontier(points) == ["b"]  # b beats a and c on both axes
    assert sorted(frontier({**points, "d": (100.0, 9.0, 1.0)})) == ["b", "d"]
    path = save_pareto(tmp_path / "p.png", points, "t", {"reference (jct)": (90.0, 1.4, 18.0)})
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
