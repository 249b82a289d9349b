"""A student's submission: a ``.py`` file, or a lab notebook whose cells tagged ``graded``
hold the answer. The grader reads it here (:func:`read_submission`); it runs only in the
grading child (:mod:`shockwave_gym.course.isolation`), or in-process with :func:`run_code`
for a notebook's own self-check and for tests.

Everything that can go wrong with a submission (no such file, a malformed notebook, a syntax
error, an exception while it runs, a missing or wrong entry point, an exit, a signal, a
limit) is a :class:`SubmissionError`, an :class:`~shockwave_gym.errors.InputError`: the CLI
prints one line naming the file and exits 2.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shockwave_gym.course.child import LoadError, describe_exception, run_module
from shockwave_gym.course.notebook import graded_code, read_notebook
from shockwave_gym.errors import InputError

__all__ = ["Submission", "SubmissionError", "describe_exception", "load_submission", "read_submission", "run_code"]


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


def run_code(code: str, origin: str) -> Submission:
    """Run ``code`` in this process as a module named ``submission`` (trusted code only:
    a self-check, a test); errors name ``origin`` and the line."""
    try:
        return Submission(origin, code, run_module(code, origin))
    except LoadError as exc:
        raise SubmissionError(str(exc)) from None


def read_submission(path: str | Path) -> str:
    """The code of the submission at ``path`` (``.py``, or the graded cells of a ``.ipynb``)."""
    path = Path(path)
    if not path.is_file():
        raise SubmissionError(f"{path}: no such submission file")
    if path.suffix == ".ipynb":
        try:
            # a handed-in notebook has no markers left; a source notebook is graded on its solutions
            return graded_code(read_notebook(path), "instructor", str(path))
        except InputError as exc:
            raise SubmissionError(str(exc)) from None
    if path.suffix == ".py":
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SubmissionError(f"{path}: cannot read: {exc}") from None
    raise SubmissionError(f"{path}: a submission is a .py file or a lab notebook (.ipynb), got {path.suffix or 'no suffix'!r}")


def load_submission(path: str | Path) -> Submission:
    """Read and run the submission at ``path`` in this process (trusted code only)."""
    return run_code(read_submission(path), str(path))
