"""Worker processes die with the process that started them.

``kill -9`` of the harness (or ``kill -TERM``, which Python does not handle by default)
gives it no chance to stop its pool, and a worker in the middle of a long cell would run on
as an orphan. So each worker, when it starts, ties its life to its parent's:

- on Linux the kernel kills the worker when its parent dies (``prctl(PR_SET_PDEATHSIG)``),
  even while the worker is inside a long native call that holds the GIL (a MIP solve);
- everywhere, a daemon thread also polls ``os.getppid()`` and exits once the worker has been
  re-parented (the only check on systems without ``prctl``).

multiprocessing's resource tracker lives only while some process holds its pipe open (the
harness and its workers), so it ends by itself once they are gone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
import time

#: From <linux/prctl.h>.
PR_SET_PDEATHSIG = 1
#: How often the watchdog thread looks at the parent pid.
POLL_S = 0.25


def _kill_with_parent_linux() -> bool:
    """Ask the kernel for SIGKILL when the parent dies; ``False`` if that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(POLL_S)
    os._exit(1)  # re-parented: nothing is waiting for this worker's result


def die_with_parent(parent_pid: int) -> None:
    """Call first thing in a worker process started by ``parent_pid``."""
    _kill_with_parent_linux()
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="die-with-parent", daemon=True).start()
