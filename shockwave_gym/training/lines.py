"""Training's progress lines on stderr, and a heartbeat for the stretches without one.

Every line is flushed as it is written, whatever stderr is (a terminal, a pipe, a log
file). While no line has been written for ``every_s`` seconds, :class:`Heartbeat` writes
``[train] <steps>; still <phase> (elapsed <s> s)``, so preparing the environments, the
first steps (which may compile the native env's loops), a long PPO update or an evaluation
never leave a log silent.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

_lock = threading.Lock()
_last_line_s = time.perf_counter()


def log(message: str) -> None:
    """Write one progress line to stderr, flushed."""
    global _last_line_s
    with _lock:
        print(message, file=sys.stderr, flush=True)
        _last_line_s = time.perf_counter()


class Heartbeat:
    """A ``still <phase>`` line whenever no line was logged for ``every_s`` seconds (a
    daemon thread; use as a context manager). ``phase`` is set by the code doing the work;
    ``steps`` (optional) says how far training got."""

    def __init__(self, every_s: float, total_steps: int, phase: str = "preparing"):
        self.every_s, self.total_steps, self.phase = float(every_s), int(total_steps), phase
        self.steps: Callable[[], int] = lambda: 0
        self._start = time.perf_counter()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="train-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        if self.every_s > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopped.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopped.wait(min(1.0, self.every_s)):
            now = time.perf_counter()
            if now - _last_line_s >= self.every_s:
                log(f"[train] {self.steps():,}/{self.total_steps:,} steps; still {self.phase} "
                    f"(elapsed {now - self._start:,.0f} s)")
