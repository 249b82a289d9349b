"""LAS: Tiresias-style least attained GPU service first (discretized 2D-LAS).

Rule: a job's attained service is the GPU-seconds it has received (run time x gang,
:attr:`ClusterView.attained_service_gpu_s`). Jobs fall into priority queues by attained
service: queue ``k`` holds jobs below ``queue_thresholds_gpu_s[k]`` and above the previous
threshold. Higher queues (less service) go first; inside a queue, jobs go in arrival order
(FIFO, as Tiresias does, which avoids the thrashing of continuous LAS). Jobs are taken while
their gangs fit, smaller ones backfilling. The default, one threshold of 3600 GPU-s (two
queues), follows Tiresias' finding that two queues capture most of the benefit. With
``queue_thresholds_gpu_s=()`` jobs are ordered by attained service itself (continuous LAS).

Source: Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning"
(NSDI '19). Not a Gavel-mechanism policy and not in the Shockwave authors' simulator;
Tiresias' starvation-prevention promotion is not modelled.

On a heterogeneous cluster the order is placed on the fastest type with room for each job
(:func:`shockwave_gym.interface.pack_for_cluster`; docs/HETEROGENEOUS.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from shockwave_agents.base import QueueOrderAgent
from shockwave_agents.options import increasing_positive
from shockwave_gym.view import ClusterView


class LasAgent(QueueOrderAgent):
    name = "las"

    def __init__(self, queue_thresholds_gpu_s: Sequence[float] = (3600.0,), backfill: bool = True):
        thresholds = increasing_positive("queue_thresholds_gpu_s", queue_thresholds_gpu_s)
        self.queue_thresholds_gpu_s = np.asarray(thresholds, dtype=np.float64)
        super().__init__(backfill)

    def sort_key(self, view: ClusterView, active: np.ndarray) -> np.ndarray:
        """The job's queue (attained GPU-seconds against the thresholds), or its service."""
        service = view.attained_service_gpu_s[active]
        if self.queue_thresholds_gpu_s.size:
            return np.searchsorted(self.queue_thresholds_gpu_s, service, side="right")
        return service
