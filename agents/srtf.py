"""SRTF: shortest predicted remaining time first, preemptive, with backfilling.

Rule: at every round, order the active jobs by the predicted remaining isolated run time
(:func:`shockwave_gym.interface.predicted_remaining_s`, ascending; ties by arrival, i.e. job id) and
take them while their gangs fit, letting smaller jobs backfill GPUs a larger one cannot use.
A job that is overtaken by a shorter arrival is preempted at the next round boundary.

Source: the classic shortest-remaining-time-first discipline, as used for DL clusters with
predicted durations (e.g. the SRTF baselines of Tiresias, NSDI '19, and Gavel, OSDI '20). The
Shockwave authors' simulator has no SRTF baseline; this one is ours. It sees only what a
scheduler may know: the prediction, never the true remaining time (unless ``oracle=True``
is passed, for ablations, in which case the view's true ``remaining_s`` is used). ``estimate``
replaces the prediction by any function of the view (seconds per job): the course's lab 1
schedules by a student's estimate this way.

On a heterogeneous cluster the order is placed on the fastest type with room for each job
(:func:`shockwave_gym.interface.pack_for_cluster`; docs/HETEROGENEOUS.md).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shockwave_agents.base import QueueOrderAgent
from shockwave_agents.options import flag
from shockwave_gym.interface import predicted_remaining_s
from shockwave_gym.view import ClusterView


class SrtfAgent(QueueOrderAgent):
    name = "srtf"

    def __init__(self, backfill: bool = True, oracle: bool = False,
                 estimate: Callable[[ClusterView], np.ndarray] | None = None):
        super().__init__(backfill)
        self.oracle = flag("oracle", oracle)
        self.estimate = estimate

    def _remaining_s(self, view: ClusterView) -> np.ndarray:
        if self.estimate is not None:
            return np.asarray(self.estimate(view), dtype=float)
        return view.remaining_s if self.oracle else predicted_remaining_s(view)

    def sort_key(self, view: ClusterView, active: np.ndarray) -> np.ndarray:
        return self._remaining_s(view)[active]
