"""Summaries of the per-plan records the Shockwave agent keeps (``planner_stats``)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from shockwave_agents.shockwave.record import PlanPath, PlanRecord

#: Warnings quoted verbatim in the summary (the count is always given).
MAX_QUOTED_WARNINGS = 5


def _distribution(values: list[float]) -> dict:
    if not values:
        return {"total": 0.0, "median": None, "p90": None, "max": None}
    data = np.asarray(values, dtype=np.float64)
    return {
        "total": float(data.sum()),
        "median": float(np.median(data)),
        "p90": float(np.percentile(data, 90)),
        "max": float(data.max()),
    }


def _size(values: list[int]) -> dict:
    return {"mean": float(np.mean(values)) if values else None, "max": int(max(values, default=0))}


def summarise_plans(records: list[PlanRecord]) -> dict:
    """Counts, paths and timing/gap distributions over every plan of an episode.

    Times are seconds of wall clock: ``solve_s`` is the main MIP solves (constrained and
    relaxed), ``rank_s`` the re-ranking solves, ``plan_s`` everything a re-plan took.
    ``gap_abs`` is the proven absolute gap of each main solve (objective units) and
    ``gap_share_of_nsw`` that gap as a share of the plan's NSW (log-utility) term.
    ``solver_fallbacks`` counts solves a licensed solver could not take (HiGHS solved them);
    ``exact_solves`` the counts programs solved without a MIP solver (:mod:`.exact_counts`).
    """
    paths = Counter(r.path for r in records)
    statuses = Counter(r.status.value if r.status is not None else "none" for r in records)
    warnings = [w for r in records for w in r.warnings]
    summary = {
        "plans": len(records),
        "paths": {path.value: paths.get(path, 0) for path in PlanPath},
        "statuses": dict(statuses),
        "limit_hits": int(sum(r.limit_hits for r in records)),
        "solver_fallbacks": int(sum(r.solver_fallbacks for r in records)),
        "exact_solves": int(sum(r.exact_solves for r in records)),
        "jobs": _size([r.jobs for r in records]),
        "variables": _size([r.variables or 0 for r in records]),
        "solve_s": _distribution([r.solve_s for r in records]),
        "build_s": _distribution([r.build_s for r in records]),
        "rank_s": _distribution([r.rank_s for r in records]),
        "plan_s": _distribution([r.total_s for r in records]),
        "gap_abs": _distribution([r.gap for r in records if r.gap is not None]),
        "gap_share_of_nsw": _distribution([r.gap_share_of_nsw for r in records if r.gap_share_of_nsw is not None]),
        "warnings": len(warnings),
        "warning_examples": warnings[:MAX_QUOTED_WARNINGS],
    }
    repaired = [r.packing_repaired for r in records if r.packing_repaired is not None]
    if repaired:  # typed plans only
        summary["repaired_packings"] = int(sum(repaired))
    return summary
