"""Error types users see. Every bad-input error derives from :class:`InputError`."""

from __future__ import annotations


class InputError(ValueError):
    """Invalid user input: the CLI reports it and exits with status 2."""


class TraceError(InputError):
    """A trace file is malformed. The message names the file, and the line and field
    where one exists (an empty or blank-only file has neither)::

        traces/bad.trace:3:arrival: must be a finite number >= 0, got '-5'
    """

    def __init__(self, file: str, message: str, line: int | None = None, field: str | None = None):
        self.file, self.line, self.field, self.message = str(file), line, field, message
        where = self.file
        if line is not None:
            where += f":{line}"
            if field is not None:
                where += f":{field}"
        super().__init__(f"{where}: {message}")

    def __reduce__(self):
        return (type(self), (self.file, self.message, self.line, self.field))


class TraceErrors(TraceError):
    """Several problems in one trace (``validate-trace`` reports all of them)."""

    def __init__(self, errors: list[TraceError]):
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.file, first.message, first.line, first.field)
        self.args = ("\n".join(str(e) for e in self.errors),)

    def __str__(self) -> str:
        return self.args[0]

    def __reduce__(self):
        return (type(self), (self.errors,))


class UnsupportedClusterError(InputError):
    """An agent that cannot schedule this cluster (a policy trained on one GPU type, given
    several): the leaderboard marks its cells there *n/a*."""


class InvalidActionError(ValueError):
    """An agent asked the simulator for an impossible round (absent job, over capacity)."""


def install_hint(extra: str) -> str:
    """How to add the optional ``extra`` to an install: shockwave-gym is installed from a clone
    of its repository (it is on no package index), and torch (the ``rl`` extra) must be the
    CPU build, installed first (docs/INSTALL.md)."""
    if extra == "rl":
        by_hand = ("CPU torch first (python scripts/install_cpu_torch.py --python .venv/bin/python "
                   "--version 2.13.0), then pip install -e '.[rl]'")
    else:
        by_hand = f"pip install -e '.[{extra}]'"
    return (f"in your clone of the repository, run make install (every extra, CPU torch first) "
            f"or {by_hand}; docs/INSTALL.md")
