"""Solver chatter never reaches stdout: ``shockwave-gym run --json`` prints one JSON object.

HiGHS prints a banner on stdout the first time a process creates a solver, and Gurobi prints
its licence line ("Restricted license - for non-production use only ...") when its first
environment starts; both come from C code, below Python's ``sys.stdout``. While
:func:`stdout_to_stderr` is active, file descriptor 1 points at stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to stdout (Python or C) to stderr until the block ends."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
