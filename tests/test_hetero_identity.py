"""A V100-only cluster through the heterogeneous path (``--cluster v100=N``) gives every
agent's metrics bit for bit as the homogeneous path (``--gpus N``)."""

from __future__ import annotations

import numpy as np
import pytest

from shockwave_agents import available_agents, make_agent
from shockwave_gym.cluster import ClusterSpec
from shockwave_gym.config import SimConfig
from shockwave_gym.runner import run_episode
from shockwave_gym.traces import load_trace

BASELINES = ("fifo", "srtf", "las", "fair-share", "gavel", "themis", "allox", "ossp", "mst", "gandiva_fair")


def _agents():
    names = available_agents()
    missing = [b for b in BASELINES if b not in names]
    assert not missing, f"baselines not available: {missing}"
    return names


@pytest.mark.parametrize("agent", _agents())
def test_v100_only_cluster_is_bit_identical_on_teaching_12(agent):
    trace = load_trace("teaching-12", gpus=4)
    homogeneous = run_episode(trace, make_agent(agent), SimConfig(gpus=4), seed=0, progress=False)
    hetero = run_episode(trace, make_agent(agent), SimConfig(cluster=ClusterSpec.parse("v100=4")), seed=0,
                         progress=False)
    assert {k: hetero.metrics[k] for k in homogeneous.metrics} == homogeneous.metrics
    a, b = homogeneous.result, hetero.result
    np.testing.assert_array_equal(a.completion_s, b.completion_s)
    assert len(a.round_job_ids) == len(b.round_job_ids)
    for x, y in zip(a.round_job_ids, b.round_job_ids, strict=True):
        np.testing.assert_array_equal(x, y)
    assert hetero.metrics["cluster"] == "v100=4"
    assert hetero.metrics["utilization_v100"] is not None
