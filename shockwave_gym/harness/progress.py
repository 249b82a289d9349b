"""Progress of an evaluation: a live rich bar on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """Reports cells as they finish. Use as a context manager.

    ``enabled=None`` chooses from the stream: rich on a terminal, plain lines elsewhere
    (logs, CI, notebooks capture). ``enabled=False`` prints nothing.
    """

    def __init__(self, total: int, skipped: int = 0, *, enabled: bool | None = None, stream: TextIO | None = None):
        self.total, self.done = total, skipped
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = enabled is False
        self.live = not self.quiet and enabled is None and self.stream.isatty()
        self._start = time.perf_counter()
        self._rich = None
        self._task = None

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
        return self

    def __exit__(self, *exc) -> None:
        if self._rich is not None:
            self._rich.stop()

    def note(self, message: str) -> None:
        if self.quiet:
            return
        if self._rich is not None:
            self._rich.console.print(message)
        else:
            print(message, file=self.stream, flush=True)

    def cell_done(self, label: str, wall_s: float, *, failed: bool = False) -> None:
        self.done += 1
        status = "FAILED" if failed else f"done in {wall_s:.1f} s"
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done, description=f"last: {label}")
            if failed:
                self._rich.console.print(f"[red]{label}: FAILED")
        elif not self.quiet:
            elapsed = time.perf_counter() - self._start
            print(f"[{self.done}/{self.total}] {label}: {status} (elapsed {elapsed:.1f} s)", file=self.stream, flush=True)
