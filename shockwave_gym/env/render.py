"""The env's ANSI rendering: a text table of the current round.

``rgb_array`` rendering draws the episode's Gantt chart (:mod:`shockwave_gym.gantt`).
"""

from __future__ import annotations

import numpy as np

from shockwave_gym.interface.ftf import ftf_estimate
from shockwave_gym.interface.lengths import believed_total_epochs
from shockwave_gym.interface.predictor import predicted_remaining_s
from shockwave_gym.view import ClusterView


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:6.2f}h"


def ansi_table(view: ClusterView, slots, *, last_round=None, metrics: dict | None = None, picked=None,
               picked_types=None) -> str:
    """A text table of the state ``view`` shows: one row per slotted job, then the queue.

    ``last_round`` (a RoundRecord) adds a line on the round that just ran; ``metrics`` (the
    core's dict) adds a summary and a per-job table, used once the episode has ended. On a
    heterogeneous cluster the header gives the GPUs per type, ``last`` the type each job ran
    on, and ``picked_types`` (type index per slot, -1 unpicked) the type of each pick.
    """
    typed = view.heterogeneous
    names = view.cluster.types
    gpus = f"{view.cluster}" if typed else f"{view.gpus}"
    lines = [
        f"round {view.round_index:>4}  t={view.time_s:>9.0f}s  GPUs {gpus}  "
        f"active {view.num_active}  queued {slots.queue.size}  done {int(view.is_done.sum())}/{view.num_jobs}"
    ]
    if last_round is not None:
        ran = " ".join(str(int(j)) for j in last_round.job_ids) or "-"
        lines.append(
            f"last round {last_round.index}: {last_round.start_s:.0f}-{last_round.end_s:.0f}s, "
            f"{last_round.gpus_busy}/{view.gpus} GPUs busy, ran [{ran}], "
            f"completed [{' '.join(str(int(j)) for j in last_round.completed_ids) or '-'}]"
        )
    valid = np.flatnonzero(slots.slot_job >= 0)
    if valid.size:
        ids = slots.slot_job[valid]
        rho = ftf_estimate(view, ids)
        remaining_s = predicted_remaining_s(view)
        total = _total_epochs(view)
        lines.append(
            f"{'slot':>4} {'job':>4} {'model':<15} {'gang':>4} {'batch':>6} {'epochs':>11} "
            f"{'pred.rem':>8} {'age':>7} {'rho^':>5} {'last':>4}" + (" pick" if picked is not None else "")
        )
        for slot, job, r in zip(valid.tolist(), ids.tolist(), rho.tolist(), strict=True):
            spec = view.spec(job)
            epochs = f"{view.epoch_progress[job]:.1f}/{total[job]}"
            row = (
                f"{slot:>4} {job:>4} {spec.model:<15} {spec.gang:>4} {int(view.current_batch_size[job]):>6} "
                f"{epochs:>11} {_hours(remaining_s[job]):>8} "
                f"{_hours(view.time_s - view.arrival_s[job]):>7} {r:>5.2f} "
                f"{_ran(view, job, names) if typed else ('y' if view.ran_last_round[job] else '.'):>4}"
            )
            if picked is not None:
                if typed and picked_types is not None:  # the type of the pick, instead of *
                    t = int(picked_types[slot])
                    row += f" {names[t] if t >= 0 else '.':>4}"
                else:
                    row += f" {'*' if picked[slot] else '.':>4}"
            lines.append(row)
    if slots.queue.size:
        lines.append("queue (arrival order): " + " ".join(str(int(j)) for j in slots.queue))
    if metrics is not None:
        lines.append(_metrics_line(metrics))
        lines.extend(_finished_jobs(view))
    return "\n".join(lines) + "\n"


def _total_epochs(view: ClusterView) -> list[str]:
    """Each job's epochs as the table shows them: the trace's in the ``exact`` regime, else
    the believed total given the progress, marked ``~`` (the true length stays hidden)."""
    if view.length_regime == "exact":
        return [str(int(n)) for n in view.num_epochs]
    return [f"~{n:.0f}" for n in believed_total_epochs(view)]


def _ran(view: ClusterView, job: int, names: tuple[str, ...]) -> str:
    """The type ``job`` ran on last round, or ``.``."""
    last = int(view.last_type[job])
    return names[last] if last >= 0 else "."


def _metrics_line(metrics: dict) -> str:
    def fmt(key: str, scale: float = 1.0, spec: str = ".0f") -> str:
        value = metrics.get(key)
        return "n/a" if value is None or value != value else format(value * scale, spec)

    return (
        f"makespan {fmt('makespan_s')}s  avg JCT {fmt('avg_jct_s')}s  mean ρ {fmt('rho_mean', spec='.2f')}  "
        f"p95 ρ {fmt('rho_p95', spec='.2f')}  worst FTF (paper) {fmt('worst_ftf', spec='.2f')}  "
        f"unfair {fmt('unfair_fraction', 100, '.1f')}%  utilization {fmt('utilization', 100, '.1f')}%  "
        f"rounds {metrics.get('rounds')}"
    )


def _finished_jobs(view: ClusterView) -> list[str]:
    done = np.flatnonzero(view.is_done)
    if done.size == 0:
        return []
    rows = [f"{'job':>4} {'model':<15} {'gang':>4} {'arrival':>8} {'finish':>8} {'JCT':>8} {'rounds':>6}"]
    for job in done.tolist():
        spec = view.spec(job)
        rows.append(
            f"{job:>4} {spec.model:<15} {spec.gang:>4} {view.arrival_s[job]:>7.0f}s "
            f"{view.completion_s[job]:>7.0f}s {view.completion_s[job] - view.arrival_s[job]:>7.0f}s "
            f"{int(view.rounds_run[job]):>6}"
        )
    return rows
