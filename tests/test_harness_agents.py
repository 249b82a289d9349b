"""The harness tests' agents are sound: the fallback agents schedule differently, and the
slow variants make the same decisions (tests/helpers/harness_agents.py)."""

from __future__ import annotations

from helpers.harness_agents import FifoAgent, LifoAgent, RandomOrderAgent, direct_metrics, slow_lifo


def test_fallback_agents_schedule_differently_from_fifo_and_by_seed():
    avg_jct_s = {
        "fifo": direct_metrics(FifoAgent(), 0)["avg_jct_s"],
        "lifo": direct_metrics(LifoAgent(), 0)["avg_jct_s"],
        "random seed 0": direct_metrics(RandomOrderAgent(), 0)["avg_jct_s"],
        "random seed 1": direct_metrics(RandomOrderAgent(), 1)["avg_jct_s"],
    }
    assert len(set(avg_jct_s.values())) == 4, avg_jct_s
    assert direct_metrics(RandomOrderAgent(), 1)["avg_jct_s"] == avg_jct_s["random seed 1"]


def test_slow_variants_make_the_same_decisions():
    assert direct_metrics(slow_lifo(), 0) == direct_metrics(LifoAgent(), 0)
