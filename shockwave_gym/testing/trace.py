"""``check_trace``: will this trace file load and simulate?

It runs the loader's full validation (every field of every line, then each job's profile:
schedule, reachable batch sizes, throughput coverage) and then builds the
:class:`~shockwave_gym.simulator.Simulator`, so a trace that passes is one the simulator
accepts. Usage::

    from shockwave_gym.testing import check_trace
    print(check_trace("my.jsonl", gpus=8).summary())
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from shockwave_gym.config import SimConfig
from shockwave_gym.errors import InputError, TraceError
from shockwave_gym.simulator import Simulator
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces import BUNDLED_GPUS, Trace, load_trace, validate_trace


class TraceCheckError(Exception):
    """The trace does not load or does not simulate; ``problems`` lists every finding, each
    naming the file, line and field."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        shown = "\n".join(f"  {p}" for p in problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        super().__init__(f"{len(problems)} problem(s):\n{shown}{more}")


@dataclass(frozen=True)
class TraceReport:
    """What :func:`check_trace` found for a trace that passed."""

    name: str
    num_jobs: int
    gpus: int
    isolated_gpu_hours: float
    span_h: float

    def summary(self) -> str:
        return (
            f"trace {self.name!r}: {self.num_jobs} jobs load and simulate on {self.gpus} GPUs; "
            f"{self.isolated_gpu_hours:,.1f} isolated GPU-hours, arrivals over {self.span_h:.2f} h"
        )


def check_trace(
    source: str | Path,
    *,
    gpus: int | None = None,
    throughputs: ThroughputTable | None = None,
) -> TraceReport:
    """Check trace file or bundled trace ``source`` on a cluster of ``gpus`` (a bundled
    trace's own size by default). Raises :class:`TraceCheckError` listing every problem."""
    if gpus is None:
        gpus = BUNDLED_GPUS.get(str(source))
        if gpus is None:
            raise TraceCheckError([f"{source}: gpus is required (only bundled traces have a default)"])
    table = throughputs if throughputs is not None else ThroughputTable.builtin_v100()
    problems = validate_trace(source, table, gpus)
    if problems:
        raise TraceCheckError([str(p) for p in problems])
    trace: Trace = load_trace(source, table, gpus)
    try:
        sim = Simulator(trace.jobs, SimConfig(gpus=gpus), table, trace_name=trace.name)
    except (InputError, TraceError) as exc:  # a gap between the loader's rules and the simulator's
        raise TraceCheckError([f"{source}: the simulator rejects it: {exc}"]) from None
    # the checker is not an agent: it may read the simulator's static arrays
    isolated_s = float((sim.static.isolated_time_s * sim.static.gang).sum())
    arrivals = [job.arrival_s for job in trace.jobs]
    return TraceReport(
        name=trace.name,
        num_jobs=trace.num_jobs,
        gpus=gpus,
        isolated_gpu_hours=isolated_s / 3600.0,
        span_h=(max(arrivals) - min(arrivals)) / 3600.0,
    )
