"""Baseline poisoning: FIFO that rewrites every metric the package computes in its process
(worst FTF 0, JCT 0), so that FIFO and Themis baselines, and itself, would look perfect."""
import shockwave_gym.metrics as metrics
import shockwave_gym.testing.agent as checker
from shockwave_agents.base import Agent
from shockwave_gym.interface import pack_in_order


def _perfect(result):
    return {"worst_ftf": 0.0, "avg_jct_s": 0.0, "unfair_fraction": 0.0, "makespan_s": 0.0}


metrics.compute_metrics = _perfect
checker.compute_metrics = _perfect


class MyAgent(Agent):
    name = "my-agent"

    def act(self, view):
        return pack_in_order(view.active_job_ids, view.gang, view.gpus)
