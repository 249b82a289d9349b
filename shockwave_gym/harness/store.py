"""The output directory: per-cell records for resume, and the tidy tables.

Layout under ``out``::

    cells/<trace>/<agent>/seed<k>-<hash>.json   one record per finished cell
    results.csv   jobs.csv   summary.md          rebuilt at the end of every run
    figures/<trace>/*.png

Every file is written atomically (a temporary file in the same directory, flushed and
fsynced, then ``os.replace``), so an interrupted run leaves either the old file or the new
one, never half of one. The record's name holds the cell's fingerprint, so a run with other
settings never mistakes an old record for its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from shockwave_gym.errors import InputError
from shockwave_gym.harness.cells import RECORD_FORMAT, Cell

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    """``text`` reduced to a portable file-name component."""
    return _UNSAFE.sub("_", text).strip("._") or "_"


@contextlib.contextmanager
def _replacing(path: str | Path, *, binary: bool) -> Iterator[IO]:
    """An open temporary file beside ``path`` that replaces ``path`` when the block ends
    without an exception (and is removed otherwise). Created like any new file, so the
    result gets the usual umask permissions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        text_options = {} if binary else {"encoding": "utf-8", "newline": ""}
        with open(tmp, "xb" if binary else "x", **text_options) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) in one step."""
    with _replacing(path, binary=False) as handle:
        handle.write(text)


def save_figure_atomic(figure, path: str | Path, **savefig_kwargs) -> None:
    """``figure.savefig`` to ``path`` in one step (format from the suffix)."""
    with _replacing(path, binary=True) as handle:
        figure.savefig(handle, format=Path(path).suffix.lstrip(".") or "png", **savefig_kwargs)


class CellStore:
    """Finished-cell records under ``out/cells``."""

    def __init__(self, out: str | Path):
        self.out = Path(out)
        if self.out.exists() and not self.out.is_dir():
            raise InputError(f"--out {self.out}: exists and is not a directory")
        self.out.mkdir(parents=True, exist_ok=True)

    def path_for(self, cell: Cell) -> Path:
        return (
            self.out / "cells" / safe_name(cell.trace.name) / safe_name(cell.agent.label)
            / f"seed{cell.seed}-{cell.key_hash[:16]}.json"
        )

    def load(self, cell: Cell) -> dict | None:
        """The stored record of ``cell``, or ``None`` when absent or unusable."""
        path = self.path_for(cell)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if record.get("key_hash") != cell.key_hash or record.get("key", {}).get("format") != RECORD_FORMAT:
            return None
        return record

    def save(self, cell: Cell, record: dict) -> Path:
        path = self.path_for(cell)
        write_atomic(path, json.dumps(record, allow_nan=False, separators=(",", ":")))
        return path

    def write_text(self, name: str, text: str) -> Path:
        path = self.out / name
        write_atomic(path, text)
        return path
