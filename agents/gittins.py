"""Gittins: the highest Gittins index per GPU-second first, with backfilling.

Rule: at every round, each active job gets the Gittins index of its length belief given the
epochs it has attained (:func:`shockwave_gym.interface.gittins_index_per_epoch`)::

    G(a) = max over D > 0 of P(T - a <= D | T > a) / E[min(T - a, D) | T > a]

with ``T`` the epochs the job runs and ``a`` its epoch progress: the best ratio, over
service quanta, of the chance to finish within the quantum to the service it costs. The
index is turned into a rate per GPU-second by dividing by the job's expected epoch duration
(the predictor's posterior mean) and its gang. Jobs go in decreasing index (ties by arrival)
and are taken while their gangs fit, smaller ones backfilling.

The belief is the information regime's (:mod:`shockwave_gym.interface.lengths`): in
``unknown`` the duration prior (the attained-service form), in ``estimate`` the posterior of
the length given the user's estimate, in ``exact`` the trace's length (the index is then
one over the remaining GPU-seconds: weighted SRPT). Early endings enter the belief with the
regime's public share.

Source: Gittins' index for scheduling jobs of unknown length on one server (J. C. Gittins,
"Multi-armed Bandit Allocation Indices", Wiley 1989, ch. 5; for the M/G/1 queue with
preemption, the policy that minimises mean response time among policies that do not know
the lengths: Aalto, Ayesta & Righter, "On the Gittins index in the M/G/1 queue", Queueing
Systems 63, 2009). With gangs and many GPUs it is a heuristic: the per-GPU-second index
and the packing are ours.
"""

from __future__ import annotations

import numpy as np

from shockwave_agents.base import QueueOrderAgent
from shockwave_gym.interface import gittins_index_per_epoch, predictor_for
from shockwave_gym.view import ClusterView


def gittins_index_per_gpu_s(view: ClusterView, job_ids: np.ndarray) -> np.ndarray:
    """The Gittins index of ``job_ids`` per GPU-second of service."""
    per_epoch = gittins_index_per_epoch(view, job_ids)
    epoch_s = predictor_for(view).expected_epoch_duration_s(view.observed_batch_size_counts)[job_ids]
    return per_epoch / (epoch_s * np.asarray(view.gang, dtype=np.float64)[job_ids])


class GittinsAgent(QueueOrderAgent):
    name = "gittins"

    def sort_key(self, view: ClusterView, active: np.ndarray) -> np.ndarray:
        return -gittins_index_per_gpu_s(view, active)  # highest index first
