"""Which selections the simulator accepts (``Simulator.validate_selection``, the rule the
env, the runner and :func:`shockwave_gym.testing.check_agent` share), on the golden jobs of
``test_core_rounds``."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.rounds import job, sim_of

from shockwave_gym.errors import InputError, InvalidActionError


def test_gangs_fit_exactly_and_over_capacity_is_rejected():
    sim = sim_of(job(0, 1000, gang=2), job(1, 1000, gang=2), job(2, 1000, gang=4), gpus=4)
    with pytest.raises(InvalidActionError, match="GPUs"):
        sim.step([0, 2])
    assert sim.round_index == 0 and sim.time_s == 0.0  # a rejected action changes nothing
    record = sim.step([0, 1])
    assert record.gpus_busy == 4


@pytest.mark.parametrize("bad", [[5], [-1], [0, 0]])
def test_invalid_job_ids_are_rejected(bad):
    sim = sim_of(job(0, 1000), job(1, 1000), gpus=2)
    with pytest.raises(InvalidActionError):
        sim.step(bad)


def test_completed_job_cannot_be_selected_and_finished_episode_refuses_steps():
    sim = sim_of(job(0, 10), job(1, 1000))
    sim.step([0])
    with pytest.raises(InvalidActionError):
        sim.step([0])
    sim.step([1])
    while not sim.done:
        sim.step([1])
    with pytest.raises(InvalidActionError):
        sim.step([])


def test_gang_larger_than_the_cluster_is_an_input_error():
    with pytest.raises(InputError):
        sim_of(job(0, 100, gang=8), gpus=4)


def test_selection_accepts_numpy_and_any_order():
    sim = sim_of(job(0, 1000), job(1, 1000), gpus=2)
    record = sim.step(np.array([1, 0]))
    assert record.job_ids.tolist() == [0, 1]




@pytest.mark.parametrize("make_ids", [lambda: {0, 1}, lambda: (j for j in (0, 1))], ids=["set", "generator"])
def test_core_bug_selection_accepts_any_iterable_of_ids(make_ids):
    # Simulator.step(job_ids: Iterable[int]) promises any iterable; a set or a generator
    # currently dies with a numpy TypeError instead of running jobs 0 and 1.
    sim = sim_of(job(0, 1000), job(1, 1000), gpus=2)
    assert sim.step(make_ids()).job_ids.tolist() == [0, 1]


@pytest.mark.parametrize(
    "bad",
    [
        [True, False],  # a mask for job 0 only: currently read as ids [1, 0] and runs both
        np.array([False, True]),  # a mask for job 1 only: currently runs jobs 0 and 1
        [1.7],  # currently truncated to job 1
        None,  # currently a numpy TypeError
    ],
    ids=["bool-list", "bool-array", "float-1.7", "none"],
)
def test_core_bug_selection_rejects_masks_and_fractional_ids(bad):
    sim = sim_of(job(0, 1000), job(1, 1000), gpus=2)
    with pytest.raises(InvalidActionError):
        sim.step(bad)
