"""The homogeneous counts program solved exactly, without a MIP solver.

On one GPU type and without round-0 rows (restart loss not modelled in the program), the
counts program of :mod:`.program` is

    maximise  sum_j w_j z_j - c_m m   over integer n_j in [0, T],
    subject to  sum_j g_j n_j <= G T,

with everything else a function of n: the best planned epochs are p_j = min(hi_j, n_j /
d_j) (d_j the epoch length in rounds; n_j must give at least lo_j), z_j is the piecewise
log at p_j (the program's cuts, capped at 0) and m = max(0, max_j R_j - d_j p_j), the max
remaining time in rounds. ``w`` and ``c_m`` are the program's own normalised coefficients,
so the objective is the one HiGHS minimises, to the last float.

For a fixed makespan level L every job needs at least n_min_j(L) rounds (the fewest whose
remaining time is at most L), and what is left is a knapsack: each further round of job j is
an item of weight g_j whose value is the gain in w_j z_j, and those gains fall round by round
(z is concave in n). Gang sizes that divide each other (1, 2, 4, 8) make that knapsack
exactly solvable in a few sorts (:func:`divisible_knapsack`).

The candidate levels are the remaining times each job can reach. Every level gets an upper
bound from Lagrangian relaxation of the capacity (a few prices, each the LP price of a level
already solved); levels are solved exactly best bound first, and the search stops when no
unsolved level's bound exceeds the best objective by more than the program's absolute gap.
The result is then optimal in the same sense as a MIP solver's ``optimal``; if a level budget
runs out first it is reported as ``feasible`` with the bound reached, and the planner hands the
program to the MIP solver, warm-started from it (:mod:`.planner`).

Anything else (typed programs, round-0 rows, gang sizes that do not divide each other or
exceed G) is not this program: :func:`exact_counts_applies` says so and the MIP solver takes it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from shockwave_agents.shockwave.instance import PlanningInstance
from shockwave_agents.shockwave.limits import fdot
from shockwave_agents.shockwave.mip import MipProgram, ProgramForm
from shockwave_agents.shockwave.program import program_vector
from shockwave_agents.shockwave.results import SolveResult, SolveStatus, check_solution

#: The name results of this module carry in ``SolveResult.solver``.
SOLVER_NAME = "exact-counts"
#: Levels solved exactly before the search gives up and reports the best point as feasible.
MAX_LEVELS = 400
#: A planned-epoch floor lo_j is met by n rounds when n >= d_j lo_j - this (the MIP solvers'
#: feasibility tolerance on the row d_j p_j <= n_j).
_ROUNDS_TOL = 1e-7


def exact_counts_applies(instance: PlanningInstance, program: MipProgram) -> bool:
    """True if ``program`` is the homogeneous counts program this module solves."""
    layout = program.layout
    if layout is None or layout.form is not ProgramForm.COUNTS or layout.round0 or layout.types != 1:
        return False
    if instance.typed or instance.num_jobs != layout.n or instance.rounds != layout.rounds:
        return False
    gang = np.asarray(instance.gang, dtype=np.int64)
    if np.any(gang < 1) or np.any(gang > instance.gpus):
        return False
    sizes = np.unique(gang)
    return bool(np.all(sizes[1:] % sizes[:-1] == 0))


@dataclass(frozen=True)
class JobTables:
    """Per job j and round count n in 0..T (arrays (n_jobs, T + 1)): ``value`` w_j z_j in the
    solver's scaled units (-inf where n gives fewer than lo_j epochs) and ``remaining`` R_j -
    d_j p_j in rounds; ``first`` the fewest rounds that meet lo_j."""

    value: np.ndarray
    remaining: np.ndarray
    first: np.ndarray


def job_tables(instance: PlanningInstance, program: MipProgram) -> JobTables | None:
    """The per-job tables of ``program``, or None if some job can meet its epoch floor with no
    number of rounds up to T (the program is then infeasible, which the MIP solver reports)."""
    n, horizon = instance.num_jobs, instance.rounds
    layout = program.layout
    d_rounds = np.asarray(instance.mean_epoch_s, dtype=np.float64) / float(instance.round_s)
    lo = program.col_lo[layout.p:layout.p + n]
    hi = program.col_hi[layout.p:layout.p + n]
    rounds = np.arange(horizon + 1, dtype=np.float64)
    planned = np.minimum(hi[:, None], rounds[None, :] / d_rounds[:, None])
    meets = rounds[None, :] >= (d_rounds * lo)[:, None] - _ROUNDS_TOL
    if not np.all(meets[:, -1]):
        return None
    first = np.argmax(meets, axis=1)
    planned = np.maximum(planned, lo[:, None])  # only where it meets lo within the tolerance
    total = np.asarray(instance.epochs_total, dtype=np.float64)
    done = np.asarray(instance.epochs_done, dtype=np.float64)
    slopes, intercepts = instance.segments()
    # the program's hypograph rows: z <= c_i + a_i e / E + (a_i / E) p, and z <= 0
    z = np.full(planned.shape, np.inf)
    for a, c in zip(slopes.tolist(), intercepts.tolist(), strict=True):
        z = np.minimum(z, (c + a * done / total)[:, None] + (a / total)[:, None] * planned)
    z = np.minimum(z, 0.0)
    floor = program.col_lo[layout.z:layout.z + n]
    z = np.maximum(z, floor[:, None])  # the cut at zero progress is the floor itself (up to rounding)
    weights = -program.c[layout.z:layout.z + n]
    value = np.where(meets, weights[:, None] * z, -np.inf)
    remaining = (np.asarray(instance.remaining_s, dtype=np.float64) / float(instance.round_s))[:, None] \
        - d_rounds[:, None] * planned
    return JobTables(value, remaining, first)


def divisible_knapsack(values: np.ndarray, weights: np.ndarray, capacity: int) -> np.ndarray:
    """Boolean mask of a most valuable set of items of total weight <= ``capacity``.

    Every value must be > 0 and the distinct weights must divide each other. From the lightest
    weight w up, with w' the next one: the capacity left over modulo w' can hold only items of
    weight w, so the best (C mod w') / w of them are taken; the rest are bundled, best first,
    into groups of w' / w, and each group is one item of weight w'. At the heaviest weight the
    best C / w items (or bundles) are taken. Ties go to the candidate holding the lowest item
    index, so the choice is deterministic.
    """
    values = np.asarray(values, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.int64)
    chosen = np.zeros(values.size, dtype=bool)
    if values.size == 0 or capacity <= 0:
        return chosen
    sizes = np.unique(weights).tolist()
    left = int(capacity)
    # items still undecided, and the candidate (own item or bundle) each belongs to
    bundle_items = np.zeros(0, dtype=np.int64)
    bundle_of_item = np.zeros(0, dtype=np.int64)
    bundle_values, bundle_keys = np.zeros(0), np.zeros(0, dtype=np.int64)
    for rank, size in enumerate(sizes):
        own = np.flatnonzero(weights == size)
        cand_values = np.concatenate([values[own], bundle_values])
        cand_keys = np.concatenate([own, bundle_keys])
        items = np.concatenate([own, bundle_items])
        cand_of_item = np.concatenate([np.arange(own.size), own.size + bundle_of_item])
        order = np.lexsort((cand_keys, -cand_values))
        last = rank == len(sizes) - 1
        take = min((left // size) if last else (left % sizes[rank + 1]) // size, order.size)
        picked = np.zeros(order.size, dtype=bool)
        picked[order[:take]] = True
        chosen[items[picked[cand_of_item]]] = True
        if last:
            break
        left -= take * size
        rest = order[take:]
        position = np.full(order.size, -1, dtype=np.int64)
        position[rest] = np.arange(rest.size) // (sizes[rank + 1] // size)
        alive = position[cand_of_item] >= 0
        bundle_items, bundle_of_item = items[alive], position[cand_of_item[alive]]
        if rest.size:
            starts = np.arange(0, rest.size, sizes[rank + 1] // size)
            bundle_values = np.add.reduceat(cand_values[rest], starts)
            bundle_keys = np.minimum.reduceat(cand_keys[rest], starts)
        else:
            bundle_values, bundle_keys = np.zeros(0), np.zeros(0, dtype=np.int64)
    return chosen


@dataclass
class _Level:
    """The best counts under makespan level L, and the LP price of its capacity."""

    objective: float
    counts: np.ndarray
    price: float


class _Search:
    """Makespan levels, their Lagrangian bounds, and exact solves of single levels."""

    def __init__(self, tables: JobTables, gang: np.ndarray, capacity: int, makespan_coef: float):
        self.tables, self.gang, self.capacity, self.c_m = tables, gang, int(capacity), float(makespan_coef)
        value, remaining, first = tables.value, tables.remaining, tables.first
        n, width = value.shape
        horizon = width - 1
        self.floor_level = max(0.0, float(np.max(remaining[:, -1])))
        # events: job j needs more than r rounds below level remaining[j, r] (r in first..T-1)
        rows, cols = np.nonzero(np.arange(horizon)[None, :] >= first[:, None])
        levels = remaining[rows, cols]
        keep = levels > self.floor_level
        rows, cols, levels = rows[keep], cols[keep], levels[keep]
        order = np.argsort(-levels, kind="stable")
        self.event_job, self.event_rounds, self.event_level = rows[order], cols[order], levels[order]
        # candidate levels, high to low: each distinct event level (the highest forces nothing)
        # and the floor; the optimum's max remaining time is one of them
        self.levels = np.unique(np.append(self.event_level, self.floor_level))[::-1]
        # events active at each level: those strictly above it
        self.active = np.searchsorted(-self.event_level, -self.levels, side="left")
        base_weight = float(np.sum(gang * first))
        weight_steps = np.concatenate([[0.0], np.cumsum(gang[self.event_job].astype(np.float64))])
        self.weight = base_weight + weight_steps[self.active]
        self.feasible = self.weight <= self.capacity + 1e-9
        self.bound = np.full(self.levels.size, np.inf)
        self.solved: dict[int, _Level] = {}

    def minimum_rounds(self, index: int) -> np.ndarray:
        counts = self.tables.first.copy()
        active = self.active[index]
        np.maximum.at(counts, self.event_job[:active], self.event_rounds[:active] + 1)
        return counts

    def add_price(self, price: float) -> None:
        """Tighten every level's bound with the Lagrangian relaxation at capacity price ``price``."""
        value = self.tables.value
        penalised = value - price * self.gang[:, None] * np.arange(value.shape[1])[None, :]
        suffix = np.maximum.accumulate(penalised[:, ::-1], axis=1)[:, ::-1]  # best with at least r rounds
        rows = np.arange(value.shape[0])
        base = float(np.sum(suffix[rows, self.tables.first]))
        steps = suffix[self.event_job, self.event_rounds + 1] - suffix[self.event_job, self.event_rounds]
        cumulative = np.concatenate([[0.0], np.cumsum(steps)])
        bound = price * self.capacity + base + cumulative[self.active] - self.c_m * self.levels
        self.bound = np.minimum(self.bound, bound)

    def solve_level(self, index: int) -> _Level:
        """The best counts with every job's remaining time at most level ``index``'s."""
        tables, gang = self.tables, self.gang
        counts = self.minimum_rounds(index)
        n, width = tables.value.shape
        left = self.capacity - int(np.sum(gang * counts))
        with np.errstate(invalid="ignore"):  # -inf - -inf below a job's first feasible count
            gains = np.diff(tables.value, axis=1)  # gain of round r + 1, at column r
        extra = np.arange(width - 1)[None, :] >= counts[:, None]
        extra &= gains > 0
        jobs, cols = np.nonzero(extra)
        item_gain, item_weight = gains[jobs, cols], gang[jobs]
        chosen = divisible_knapsack(item_gain, item_weight, left)
        counts = counts + np.bincount(jobs[chosen], minlength=n)
        density = item_gain / item_weight
        ranked = np.argsort(-density, kind="stable")
        filled = np.cumsum(item_weight[ranked])
        beyond = np.searchsorted(filled, left, side="right")
        price = float(density[ranked[beyond]]) if beyond < ranked.size else 0.0
        return _Level(self.objective_of(counts), counts, price)

    def objective_of(self, counts: np.ndarray) -> float:
        rows = np.arange(counts.size)
        makespan = max(0.0, float(np.max(self.tables.remaining[rows, counts])))
        return float(np.sum(self.tables.value[rows, counts])) - self.c_m * makespan


def solve_counts_exactly(instance: PlanningInstance, program: MipProgram,
                         max_levels: int = MAX_LEVELS) -> SolveResult:
    """Solve the homogeneous counts ``program`` of ``instance`` (see the module docstring);
    :func:`exact_counts_applies` must hold. The result is checked against the program's rows
    like any solver's."""
    start = time.perf_counter()
    tables = job_tables(instance, program)
    if tables is None:
        return SolveResult(SolveStatus.INFEASIBLE, SOLVER_NAME, time.perf_counter() - start,
                           message="a job cannot reach its planned-epoch floor in the horizon")
    gang = np.asarray(instance.gang, dtype=np.int64)
    search = _Search(tables, gang, instance.gpus * instance.rounds, program.c[program.layout.m])
    if not np.any(search.feasible):
        return SolveResult(SolveStatus.INFEASIBLE, SOLVER_NAME, time.perf_counter() - start,
                           message="the fewest rounds that meet the epoch floors exceed the capacity")
    search.add_price(0.0)
    best: _Level | None = None
    tol = float(program.abs_gap)
    while True:
        open_bound = np.where(search.feasible, search.bound, -np.inf)
        for index in search.solved:
            open_bound[index] = -np.inf
        index = int(np.argmax(open_bound))
        if best is not None and open_bound[index] <= best.objective + tol:
            status, bound = SolveStatus.OPTIMAL, max(best.objective, float(open_bound[index]))
            break
        if len(search.solved) >= max_levels:
            status, bound = SolveStatus.FEASIBLE, float(open_bound[index])
            break
        level = search.solve_level(index)
        search.solved[index] = level
        if best is None or level.objective > best.objective:
            best = level
        search.add_price(level.price)
    schedule = np.arange(instance.rounds)[None, :] < best.counts[:, None]  # any schedule with these counts
    vector = program_vector(instance, schedule, program)
    problem = check_solution(program, vector)
    elapsed = time.perf_counter() - start
    if problem is not None:
        return SolveResult(SolveStatus.ERROR, SOLVER_NAME, elapsed, message=f"exact counts point invalid: {problem}")
    objective = program.unscaled(fdot(program.c, vector))
    bound_unscaled = bound * program.objective_unit
    message = f"{len(search.solved)} of {int(np.sum(search.feasible))} makespan levels solved"
    return SolveResult(status, SOLVER_NAME, elapsed, vector, objective, max(objective, bound_unscaled), message)


__all__ = ["JobTables", "MAX_LEVELS", "SOLVER_NAME", "divisible_knapsack", "exact_counts_applies",
           "job_tables", "solve_counts_exactly"]

