"""Output files written in one step.

Every file the package writes for a user (CSV, JSON, markdown, figures, cell records) goes
through :func:`replacing`: a temporary file in the same directory, flushed and fsynced, then
``os.replace``. An interrupted run or a full disk leaves either the old file or the new one
under the final name, never half of one. An OS error while writing (no space left, quota,
read-only file system) is raised as an ``OSError`` that names the final path, which the
command line reports on one line with exit status 2.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO


@contextlib.contextmanager
def replacing(path: str | Path, *, binary: bool = False) -> Iterator[IO]:
    """An open temporary file beside ``path`` that replaces ``path`` when the block ends
    without an exception (and is removed otherwise). Created like any new file, so the
    result gets the usual umask permissions."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        text_options = {} if binary else {"encoding": "utf-8", "newline": ""}
        with open(tmp, "xb" if binary else "x", **text_options) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename in (None, str(tmp), tmp):
            raise OSError(exc.errno, f"cannot write: {exc.strerror or exc}", str(path)) from None
        raise


def write_atomic(path: str | Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8) in one step."""
    with replacing(path) as handle:
        handle.write(text)
