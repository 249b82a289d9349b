"""Solution markers: one source notebook, two versions (student and instructor).

A lab's source notebook marks what only the instructor may see:

* in a code cell, the lines between ``# BEGIN SOLUTION`` and ``# END SOLUTION``. An optional
  ``# STUDENT`` line inside the block starts the student's placeholder: the lines after it
  replace the solution in the student version, and are dropped from the instructor version.
  Markers may be indented; everything on a marker line is dropped from both versions;
* in a markdown cell, the text between ``<!-- BEGIN SOLUTION -->`` and
  ``<!-- END SOLUTION -->`` (dropped from the student version);
* a whole cell tagged ``solution`` (``metadata.tags``): dropped from the student version.

:func:`split_source` turns one cell's source into both versions and rejects an unbalanced
block with an :class:`~shockwave_gym.errors.InputError` naming the notebook, cell and line.
"""

from __future__ import annotations

from dataclasses import dataclass

from shockwave_gym.errors import InputError

#: Tag of a cell that only the instructor version keeps.
SOLUTION_TAG = "solution"
#: Tag of the cells a lab grades: the submission (student) or the reference (instructor).
GRADED_TAG = "graded"

_CODE = {"begin": "# BEGIN SOLUTION", "student": "# STUDENT", "end": "# END SOLUTION"}
_MARKDOWN = {"begin": "<!-- BEGIN SOLUTION -->", "student": None, "end": "<!-- END SOLUTION -->"}


@dataclass(frozen=True)
class Versions:
    """A cell's source in both versions, and its solution lines (what the student must not see)."""

    student: str
    instructor: str
    solution_lines: tuple[str, ...]


def _marker(line: str, markers: dict) -> str | None:
    stripped = line.strip()
    for kind, text in markers.items():
        if text is not None and stripped == text:
            return kind
    return None


def split_source(source: str, cell_type: str, where: str) -> Versions:
    """Both versions of one cell's ``source``; ``where`` (``"lab.ipynb cell 7"``) names it in errors."""
    markers = _CODE if cell_type == "code" else _MARKDOWN
    student, instructor, solution = [], [], []
    state = "plain"  # plain | solution | placeholder
    begun_at = 0
    for number, line in enumerate(source.splitlines(keepends=True), start=1):
        kind = _marker(line, markers)
        if kind == "begin":
            if state != "plain":
                raise InputError(f"{where}, line {number}: BEGIN SOLUTION inside the block opened at line {begun_at}")
            state, begun_at = "solution", number
        elif kind == "student":
            if state != "solution":
                raise InputError(f"{where}, line {number}: STUDENT outside a BEGIN SOLUTION block")
            state = "placeholder"
        elif kind == "end":
            if state == "plain":
                raise InputError(f"{where}, line {number}: END SOLUTION without BEGIN SOLUTION")
            state = "plain"
        elif state == "plain":
            student.append(line)
            instructor.append(line)
        elif state == "solution":
            instructor.append(line)
            solution.append(line.strip())
        else:
            student.append(line)
    if state != "plain":
        raise InputError(f"{where}, line {begun_at}: BEGIN SOLUTION is never closed by END SOLUTION")
    return Versions("".join(student), "".join(instructor), tuple(s for s in solution if s))


def has_markers(source: str) -> bool:
    """Whether any marker text (either cell type's) appears in ``source``."""
    texts = [t for markers in (_CODE, _MARKDOWN) for t in markers.values() if t]
    return any(text in source for text in texts)
