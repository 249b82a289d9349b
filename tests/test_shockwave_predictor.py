"""Shockwave's predictor extensions (drift recalibration, noise) and fair-share targets.

Hand-computed cases use Transformer jobs (10,000 samples per epoch) on a table with 10 it/s at
batch 100 (an epoch lasts 10 s) and 20 it/s at batch 200 (an epoch lasts 2.5 s).
"""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_agents.shockwave.fair_share import FairShareTracker, momentum_finish_target
from shockwave_agents.shockwave.predictor import (
    ShockwavePredictor,
    apply_noise,
    drift_scale,
    measured_versus_table,
)
from shockwave_gym.interface import predicted_remaining_s
from shockwave_gym.jobs import JobSpec
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.throughput import ThroughputTable

MODEL = "Transformer"
TABLE = ThroughputTable({(MODEL, 100, 1): 10.0, (MODEL, 200, 1): 20.0}, source="shockwave predictor table")


def static_job(job_id: int, epochs: int, arrival_s: float = 0.0, batch: int = 100) -> JobSpec:
    iterations_per_epoch = 10_000 // batch
    return JobSpec(job_id, MODEL, batch, iterations_per_epoch * epochs, 1, "static", arrival_s)


def make_sim(jobs, *, oracle=False, overhead_s=0.0) -> Simulator:
    return Simulator(jobs, SimConfig(gpus=len(jobs), restart_overhead_s=overhead_s), TABLE, oracle=oracle)


class ViewWithRunTime:
    """A real view whose measured run time is replaced (to create drift)."""

    def __init__(self, view, run_time_s):
        self._view, self.run_time_s = view, np.asarray(run_time_s, dtype=np.float64)

    def __getattr__(self, name):
        return getattr(self._view, name)


# --- noise -------------------------------------------------------------------------------


def test_sign_noise_multiplies_by_one_plus_or_minus_the_level():
    values = np.full(2000, 100.0)
    noisy = apply_noise(values, 0.2, "sign", np.random.default_rng(0))
    assert set(np.round(noisy, 9).tolist()) == {80.0, 120.0}
    assert 0.4 < np.mean(noisy > 100) < 0.6  # both signs occur, about equally


def test_uniform_noise_stays_in_the_band_and_noise_zero_is_identity():
    values = np.linspace(100.0, 1000.0, 500)
    noisy = apply_noise(values, 0.5, "uniform", np.random.default_rng(1))
    assert np.all(noisy >= 0.5 * values - 1e-9) and np.all(noisy <= 1.5 * values + 1e-9)
    assert not np.allclose(noisy, values)
    assert apply_noise(values, 0.0, "uniform", np.random.default_rng(1)) is values


def test_full_noise_never_predicts_less_than_one_second():
    noisy = apply_noise(np.full(100, 50.0), 1.0, "sign", np.random.default_rng(2))
    assert set(noisy.tolist()) == {1.0, 100.0}  # 50 * 0 clipped to 1 s, 50 * 2


# --- estimates from the view, by hand ----------------------------------------------------


def test_estimates_after_one_round_by_hand():
    # 30 epochs of 10 s; one 120 s round in round 0 (never pays overhead): 12 epochs done
    sim = make_sim([static_job(0, 30)])
    sim.step([0])
    estimates = ShockwavePredictor().estimate(sim.view, np.array([0]))
    assert estimates.work_done_s[0] == pytest.approx(120.0)
    assert estimates.mean_epoch_s[0] == pytest.approx(10.0)
    assert estimates.remaining_s[0] == pytest.approx(180.0)
    assert estimates.duration_scale[0] == 1.0
    assert estimates.remaining_s[0] == pytest.approx(predicted_remaining_s(sim.view)[0])


def test_mean_epoch_duration_counts_the_current_epoch_at_its_observed_size():
    # before any progress, d is the current (first) epoch's duration: 2.5 s at batch 200
    sim = make_sim([static_job(0, 40, batch=200)])
    estimates = ShockwavePredictor().estimate(sim.view, np.array([0]))
    assert estimates.mean_epoch_s[0] == pytest.approx(2.5)
    assert estimates.work_done_s[0] == 0.0
    assert estimates.remaining_s[0] == pytest.approx(100.0)


def test_oracle_view_uses_the_true_remaining_time():
    sim = make_sim([static_job(0, 30)], oracle=True)
    sim.step([0])
    estimates = ShockwavePredictor().estimate(sim.view, np.array([0]))
    assert estimates.remaining_s[0] == pytest.approx(sim.view.remaining_s[0]) == pytest.approx(180.0)


# --- drift recalibration -----------------------------------------------------------------


def test_table_and_measured_time_agree_without_overhead():
    sim = make_sim([static_job(0, 30)])
    sim.step([0])
    expected, measured = measured_versus_table(sim.view, np.array([0]))
    assert expected[0] == pytest.approx(120.0) and measured[0] == pytest.approx(120.0)


@pytest.mark.parametrize(
    ("measured_s", "scale"),
    [
        (120.0, 1.0),  # no drift
        (160.0, 1.0),  # 120/160 - 1 = -25%: within 40%, no recalibration
        (240.0, 2.0),  # 120/240 - 1 = -50%: durations doubled
        (60.0, 0.5),  # 120/60 - 1 = +100%: durations halved
    ],
)
def test_drift_beyond_40_percent_rescales_durations(measured_s, scale):
    sim = make_sim([static_job(0, 30)])
    sim.step([0])
    view = ViewWithRunTime(sim.view, [measured_s])
    assert drift_scale(view, np.array([0]), 0.4)[0] == pytest.approx(scale)
    estimates = ShockwavePredictor(drift_threshold=0.4).estimate(view, np.array([0]))
    assert estimates.remaining_s[0] == pytest.approx(180.0 * scale)
    assert estimates.mean_epoch_s[0] == pytest.approx(10.0 * scale)
    assert estimates.work_done_s[0] == pytest.approx(120.0 * scale)


def test_noise_draws_are_reproducible_per_seed():
    sim = make_sim([static_job(j, 30 + j) for j in range(6)])
    ids = np.arange(6)
    first = ShockwavePredictor(noise=0.5, seed=7).estimate(sim.view, ids).remaining_s
    again = ShockwavePredictor(noise=0.5, seed=7).estimate(sim.view, ids).remaining_s
    other = ShockwavePredictor(noise=0.5, seed=8).estimate(sim.view, ids).remaining_s
    clean = ShockwavePredictor().estimate(sim.view, ids).remaining_s
    np.testing.assert_allclose(first, again)
    assert not np.allclose(first, other)
    np.testing.assert_allclose(np.sort(np.abs(first / clean - 1.0)), np.full(6, 0.5))


# --- fair-share finish targets F_j -------------------------------------------------------


def test_momentum_target_by_hand():
    # estimates 100 (round 0) and 200 (round 2), now round 4: windows 2 and 2 -> mean 150;
    # F = 0.9 * 150 + 0.1 * 200 = 155
    assert momentum_finish_target([(0, 100.0), (2, 200.0)], 4, 0.9) == pytest.approx(155.0)
    # the latest estimate recorded this round has no window yet: mean = 100
    assert momentum_finish_target([(0, 100.0), (4, 200.0)], 4, 0.9) == pytest.approx(110.0)
    # a single estimate made now is its own target
    assert momentum_finish_target([(3, 80.0)], 3, 0.9) == pytest.approx(80.0)


def test_tracker_records_targets_and_forgets_finished_jobs():
    tracker = FairShareTracker()
    tracker.record(0, np.array([1, 2]), np.array([50.0, 70.0]))
    tracker.record(5, np.array([1]), np.array([150.0]))
    np.testing.assert_allclose(tracker.targets(10, np.array([1, 2]), 0.5), [0.5 * 100 + 0.5 * 150, 70.0])
    tracker.forget([1])
    assert set(tracker.series) == {2}


def test_per_job_noise_is_a_persistent_bias():
    sim = make_sim([static_job(j, 30 + j) for j in range(6)])
    ids = np.arange(6)
    predictor = ShockwavePredictor(noise=0.5, noise_mode="job", seed=3)
    clean = ShockwavePredictor().estimate(sim.view, ids).remaining_s
    first = predictor.estimate(sim.view, ids).remaining_s / clean
    second = predictor.estimate(sim.view, ids).remaining_s / clean
    np.testing.assert_allclose(first, second)  # same factor every call
    assert set(np.round(first, 9).tolist()) <= {0.5, 1.5}
