"""Progress of an evaluation: a live rich bar on a terminal, plain lines otherwise.

Plain lines (logs, pipes such as ``make demo | tee``, CI, notebooks) go to stderr, flushed one
by one: a line when the run starts, one per finished cell, and while no cell finishes a
``still running`` line every :data:`HEARTBEAT_S` seconds, so a long first cell (Shockwave's
run first: the longest cells start first) never leaves the log silent.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

#: Seconds without a plain progress line after which a ``still running`` line is printed.
HEARTBEAT_S = 30.0


class Progress:
    """Reports cells as they finish. Use as a context manager.

    ``enabled=None`` chooses from the stream: rich on a terminal, plain lines elsewhere
    (logs, CI, notebooks capture). ``enabled=False`` prints nothing.
    """

    def __init__(self, total: int, skipped: int = 0, *, enabled: bool | None = None, stream: TextIO | None = None,
                 heartbeat_s: float = HEARTBEAT_S):
        self.total, self.done = total, skipped
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = enabled is False
        self.live = not self.quiet and enabled is None and self.stream.isatty()
        self.heartbeat_s = heartbeat_s
        self._start = time.perf_counter()
        self._last_line = self._start
        self._rich = None
        self._task = None
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._beat: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.live:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            self._rich = RichProgress(
                TextColumn("[bold]cells"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.description}"), console=Console(file=self.stream), transient=False,
            )
            self._rich.start()
            self._task = self._rich.add_task("", total=self.total, completed=self.done)
        elif not self.quiet and self.heartbeat_s > 0:
            self._beat = threading.Thread(target=self._heartbeat, name="progress-heartbeat", daemon=True)
            self._beat.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopped.set()
        if self._beat is not None:
            self._beat.join()
        if self._rich is not None:
            self._rich.stop()

    def _line(self, text: str) -> None:
        with self._lock:
            print(text, file=self.stream, flush=True)
            self._last_line = time.perf_counter()

    def _heartbeat(self) -> None:
        while not self._stopped.wait(min(1.0, self.heartbeat_s)):
            now = time.perf_counter()
            if now - self._last_line >= self.heartbeat_s and self.done < self.total:
                self._line(f"[{self.done}/{self.total}] still running: {self.total - self.done} cell(s) left "
                           f"(elapsed {now - self._start:.1f} s)")

    def note(self, message: str) -> None:
        if self.quiet:
            return
        if self._rich is not None:
            self._rich.console.print(message)
        else:
            self._line(message)

    def cell_done(self, label: str, wall_s: float, *, failed: bool = False) -> None:
        self.done += 1
        status = "FAILED" if failed else f"done in {wall_s:.1f} s"
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done, description=f"last: {label}")
            if failed:
                self._rich.console.print(f"[red]{label}: FAILED")
        elif not self.quiet:
            elapsed = time.perf_counter() - self._start
            self._line(f"[{self.done}/{self.total}] {label}: {status} (elapsed {elapsed:.1f} s)")
