"""Progress lines and clean interruption for ``shockwave-gym run``.

:class:`EpisodeControl` is used around :func:`shockwave_gym.runner.run_episode`:

* when stderr is not a terminal (a log file, a pipe, a batch job), it prints
  ``round R, t=Ts, done D/N jobs, elapsed Es`` every ``--progress-every-s`` seconds
  (a terminal keeps the runner's redrawn bar);
* while the episode runs, SIGINT and SIGTERM stop it after the current round instead of
  killing the process. The command then writes what finished so far: ``--json`` gets
  ``"partial": true`` and ``"signal": "SIGINT"`` (or ``"SIGTERM"``), ``--jobs-csv`` only
  the finished jobs, ``--timeline-csv`` the rounds played, and it exits 128 + the signal
  number (130 for SIGINT, 143 for SIGTERM), as a shell reports a killed process. A second
  signal while writing aborts at once.
"""

from __future__ import annotations

import signal
import sys
import threading

from shockwave_gym.runner import ProgressLines, RoundStatus

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class EpisodeControl:
    """Context manager: ``hooks()`` go to ``run_episode``; afterwards ``annotate``,
    ``finished_jobs`` and ``exit_code`` shape the outputs (see the module docstring)."""

    def __init__(self, progress_every_s: float, stream=None):
        self.stream = sys.stderr if stream is None else stream
        show = progress_every_s > 0 and not self.stream.isatty()
        self.progress = ProgressLines(progress_every_s, self.stream) if show else None
        self.signum: int | None = None
        self._previous: dict[int, object] = {}
        self._round = 0

    # --- signals -------------------------------------------------------------------------

    def __enter__(self) -> EpisodeControl:
        if threading.current_thread() is threading.main_thread():
            for signum in STOP_SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum, frame) -> None:
        if self.signum is not None:  # a second signal: stop waiting
            self.__exit__()
            raise KeyboardInterrupt
        self.signum = signum
        self.stream.write(f"shockwave-gym: {signal.Signals(signum).name} received; stopping after round "
                          f"{self._round + 1} and writing partial results\n")
        self.stream.flush()

    # --- run_episode hooks ---------------------------------------------------------------

    def hooks(self) -> dict:
        return {"on_round": self._on_round, "should_stop": self.should_stop}

    def _on_round(self, status: RoundStatus) -> None:
        self._round = status.round_index
        if self.progress is not None:
            self.progress(status)

    def should_stop(self) -> bool:
        return self.signum is not None

    # --- outputs -------------------------------------------------------------------------

    @property
    def signal_name(self) -> str | None:
        return None if self.signum is None else signal.Signals(self.signum).name

    def annotate(self, record: dict) -> dict:
        """Add ``partial`` and ``signal`` to an interrupted run's record (in place)."""
        if self.signum is not None:
            record["partial"] = True
            record["signal"] = self.signal_name
        return record

    def finished_jobs(self, rows: list[dict]) -> list[dict]:
        """``jobs_table`` rows, only the finished jobs when interrupted."""
        if self.signum is None:
            return rows
        return [row for row in rows if row["completion_s"] is not None]

    @property
    def exit_code(self) -> int:
        return 0 if self.signum is None else 128 + int(self.signum)
