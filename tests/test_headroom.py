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
