"""Grade a submission on a lab: public cases, plus the instructor-only ones when a kit is given.

:func:`grade_isolated` is what ``shockwave-gym course grade`` runs for each submission: the
submission runs in its own child process (:mod:`shockwave_gym.course.isolation`) that gets the
instances as data and hands back answers; every comparison and every score is computed here,
from those answers, the grader's own cases and the package's baselines.
:func:`grade_object` grades an object in this process (the labs' self-check cells call it on
public cases only). See :mod:`shockwave_gym.course.report` for the scoring.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from shockwave_gym.course import child
from shockwave_gym.course.isolation import Limits, run_isolated
from shockwave_gym.course.kit import hidden_seeds
from shockwave_gym.course.labs import Lab, get_lab
from shockwave_gym.course.report import Criterion, GradeReport
from shockwave_gym.course.submission import SubmissionError, read_submission

_CASES: dict[tuple, list] = {}


def lab_cases(lab: Lab, seeds: Sequence[int] = ()) -> list:
    """The public cases of ``lab`` and the instructor-only ones made from ``seeds`` (built
    once per process: they depend on nothing else)."""
    key = (lab.key, tuple(seeds))
    if key not in _CASES:
        _CASES[key] = lab.module.public_cases() + (lab.module.hidden_cases(seeds) if seeds else [])
    return list(_CASES[key])


def forbidden_names(lab: Lab, code: str) -> list[str]:
    """The names the lab forbids (its ``FORBIDDEN_NAMES``: the package's answer) found in ``code``."""
    return [name for name in lab.module.FORBIDDEN_NAMES if re.search(rf"\b{re.escape(name)}\b", code)]


def private_paths(kit: str | Path | None) -> list[str]:
    """What a submission may not read by path: the kit, the course's sources, and the
    repository's history when the package runs from a source checkout."""
    from shockwave_gym.course.build import default_source

    checkout = Path(__file__).resolve().parents[2] / ".git"
    paths = [default_source()] + ([Path(kit)] if kit is not None else []) + ([checkout] if checkout.exists() else [])
    return [str(path.resolve()) for path in paths]


def grade_answers(lab: Lab, answers, cases: list, *, code: str, label: str, hidden: bool,
                  refused: Sequence[str] = ()) -> GradeReport:
    """The report of ``answers`` (what the submission handed back) on ``cases``. ``refused``
    lists what the submission tried to use that its lab does not give it (the child's guard)."""
    report = GradeReport(f"{lab.number} ({lab.key})", label, [case.name for case in cases], hidden=hidden)
    used = forbidden_names(lab, code)
    if not used and not refused:  # a broken rule voids the task criteria: nothing to measure
        lab.module.grade(answers, cases, report)
    if used:
        detail = f"uses the package's {', '.join(used)}"
    elif refused:
        detail = f"tried to use {refused[0]}, which a lab {lab.number} submission may not use"
    else:
        detail = "does not hand in the package's answer"
    report.add(Criterion("own work", 0, not used and not refused, detail))
    return report.finish(lab.task)


def grade_object(lab_name: str | int, entry, *, seeds: tuple[int, ...] = (), code: str | None = None,
                 label: str | None = None) -> GradeReport:
    """Grade ``entry`` (the lab's function or agent class) in this process on the public
    cases and on the instructor-only cases made from ``seeds``. ``code`` is the submission's
    source, checked for the names each lab forbids; by default it is read from ``entry``.
    For trusted code (a self-check); a class's submissions go through :func:`grade_isolated`."""
    lab = get_lab(lab_name)
    if code is None:
        try:
            code = inspect.getsource(entry)
        except (OSError, TypeError):
            code = ""
    cases = lab_cases(lab, seeds)
    answers = None if forbidden_names(lab, code) else child.answers(lab.key, entry, lab.module.payload(cases))
    return grade_answers(lab, answers, cases, code=code, hidden=bool(seeds),
                         label=label or getattr(entry, "__name__", repr(entry)))


@dataclass
class Outcome:
    """One submission's grade (``report``) or its one-line ``failure``, and what it printed."""

    submission: str
    report: GradeReport | None
    failure: str | None
    output: str = ""
    elapsed_s: float = 0.0

    def to_dict(self, lab: Lab) -> dict:
        if self.report is not None:
            data = self.report.to_dict()
        else:
            data = {"lab": f"{lab.number} ({lab.key})", "submission": self.submission, "criteria": [], "score": 0,
                    "max_score": sum(points for _, points in lab.task)}
        data.update(error=self.failure, output=self.output, elapsed_s=round(self.elapsed_s, 3))
        return data


def grade_isolated(lab_name: str | int, path: str | Path, *, kit: str | Path | None = None,
                   limits: Limits | None = None) -> Outcome:
    """Grade the submission at ``path`` in its own child process; ``kit`` adds the
    instructor-only cases. Never raises for anything the submission does."""
    lab = get_lab(lab_name)
    seeds = hidden_seeds(kit, lab.key) if kit is not None else ()
    origin = str(path)
    try:
        code = read_submission(path)
    except SubmissionError as exc:
        return Outcome(origin, None, str(exc))
    cases = lab_cases(lab, seeds)
    if forbidden_names(lab, code):  # the own-work rule is broken before anything runs
        return Outcome(origin, grade_answers(lab, None, cases, code=code, label=origin, hidden=bool(seeds)), None)
    request = {"lab": lab.key, "code": code, "origin": origin, "entry": lab.entry, "kind": lab.kind,
               "payload": lab.module.payload(cases), "deny_paths": private_paths(kit)}
    run = run_isolated(request, origin, limits or Limits())
    if run.failure is not None:
        return Outcome(origin, None, run.failure, run.output, run.elapsed_s)
    refused = [str(item)[:200] for item in run.document["refused"][:5]]
    report = grade_answers(lab, run.document["answers"], cases, code=code, label=origin, hidden=bool(seeds),
                           refused=refused)
    return Outcome(origin, report, None, run.output, run.elapsed_s)


def grade_submission(lab_name: str | int, path: str | Path, *, kit: str | Path | None = None,
                     limits: Limits | None = None) -> GradeReport:
    """:func:`grade_isolated`, raising :class:`SubmissionError` with the one-line failure."""
    outcome = grade_isolated(lab_name, path, kit=kit, limits=limits)
    if outcome.report is None:
        raise SubmissionError(outcome.failure)
    return outcome.report
