"""``fair-share``: the fluid equal-share reference of the metrics made runnable in rounds.

Rule: the agent replays the fair-share reference of docs/METRICS.md (every active job holds
``min(g_j, lam)`` GPUs, water-filled so the shares add up to ``min(G, sum g_j)``, and progresses
at that share over its gang of its isolated rate) alongside the episode, from public facts
only: arrivals and gangs as they are revealed, and each job's work as the predictor estimates
it (:func:`shockwave_gym.interface.predicted_remaining_s` plus the work done; a completed job's
work done is its whole work). At every round it orders the active jobs by how far they are
behind the reference *in time* (the furthest behind first, ties by arrival) and takes them while
their gangs fit, backfilling free GPUs with later jobs that fit. A job still running in the
reference is ``(reference work - work done) / its reference rate`` seconds behind; a job the
reference has finished is behind by the time since it finished there plus its missing work at
its last reference rate, so it grows a second per second until the job completes (ordering by
missing work alone would starve jobs the reference has finished while others keep falling
behind by more).

With short rounds and no restart cost it tracks the reference closely, so its fair-share rho
shows what rounds, restarts and rigid gangs cost by themselves; with the defaults it is the
baseline every agent's rho can be read against. On a heterogeneous cluster progress is compared
on the reference (V100) work scale, and the jobs are placed on the fastest type with room
(:func:`shockwave_gym.interface.pack_for_cluster`).

Source: the equal-share fluid schedule of the metrics; the rule is ours. It sees only what a
scheduler may know (``oracle=True`` uses the true remaining time instead of the prediction,
for ablations).
"""

from __future__ import annotations

import math

import numpy as np

from shockwave_agents.base import Agent
from shockwave_agents.options import flag
from shockwave_gym.fair_reference import fluid_shares
from shockwave_gym.interface import pack_for_cluster, predicted_remaining_s
from shockwave_gym.view import ClusterView


class FairShareAgent(Agent):
    name = "fair-share"

    def __init__(self, backfill: bool = True, oracle: bool = False, relative: bool = True):
        self.backfill = flag("backfill", backfill)
        self.relative = flag("relative", relative)
        self.oracle = flag("oracle", oracle)
        self._progress_s = np.zeros(0)
        self._rate = np.ones(0)
        self._finished_s = np.zeros(0)
        self._time_s = 0.0

    def reset(self, view: ClusterView, seed: int | None = None) -> None:
        self._progress_s = np.zeros(view.num_jobs)
        self._rate = np.ones(view.num_jobs)  # each job's latest reference rate (share / gang)
        self._finished_s = np.full(view.num_jobs, np.nan)  # when the reference finished it
        self._time_s = 0.0

    def _work_s(self, view: ClusterView) -> np.ndarray:
        """Each job's estimated total work (seconds at full share)."""
        remaining = view.remaining_s if self.oracle else predicted_remaining_s(view)
        return np.where(view.is_done, view.work_done_s, view.work_done_s + remaining)

    def reference_progress_s(self, view: ClusterView) -> np.ndarray:
        """Each job's work done in the fluid reference up to ``view.time_s`` (advanced from
        the last call, event by event: arrivals and reference completions)."""
        if self._progress_s.size != view.num_jobs:
            self.reset(view)
        work = self._work_s(view)
        arrival = np.asarray(view.arrival_s, dtype=np.float64)
        arrived = np.asarray(view.has_arrived, dtype=bool)
        now = float(view.time_s)
        t = self._time_s
        progress = self._progress_s
        while t < now:
            present = arrived & (arrival <= t) & (progress < work)
            later = arrived & (arrival > t)
            next_arrival = float(arrival[later].min()) if later.any() else math.inf
            ids = np.flatnonzero(present)
            if ids.size == 0:
                t = min(now, next_arrival)
                continue
            rate = fluid_shares(view.gang[ids], view.gpus) / view.gang[ids]
            self._rate[ids] = rate
            self._finished_s[ids] = np.nan  # running in the reference (again, if its estimate grew)
            finish = float(((work[ids] - progress[ids]) / rate).min())
            step = min(now, next_arrival, t + finish) - t
            progress[ids] = np.minimum(progress[ids] + rate * step, work[ids])
            if t + finish <= min(now, next_arrival):  # a reference completion: land exactly on it
                ended = ids[(work[ids] - progress[ids]) / rate <= 1e-9]
                progress[ended] = work[ended]
            t += step
            ended = ids[progress[ids] >= work[ids]]
            self._finished_s[ended] = t
        self._time_s = max(self._time_s, now)
        return progress

    def seconds_behind(self, view: ClusterView) -> np.ndarray:
        """How far each job is behind the reference in time (see the module doc)."""
        missing = (self.reference_progress_s(view) - view.work_done_s) / self._rate
        since = np.where(np.isnan(self._finished_s), 0.0, view.time_s - self._finished_s)
        return since + missing

    def fair_time_estimate_s(self, view: ClusterView) -> np.ndarray:
        """Each job's T_fair as the reference projects it now: its time there so far plus its
        remaining reference work at its current reference rate."""
        ahead = (self._work_s(view) - self._progress_s) / self._rate
        end = np.where(np.isnan(self._finished_s), view.time_s + np.maximum(ahead, 0.0), self._finished_s)
        return np.maximum(end - np.asarray(view.arrival_s, dtype=np.float64), 1e-9)

    def act(self, view: ClusterView) -> np.ndarray:
        behind = self.seconds_behind(view)
        if self.relative:
            behind = behind / self.fair_time_estimate_s(view)
        active = view.active_job_ids
        # active ids are ascending, so a stable sort breaks ties by arrival
        order = active[np.argsort(-behind[active], kind="stable")]
        return pack_for_cluster(order, view, backfill=self.backfill)
