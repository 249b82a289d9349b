"""The Shockwave planning program as sparse matrices, one small function per row block.

Two forms of the same MIP (docs/SEMANTICS.md, "The Shockwave planner"):

- ``ProgramForm.SCHEDULE``: binary x[j, t] per job and round under each round's capacity;
- ``ProgramForm.COUNTS``: the aggregated relaxation, an integer number of rounds n_j per job
  under the total capacity (plus a binary y_j for "runs in round 0" when restart loss is
  modelled). The objective depends on x only through n_j (and y_j), so if the counts can be
  packed into rounds (:mod:`.packing`), that packing is optimal for the schedule program too.

Both share the continuous columns: planned epochs p_j, log utilities z_j and the max
remaining time m (in rounds). The rows, block by block: capacity (:func:`_schedule_work` /
:func:`_counts_work`, and :func:`_round0_rows`), planned work fits the planned rounds
(:func:`_progress_rows`), the hypograph cuts of the piecewise-linear log
(:func:`_hypograph_rows`) and the max-remaining rows (:func:`_remaining_rows`).

The objective (maximised) is ``sum_j nsw_coef w_j z_j - makespan_coef_per_s * round_s * m``,
normalised as :func:`.mip.normalised_coefficients` describes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.mip import (
    DYNAMIC_RANGE,
    MipProgram,
    ProgramError,
    ProgramForm,
    ProgramLayout,
    normalised_coefficients,
)
from shockwave_agents.shockwave.objective import PlanValue, evaluate_plan, piecewise_log

__all__ = [
    "DYNAMIC_RANGE", "MipProgram", "PlanValue", "PlanningInstance", "ProgramError", "ProgramForm",
    "ProgramLayout", "build_program", "counts_from_vector", "evaluate_plan", "normalised_coefficients",
    "piecewise_log", "program_vector", "schedule_from_vector",
]


@dataclass
class _Rows:
    """The program's rows as (row, column, value) triplets and upper bounds, block by block."""

    rows: list[np.ndarray] = field(default_factory=list)
    cols: list[np.ndarray] = field(default_factory=list)
    vals: list[np.ndarray] = field(default_factory=list)
    row_hi: list[np.ndarray] = field(default_factory=list)

    @property
    def count(self) -> int:
        return int(sum(h.size for h in self.row_hi))

    def add(self, entries: list[tuple[np.ndarray, np.ndarray, np.ndarray]], row_hi: list[np.ndarray]) -> None:
        for rows, cols, vals in entries:
            self.rows.append(rows)
            self.cols.append(cols)
            self.vals.append(vals)
        self.row_hi.extend(row_hi)

    def matrix(self, num_cols: int) -> sp.csc_matrix:
        shape = (self.count, num_cols)
        return sp.csc_matrix((np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols))), shape=shape)


@dataclass
class _Work:
    """The work columns: their bounds, and each one's coefficient in its job's progress row."""

    lo: np.ndarray
    hi: np.ndarray
    progress_coef: np.ndarray
    progress_job: np.ndarray
    round0: bool = False

    @property
    def size(self) -> int:
        return int(self.lo.size)


def _schedule_work(instance: PlanningInstance, rows: _Rows) -> _Work:
    """x[j, t] binaries and the capacity of each round: sum_j g_j x[j, t] <= G."""
    n, horizon = instance.num_jobs, instance.rounds
    nw = n * horizon
    job_of_w = np.repeat(np.arange(n), horizon)
    round_of_w = np.tile(np.arange(horizon), n)
    rows.add([(round_of_w, np.arange(nw), instance.gang.astype(np.float64)[job_of_w])],
             [np.full(horizon, float(instance.gpus))])
    progress_coef = -np.ones(nw)
    progress_coef[round_of_w == 0] += instance.loss_s / float(instance.round_s)
    return _Work(np.zeros(nw), np.ones(nw), progress_coef, job_of_w)


def _counts_work(instance: PlanningInstance, rows: _Rows) -> _Work:
    """n_j in [0, T] and the total capacity sum_j g_j n_j <= G T (plus round 0's rows)."""
    n, horizon = instance.num_jobs, instance.rounds
    rows.add([(np.zeros(n, dtype=np.int64), np.arange(n), instance.gang.astype(np.float64))],
             [np.array([float(instance.gpus * horizon)])])
    if not np.any(instance.loss_s > 0):
        return _Work(np.zeros(n), np.full(n, float(horizon)), -np.ones(n), np.arange(n))
    _round0_rows(instance, rows)
    loss = instance.loss_s / float(instance.round_s)
    hi = np.concatenate([np.full(n, float(horizon)), np.ones(n)])
    return _Work(np.zeros(2 * n), hi, np.concatenate([-np.ones(n), loss]),
                 np.concatenate([np.arange(n), np.arange(n)]), round0=True)


def _typed_schedule_work(instance: PlanningInstance, rows: _Rows) -> _Work:
    """x[j, k, t] binaries (column (j K + k) T + t): each type's capacity in each round,
    sum_j g_j x[j, k, t] <= G_k, and at most one type per job and round, sum_k x[j, k, t] <= 1
    (with one type that row is implied by the bounds and left out). A round on type k gives
    ``speed[j, k]`` reference rounds of work; x is fixed to 0 where j cannot run on k."""
    n, kinds, horizon = instance.num_jobs, instance.num_types, instance.rounds
    nw = n * kinds * horizon
    job_of_w = np.repeat(np.arange(n), kinds * horizon)
    type_of_w = np.tile(np.repeat(np.arange(kinds), horizon), n)
    round_of_w = np.tile(np.arange(horizon), n * kinds)
    capacity = np.asarray(instance.type_capacity, dtype=np.float64)
    rows.add([(type_of_w * horizon + round_of_w, np.arange(nw), instance.gang.astype(np.float64)[job_of_w])],
             [np.repeat(capacity, horizon)])
    if kinds > 1:
        start = rows.count
        rows.add([(start + job_of_w * horizon + round_of_w, np.arange(nw), np.ones(nw))], [np.ones(n * horizon)])
    progress_coef = -np.asarray(instance.speed, dtype=np.float64)[job_of_w, type_of_w]
    progress_coef[round_of_w == 0] += instance.loss_s[job_of_w[round_of_w == 0]] / float(instance.round_s)
    hi = np.where(instance.runnable[job_of_w, type_of_w], 1.0, 0.0)
    return _Work(np.zeros(nw), hi, progress_coef, job_of_w)


def _typed_counts_work(instance: PlanningInstance, rows: _Rows) -> _Work:
    """n[j, k] in [0, T] (column j K + k): each type's total capacity sum_j g_j n[j, k] <= G_k T,
    at most T rounds per job over all types, and per type and gang size g the valid cut
    sum_{j: g_j >= g} n[j, k] <= floor(G_k / g) T (at most that many such gangs fit a round),
    added only where it is tighter than the capacity row (g does not divide G_k) and can bind
    (with one type none of the extra rows is added, so the program equals the homogeneous one). No round-0 rows: restart loss is not modelled (see
    :func:`build_program`)."""
    n, kinds, horizon = instance.num_jobs, instance.num_types, instance.rounds
    job_of_w = np.repeat(np.arange(n), kinds)
    type_of_w = np.tile(np.arange(kinds), n)
    gang = instance.gang.astype(np.float64)
    capacity = np.asarray(instance.type_capacity, dtype=np.int64)
    runnable = instance.runnable[job_of_w, type_of_w]
    rows.add([(type_of_w, np.arange(n * kinds), gang[job_of_w])], [capacity.astype(np.float64) * horizon])
    if kinds > 1:
        start = rows.count
        rows.add([(start + job_of_w, np.arange(n * kinds), np.ones(n * kinds))], [np.full(n, float(horizon))])
    for k in range(kinds if kinds > 1 else 0):
        on_k = runnable & (type_of_w == k)
        for size in np.unique(instance.gang[job_of_w[on_k]]).tolist():
            members = np.flatnonzero(on_k & (instance.gang[job_of_w] >= size))
            fit = int(capacity[k]) // int(size)
            if members.size > fit and capacity[k] % size != 0:
                rows.add([(np.full(members.size, rows.count), members, np.ones(members.size))],
                         [np.array([float(fit * horizon)])])
    speed = np.asarray(instance.speed, dtype=np.float64)[job_of_w, type_of_w]
    return _Work(np.zeros(n * kinds), np.where(runnable, float(horizon), 0.0), -speed, job_of_w)


def _round0_rows(instance: PlanningInstance, rows: _Rows) -> None:
    """Round-0 flags y_j (columns n..2n-1): sum_j g_j y_j <= G, y_j <= n_j <= y_j + T - 1."""
    n, start = instance.num_jobs, rows.count
    ys, jobs = n + np.arange(n), np.arange(n)
    gang = instance.gang.astype(np.float64)
    rows.add(
        [(np.full(n, start, dtype=np.int64), ys, gang),
         (start + 1 + jobs, ys, np.ones(n)), (start + 1 + jobs, jobs, -np.ones(n)),
         (start + 1 + n + jobs, jobs, np.ones(n)), (start + 1 + n + jobs, ys, -np.ones(n))],
        [np.array([float(instance.gpus)]), np.zeros(n), np.full(n, instance.rounds - 1.0)],
    )


def _progress_rows(instance: PlanningInstance, rows: _Rows, work: _Work, layout: ProgramLayout) -> None:
    """Planned work fits the planned rounds: (d_j / round_s) p_j <= run rounds of j."""
    n, start = instance.num_jobs, rows.count
    d_rounds = np.asarray(instance.mean_epoch_s, dtype=np.float64) / float(instance.round_s)
    rows.add([(start + work.progress_job, np.arange(work.size), work.progress_coef),
              (start + np.arange(n), layout.p + np.arange(n), d_rounds)], [np.zeros(n)])


def _hypograph_rows(instance: PlanningInstance, rows: _Rows, layout: ProgramLayout) -> None:
    """One cut per job and log piece: z_j - (a_i / E_j) p_j <= c_i + a_i e_j / E_j."""
    n = instance.num_jobs
    total = np.asarray(instance.epochs_total, dtype=np.float64)
    slopes, intercepts = instance.segments()
    pieces = slopes.size
    cut_rows = rows.count + np.arange(n * pieces)
    cut_job = np.repeat(np.arange(n), pieces)
    cut_piece = np.tile(np.arange(pieces), n)
    rows.add([(cut_rows, layout.z + cut_job, np.ones(n * pieces)),
              (cut_rows, layout.p + cut_job, -slopes[cut_piece] / total[cut_job])],
             [intercepts[cut_piece] + slopes[cut_piece] * instance.epochs_done[cut_job] / total[cut_job]])


def _remaining_rows(instance: PlanningInstance, rows: _Rows, layout: ProgramLayout) -> None:
    """The max remaining time in rounds: -(d_j / round_s) p_j - m <= -R_j / round_s."""
    n, start = instance.num_jobs, rows.count
    round_s = float(instance.round_s)
    d = np.asarray(instance.mean_epoch_s, dtype=np.float64)
    rows.add([(start + np.arange(n), layout.p + np.arange(n), -d / round_s),
              (start + np.arange(n), np.full(n, layout.m), -np.ones(n))],
             [-instance.remaining_s / round_s])


def _objective(instance: PlanningInstance, layout: ProgramLayout) -> tuple[np.ndarray, float]:
    """The cost vector (minimised, normalised so the largest coefficient is 1) and its unit."""
    n = instance.num_jobs
    with np.errstate(divide="ignore"):
        log_z = (math.log(instance.nsw_coef) + instance.weights_log) if instance.nsw_coef > 0 else np.full(n, -np.inf)
        makespan_coef = instance.makespan_coef_per_s * instance.round_s
        log_m = math.log(makespan_coef) if makespan_coef > 0 else -np.inf
    logs = np.append(log_z, log_m)
    if not np.any(np.isfinite(logs)):
        raise ProgramError("the objective has no positive coefficient")
    coefs, log_top = normalised_coefficients(logs)
    c = np.zeros(layout.m + 1)
    c[layout.z:layout.z + n] = -coefs[:n]
    c[layout.m] = float(coefs[n])
    return c, math.exp(log_top)


def _checked_form(instance: PlanningInstance, form: ProgramForm | str) -> ProgramForm:
    if instance.num_jobs == 0:
        raise ProgramError("nothing to plan: no active jobs")
    try:
        form = ProgramForm(form)
    except ValueError:
        raise ProgramError(f"unknown program form {form!r}") from None
    d = np.asarray(instance.mean_epoch_s, dtype=np.float64)
    total = np.asarray(instance.epochs_total, dtype=np.float64)
    if np.any(~np.isfinite(d)) or np.any(d <= 0) or np.any(total <= 0):
        raise ProgramError("epoch durations and epoch counts must be positive and finite")
    return form


def build_program(instance: PlanningInstance, abs_gap: float = 1e-8, form: ProgramForm | str = ProgramForm.SCHEDULE) -> MipProgram:
    """The planning MIP of ``instance`` in ``form``. ``abs_gap`` is the absolute gap in the
    instance's (unscaled) objective units."""
    form = _checked_form(instance, form)
    n, rows = instance.num_jobs, _Rows()
    if instance.typed:
        if np.any(instance.loss_s > 0):
            raise ProgramError("restart loss inside the program (restart_in_program) is not modelled on typed clusters")
        work = _typed_schedule_work(instance, rows) if form is ProgramForm.SCHEDULE else _typed_counts_work(instance, rows)
    else:
        work = _schedule_work(instance, rows) if form is ProgramForm.SCHEDULE else _counts_work(instance, rows)
    layout = ProgramLayout(form=form, n=n, rounds=instance.rounds, round0=work.round0, work=work.size,
                           types=instance.num_types)
    _progress_rows(instance, rows, work, layout)
    _hypograph_rows(instance, rows, layout)
    _remaining_rows(instance, rows, layout)
    c, unit = _objective(instance, layout)
    integer = np.zeros(c.size, dtype=bool)
    integer[:work.size] = True
    program = MipProgram(
        c=c, A=rows.matrix(c.size), row_lo=np.full(rows.count, -np.inf), row_hi=np.concatenate(rows.row_hi),
        col_lo=np.concatenate([work.lo, instance.lower_epochs, np.full(n, math.log(instance.log_zero_floor)), [0.0]]),
        col_hi=np.concatenate([work.hi, instance.max_epochs, np.zeros(n), [np.inf]]),
        integer=integer, objective_unit=unit, abs_gap=max(abs_gap / unit, 1e-9), layout=layout,
    )
    program.check_safe()
    return program


def program_vector(instance: PlanningInstance, x: np.ndarray, program: MipProgram) -> np.ndarray:
    """A full column vector of ``program`` (either form) for the schedule ``x`` (warm starts)."""
    x = np.asarray(x, dtype=np.float64).reshape(instance.schedule_shape)
    value = evaluate_plan(instance, x)
    utility = np.clip((instance.epochs_done + value.planned_epochs) / instance.epochs_total, 0.0, 1.0)
    z = np.clip(piecewise_log(instance, utility), math.log(instance.log_zero_floor), 0.0)
    if instance.typed:
        work = x.ravel() if program.layout.form is ProgramForm.SCHEDULE else x.sum(axis=2).ravel()
    elif program.layout.form is ProgramForm.SCHEDULE:
        work = x.ravel()
    elif program.layout.round0:
        work = np.concatenate([x.sum(axis=1), x[:, 0]])
    else:
        work = x.sum(axis=1)
    return np.concatenate([work, value.planned_epochs, z, [value.max_remaining_s / instance.round_s]])


def schedule_from_vector(program: MipProgram, vector: np.ndarray) -> np.ndarray:
    """The (n, T) boolean schedule ((n, K, T) for a typed program) in a solution vector of a
    schedule-form program."""
    n, horizon, kinds = program.layout.n, program.layout.rounds, program.layout.types
    if kinds > 1:
        return np.asarray(vector[: n * kinds * horizon]).reshape(n, kinds, horizon) > 0.5
    return np.asarray(vector[: n * horizon]).reshape(n, horizon) > 0.5


def counts_from_vector(program: MipProgram, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(rounds per job, round-0 membership or None) from a counts-form solution vector; for
    a typed program, rounds per job and type (n, K)."""
    n = program.layout.n
    if program.layout.types > 1:
        kinds = program.layout.types
        return np.round(vector[: n * kinds]).astype(np.int64).reshape(n, kinds), None
    counts = np.round(vector[:n]).astype(np.int64)
    round0 = np.round(vector[n:2 * n]) > 0.5 if program.layout.round0 else None
    return counts, round0
