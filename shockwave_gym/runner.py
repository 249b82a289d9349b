"""Run one episode of an agent on a trace, without Gymnasium.

This is the path the CLI, the harness and the benchmarks use: trace -> simulator -> the
agent's ``act(view)`` each round -> metrics. The Gymnasium env wraps the same simulator.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from shockwave_gym.config import DEFAULT_MAX_ROUNDS, SimConfig
from shockwave_gym.metrics import EpisodeResult, compute_metrics
from shockwave_gym.simulator import Simulator
from shockwave_gym.throughput import ThroughputTable


@dataclass
class EpisodeOutcome:
    result: EpisodeResult
    metrics: dict
    agent_stats: dict = field(default_factory=dict)
    wall_s: float = 0.0
    decision_wall_s: float = 0.0


def run_episode(
    trace,
    agent,
    config: SimConfig,
    throughputs: ThroughputTable | None = None,
    *,
    seed: int | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    oracle: bool = False,
    progress: bool | None = None,
) -> EpisodeOutcome:
    """Play ``agent`` on ``trace`` (a :class:`~shockwave_gym.traces.Trace`) to the end.

    ``progress=None`` shows a progress bar on stderr only when stderr is a terminal.
    """
    start = time.perf_counter()
    sim = Simulator(trace.jobs, config, throughputs, trace_name=trace.name, oracle=oracle)
    view = sim.view
    agent.reset(view, seed)
    decision_s = 0.0
    show = sys.stderr.isatty() if progress is None else progress
    bar = _ProgressBar(sim.num_jobs) if show else None
    while not sim.done and sim.round_index < max_rounds:
        t0 = time.perf_counter()
        choice = agent.act(view)
        decision_s += time.perf_counter() - t0
        sim.step(choice)
        if bar is not None:
            bar.update(sim)
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
