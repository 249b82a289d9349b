"""Typed Shockwave's fairness options (docs/SHOCKWAVE_HETERO.md, "The fix"):
``typed_rho_weight`` (priority by the rho a round of delay costs), ``typed_guarantee`` (a share
of each job's fair-share work over the horizon), ``typed_priority="all"``.

A hand-made typed instance: four long single-GPU jobs (arrived at 0, 90 epochs of 300 s left,
target JCT 60,000 s, slightly late) and a short one that has just arrived (5 epochs of 120 s
left, target JCT 2,000 s, not late). Without the options the planner gives every round to
the long jobs and the short one none; each option gives it its work.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from shockwave_agents.shockwave.agent import make_shockwave
from shockwave_agents.shockwave.config import ShockwaveConfig
from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.planner import Planner, guaranteed_epochs, priority_log_weights
from shockwave_agents.shockwave.solvers import HighsBackend
from shockwave_agents.shockwave.typed_rank import front_swap_typed
from shockwave_gym.errors import InputError

SHORT = 4
BASE = {"typed_ratio_basis": "jct", "typed_rho_weight": 0.0, "k": 0.0, "time_limit_s": 1000, "rank_time_limit_s": 1000}


def instance(typed: bool = True) -> PlanningInstance:
    n = 5
    total = np.array([100.0] * 4 + [10.0])
    done = np.array([10.0] * 4 + [5.0])
    epoch = np.array([300.0] * 4 + [120.0])
    typed_terms = {"type_capacity": np.array([2, 2], dtype=np.int64), "speed": np.tile([1.0, 0.5], (n, 1)),
                   "last_type": np.array([0, 0, 1, 1, -1])} if typed else {}
    return PlanningInstance(
        job_ids=np.arange(n), gang=np.ones(n, dtype=np.int64), epochs_total=total, epochs_done=done,
        mean_epoch_s=epoch, remaining_s=(total - done) * epoch, gpus=4, rounds=20, round_s=120.0,
        nsw_coef=1.0 / (n * 20), makespan_coef_per_s=0.0,
        finish_target_s=np.array([60_000.0] * 4 + [22_000.0]), arrival_s=np.array([0.0] * 4 + [20_000.0]),
        share=np.full(n, 0.6), now_s=20_000.0, restart_loss_s=np.zeros(n), **typed_terms,
    )


def planned_work_s(**options) -> np.ndarray:
    """Reference seconds of work the plan of :func:`instance` gives each job."""
    inst = instance()
    outcome = Planner(ShockwaveConfig(**{**BASE, **options}), HighsBackend()).plan(inst)
    x = np.zeros(inst.schedule_shape, dtype=bool)
    for t, (jobs, kinds) in enumerate(zip(outcome.rounds, outcome.types, strict=True)):
        x[jobs, kinds, t] = True
    return inst.round_s * np.einsum("jkt,jk->j", x.astype(float), inst.speed)


def test_the_rho_weight_ranks_a_job_by_the_rho_a_round_of_delay_costs_it():
    inst = instance()
    plain, ratio = priority_log_weights(ShockwaveConfig(**BASE), inst)
    weighted, _ = priority_log_weights(ShockwaveConfig(**{**BASE, "typed_rho_weight": 2.0}), inst)
    assert ratio[SHORT] == pytest.approx(0.5) and plain[SHORT] == 0.0  # not late: no priority of its own
    # median target JCT 60,000 s against its 2,000 s: 30 x, squared by the exponent
    assert weighted[SHORT] == pytest.approx(2.0 * np.log(30.0))
    np.testing.assert_allclose(weighted[:SHORT], plain[:SHORT])  # the long jobs are at the median


def test_each_option_gives_the_short_job_the_work_the_plain_plan_denies_it():
    assert planned_work_s()[SHORT] == 0.0
    assert planned_work_s(**{"typed_rho_weight": 1.0})[SHORT] == pytest.approx(600.0)  # all its remaining work
    # the guarantee asks for min(its 5 epochs left, 0.5 x 0.6 x 20 rounds x 120 s / 120 s);
    # the rounds the packing cannot place are dropped, so most of it, not all
    assert planned_work_s(typed_guarantee=0.5)[SHORT] >= 480.0


def test_the_guarantee_is_a_share_of_the_fair_share_work_capped_by_the_work_left():
    bound = guaranteed_epochs(ShockwaveConfig(typed_guarantee=0.5), instance())
    np.testing.assert_allclose(bound, [0.5 * 0.6 * 20 * 120 / 300] * 4 + [5.0])
    assert guaranteed_epochs(ShockwaveConfig(), instance()) is None


def test_the_options_are_read_on_typed_instances_only():
    config = ShockwaveConfig(**{**BASE, "typed_rho_weight": 2.0, "typed_priority": "all", "typed_guarantee": 0.5})
    one_type = instance(typed=False)
    np.testing.assert_array_equal(priority_log_weights(config, one_type)[0],
                                  priority_log_weights(ShockwaveConfig(**BASE), one_type)[0])
    assert guaranteed_epochs(config, one_type) is None


def test_all_priorities_lower_the_weight_of_jobs_ahead_of_their_target():
    weights, ratio = priority_log_weights(ShockwaveConfig(**BASE, typed_priority="all"), instance())
    assert weights[SHORT] == pytest.approx(12.0 * np.log(ratio[SHORT])) and weights[SHORT] < 0


@pytest.mark.parametrize(("option", "value"), [("typed_rho_weight", -1.0), ("typed_guarantee", 1.5),
                                               ("typed_guarantee", "half"), ("typed_priority", "late-only")])
def test_bad_fairness_options_are_refused(option, value):
    with pytest.raises(InputError, match=option):
        make_shockwave(**{option: value})


def test_front_swaps_bring_a_priority_job_planned_on_several_types_to_the_first_rounds():
    # two types of one GPU, four rounds; job 0 runs rounds 0-1 on type 0 and round 3 on type
    # 1, job 1 rounds 0-2 on type 1, job 2 (the highest priority) rounds 2-3 on type 0. The
    # per-type re-ranking cannot move job 2 past job 0 (planned on both types); the front
    # swaps trade job 2's round 2 for job 0's round 0 on type 0, keeping every job's rounds
    # on every type.
    x = np.zeros((3, 2, 4), dtype=bool)
    x[0, 0, [0, 1]] = x[0, 1, 3] = True
    x[1, 1, [0, 1, 2]] = True
    x[2, 0, [2, 3]] = True
    ranked = front_swap_typed(x, np.ones(3, dtype=np.int64), np.array([1, 1]), np.array([0.0, 0.0, 5.0]))
    np.testing.assert_array_equal(ranked.sum(axis=2), x.sum(axis=2))
    assert ranked[2, 0, 0] and ranked[0, 0, 2] and not ranked[0, 0, 0]
    assert (ranked.sum(axis=0) <= 1).all() and (ranked.sum(axis=1) <= 1).all()
    # a lower-priority job is never swapped in ahead of a higher one
    unchanged = front_swap_typed(x, np.ones(3, dtype=np.int64), np.array([1, 1]), np.array([5.0, 5.0, 0.0]))
    np.testing.assert_array_equal(unchanged, x)


def test_a_guarantee_the_cluster_cannot_meet_is_dropped_with_a_warning():
    # every job's full fair share at rate 1 asks for 20 rounds of reference work each: 100
    # reference rounds against the 60 the two fast and two half-speed GPUs give in 20 rounds
    inst = replace(instance(), share=np.full(5, 1.0))
    outcome = Planner(ShockwaveConfig(**{**BASE, "typed_guarantee": 1.0}), HighsBackend()).plan(inst)
    assert outcome.record.warnings == ["typed guarantee infeasible; planned without it"]
    assert outcome.record.path == "relaxed" and any(len(r) for r in outcome.rounds)
