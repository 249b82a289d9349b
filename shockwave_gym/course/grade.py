"""Grade a submission on a lab: public cases, plus the instructor-only ones when a kit is given.

``grade_submission("fairness", "alice.ipynb", kit="notebooks/course")`` runs the file and
grades what it defines; :func:`grade_object` grades an object directly (the labs' self-check
cells call it on public cases only). See :mod:`shockwave_gym.course.report` for the scoring.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

from shockwave_gym.course.kit import hidden_seeds
from shockwave_gym.course.labs import get_lab
from shockwave_gym.course.report import Criterion, GradeReport
from shockwave_gym.course.submission import load_submission


def grade_object(lab_name: str | int, entry, *, seeds: tuple[int, ...] = (), code: str | None = None,
                 label: str | None = None) -> GradeReport:
    """Grade ``entry`` (the lab's function or agent class) on the public cases and on the
    instructor-only cases made from ``seeds``. ``code`` is the submission's source, checked
    for the names each lab forbids (its ``FORBIDDEN_NAMES``: the package's answer to the
    task); by default it is read from ``entry``."""
    lab = get_lab(lab_name)
    if code is None:
        try:
            code = inspect.getsource(entry)
        except (OSError, TypeError):
            code = ""
    cases = lab.module.public_cases() + (lab.module.hidden_cases(seeds) if seeds else [])
    report = GradeReport(f"{lab.number} ({lab.key})", label or getattr(entry, "__name__", repr(entry)),
                         [case.name for case in cases], hidden=bool(seeds))
    used = [name for name in lab.module.FORBIDDEN_NAMES if re.search(rf"\b{re.escape(name)}\b", code)]
    if not used:  # a broken rule voids the task criteria: nothing to measure
        lab.module.grade(entry, cases, report)
    report.add(Criterion("own work", 0, not used,
                         f"uses the package's {', '.join(used)}" if used else "does not hand in the package's answer"))
    return report.finish(lab.task)


def grade_submission(lab_name: str | int, path: str | Path, *, kit: str | Path | None = None) -> GradeReport:
    """Run the submission at ``path`` and grade it; ``kit`` adds the instructor-only cases."""
    lab = get_lab(lab_name)
    seeds = hidden_seeds(kit, lab.key) if kit is not None else ()
    submission = load_submission(path)
    entry = submission.entry(lab.entry, lab.kind)
    return grade_object(lab.key, entry, seeds=seeds, code=submission.code, label=str(path))
