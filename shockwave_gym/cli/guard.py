"""The one error policy of every ``shockwave-gym`` subcommand.

* A bad input (an :class:`~shockwave_gym.errors.InputError`, a user file that cannot be read
  or written, a bad flag) prints ONE line on stderr, naming the file (and line and field) or
  the flag, and exits with status 2.
* Anything else is a bug: Python's traceback and status 1.
* With ``SHOCKWAVE_GYM_DEBUG=1`` in the environment, bad inputs show their traceback too
  (still status 2), which helps when the one line is not enough.

Output paths are checked here too (:func:`check_output_file`, :func:`check_output_dir`), so
that a command refuses an unwritable output before it spends minutes on an episode.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from shockwave_gym.errors import InputError

#: Environment variable that makes input errors show their traceback.
DEBUG_ENV = "SHOCKWAVE_GYM_DEBUG"
PROG = "shockwave-gym"


class OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose errors are one stderr line (no usage block) and status 2."""

    def error(self, message: str):  # noqa: D102 - argparse hook
        print(f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(2)


def ascii_int(text: str) -> int:
    """argparse type: a whole number in ASCII digits (``int()`` would read "٤" as 4)."""
    from shockwave_gym.ascii_numbers import parse_int

    try:
        return parse_int(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def ascii_float(text: str) -> float:
    """argparse type: a number in ASCII digits (``float()`` would read "３２" as 32.0)."""
    from shockwave_gym.ascii_numbers import parse_float

    try:
        return parse_float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def seconds(text: str) -> float:
    """argparse type: a finite number of seconds >= 0, in ASCII digits."""
    value = ascii_float(text)
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds >= 0, got {text!r}")
    return value


def one_line(text: str) -> str:
    """``text`` on one line: later lines are joined with ``"; "``."""
    parts = [part.strip() for part in str(text).splitlines() if part.strip()]
    return "; ".join(parts) if parts else str(text).strip()


def debugging() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip() not in ("", "0")


def input_error_message(exc: BaseException) -> str | None:
    """The one line to print if ``exc`` is a user-input error, else ``None`` (a bug)."""
    if isinstance(exc, InputError):
        return one_line(str(exc))
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, OverflowError):  # a number no check caught: still one line, not a traceback
        return f"a number is out of range ({exc})"
    return None


def run_guarded(func: Callable[[argparse.Namespace], int | None], args: argparse.Namespace) -> int:
    """Run a subcommand under the error policy above and return its exit status."""
    try:
        return int(func(args) or 0)
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        message = input_error_message(exc)
        if message is None:
            raise
        if debugging():
            traceback.print_exc()
        print(f"{PROG}: error: {message}", file=sys.stderr)
        return 2


def _probe_dir(directory: Path, what: str) -> None:
    if not directory.is_dir():
        raise InputError(f"{what}: {directory} is not a directory")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise InputError(f"{what}: directory {directory} is not writable")


def _named_path(path: str | os.PathLike, flag: str) -> tuple[Path, str]:
    """``(Path, "FLAG PATH")`` for an output path given by ``flag``; an empty path is refused."""
    if str(path).strip() == "":
        raise InputError(f"{flag}: empty path")
    return Path(path), f"{flag} {path}"


def check_output_file(path: str | os.PathLike | None, flag: str) -> None:
    """Refuse ``path`` (given by ``flag``) unless a file can be written there; leaves no trace."""
    if path is None:
        return
    target, what = _named_path(path, flag)
    if target.is_dir():
        raise InputError(f"{what}: is a directory")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.exists():
        raise InputError(f"{what}: directory {parent} does not exist")
    _probe_dir(parent, what)
    try:
        if target.exists():
            with open(target, "ab"):
                pass
        else:
            with open(target, "xb"):
                pass
            target.unlink()
    except OSError as exc:
        raise InputError(f"{what}: cannot write: {exc.strerror or exc}") from None


def check_output_dir(path: str | os.PathLike | None, flag: str) -> None:
    """Refuse directory ``path`` unless it exists and is writable or can be created."""
    if path is None:
        return
    target, what = _named_path(path, flag)
    if target.exists() and not target.is_dir():
        raise InputError(f"{what}: exists and is not a directory")
    existing = target
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise InputError(f"{what}: {existing} is a file, not a directory")
    _probe_dir(existing if str(existing) else Path("."), what)
