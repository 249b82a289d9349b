"""The output directory: per-cell records for resume, and the tidy tables.

Layout under ``out``::

    cells/<trace>/<agent>/seed<k>-<hash>.json   one record per finished cell
    results.csv   jobs.csv   summary.md          rebuilt at the end of every run
    figures/<trace>/*.png
    .lock                                        held by the run using the directory

Every file is written atomically (a temporary file in the same directory, flushed and
fsynced, then ``os.replace``), so an interrupted run leaves either the old file or the new
one, never half of one. The record's name holds the cell's fingerprint, so a run with other
settings never mistakes an old record for its own; a record found there is checked
(:mod:`~.validate`) before a resumed run reuses it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

from shockwave_gym.errors import InputError
from shockwave_gym.files import replacing, write_atomic
from shockwave_gym.harness.cells import Cell
from shockwave_gym.harness.validate import record_problem

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

#: The lock file under ``out`` (see :meth:`CellStore.locked`).
LOCK_NAME = ".lock"

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    """``text`` reduced to a portable file-name component."""
    return _UNSAFE.sub("_", text).strip("._") or "_"


def save_figure_atomic(figure, path: str | Path, **savefig_kwargs) -> None:
    """``figure.savefig`` to ``path`` in one step (format from the suffix)."""
    with replacing(path, binary=True) as handle:
        figure.savefig(handle, format=Path(path).suffix.lstrip(".") or "png", **savefig_kwargs)


def _lock_holder(path: Path) -> str:
    """The pid written by the process holding the lock (it writes it just after locking)."""
    for _ in range(50):
        with contextlib.suppress(OSError):
            text = path.read_text(encoding="ascii", errors="replace").strip()
            if text.isdigit():
                return text
        time.sleep(0.01)
    return "unknown"


class DamagedRecord(Exception):
    """A stored record that a resumed run must not trust; ``path`` names its file."""

    def __init__(self, path: Path, problem: str):
        self.path, self.problem = path, problem
        super().__init__(f"{path}: {problem}")


class OutLocked(InputError):
    """Another process is using the output directory."""


class CellStore:
    """Finished-cell records under ``out/cells``."""

    def __init__(self, out: str | Path):
        self.out = Path(out)
        if self.out.exists() and not self.out.is_dir():
            raise InputError(f"--out {self.out}: exists and is not a directory")
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError(f"--out {self.out}: cannot create the directory ({exc.strerror or exc})") from None

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the directory for the block: a second run on the same ``out`` fails at once
        with :class:`OutLocked` naming this process, instead of redoing the same cells and
        overwriting the tables. The lock (``flock`` on ``out/.lock``) dies with the process
        that holds it, however it ends; worker processes do not inherit it."""
        if fcntl is None:  # not POSIX: no lock
            yield
            return
        path = self.out / LOCK_NAME
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise InputError(f"--out {self.out}: cannot write there ({exc.strerror or exc})") from None
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise OutLocked(
                    f"--out {self.out}: in use by another compare run (pid {_lock_holder(path)}); "
                    "wait for it to finish or choose another --out"
                ) from None
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
            yield
        finally:
            os.close(fd)

    def path_for(self, cell: Cell) -> Path:
        return (
            self.out / "cells" / safe_name(cell.trace.name) / safe_name(cell.agent.label)
            / f"seed{cell.seed}-{cell.key_hash[:16]}.json"
        )

    def load(self, cell: Cell) -> dict | None:
        """The stored record of ``cell``; ``None`` when there is none. Raises
        :class:`DamagedRecord` when a file is there but cannot be reused (unreadable, not
        JSON, not a whole record, or the record of another cell)."""
        path = self.path_for(cell)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise DamagedRecord(path, f"unreadable ({exc.__class__.__name__}: {exc})") from None
        try:
            record = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, and over-deep nesting
            raise DamagedRecord(path, f"not valid JSON ({exc})") from None
        except RecursionError:
            raise DamagedRecord(path, "not valid JSON (nested too deeply)") from None
        problem = record_problem(record, cell)
        if problem:
            raise DamagedRecord(path, problem)
        return record

    def save(self, cell: Cell, record: dict) -> Path:
        path = self.path_for(cell)
        write_atomic(path, json.dumps(record, allow_nan=False, separators=(",", ":")))
        return path

    def write_text(self, name: str, text: str) -> Path:
        path = self.out / name
        write_atomic(path, text)
        return path
