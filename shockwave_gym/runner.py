"""Run one episode of an agent on a trace, without Gymnasium.

This is the path the CLI, the harness and the benchmarks use: trace -> simulator -> the
agent's ``act(view)`` each round -> metrics. The Gymnasium env wraps the same simulator.

Long runs can be watched and stopped: ``on_round(status)`` is called with a
:class:`RoundStatus` after every round (:class:`ProgressLines` turns that into periodic
``round R, t=..., done D/N jobs, elapsed ..s`` lines), and ``should_stop()`` is asked before
every round; when it says yes the episode ends there, like a truncation
(``outcome.stopped``; the result holds what finished so far). Neither changes the schedule.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO

from shockwave_gym.config import SimConfig
from shockwave_gym.hetero_simulator import make_simulator
from shockwave_gym.metrics import EpisodeResult, compute_metrics
from shockwave_gym.regimes import Regime, apply_regime
from shockwave_gym.throughput import ThroughputTable, TypedThroughputs


@dataclass
class EpisodeOutcome:
    result: EpisodeResult
    metrics: dict
    agent_stats: dict = field(default_factory=dict)
    wall_s: float = 0.0
    decision_wall_s: float = 0.0
    #: ``should_stop()`` ended the episode early (the result is partial, like a truncation).
    stopped: bool = False


@dataclass(frozen=True)
class RoundStatus:
    """Where an episode is, after a round (what ``on_round`` receives)."""

    round_index: int  # rounds played so far
    time_s: float  # simulated time
    num_done: int  # jobs finished
    num_jobs: int
    elapsed_s: float  # wall-clock seconds since the episode started


class ProgressLines:
    """An ``on_round`` callback writing ``round R, t=Ts, done D/N jobs, elapsed Es`` to
    ``stream`` (default stderr) at most every ``every_s`` wall-clock seconds, for logs
    (a terminal gets the redrawn bar instead)."""

    def __init__(self, every_s: float, stream: TextIO | None = None):
        if not every_s > 0:
            raise ValueError(f"every_s must be > 0, got {every_s!r}")
        self.every_s, self.stream = float(every_s), stream
        self._next = float(every_s)
        self.lines = 0

    def __call__(self, status: RoundStatus) -> None:
        if status.elapsed_s < self._next:
            return
        self._next = status.elapsed_s + self.every_s
        self.lines += 1
        stream = sys.stderr if self.stream is None else self.stream
        stream.write(f"round {status.round_index}, t={status.time_s:,.0f}s, done {status.num_done}/{status.num_jobs} "
                     f"jobs, elapsed {status.elapsed_s:.1f}s\n")
        stream.flush()


def run_episode(
    trace,
    agent,
    config: SimConfig,
    throughputs: ThroughputTable | TypedThroughputs | None = None,
    *,
    seed: int | None = None,
    max_rounds: int | None = None,
    oracle: bool = False,
    progress: bool | None = None,
    on_round: Callable[[RoundStatus], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    regime: Regime | None = None,
) -> EpisodeOutcome:
    """Play ``agent`` on ``trace`` (a :class:`~shockwave_gym.traces.Trace`) to the end.

    ``config`` with a ``cluster`` runs the heterogeneous simulator (``throughputs`` then a
    :class:`TypedThroughputs`, one table taken as the V100 one, or ``None`` for the built-in
    tables); otherwise the homogeneous one (:func:`~shockwave_gym.hetero_simulator.make_simulator`).
    ``max_rounds=None`` is ``config.max_rounds``.

    ``progress=None`` shows a progress bar on stderr only when stderr is a terminal.
    ``on_round(status)`` runs after every round; ``should_stop()`` before every round, and
    a true answer ends the episode there (``outcome.stopped``; see the module docstring).
    ``regime`` (:class:`~shockwave_gym.regimes.Regime`, default: exact lengths, no early
    endings) sets what the agent may know of job lengths and which jobs end early.
    """
    start = time.perf_counter()
    if max_rounds is None:
        max_rounds = config.max_rounds
    jobs = apply_regime(trace.jobs, regime)
    sim = make_simulator(jobs, config, throughputs, trace_name=trace.name, oracle=oracle)
    view = sim.view
    agent.reset(view, seed)
    decision_s = 0.0
    show = sys.stderr.isatty() if progress is None else progress
    bar = _ProgressBar(sim.num_jobs) if show else None
    stopped = False
    while not sim.done and sim.round_index < max_rounds:
        if should_stop is not None and should_stop():
            stopped = True
            break
        t0 = time.perf_counter()
        choice = agent.act(view)
        decision_s += time.perf_counter() - t0
        sim.step(choice)
        if bar is not None:
            bar.update(sim)
        if on_round is not None:
            on_round(RoundStatus(sim.round_index, sim.time_s, sim.num_done, sim.num_jobs, time.perf_counter() - start))
    if bar is not None:
        bar.close()
    result = sim.result()
    metrics = compute_metrics(result)
    return EpisodeOutcome(
        result=result,
        metrics=metrics,
        agent_stats=agent.stats(),
        wall_s=time.perf_counter() - start,
        decision_wall_s=decision_s,
        stopped=stopped,
    )


class _ProgressBar:
    """Minimal stderr bar (jobs completed), redrawn at most ~10 times a second."""

    def __init__(self, total: int):
        self.total, self._last = total, 0.0

    def update(self, sim) -> None:
        now = time.monotonic()
        if now - self._last < 0.1 and not sim.done:
            return
        self._last = now
        done = sim.num_done
        width = 30
        filled = int(width * done / self.total)
        sys.stderr.write(
            f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} jobs, "
            f"round {sim.round_index}, t={sim.time_s:,.0f}s"
        )
        sys.stderr.flush()

    def close(self) -> None:
        sys.stderr.write("\n")
        sys.stderr.flush()
