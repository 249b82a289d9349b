"""The Shockwave planning program, built as numpy / scipy.sparse matrices.

One :class:`PlanningInstance` describes a re-plan over the n active jobs and T future rounds
(docs/SEMANTICS.md, "The Shockwave planner"). :func:`build_program` turns it into a mixed-integer
program ``minimise c.v`` subject to ``row_lo <= A v <= row_hi`` and column bounds, with the
variables laid out as

======================  =====================  =========================================
block                   size                   meaning
======================  =====================  =========================================
``x[j, t]``             n * T (binary)         job j runs in future round t
``p[j]``                n                      planned epochs, in [min_epochs, E - e]
``z[j]``                n                      piecewise-linear log utility of job j
``m``                   1                      max remaining time after the plan, in rounds
======================  =====================  =========================================

Rows: capacity per round (sum_j gang_j x[j,t] <= G); planned work fits the planned rounds
(p_j d_j <= round_s sum_t x[j,t] - loss_j x[j,0]); hypograph cuts z_j <= a_i u_j + c_i of the
concave piecewise-linear log (exact, no SOS binaries); and m >= (R_j - p_j d_j) / round_s.

The objective depends on a schedule only through each job's number of rounds (and its
round-0 membership when a restart loss is modelled), so ``form="counts"`` builds the
aggregated program with integer n_j = sum_t x[j,t] (and binary y_j = x[j,0]) under total
capacity ``sum_j gang_j n_j <= G T`` (and round 0's ``sum_j gang_j y_j <= G``). It is a
relaxation of the schedule program with far fewer integers; when its optimal counts can be
packed into rounds (:mod:`.packing`), that packing is optimal for the schedule program too.

The objective (maximised) is ``sum_j nsw_coef w_j z_j - makespan_coef_per_s * round_s * m``.
Coefficients are normalised so the largest is 1 (docs/SEMANTICS.md: ratio^100 priorities overflow a
solver's coefficient range; HiGHS silently drops rows with coefficients >= 1e15), and a span
wider than :data:`DYNAMIC_RANGE` is compressed in log space, keeping their order. :func:`evaluate_plan` computes the exact objective of
any schedule (the best p for a given x is closed-form), used by the greedy plan, by tests
against brute-force enumeration, and for reporting.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

#: Widest ratio between objective coefficients handed to a solver (see normalised_coefficients).
DYNAMIC_RANGE = 1e6
#: Largest absolute matrix or bound value we hand to a solver; larger means a modelling bug.
SAFE_MAGNITUDE = 1e9


class ProgramError(ValueError):
    """The instance cannot be turned into a numerically safe program."""


@dataclass(frozen=True)
class PlanningInstance:
    """Inputs of one re-plan. Per-job arrays have length n, in the order of ``job_ids``.

    ``log_weights`` are natural logs of the priority weights (0 = weight 1), so ratio^100
    priorities never overflow. ``min_epochs`` is the lower bound on planned epochs that the
    finish-time-fairness constraints imply (None: 0). ``round0_loss_s`` is the run time a job
    loses if it runs in the first planned round (restart overhead; None: 0).
    """

    job_ids: np.ndarray
    gang: np.ndarray
    epochs_total: np.ndarray
    epochs_done: np.ndarray
    mean_epoch_s: np.ndarray
    remaining_s: np.ndarray
    gpus: int
    rounds: int
    round_s: float
    nsw_coef: float
    makespan_coef_per_s: float
    log_weights: np.ndarray | None = None
    min_epochs: np.ndarray | None = None
    round0_loss_s: np.ndarray | None = None
    log_breakpoints: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    log_zero_floor: float = 1e-6

    @property
    def num_jobs(self) -> int:
        return int(self.job_ids.size)

    @property
    def max_epochs(self) -> np.ndarray:
        """Upper bound on planned epochs: the epochs left."""
        return np.maximum(self.epochs_total - self.epochs_done, 0.0)

    @property
    def lower_epochs(self) -> np.ndarray:
        return np.zeros(self.num_jobs) if self.min_epochs is None else self.min_epochs

    @property
    def loss_s(self) -> np.ndarray:
        return np.zeros(self.num_jobs) if self.round0_loss_s is None else self.round0_loss_s

    @property
    def weights_log(self) -> np.ndarray:
        return np.zeros(self.num_jobs) if self.log_weights is None else self.log_weights

    def segments(self) -> tuple[np.ndarray, np.ndarray]:
        """Slopes a_i and intercepts c_i of the piecewise-linear log's pieces."""
        points = np.asarray(self.log_breakpoints)
        values = np.log(np.maximum(points, self.log_zero_floor))
        slopes = np.diff(values) / np.diff(points)
        return slopes, values[:-1] - slopes * points[:-1]


def piecewise_log(instance: PlanningInstance, utility: np.ndarray) -> np.ndarray:
    """The piecewise-linear log at ``utility`` (in [0, 1]): the min over the pieces."""
    slopes, intercepts = instance.segments()
    return np.min(slopes[None, :] * utility[:, None] + intercepts[None, :], axis=1)


@dataclass
class PlanValue:
    """The exact objective of a schedule, split into its terms (unscaled, maximised)."""

    objective: float
    nsw_term: float
    makespan_term: float
    planned_epochs: np.ndarray
    max_remaining_s: float
    feasible: bool


def evaluate_plan(instance: PlanningInstance, x: np.ndarray) -> PlanValue:
    """Objective of the 0/1 schedule ``x`` (n, T) with the best planned epochs for it.

    More planned epochs never hurt (they raise the utility and lower the remaining time),
    so p_j = min(E_j - e_j, planned run time / d_j). ``feasible`` is False when capacity or
    a ``min_epochs`` bound is violated.
    """
    x = np.asarray(x, dtype=np.float64).reshape(instance.num_jobs, instance.rounds)
    capacity_ok = bool(np.all(instance.gang @ x <= instance.gpus + 1e-9))
    run_s = instance.round_s * x.sum(axis=1) - instance.loss_s * x[:, 0]
    planned = np.minimum(instance.max_epochs, np.maximum(run_s, 0.0) / instance.mean_epoch_s)
    bounds_ok = bool(np.all(planned >= instance.lower_epochs - 1e-7))
    utility = np.clip((instance.epochs_done + planned) / instance.epochs_total, 0.0, 1.0)
    z = piecewise_log(instance, utility)
    nsw = float(instance.nsw_coef * np.sum(np.exp(instance.weights_log) * z))
    remaining = instance.remaining_s - planned * instance.mean_epoch_s
    max_remaining = max(0.0, float(remaining.max())) if remaining.size else 0.0
    makespan = instance.makespan_coef_per_s * max_remaining
    return PlanValue(nsw - makespan, nsw, makespan, planned, max_remaining, capacity_ok and bounds_ok)


@dataclass
class MipProgram:
    """``minimise c.v`` s.t. ``row_lo <= A v <= row_hi``, ``col_lo <= v <= col_hi``.

    ``integer`` marks integer columns. ``objective_unit`` converts the scaled minimisation
    value back to the instance's maximised objective: ``objective = -value * objective_unit``.
    ``abs_gap`` is the absolute gap in scaled units; ``rel_gap`` a relative gap (0 for the
    planning programs, whose objective is dominated by k * R).
    """

    c: np.ndarray
    A: sp.csc_matrix
    row_lo: np.ndarray
    row_hi: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integer: np.ndarray
    objective_unit: float = 1.0
    abs_gap: float = 1e-6
    rel_gap: float = 0.0
    layout: dict = field(default_factory=dict)

    @property
    def num_cols(self) -> int:
        return int(self.c.size)

    @property
    def num_rows(self) -> int:
        return int(self.row_lo.size)

    def unscaled(self, value: float) -> float:
        return -value * self.objective_unit

    def check_safe(self) -> None:
        """Raise :class:`ProgramError` unless every number is finite and in the safe range."""
        for name, values in (("objective", self.c), ("matrix", self.A.data)):
            if not np.all(np.isfinite(values)) or np.any(np.abs(values) >= SAFE_MAGNITUDE):
                raise ProgramError(f"{name} coefficients outside the solver's safe range")
        for name, values in (("row bounds", np.concatenate([self.row_lo, self.row_hi])),
                             ("column bounds", np.concatenate([self.col_lo, self.col_hi]))):
            finite = values[np.isfinite(values)]
            if np.any(np.isnan(values)) or np.any(np.abs(finite) >= SAFE_MAGNITUDE):
                raise ProgramError(f"{name} outside the solver's safe range")


def normalised_coefficients(log_coefs: np.ndarray, dynamic_range: float = DYNAMIC_RANGE) -> tuple[np.ndarray, float]:
    """Positive coefficients given by their logs, divided by the largest (so the top is 1),
    and the divisor's log.

    If they span more than ``dynamic_range`` (ratio^100 priorities span 1e30 and more), the
    logs below the top are compressed affinely into that range: the order is kept and the
    heaviest terms still dominate, but no coefficient falls below what a solver resolves.
    ``-inf`` logs give 0.
    """
    logs = np.asarray(log_coefs, dtype=np.float64)
    finite = np.isfinite(logs)
    top = float(np.max(logs[finite]))
    shifted = np.where(finite, logs - top, -np.inf)
    low = float(np.min(shifted[finite]))
    limit = math.log(dynamic_range)
    if low < -limit:
        shifted = np.where(finite, shifted * (limit / -low), -np.inf)
    return np.exp(shifted), top


def _objective_coefficients(instance: PlanningInstance) -> tuple[np.ndarray, float, float]:
    """Normalised z coefficients (n,), the m coefficient, and the normalising unit."""
    n = instance.num_jobs
    with np.errstate(divide="ignore"):
        log_z = (math.log(instance.nsw_coef) + instance.weights_log) if instance.nsw_coef > 0 else np.full(n, -np.inf)
        makespan_coef = instance.makespan_coef_per_s * instance.round_s
        log_m = math.log(makespan_coef) if makespan_coef > 0 else -np.inf
    logs = np.append(log_z, log_m)
    if not np.any(np.isfinite(logs)):
        raise ProgramError("the objective has no positive coefficient")
    coefs, log_top = normalised_coefficients(logs)
    return coefs[:n], float(coefs[n]), math.exp(log_top)


def build_program(instance: PlanningInstance, abs_gap: float = 1e-8, form: str = "schedule") -> MipProgram:
    """The planning MIP of ``instance`` (``form`` "schedule": binary x[j,t]; "counts": the
    aggregated relaxation). ``abs_gap`` is the absolute gap in the instance's (unscaled)
    objective units."""
    n, horizon = instance.num_jobs, instance.rounds
    if n == 0:
        raise ProgramError("nothing to plan: no active jobs")
    if form not in ("schedule", "counts"):
        raise ProgramError(f"unknown program form {form!r}")
    round_s = float(instance.round_s)
    d = np.asarray(instance.mean_epoch_s, dtype=np.float64)
    total = np.asarray(instance.epochs_total, dtype=np.float64)
    if np.any(~np.isfinite(d)) or np.any(d <= 0) or np.any(total <= 0):
        raise ProgramError("epoch durations and epoch counts must be positive and finite")
    gang = instance.gang.astype(np.float64)
    loss = instance.loss_s / round_s
    rows, cols, vals, row_hi = [], [], [], []

    # --- the work block: which rounds each job gets ----------------------------------
    if form == "schedule":
        nw = n * horizon
        job_of_w = np.repeat(np.arange(n), horizon)
        round_of_w = np.tile(np.arange(horizon), n)
        w_lo, w_hi = np.zeros(nw), np.ones(nw)
        rows.append(round_of_w)  # capacity of each round
        cols.append(np.arange(nw))
        vals.append(gang[job_of_w])
        row_hi.append(np.full(horizon, float(instance.gpus)))
        progress_coef = -np.ones(nw)
        progress_coef[round_of_w == 0] += loss
        progress_job = job_of_w
        layout = {"form": form, "n": n, "T": horizon}
    else:
        with_round0 = bool(np.any(instance.loss_s > 0))
        nw = 2 * n if with_round0 else n
        w_lo = np.zeros(nw)
        w_hi = np.concatenate([np.full(n, float(horizon)), np.ones(n)]) if with_round0 else np.full(n, float(horizon))
        rows.append(np.zeros(n, dtype=np.int64))  # total capacity
        cols.append(np.arange(n))
        vals.append(gang)
        row_hi.append(np.array([float(instance.gpus * horizon)]))
        progress_coef = -np.ones(n)
        progress_job = np.arange(n)
        if with_round0:
            ys = n + np.arange(n)
            rows += [np.ones(n, dtype=np.int64), 2 + np.arange(n), 2 + np.arange(n),
                     2 + n + np.arange(n), 2 + n + np.arange(n)]
            cols += [ys, ys, np.arange(n), np.arange(n), ys]
            vals += [gang, np.ones(n), -np.ones(n), np.ones(n), -np.ones(n)]
            row_hi += [np.array([float(instance.gpus)]), np.zeros(n), np.full(n, horizon - 1.0)]
            progress_coef = np.concatenate([progress_coef, loss])
            progress_job = np.concatenate([progress_job, np.arange(n)])
        layout = {"form": form, "n": n, "T": horizon, "round0": with_round0}
    r0 = int(sum(h.size for h in row_hi))
    col_p, col_z, col_m = nw, nw + n, nw + 2 * n
    ncols = nw + 2 * n + 1

    # --- planned work fits the planned rounds ----------------------------------------
    rows += [r0 + progress_job, r0 + np.arange(n)]
    cols += [np.arange(progress_job.size), col_p + np.arange(n)]
    vals += [progress_coef, d / round_s]
    row_hi.append(np.zeros(n))
    r1 = r0 + n
    # --- hypograph cuts: z_j - (a_i / E_j) p_j <= c_i + a_i e_j / E_j ---------------
    slopes, intercepts = instance.segments()
    pieces = slopes.size
    cut_rows = r1 + np.arange(n * pieces)
    cut_job = np.repeat(np.arange(n), pieces)
    cut_piece = np.tile(np.arange(pieces), n)
    rows += [cut_rows, cut_rows]
    cols += [col_z + cut_job, col_p + cut_job]
    vals += [np.ones(n * pieces), -slopes[cut_piece] / total[cut_job]]
    row_hi.append(intercepts[cut_piece] + slopes[cut_piece] * instance.epochs_done[cut_job] / total[cut_job])
    r2 = r1 + n * pieces
    # --- max remaining (in rounds): -(d_j / round_s) p_j - m <= -R_j / round_s -------
    rows += [r2 + np.arange(n), r2 + np.arange(n)]
    cols += [col_p + np.arange(n), np.full(n, col_m)]
    vals += [-d / round_s, -np.ones(n)]
    row_hi.append(-instance.remaining_s / round_s)
    nrows = r2 + n

    z_coef, m_coef, unit = _objective_coefficients(instance)
    c = np.zeros(ncols)
    c[col_z:col_z + n] = -z_coef
    c[col_m] = m_coef
    A = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(nrows, ncols))
    integer = np.zeros(ncols, dtype=bool)
    integer[:nw] = True
    layout.update(p=col_p, z=col_z, m=col_m, work=nw)
    program = MipProgram(
        c=c, A=A, row_lo=np.full(nrows, -np.inf), row_hi=np.concatenate(row_hi),
        col_lo=np.concatenate([w_lo, instance.lower_epochs, np.full(n, math.log(instance.log_zero_floor)), [0.0]]),
        col_hi=np.concatenate([w_hi, instance.max_epochs, np.zeros(n), [np.inf]]),
        integer=integer, objective_unit=unit, abs_gap=max(abs_gap / unit, 1e-9), layout=layout,
    )
    program.check_safe()
    return program


def program_vector(instance: PlanningInstance, x: np.ndarray, program: MipProgram) -> np.ndarray:
    """A full column vector of ``program`` (either form) for the schedule ``x`` (warm starts)."""
    x = np.asarray(x, dtype=np.float64).reshape(instance.num_jobs, instance.rounds)
    value = evaluate_plan(instance, x)
    utility = np.clip((instance.epochs_done + value.planned_epochs) / instance.epochs_total, 0.0, 1.0)
    z = np.clip(piecewise_log(instance, utility), math.log(instance.log_zero_floor), 0.0)
    if program.layout["form"] == "schedule":
        work = x.ravel()
    elif program.layout["round0"]:
        work = np.concatenate([x.sum(axis=1), x[:, 0]])
    else:
        work = x.sum(axis=1)
    return np.concatenate([work, value.planned_epochs, z, [value.max_remaining_s / instance.round_s]])


def schedule_from_vector(program: MipProgram, vector: np.ndarray) -> np.ndarray:
    """The (n, T) boolean schedule in a solution vector of a schedule-form program."""
    n, horizon = program.layout["n"], program.layout["T"]
    return np.asarray(vector[: n * horizon]).reshape(n, horizon) > 0.5


def counts_from_vector(program: MipProgram, vector: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """(rounds per job, round-0 membership or None) from a counts-form solution vector."""
    n = program.layout["n"]
    counts = np.round(vector[:n]).astype(np.int64)
    round0 = np.round(vector[n:2 * n]) > 0.5 if program.layout["round0"] else None
    return counts, round0
