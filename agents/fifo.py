"""FIFO: run jobs in arrival order, backfilling smaller jobs into GPUs the head cannot use.

Source: the classic first-come-first-served baseline of cluster schedulers (e.g. as used in
Gavel's and Tiresias' evaluations). Non-preemptive in effect: a running job stays ahead of
every later arrival, so it keeps its GPUs until it completes.

On a heterogeneous cluster the order is placed by the default rule: each job, in order, on the
fastest type (at its current batch size) with room for its gang
(:func:`shockwave_gym.interface.pack_for_cluster`; docs/HETEROGENEOUS.md). SRTF and LAS do
the same with their orders.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import Agent
from shockwave_agents.options import flag
from shockwave_gym.interface import pack_for_cluster
from shockwave_gym.view import ClusterView


class FifoAgent(Agent):
    name = "fifo"

    def __init__(self, backfill: bool = True):
        self.backfill = flag("backfill", backfill)

    def act(self, view: ClusterView) -> np.ndarray:
        # active ids are ascending, and ids follow arrival order
        # on a heterogeneous cluster, in order, each job on its fastest type with room
        return pack_for_cluster(view.active_job_ids, view, backfill=self.backfill)
