"""Typed Shockwave's lateness ratio (``typed_ratio_basis``; docs/SHOCKWAVE_HETERO.md, "Fairness
against Gavel").

- On a hand-made typed instance a short single-GPU job that arrived a few rounds ago and
  waited is late by a factor 2 in fair-share rho terms but only 3% in absolute finish
  times: with the finish-time basis the makespan term keeps every GPU on four long jobs and
  the short job gets no round; with the JCT basis it runs from the first round and finishes.
- The typed options concern typed clusters only: homogeneous Shockwave (V100-only clusters
  included) gives the same metrics bit for bit whatever they say.
"""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_agents.shockwave.agent import make_shockwave
from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.planner import Planner, priority_log_weights
from shockwave_agents.shockwave.solvers import HighsBackend
from shockwave_agents.shockwave.typed_rank import list_rank_typed
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import load_trace

UNLIMITED = {"time_limit_s": 1000, "rank_time_limit_s": 1000}
SHORT = 4  # the short job's index
#: The typed options as they were before the typed fairness defaults (issue 36).
BEFORE = {"typed_share": "per_job", "typed_ratio_basis": None, "typed_makespan_scale": 1.0, "typed_rho_weight": 0.0,
          "typed_rank": "per_type"}


def crowded_instance() -> PlanningInstance:
    """4 GPUs (2 fast, 2 at half speed), four long single-GPU jobs that arrived at 0 and one
    short single-GPU job (3 epochs of 120 s left of 10) that arrived at 19,400 s; now 20,000 s.
    Every job's fair-share rate is 0.6 reference seconds per second. Long jobs: projected
    finish 20,000 + 18,000 / 0.6 = 50,000 against F = 46,000 (ratio 1.087 on either basis).
    Short job: F = 19,400 + 360 / 0.6 = 20,000, projected 20,600: 1.03 in finish times, 2.0 in
    JCT (1,200 s projected against 600 s fair)."""
    n = 5
    total = np.array([100.0] * 4 + [10.0])
    done = np.array([40.0] * 4 + [7.0])
    epoch = np.array([300.0] * 4 + [120.0])
    return PlanningInstance(
        job_ids=np.arange(n), gang=np.ones(n, dtype=np.int64), epochs_total=total, epochs_done=done,
        mean_epoch_s=epoch, remaining_s=(total - done) * epoch, gpus=4, rounds=20, round_s=120.0,
        nsw_coef=1.0 / (n * 20), makespan_coef_per_s=1e-3, finish_target_s=np.array([46_000.0] * 4 + [20_000.0]),
        arrival_s=np.array([0.0] * 4 + [19_400.0]), share=np.full(n, 0.6), now_s=20_000.0,
        restart_loss_s=np.zeros(n), type_capacity=np.array([2, 2], dtype=np.int64),
        speed=np.tile([1.0, 0.5], (n, 1)), last_type=np.array([0, 0, 1, 1, -1]),
    )


def typed_plan(config: ShockwaveConfig) -> np.ndarray:
    """The planner's (n, K, T) plan of :func:`crowded_instance`."""
    instance = crowded_instance()
    outcome = Planner(config, HighsBackend()).plan(instance)
    x = np.zeros(instance.schedule_shape, dtype=bool)
    for t, (jobs, kinds) in enumerate(zip(outcome.rounds, outcome.types, strict=True)):
        x[jobs, kinds, t] = True
    return x


def test_the_jct_basis_sees_the_short_jobs_wait_as_the_fairness_measure_does():
    instance = crowded_instance()
    _, by_time = priority_log_weights(ShockwaveConfig(**BEFORE), instance)
    _, by_jct = priority_log_weights(ShockwaveConfig(**{**BEFORE, "typed_ratio_basis": "jct"}), instance)
    assert by_time[SHORT] == pytest.approx(20_600 / 20_000)
    assert by_jct[SHORT] == pytest.approx(2.0)
    np.testing.assert_allclose(by_jct[:SHORT], by_time[:SHORT])  # arrival 0: the bases agree


def test_a_waiting_short_job_is_starved_on_finish_times_and_served_on_jct():
    by_time = typed_plan(ShockwaveConfig(**BEFORE, **UNLIMITED))
    assert not by_time[SHORT].any()  # the makespan term keeps every GPU on the long jobs
    per_type = typed_plan(ShockwaveConfig(**{**BEFORE, "typed_ratio_basis": "jct"}, **UNLIMITED))
    assert per_type[SHORT].any() and not per_type[SHORT, :, :10].any()  # planned, but only late in the plan
    by_jct = typed_plan(ShockwaveConfig(**{**BEFORE, "typed_ratio_basis": "jct", "typed_rank": "list"}, **UNLIMITED))
    assert by_jct[SHORT, :, 0].any()  # it runs from the first round
    work_s = 120.0 * np.einsum("kt,k->", by_jct[SHORT].astype(float), crowded_instance().speed[SHORT])
    assert work_s >= 360.0  # and its plan covers its remaining work


@pytest.mark.parametrize(("option", "value"), [("typed_ratio_basis", "arrival"), ("typed_rank", "random"),
                                               ("typed_makespan_scale", -1.0)])
def test_bad_typed_options_are_refused(option, value):
    with pytest.raises(InputError, match=option):
        make_shockwave(**{option: value})


KNOB = {"typed_share": "water_filling", "typed_ratio_basis": "jct", "typed_makespan_scale": 0.0}


@pytest.mark.parametrize("cluster", [None, "v100=32"])
def test_homogeneous_shockwave_does_not_read_the_typed_options(cluster):
    trace = load_trace("teaching-12", gpus=32)
    config = SimConfig(gpus=32) if cluster is None else SimConfig(cluster=ClusterSpec.parse(cluster))
    runs = [run_episode(trace, make_shockwave(**options, **UNLIMITED), config, seed=0, progress=False)
            for options in ({**KNOB, "typed_rank": "list", "typed_rho_weight": 1.0, "typed_guarantee": 0.5,
                             "typed_priority": "all"}, {})]
    assert runs[0].metrics == runs[1].metrics
    np.testing.assert_array_equal(runs[0].result.completion_s, runs[1].result.completion_s)


def test_list_ranking_moves_a_priority_job_ahead_of_jobs_planned_on_two_types():
    # two types of one GPU, four rounds; job 0 runs every round (type 0 then type 1), job 1
    # twice on type 1, job 2 (late: the highest priority) twice on type 0 in the last rounds.
    # Per-type re-ranking cannot move job 2: job 0, planned on both types, keeps type 0's
    # first rounds. The list ranking runs job 2 first and keeps every job's rounds per type.
    x = np.zeros((3, 2, 4), dtype=bool)
    x[0, 0, [0, 1]] = x[0, 1, [2, 3]] = True
    x[1, 1, [0, 1]] = True
    x[2, 0, [2, 3]] = True
    speed = np.array([[0.5, 1.0], [1.0, 1.0], [1.0, 0.5]])
    ranked = list_rank_typed(x, np.ones(3, dtype=np.int64), np.array([1, 1]), np.array([0.0, 0.0, 5.0]), speed)
    np.testing.assert_array_equal(ranked.sum(axis=2), x.sum(axis=2))
    assert ranked[2, 0, :2].all()
    assert (ranked.sum(axis=0) <= 1).all()  # one GPU per type and round
    assert (ranked.sum(axis=1) <= 1).all()  # one type per job and round


def test_the_typed_defaults_run_the_waiting_short_job_from_the_first_round():
    # the rho weight puts it ahead of the long jobs, the front swaps move its rounds to the
    # front although the long jobs are planned on both types; without them (per-type
    # re-ranking alone) the same counts leave it in the plan's later rounds
    x = typed_plan(ShockwaveConfig(**UNLIMITED))
    assert x[SHORT, :, 0].any() and x[SHORT, :, 1].any()
    per_type = typed_plan(ShockwaveConfig(typed_rank="per_type", **UNLIMITED))
    assert per_type[SHORT].any() and not per_type[SHORT, :, :2].any()
