"""The fair share behind typed Shockwave's finish targets (``typed_share``).

- ``water_filling`` (the default) is the fair-share reference's equal share: gangs water-filled
  over the cluster's GPUs, spread over the types a job can use in proportion to their GPUs;
  ``per_job`` gives every job the same share of rounds whatever its gang.
- With single-GPU jobs on one type of speed 1 both rules are the homogeneous ``min(1, G / J)``.
- The option concerns typed clusters only: homogeneous Shockwave (V100-only clusters
  included) gives the same metrics bit for bit under either rule.
"""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_agents.shockwave.agent import make_shockwave
from shockwave_agents.shockwave.fair_share import typed_share_rate
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import load_trace

UNLIMITED = {"time_limit_s": 1000, "rank_time_limit_s": 1000}


@pytest.mark.parametrize("rule", ["water_filling", "per_job"])
@pytest.mark.parametrize("jobs", [3, 8, 40])
def test_single_gpu_jobs_on_one_type_get_the_homogeneous_share(rule, jobs):
    share = typed_share_rate(np.ones((jobs, 1)), np.array([8]), np.ones(jobs, dtype=np.int64), rule)
    np.testing.assert_allclose(share, min(1.0, 8 / jobs))


def test_water_filling_divides_gpus_not_rounds():
    # 12 GPUs of one type, gangs 1, 1, 4, 8: demand 14 > 12, so the water level is 6 (the
    # gang-1 and gang-4 jobs hold their whole gangs, the gang-8 job the 6 GPUs left)
    gang = np.array([1, 1, 4, 8])
    share = typed_share_rate(np.ones((4, 1)), np.array([12]), gang, "water_filling")
    np.testing.assert_allclose(share, [1.0, 1.0, 4.0 / 4.0, 6.0 / 8.0])
    np.testing.assert_allclose((share * gang).sum(), 12.0)
    per_job = typed_share_rate(np.ones((4, 1)), np.array([12]), gang, "per_job")
    np.testing.assert_allclose(per_job, 1.0)  # 4 jobs on 12 GPUs: each "entitled" to every round


def test_water_filling_spreads_the_share_over_usable_types_only():
    # two types of 12 and 4 GPUs; job 0 runs on both (speed 0.5 on the second), job 1 only on
    # the first; 40 single-GPU jobs in all so the level is 16 / 40
    speed = np.vstack([[1.0, 0.5], [1.0, 0.0], np.ones((38, 2))])
    share = typed_share_rate(speed, np.array([12, 4]), np.ones(40, dtype=np.int64), "water_filling")
    level = 16 / 40
    np.testing.assert_allclose(share[0], level * (0.75 * 1.0 + 0.25 * 0.5))
    np.testing.assert_allclose(share[1], level * 1.0)  # not diluted by the type it cannot use
    per_job = typed_share_rate(speed, np.array([12, 4]), np.ones(40, dtype=np.int64), "per_job")
    np.testing.assert_allclose(per_job[1], level * 0.75)


def test_unknown_rule_is_refused():
    with pytest.raises(InputError, match="typed_share"):
        make_shockwave(typed_share="per_gpu")


@pytest.mark.parametrize("cluster", [None, "v100=32"])
def test_homogeneous_shockwave_does_not_depend_on_the_typed_share(cluster):
    trace = load_trace("teaching-12", gpus=32)
    config = SimConfig(gpus=32) if cluster is None else SimConfig(cluster=ClusterSpec.parse(cluster))
    runs = [run_episode(trace, make_shockwave(typed_share=rule, **UNLIMITED), config, seed=0, progress=False)
            for rule in ("water_filling", "per_job")]
    assert runs[0].metrics == runs[1].metrics
    np.testing.assert_array_equal(runs[0].result.completion_s, runs[1].result.completion_s)


def test_the_typed_share_sets_typed_targets_of_multi_gpu_jobs():
    # 6 GPUs; by job 2's arrival (round 2) jobs 0-5 are active, job 2 of gang 2: 7 GPUs asked
    # for, so under water-filling job 2 holds 1 GPU (half its gang) and its fair-share finish
    # estimate at arrival is twice as far; per_job entitles it to every round
    trace = load_trace("teaching-12", gpus=32)
    spec = ClusterSpec.parse("v100=2,p100=2,k80=2")
    first = {}
    for rule in ("water_filling", "per_job"):
        agent = make_shockwave(typed_share=rule, **UNLIMITED)
        run_episode(trace, agent, SimConfig(cluster=spec), seed=0, progress=False, max_rounds=3)
        first[rule] = {j: series[0] for j, series in agent.fair_share.series.items()}
    assert trace.jobs[2].gang == 2
    (r_w, f_w), (r_p, f_p) = first["water_filling"][2], first["per_job"][2]
    assert r_w == r_p == 2
    arrival = trace.jobs[2].arrival_s
    assert f_w - arrival == pytest.approx(2 * (f_p - arrival))
    assert first["water_filling"][0] == first["per_job"][0]  # round 0: one job, both rules give 1
