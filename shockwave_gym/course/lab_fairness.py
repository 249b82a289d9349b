"""Lab 2, fairness: grade a scheduler on finish-time fairness, with efficiency as a guard.

The task, credited per case: **worst FTF at most 0.9x the better of FIFO's and Themis's**
(the paper's finish-time-fair baseline), and, on the cases where that holds, **average JCT no
worse than Themis's**. FIFO, the placeholder, meets the first on no case (its ratio to itself
is 1), hence neither, and scores 0 on the task.
"""

from __future__ import annotations

from shockwave_gym.course.agents_lab import (
    bundled_case,
    generated_case,
    metrics_from,
    payload,
    worst_ratio,
)
from shockwave_gym.course.baselines import baseline_metrics
from shockwave_gym.course.report import Criterion, GradeReport, per_case

FAIRNESS_FACTOR = 0.9
#: The task criteria, as (name, points).
TASK = (("fairness", 60), ("efficiency", 40))
PUBLIC_SEEDS = (1, 2, 3)


def public_cases():
    return [bundled_case("teaching-12", 4)] + [generated_case(seed) for seed in PUBLIC_SEEDS]


def hidden_cases(seeds):
    return [generated_case(int(seed)) for seed in seeds]


def _baseline(name: str, case) -> dict:
    return baseline_metrics(name, case)


#: Names whose use means the submission hands in a shipped scheduler instead of its own.
FORBIDDEN_NAMES = ("make_agent", "shockwave_agents.gavel", "shockwave_agents.shockwave", "shockwave_gym.course")


__all__ = ["FAIRNESS_FACTOR", "FORBIDDEN_NAMES", "PUBLIC_SEEDS", "TASK", "grade", "hidden_cases", "payload",
           "public_cases"]


def grade(answers, cases, report: GradeReport) -> None:
    """Add lab 2's criteria to ``report`` for ``answers``: the agent's choices on ``cases``
    (from :func:`shockwave_gym.course.child.agent_answers`), replayed and measured here."""
    metrics, problem = metrics_from(answers, cases)
    report.add(Criterion("valid agent", 0, problem is None,
                         problem or "check_agent accepts it on every case (valid, finishes, deterministic)"))
    if problem is not None:
        return
    fifo = {case.name: _baseline("fifo", case) for case in cases}
    themis = {case.name: _baseline("themis", case) for case in cases}
    ftf = {name: m["worst_ftf"] for name, m in metrics.items()}
    limit = {name: FAIRNESS_FACTOR * min(fifo[name]["worst_ftf"], themis[name]["worst_ftf"]) for name in ftf}
    fair = {name: ftf[name] <= limit[name] for name in ftf}
    report.add(per_case(
        "fairness", 60, fair,
        f"worst FTF <= {FAIRNESS_FACTOR}x min(FIFO's, Themis's)",
        _tightest(ftf, limit, "{:.3f}")))
    jct = {name: m["avg_jct_s"] for name, m in metrics.items()}
    themis_jct = {name: themis[name]["avg_jct_s"] for name in jct}
    # FIFO often beats Themis on JCT: efficiency counts only where the fairness goal is met
    efficient = {name: fair[name] and jct[name] <= themis_jct[name] for name in jct}
    report.add(per_case(
        "efficiency", 40, efficient,
        "average JCT <= Themis's, on the cases where fairness is met",
        _tightest(jct, themis_jct, "{:.0f} s", fair)))


def _tightest(values: dict, limits: dict, form: str, fair: dict | None = None) -> str:
    """The case nearest to (or furthest past) its limit. With ``fair`` (the efficiency
    criterion), a missed case is shown first, and one that is within the limit says that it
    failed because fairness is not met on it."""
    missed = {name: values[name] for name in values if fair is not None and not (fair[name] and values[name] <= limits[name])}
    case, _ = worst_ratio(missed or values, limits)
    text = f"tightest: {case} {form.format(values[case])} vs limit {form.format(limits[case])}"
    if missed and values[case] <= limits[case]:
        text += " (within the limit, but fairness is not met on this case)"
    return text
