"""Remaining-runtime predictor (Dirichlet over reachable batch sizes) and the view's
oracle boundary (docs/SEMANTICS.md, "What a scheduler may know").

Hand-computed cases use a "Transformer (batch size 100)" job on a table with 100 it/s at
batch 100 and at batch 200: an epoch lasts 1 s at 100 and 0.5 s at 200 (50 iterations).
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from shockwave_gym.adaptation import register_mode
from shockwave_gym.interface import predicted_remaining_s, predictor_for
from shockwave_gym.jobs import JobSpec
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.view import OracleAccessError

MODEL = "Transformer"
TABLE = ThroughputTable({(MODEL, 100, 1): 100.0, (MODEL, 200, 1): 100.0}, source="predictor table")

# 4 epochs: 100, 100, 200, 200 -> 1 + 1 + 0.5 + 0.5 = 3 s of isolated work
register_mode(
    "test-predictor-double-at-2",
    schedule=lambda spec: np.where(np.arange(spec.num_epochs) < 2, 100, 200),
    reachable=lambda spec: (100, 200),
    overwrite=True,
)


def two_size_job(job_id: int = 0, epochs: int = 4) -> JobSpec:
    return JobSpec(job_id, MODEL, 100, 100 * epochs, 1, "test-predictor-double-at-2", 0.0)


def static_job(job_id: int, epochs: int) -> JobSpec:
    return JobSpec(job_id, MODEL, 100, 100 * epochs, 1, "static", 0.0)


def make_sim(jobs, *, oracle=False, round_s=120.0) -> Simulator:
    config = SimConfig(gpus=len(jobs), round_s=round_s, restart_overhead_s=0.0)
    return Simulator(jobs, config, TABLE, oracle=oracle)


# --- Dirichlet math, by hand ----------------------------------------------------------------


def test_prior_is_epochs_over_number_of_reachable_sizes():
    sim = make_sim([two_size_job()])
    predictor = predictor_for(sim.view)
    assert predictor.sizes[0][predictor.size_valid[0]].tolist() == [100, 200]
    assert predictor.prior[0][predictor.size_valid[0]].tolist() == [2.0, 2.0]  # E/|sizes| = 4/2
    assert predictor.duration_at_s[0][predictor.size_valid[0]].tolist() == [1.0, 0.5]


@pytest.mark.parametrize(
    ("work_s", "epochs_done", "counts", "predicted_s"),
    [
        # start: weights (2, 2) -> E[d] = (2x1 + 2x0.5)/4 = 0.75; current epoch (at 100,
        # observed) 1 s + 3 future epochs x 0.75 = 3.25
        (0.0, 0, [0, 0], 3.25),
        # half an epoch done: 0.5 s left of the current one + 3 x 0.75 = 2.75
        (0.5, 0, [0, 0], 2.75),
        # one epoch done at 100: weights (3, 2) -> E[d] = (3 + 1)/5 = 0.8; 1 + 2 x 0.8 = 2.6
        (1.0, 1, [1, 0], 2.6),
        # 1.5 s: epoch 1 half done -> 0.5 + 2 x 0.8 = 2.1
        (1.5, 1, [1, 0], 2.1),
        # two epochs done: weights (4, 2) -> E[d] = (4 + 1)/6 = 5/6; current epoch is at 200
        # (0.5 s) + 1 x 5/6 = 4/3
        (2.0, 2, [2, 0], 0.5 + 5 / 6),
        # three done: weights (4, 3) -> E[d] irrelevant (no future epoch): 0.5 left
        (2.5, 3, [2, 1], 0.5),
    ],
)
def test_dirichlet_prediction_by_hand(work_s, epochs_done, counts, predicted_s):
    sim = make_sim([two_size_job()], round_s=work_s if work_s > 0 else 120.0)
    if work_s > 0:
        sim.step([0])
    view = sim.view
    assert sim.work_done_s[0] == pytest.approx(work_s)
    assert view.epochs_done[0] == epochs_done
    assert view.observed_batch_size_counts[0].tolist()[:2] == counts
    assert predicted_remaining_s(view)[0] == pytest.approx(predicted_s, rel=1e-12)


def test_expected_epoch_duration_with_duration_scale():
    sim = make_sim([two_size_job()])
    p = predictor_for(sim.view)
    epochs_done = np.array([1])
    counts = np.array([[1, 0]])  # one epoch observed at 100
    # weights (3, 2): (3 x 1 + 2 x 0.5)/5 = 0.8, scaled x2 -> 1.6
    assert p.expected_epoch_duration_s(counts)[0] == pytest.approx(0.8)
    assert p.expected_epoch_duration_s(counts, np.array([2.0]))[0] == pytest.approx(1.6)
    # predict(): current 0.25 of a 1 s epoch left, scaled x2 -> 0.5, + 2 future x 1.6 = 3.7
    got = p.predict(epochs_done, np.array([0.25]), np.array([1.0]), np.array([4]), counts, np.array([2.0]))
    assert got[0] == pytest.approx(0.5 + 2 * 1.6)


def test_finished_job_predicts_zero():
    sim = make_sim([two_size_job(0), static_job(1, 500)])
    sim.step([0, 1])
    assert sim.completion_s[0] == 3.0
    assert predicted_remaining_s(sim.view)[0] == 0.0


def test_static_jobs_are_predicted_exactly_through_an_episode():
    sim = make_sim([static_job(0, 250), static_job(1, 333)], oracle=True, round_s=37.0)
    view = sim.view
    while not sim.done:
        np.testing.assert_allclose(predicted_remaining_s(view), view.remaining_s, atol=1e-9)
        sim.step(view.active_job_ids)


def test_single_size_jobs_of_the_canonical_modes_are_predicted_exactly():
    # with the built-in table: Transformer accordion never changes, static never changes
    jobs = [
        JobSpec(0, "Transformer", 32, 313 * 50, 1, "accordion", 0.0),
        JobSpec(1, "Recommendation", 512, 231 * 40, 1, "static", 0.0),
        JobSpec(2, "ResNet-18", 64, 782 * 12, 2, "static", 0.0),
    ]
    sim = Simulator(jobs, SimConfig(gpus=4), oracle=True)
    view = sim.view
    while not sim.done:
        active = view.active_job_ids
        np.testing.assert_allclose(predicted_remaining_s(view)[active], view.remaining_s[active], rtol=1e-9)
        sim.step(active)


def test_prediction_support_is_reachable_sizes_not_the_future_schedule():
    # a 2-epoch accordion LM job never leaves its critical regime (30% rule and first 10),
    # yet the prior still spreads over {10, 80}: it must not peek at the real schedule.
    job = JobSpec(0, "LM", 10, 5968 * 2, 1, "accordion", 0.0)
    sim = Simulator([job], SimConfig(gpus=1), oracle=True)
    assert sim.view.batch_size_schedule(0).tolist() == [10, 10]
    assert sim.view.reachable_batch_sizes(0) == (10, 80)
    # prior (1, 1) over durations 5967.5/94.91094148 = 62.8747 s and 745.9375/21.7129984
    # = 34.3544 s: current epoch 62.8747 + 1 future x (62.8747 + 34.3544)/2 = 111.4893,
    # although the truth is 2 x 62.8747 = 125.7495
    assert predicted_remaining_s(sim.view)[0] == pytest.approx(111.4893, abs=1e-4)
    assert sim.view.remaining_s[0] == pytest.approx(125.7495, abs=1e-4)


# --- the oracle boundary ----------------------------------------------------------------------

HIDDEN = ("isolated_time_s", "remaining_s")


@pytest.mark.parametrize("name", HIDDEN)
def test_view_hides_oracle_fields_by_default(name):
    view = make_sim([two_size_job()]).view
    assert view.oracle is False
    with pytest.raises(OracleAccessError):
        getattr(view, name)
    assert not hasattr(view, name)  # OracleAccessError is an AttributeError


def test_view_hides_the_batch_size_schedule_by_default():
    with pytest.raises(OracleAccessError):
        make_sim([two_size_job()]).view.batch_size_schedule(0)


def test_oracle_view_shows_the_truth():
    sim = make_sim([two_size_job()], oracle=True, round_s=1.25)
    view = sim.view
    assert view.isolated_time_s.tolist() == [3.0]
    assert view.batch_size_schedule(0).tolist() == [100, 100, 200, 200]
    sim.step([0])
    assert view.remaining_s.tolist() == [1.75]


def test_view_arrays_are_read_only():
    sim = make_sim([two_size_job(), static_job(1, 50)], oracle=True)
    view = sim.view
    for name in ("arrival_s", "gang", "num_epochs", "run_time_s", "epochs_done", "reachable_sizes",
                 "observed_batch_size_counts", "current_batch_size", "isolated_time_s", "active_job_ids"):
        array = getattr(view, name)
        with pytest.raises(ValueError):
            array[0] = 1
    with pytest.raises(ValueError):
        predicted_remaining_s(view)[0] = 1


def test_view_reflects_each_new_state():
    sim = make_sim([static_job(0, 300)])
    view = sim.view
    before = predicted_remaining_s(view).copy()
    sim.step([0])
    assert before[0] == pytest.approx(300.0)
    assert predicted_remaining_s(view)[0] == pytest.approx(180.0)
    assert view.epochs_done[0] == 120 and view.run_time_s[0] == 120.0


def test_oracle_flag_survives_pickle_and_copy():
    sim = make_sim([static_job(0, 300)], oracle=False)
    for clone in (sim.copy(), pickle.loads(pickle.dumps(sim))):
        with pytest.raises(OracleAccessError):
            clone.view.isolated_time_s  # noqa: B018


def test_view_work_done_is_the_sum_of_observed_epoch_durations():
    """``view.work_done_s`` is observable: completed epochs at their observed mean duration
    plus the finished share of the current epoch, at every state of an episode."""
    from shockwave_agents import make_agent
    from shockwave_gym import SimConfig, Simulator
    from shockwave_gym.traces import load_trace

    trace = load_trace("teaching-12", gpus=4)
    sim = Simulator(trace.jobs, SimConfig(gpus=4))
    view, agent = sim.view, make_agent("fifo")
    while not sim.done:
        done = view.epochs_done
        completed = np.where(done > 0, np.nan_to_num(view.mean_epoch_duration_s) * done, 0.0)
        expected = completed + (view.epoch_progress - done) * view.current_epoch_duration_s
        np.testing.assert_allclose(view.work_done_s, expected, rtol=1e-9, atol=1e-6)
        sim.step(agent.act(view))
    assert view.work_done_s.max() > 0
    with pytest.raises(ValueError):
        view.work_done_s[0] = 0.0
