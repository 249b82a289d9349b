"""What one re-plan did: the path it took and every step's status, as a typed record.

:class:`PlanRecord` is kept per plan by the agent (``plan_records``) and summarised into
``planner_stats`` (:mod:`.stats`); :meth:`PlanRecord.as_dict` is its JSON form.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field

import numpy as np

from shockwave_agents.shockwave.mip import ProgramForm
from shockwave_agents.shockwave.results import SolveStatus


class PlanPath(enum.StrEnum):
    """Which program the plan came from.

    ``CONSTRAINED``: the program with the finish-time-fairness constraints had a solution.
    ``RELAXED``: it did not (or was not tried), and the relaxed program with priorities did.
    ``FALLBACK``: no solver produced a plan; the greedy plan was used.
    """

    CONSTRAINED = "constrained"
    RELAXED = "relaxed"
    FALLBACK = "fallback"


@dataclass
class PlanRecord:
    """One re-plan. Times are seconds of wall clock; objectives are the instance's unscaled,
    maximised units (:func:`~.objective.evaluate_plan`).

    ``constrained_skipped`` says why the constrained program was not even built (None: it was
    tried, and ``constrained_status`` is how its last solve ended). ``status`` is the last
    main solve's status, ``form`` the program form that produced (or failed to produce) the
    plan. ``gap`` / ``bound`` are the proven absolute gap and bound of the main solve that
    produced the plan; ``gap_share_of_nsw`` is that gap as a share of the NSW term.
    ``solver_fallbacks`` counts solves a licensed solver could not take, solved by HiGHS.
    ``exact_solves`` counts counts programs solved by :mod:`.exact_counts` (included in
    ``solves``). ``packing_repaired``: a typed plan whose counts did not pack, packed with repair (None:
    homogeneous, or packed as solved).
    """

    jobs: int
    solver: str
    path: PlanPath = PlanPath.FALLBACK
    round: int | None = None
    time_s: float | None = None
    warnings: list[str] = field(default_factory=list)
    solves: int = 0
    solve_s: float = 0.0
    build_s: float = 0.0
    rank_s: float = 0.0
    total_s: float = 0.0
    limit_hits: int = 0
    solver_fallbacks: int = 0
    exact_solves: int = 0
    constrained_skipped: str | None = None
    constrained_status: SolveStatus | None = None
    relaxed_status: SolveStatus | None = None
    status: SolveStatus | None = None
    rank_status: SolveStatus | None = None
    rank_source: str | None = None
    form: ProgramForm | None = None
    late_jobs: int | None = None
    max_ratio: float | None = None
    variables: int | None = None
    counts_variables: int | None = None
    greedy_objective: float | None = None
    gap: float | None = None
    bound: float | None = None
    gap_share_of_nsw: float | None = None
    objective: float | None = None
    nsw_term: float | None = None
    makespan_term: float | None = None
    packing_repaired: bool | None = None

    def as_dict(self) -> dict:
        """Plain JSON-ready values: enums as their strings, unset fields left out."""
        out = {}
        for key, value in asdict(self).items():
            if value is None:
                continue
            out[key] = value.value if isinstance(value, enum.Enum) else value
        return out


@dataclass
class PlanOutcome:
    """The plan (job ids per future round) and what it took to make it; for a typed plan,
    ``types`` gives each of those jobs' type index, round by round (None: homogeneous)."""

    rounds: list[np.ndarray]
    record: PlanRecord
    types: list[np.ndarray] | None = None
