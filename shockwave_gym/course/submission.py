"""A student's submission: a ``.py`` file, or a lab notebook whose cells tagged ``graded``
hold the answer. It is run in a fresh namespace and must define the lab's entry point.

Everything that can go wrong with a submission (no such file, a syntax error, an exception
while it runs, a missing or wrong entry point) is a :class:`SubmissionError`, an
:class:`~shockwave_gym.errors.InputError`: the CLI prints one line naming the file and exits 2.
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass
from pathlib import Path

from shockwave_gym.course.notebook import graded_code, read_notebook
from shockwave_gym.errors import InputError


class SubmissionError(InputError):
    """The submission could not be read or run, or lacks the lab's entry point."""


@dataclass(frozen=True)
class Submission:
    """The code that was graded, where it came from, and what it defines."""

    origin: str
    code: str
    namespace: dict

    def entry(self, name: str, kind: str):
        """The object ``name`` the submission defines; ``kind`` ("a class", "a function") says what it should be."""
        if name not in self.namespace:
            raise SubmissionError(f"{self.origin}: defines no {name!r} ({kind} the lab asks for)")
        value = self.namespace[name]
        if not callable(value):
            raise SubmissionError(f"{self.origin}: {name!r} must be {kind}, got {type(value).__name__}")
        return value


def describe_exception(exc: BaseException) -> str:
    """``"NameError: name 'cp' is not defined"``, with a hint where the usual cause is known."""
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, NameError):
        text += " (the grader runs only the cells tagged 'graded': import or define it there)"
    return text


def _where_it_failed(exc: BaseException, origin: str) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == origin]
    return f" (line {frames[-1].lineno})" if frames else ""


def run_code(code: str, origin: str) -> Submission:
    """Run ``code`` as a module named ``submission``; errors name ``origin`` and the line."""
    try:
        compiled = compile(code, origin, "exec")
    except SyntaxError as exc:
        raise SubmissionError(f"{origin}:{exc.lineno}: syntax error: {exc.msg}") from None
    namespace = {"__name__": "submission"}
    try:
        exec(compiled, namespace)  # noqa: S102 - running the student's code is the point
    except Exception as exc:
        where = _where_it_failed(exc, origin)
        raise SubmissionError(f"{origin}{where}: running the submission raised {describe_exception(exc)}") from None
    return Submission(origin, code, namespace)


def load_submission(path: str | Path) -> Submission:
    """Read and run the submission at ``path`` (``.py``, or ``.ipynb`` with graded cells)."""
    path = Path(path)
    if not path.is_file():
        raise SubmissionError(f"{path}: no such submission file")
    if path.suffix == ".ipynb":
        # a handed-in notebook has no markers left; a source notebook is graded on its solutions
        code = graded_code(read_notebook(path), "instructor", str(path))
    elif path.suffix == ".py":
        try:
            code = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SubmissionError(f"{path}: cannot read: {exc}") from None
    else:
        raise SubmissionError(f"{path}: a submission is a .py file or a lab notebook (.ipynb), got {path.suffix or 'no suffix'!r}")
    return run_code(code, str(path))
