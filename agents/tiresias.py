"""Tiresias: discretised two-queue LAS with starvation promotion (``PromoteKnob``).

Rule (extends :class:`~shockwave_agents.las.LasAgent`, whose queues and order it keeps):

- **Queues.** A job's service is the GPU-seconds it has attained (run time x gang,
  :attr:`ClusterView.attained_service_gpu_s`) since it entered the top queue (its arrival, or
  its last promotion). Queue ``k`` holds the jobs whose service lies in
  ``[queue_thresholds_gpu_s[k-1], queue_thresholds_gpu_s[k])``; the default, one threshold of
  3600 GPU-s, gives two queues. Lower queues (less service) go first; inside a queue, jobs go
  in arrival order (FIFO). Jobs are taken while their gangs fit, smaller ones backfilling.
- **Promotion.** A job outside the top queue that has waited ``W`` seconds since it last held
  GPUs is promoted to the top queue when ``W >= promote_knob x E``, ``E`` being the wall
  seconds it has held GPUs so far (:attr:`ClusterView.run_time_s`). Promotion restarts its
  service count at 0, so it stays in the top queue until it has attained the first
  threshold again, then is demoted as any job. The default ``promote_knob = 1``: a demoted
  job runs again once its current wait has reached its total run time, which bounds the
  stretch of any wait by the job's own executed time (not tuned on any trace).

Source: Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning"
(NSDI '19), section 4: discretised two-dimensional LAS (attained service = GPUs x time, a
few queues, FIFO inside a queue) with starvation prevention by promotion to the highest queue
of a job that has waited beyond a starvation limit, set with the paper's ``PromoteKnob``. The
limit's form here, ``promote_knob`` x the job's executed time, is ours. Tiresias' placement
(consolidation by model skew) is not modelled: the simulator packs gangs by count. Not in the
Shockwave authors' simulator.

On a heterogeneous cluster the order is placed on the fastest type with room for each job
(:func:`shockwave_gym.interface.pack_for_cluster`; docs/HETEROGENEOUS.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shockwave_agents.las import LasAgent
from shockwave_gym.errors import InputError
from shockwave_gym.view import ClusterView


class TiresiasAgent(LasAgent):
    name = "tiresias"

    def __init__(self, queue_thresholds_gpu_s: Sequence[float] = (3600.0,), promote_knob: float = 1.0,
                 backfill: bool = True):
        super().__init__(queue_thresholds_gpu_s, backfill)
        if not self.queue_thresholds_gpu_s.size:
            raise InputError("tiresias needs at least one queue threshold (queue_thresholds_gpu_s)")
        if isinstance(promote_knob, bool) or not isinstance(promote_knob, int | float) \
                or not math.isfinite(promote_knob) or promote_knob <= 0:
            raise InputError(f"promote_knob must be a positive number, got {promote_knob!r}")
        self.promote_knob = float(promote_knob)
        self._service_offset_gpu_s: np.ndarray | None = None

    def reset(self, view: ClusterView, seed: int | None = None) -> None:
        self._service_offset_gpu_s = np.zeros(view.num_jobs)  # attained service at the last promotion
        self._last_held_s = np.full(view.num_jobs, np.nan)  # when each job last stopped holding GPUs
        self._promotions = 0

    def promote_and_queue(self, view: ClusterView, active: np.ndarray) -> np.ndarray:
        """Promote the starved jobs (updating their service counts), then return each active
        job's queue (0 = top). Call once per boundary."""
        now_s = view.time_s
        self._last_held_s[np.asarray(view.ran_last_round, dtype=bool)] = now_s
        attained = view.attained_service_gpu_s[active]
        queue = np.searchsorted(self.queue_thresholds_gpu_s, attained - self._service_offset_gpu_s[active],
                                side="right")
        waited_s = now_s - self._last_held_s[active]  # NaN for a job that never ran: no promotion
        with np.errstate(invalid="ignore"):
            promote = (queue > 0) & (waited_s >= self.promote_knob * view.run_time_s[active])
        if promote.any():
            self._service_offset_gpu_s[active[promote]] = attained[promote]
            queue[promote] = 0
            self._promotions += int(promote.sum())
        return queue

    def sort_key(self, view: ClusterView, active: np.ndarray) -> np.ndarray:
        """Each job's queue after this boundary's promotions (0 = top)."""
        if self._service_offset_gpu_s is None:
            self.reset(view)
        return self.promote_and_queue(view, active)

    def stats(self) -> dict:
        return {"promotions": getattr(self, "_promotions", 0)}
