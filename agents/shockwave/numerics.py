"""Emulation of the authors' *effective* Shockwave numerics (``numerics="authors"``).

The default (``numerics="faithful"``) plans with the published objective, exactly. The
authors' implementation behaves differently in five ways that do not come from the
published objective but from how their code feeds and solves it (docs/AGENTS.md, "The
authors' numerics"). With ``numerics="authors"`` the planner reproduces them:

1. **Whole epochs only.** Their scheduler is told a job's progress as completed epochs
   (iterations run // iterations per epoch): the share of the current epoch already run is
   invisible. The NSW utility ``(e_j + p_j) / E_j`` therefore uses completed epochs
   (:func:`planner_epochs_done`). A job with few long epochs stays at low utility, on the
   steep first piece of the piecewise-linear log, for its whole first epoch, so every re-plan
   gives it a large marginal gain: their few-epoch jobs run almost at once.
2. **The remaining-time estimate leaves out the current epoch.** Their Dirichlet estimate
   counts the current epoch's batch size as observed and then removes one epoch per observed
   one, so it covers only the epochs *after* the current one; neither the run nor the unrun
   part of the current epoch is counted. Work done is likewise the completed epochs' time.
   Both feed the planner's R_j, the fair-share finish targets F_j (tighter by one epoch over
   the share: most for jobs whose epochs are long against their total) and the
   work-conserving fill order (:func:`whole_epoch_estimates`).
3. **Tiny terms next to a huge priority are invisible to the solver.** The relaxed path
   weights late jobs by ratio^lambda, or ratio^100 with under one round of work left, so a
   plan's objective can be dominated by one job's priority (1e6 .. 1e23 in their runs). A
   solver working to a relative precision cannot see a term much smaller than that.
   :func:`gap_swallows_makespan` tests whether the whole range of the makespan term,
   ``k * max_j R_j``, is below ``authors_rel_gap`` (default 1e-7, the default optimality
   tolerance of HiGHS and Gurobi) times the range of the heaviest job's NSW term,
   ``nsw_coef * w_max * |log(floor)|``; if so the plan is solved without the makespan term
   (:func:`effective_relaxed_instance`). The NSW terms of the other jobs are kept: they only
   break ties among the plans the heavy jobs leave open.
4. **Whole-second profiles** (``authors_profile_rounding``). Their scheduler holds each
   epoch's profiled duration rounded to whole seconds, at least 1 s
   (:func:`profile_durations_s`): a 1.24-1.36 s Recommendation epoch counts as 1 s, so those
   jobs' estimates are 20-26% short and they look late sooner. The estimates, the planner's
   mean epoch duration (:func:`whole_epoch_mean_s`) and the calibration below use these
   durations; the simulation runs at the true ones.
5. **Recalibration against a profile that ran from round 0** (``authors_clock_calibration``,
   :class:`RoundClockCalibration`). Their drift check files a job's throughput measurements
   under the global round counter, so it compares the job with its profile run from the
   start of the simulation, not from its arrival. A late or long-waiting job whose batches
   grow (an accordion or GNS job) is found "slower than profiled" and all its durations are
   scaled up, often 2x or more; its fair-share target then recedes with its projected finish
   and it never gets the relaxed path's priority. This is how their late LM jobs starve.

Everything here is opt-in; the faithful default never calls these functions.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_gym.interface.lengths import believed_total_epochs


def planner_epochs_done(view, job_ids: np.ndarray, numerics: str) -> np.ndarray:
    """Epochs done as the planner's utility sees them: fractional progress (faithful) or
    completed epochs only (authors)."""
    progress = view.epochs_done if numerics == "authors" else view.epoch_progress
    return np.minimum(progress[job_ids], believed_total_epochs(view)[job_ids]).astype(np.float64)


def profile_durations_s(view) -> np.ndarray:
    """(jobs, reachable sizes) epoch durations as the authors' scheduler holds them: the
    throughput table's, rounded to whole seconds and at least 1 s (0 where no size)."""
    from shockwave_gym.interface import predictor_for

    core = predictor_for(view)
    return np.where(core.size_valid, np.maximum(1.0, np.round(core.duration_at_s)), 0.0)


def whole_epoch_estimates(
    view, job_ids: np.ndarray, duration_scale: np.ndarray, durations_s: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The authors' (remaining time, work done) for ``job_ids``, before any noise: the
    expected time of the epochs after the current one only, and the completed epochs' run
    time. ``duration_scale`` is the drift recalibration factor per job (1 = table right);
    ``durations_s`` (jobs, reachable sizes) replaces the throughput table's epoch durations
    (:func:`profile_durations_s`)."""
    from shockwave_gym.interface import predictor_for

    done = view.epochs_done
    if view.oracle:
        # the true time of the epochs after the current one
        left_in_current = (1.0 - view.current_epoch_fraction_done) * view.current_epoch_duration_s
        future = np.maximum(np.asarray(view.remaining_s, dtype=np.float64) - left_in_current, 0.0)
        remaining = future[job_ids] * duration_scale
    elif durations_s is not None:
        weights = predictor_for(view).prior[job_ids] + view.observed_batch_size_counts[job_ids]
        expected = (weights * durations_s[job_ids]).sum(axis=1) / weights.sum(axis=1)
        epochs = believed_total_epochs(view)[job_ids]
        future_epochs = np.maximum(epochs - done[job_ids] - 1, 0)
        remaining = np.where(done[job_ids] >= epochs, 0.0, future_epochs * expected) * duration_scale
    else:
        full_scale = np.ones(view.num_jobs)
        full_scale[job_ids] = duration_scale
        remaining = predictor_for(view).predict(
            done, np.zeros(view.num_jobs), view.current_epoch_duration_s, believed_total_epochs(view),
            view.observed_batch_size_counts, duration_scale=full_scale,
        )[job_ids]
    if durations_s is not None:
        work_done = (view.observed_batch_size_counts[job_ids] * durations_s[job_ids]).sum(axis=1) * duration_scale
    else:
        work_done = np.nan_to_num(view.mean_epoch_duration_s[job_ids]) * done[job_ids] * duration_scale
    return remaining, work_done


def _current_size_slot(core, view, job_ids: np.ndarray) -> np.ndarray:
    """Each job's column in the predictor's (jobs, reachable sizes) tables for its current
    batch size."""
    return np.argmax(core.sizes[job_ids] == np.asarray(view.current_batch_size)[job_ids][:, None], axis=1)


def whole_epoch_mean_s(view, job_ids: np.ndarray, duration_scale: np.ndarray, durations_s: np.ndarray) -> np.ndarray:
    """The planner's mean epoch duration d_j from ``durations_s``: the mean over the completed
    epochs and the current one, as the authors interpolate it."""
    from shockwave_gym.interface import predictor_for

    core = predictor_for(view)
    d = durations_s[job_ids]
    slot = _current_size_slot(core, view, job_ids)
    done = np.asarray(view.epochs_done, dtype=np.float64)[job_ids]
    total = (view.observed_batch_size_counts[job_ids] * d).sum(axis=1) + d[np.arange(job_ids.size), slot]
    return total / (done + 1.0) * duration_scale


def gap_swallows_makespan(instance: PlanningInstance, rel_gap: float) -> bool:
    """True when the whole range of the makespan term, ``k * max_j R_j``, is within
    ``rel_gap`` x the range of the heaviest job's NSW term, ``nsw_coef * w_max *
    |log(floor)|``: a solver working to that relative precision cannot see it."""
    if instance.num_jobs == 0 or rel_gap <= 0 or instance.makespan_coef_per_s <= 0 or instance.nsw_coef <= 0:
        return False
    makespan_range = instance.makespan_coef_per_s * max(float(np.max(instance.remaining_s)), 0.0)
    if makespan_range <= 0:
        return False
    log_heaviest = math.log(instance.nsw_coef * abs(math.log(instance.log_zero_floor))) + float(np.max(instance.weights_log))
    return math.log(makespan_range) <= math.log(rel_gap) + log_heaviest


def effective_relaxed_instance(instance: PlanningInstance, rel_gap: float) -> tuple[PlanningInstance, bool]:
    """(the instance the authors' solver effectively optimises, whether the makespan term
    was dropped) for a relaxed-path instance with its priorities applied."""
    if gap_swallows_makespan(instance, rel_gap):
        return replace(instance, makespan_coef_per_s=0.0), True
    return instance, False



class RoundClockCalibration:
    """The authors' drift recalibration as their simulator feeds it (point 5 of the module
    docstring).

    Their scheduler files each throughput measurement under the *global* round counter and
    compares the samples so measured with the samples the job's profile would have processed
    in the same span, both counted from round 0 of the simulation, not from the job's
    arrival: each measurement's rate is taken to hold since the previous measurement (since
    round 0 for the first). A job that waited, or arrived late, is thus compared with a
    profile that ran ahead of it, past its end if the span is longer than the whole profile
    (then at the profile's last epoch's duration). Where the profile speeds up (an accordion
    or GNS job moving to larger batches), it covers more epochs than the job did, so every
    duration of the job is scaled up by profile / measured when they differ by more than
    ``threshold``; the factor stays until a later comparison drifts again. Inflated durations
    make the job's fair-share finish target recede as fast as its projected finish, so its
    lateness ratio stays near 1 and the relaxed path never gives it priority.

    We cannot read a job's future schedule, so the profile is walked as the scheduler's own
    estimates describe it (``durations_s``, per reachable size): the rest of the current
    epoch, then the remaining epochs at the posterior-mean epoch duration, then the last
    epoch's duration as the mode fixes it in the authors' profiles (the largest batch size
    for accordion and static jobs; the *initial* size for GNS jobs, whose profiled last epoch
    keeps it). Work is counted in epochs (the authors' samples / samples per epoch).
    """

    def __init__(self, view, threshold: float, durations_s: np.ndarray):
        from shockwave_gym.interface import predictor_for

        core = predictor_for(view)
        n = view.num_jobs
        self.threshold = float(threshold)
        self.durations_s = durations_s
        self.key_round = np.zeros(n, dtype=np.int64)  # round of the last measurement
        self.measured_epochs = np.zeros(n)  # since round 0, at each measurement's rate
        self.scale = np.ones(n)
        initial = np.argmax(core.sizes == np.asarray(view.initial_batch_size)[:, None], axis=1)
        largest = np.argmax(np.where(core.size_valid, core.sizes, -1), axis=1)
        gns = np.array([view.spec(j).mode == "gns" for j in range(n)], dtype=bool)
        self.last_epoch_s = durations_s[np.arange(n), np.where(gns, initial, largest)]

    def observe(self, view) -> None:
        """Record a measurement for each job that ran in the round that just ended (filed
        under the current round index, as the authors' completed-round counter), at the rate
        it really ran."""
        ran = np.flatnonzero(view.ran_last_round & view.is_active)
        if ran.size == 0 or view.round_index < 1:
            return
        span_s = (view.round_index - self.key_round[ran]) * float(view.round_s)
        self.measured_epochs[ran] += span_s / np.asarray(view.current_epoch_duration_s)[ran]
        self.key_round[ran] = view.round_index

    def profile_epochs(self, view, job_ids: np.ndarray) -> np.ndarray:
        """Epochs the (estimated) profile of ``job_ids`` covers from round 0 to their last
        measurement."""
        from shockwave_gym.interface import predictor_for

        core = predictor_for(view)
        d = self.durations_s[job_ids]
        counts = view.observed_batch_size_counts[job_ids]
        weights = core.prior[job_ids] + counts
        future_s = (weights * d).sum(axis=1) / weights.sum(axis=1)
        slot = _current_size_slot(core, view, job_ids)
        current_s = d[np.arange(job_ids.size), slot]
        fraction = np.asarray(view.current_epoch_fraction_done)[job_ids]
        progress = np.asarray(view.epoch_progress, dtype=np.float64)[job_ids]
        left = np.asarray(believed_total_epochs(view), dtype=np.float64)[job_ids] - progress
        done_s = (counts * d).sum(axis=1) + fraction * current_s
        span_s = self.key_round[job_ids] * float(view.round_s)
        ahead_s = span_s - done_s
        rest_s = (1.0 - fraction) * current_s
        end_s = rest_s + np.maximum(left - (1.0 - fraction), 0.0) * future_s
        walked = np.where(
            ahead_s <= rest_s, ahead_s / current_s,
            np.where(ahead_s <= end_s, (1.0 - fraction) + (ahead_s - rest_s) / future_s,
                     left + (ahead_s - end_s) / self.last_epoch_s[job_ids]),
        )
        behind = np.divide(progress * span_s, done_s, out=np.zeros_like(span_s), where=done_s > 0)
        return np.where(ahead_s >= 0, progress + walked, behind)

    def update(self, view, job_ids: np.ndarray) -> np.ndarray:
        """Recalibrate ``job_ids`` against their profile walk; return their duration scales."""
        job_ids = np.asarray(job_ids, dtype=np.int64)
        measured = self.measured_epochs[job_ids]
        profile = self.profile_epochs(view, job_ids)
        valid = (measured > 0) & (profile > 0)
        drift = np.zeros(job_ids.size)
        drift[valid] = np.abs(measured[valid] - profile[valid]) / profile[valid]
        recalibrate = valid & (drift > self.threshold)
        self.scale[job_ids[recalibrate]] = profile[recalibrate] / measured[recalibrate]
        return self.scale[job_ids].copy()
