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

import json
import os
import re
import tempfile
from pathlib import Path

from shockwave_gym.errors import InputError
from shockwave_gym.harness.cells import RECORD_FORMAT, Cell

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(text: str) -> str:
    """``text`` reduced to a portable file-name component."""
    return _UNSAFE.sub("_", text).strip("._") or "_"


def write_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) in one step."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_figure_atomic(figure, path: str | Path, **savefig_kwargs) -> None:
    """``figure.savefig`` to ``path`` through a temporary file and ``os.replace``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            figure.savefig(handle, format=path.suffix.lstrip(".") or "png", **savefig_kwargs)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


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
