"""Solver chatter never reaches stdout: ``shockwave-gym run --json`` prints one JSON object.

HiGHS prints a banner on stdout the first time a process creates a solver, and Gurobi prints
its licence line ("Restricted license - for non-production use only ...") when its first
environment starts; both come from C code, below Python's ``sys.stdout``. Those one-time
banners say nothing about the run, so :func:`banner_silenced` drops them: on stderr they
would land in the middle of progress lines and in every notebook cell that first plans.
Anything else a solver prints (logs, licence errors) goes to stderr through
:func:`stdout_to_stderr`, while file descriptor 1 points there.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def _stdout_fd_to(target_fd: int) -> Iterator[None]:
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(target_fd, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to stdout (Python or C) to stderr until the block ends."""
    with _stdout_fd_to(2):
        yield


@contextmanager
def banner_silenced() -> Iterator[None]:
    """Drop everything written to stdout (Python or C) until the block ends: for a solver's
    one-time banner only, never around a solve."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with _stdout_fd_to(devnull):
            yield
    finally:
        os.close(devnull)
