"""Weighted SRPT: smallest predicted remaining GPU-area first, with gang-aware backfilling.

Rule: at every round, order the active jobs by ``predicted remaining isolated time x gang``
(the GPU-seconds the job still needs, :func:`shockwave_gym.interface.predicted_remaining_s`
times :attr:`ClusterView.gang`; ascending, ties by arrival, i.e. job id) and take them while
their gangs fit, letting smaller jobs backfill GPUs a larger one cannot use (the packing SRTF
uses). A job overtaken by a smaller remaining area is preempted at the next round boundary.

Why the gang weight: a job of gang ``g`` with ``R`` seconds left occupies ``g`` of the ``G``
GPUs for ``R`` seconds, a volume of ``g R`` GPU-seconds. If the cluster is relaxed to one
machine that processes ``G`` GPU-seconds per second, shortest remaining volume first (SRPT on
the volume) minimises the sum of completion times there; rigid gangs and round boundaries make
it a heuristic here, the packing filling what the order leaves. It is also Smith's rule
(W. E. Smith, "Various optimizers for single-stage production", Naval Research Logistics
Quarterly, 1956: order by processing time over weight) with weight ``1/g``. Plain SRTF ranks by
``R`` alone and lets a short 8-GPU job hold the cluster ahead of eight 1-GPU jobs of similar
length.

Not a Gavel-mechanism policy and not in the Shockwave authors' simulator; ours. It sees only
what a scheduler may know: the predictor's estimate, never the true remaining time (unless
``oracle=True`` is passed, for ablations, with an oracle view).

On a heterogeneous cluster the order is placed on the fastest type with room for each job
(:func:`shockwave_gym.interface.pack_for_cluster`; docs/HETEROGENEOUS.md); the remaining time
is the predictor's, on the reference type.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import QueueOrderAgent
from shockwave_agents.options import flag
from shockwave_gym.interface import predicted_remaining_s
from shockwave_gym.view import ClusterView


def remaining_area_gpu_s(view: ClusterView, *, oracle: bool = False) -> np.ndarray:
    """Predicted remaining GPU-seconds per job: remaining isolated time x gang (0 when done)."""
    remaining_s = view.remaining_s if oracle else predicted_remaining_s(view)
    return remaining_s * np.asarray(view.gang, dtype=np.float64)


class WsrptAgent(QueueOrderAgent):
    name = "wsrpt"

    def __init__(self, backfill: bool = True, oracle: bool = False):
        super().__init__(backfill)
        self.oracle = flag("oracle", oracle)

    def sort_key(self, view: ClusterView, active: np.ndarray) -> np.ndarray:
        return remaining_area_gpu_s(view, oracle=self.oracle)[active]
