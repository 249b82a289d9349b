"""Summaries of the per-plan records the Shockwave agent keeps (``planner_stats``)."""

from __future__ import annotations

from collections import Counter

import numpy as np

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


def summarise_plans(records: list[dict]) -> dict:
    """Counts, paths and timing/gap distributions over every plan of an episode.

    Times are seconds of wall clock: ``solve_s`` is the main MIP solves (constrained and
    relaxed), ``rank_s`` the re-ranking solves, ``plan_s`` everything a re-plan took.
    ``gap_abs`` is the proven absolute gap of each main solve (objective units) and
    ``gap_share_of_nsw`` that gap as a share of the plan's NSW (log-utility) term.
    """
    paths = Counter(r.get("path", "unknown") for r in records)
    gaps = [r["gap"] for r in records if r.get("gap") is not None]
    shares = [r["gap_share_of_nsw"] for r in records if r.get("gap_share_of_nsw") is not None]
    warnings = [w for r in records for w in r.get("warnings", [])]
    statuses = Counter(r.get("status", "none") for r in records)
    return {
        "plans": len(records),
        "paths": {name: paths.get(name, 0) for name in ("feasible", "relaxed", "fallback")},
        "statuses": dict(statuses),
        "time_limit_hits": int(sum(r.get("time_limit_hits", 0) for r in records)),
        "jobs": {"mean": float(np.mean([r["jobs"] for r in records])) if records else None,
                 "max": int(max((r["jobs"] for r in records), default=0))},
        "variables": {"mean": float(np.mean([r.get("variables", 0) for r in records])) if records else None,
                      "max": int(max((r.get("variables", 0) for r in records), default=0))},
        "solve_s": _distribution([r["solve_s"] for r in records]),
        "build_s": _distribution([r["build_s"] for r in records]),
        "rank_s": _distribution([r["rank_s"] for r in records]),
        "plan_s": _distribution([r["total_s"] for r in records]),
        "gap_abs": _distribution(gaps),
        "gap_share_of_nsw": _distribution(shares),
        "warnings": len(warnings),
        "warning_examples": warnings[:MAX_QUOTED_WARNINGS],
    }
