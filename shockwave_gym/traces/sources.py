"""Trace sources: where an environment gets the trace of each episode.

Following Jumanji's generators, the environment takes a :class:`TraceSource` in its
constructor and calls :meth:`TraceSource.sample` with its own RNG at every reset, so the
environment's seed alone decides the episode's workload::

    from shockwave_gym.traces import FileTraceSource, GeneratedTraceSource, GeneratorConfig

    fixed = FileTraceSource("canonical-analogue-120")          # the same trace every reset
    varied = GeneratedTraceSource(                             # a fresh trace every reset
        GeneratorConfig(num_jobs=50, seed=0),
        num_jobs_range=(30, 80),
        arrival_rate_range_per_hour=(45.0, 180.0),
    )
"""

from __future__ import annotations

import abc
import dataclasses
import math
from pathlib import Path

import numpy as np

from shockwave_gym.errors import InputError
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces.generator import GeneratorConfig, generate_trace
from shockwave_gym.traces.loader import load_trace
from shockwave_gym.traces.types import Trace


class TraceSource(abc.ABC):
    """Produces the trace of an episode from the environment's RNG."""

    #: True when :meth:`sample` returns a new trace drawn from the RNG alone, with no state
    #: of the source's own, so a worker process can draw a cluster's next traces ahead from
    #: a copy of its RNG (the vector env's ``prefetch``). Read from the class that declares
    #: it, not inherited: a subclass overriding ``sample`` must declare it again.
    fresh_samples: bool = False

    @abc.abstractmethod
    def sample(self, rng: np.random.Generator) -> Trace:
        """A trace for one episode; must depend on nothing but ``rng`` and the source."""

    @property
    def max_num_jobs(self) -> int:
        """Upper bound on ``sample(...).num_jobs`` (for fixed-size, padded observations)."""
        raise NotImplementedError

    @property
    def elastic(self) -> bool:
        """Whether traces of this source may hold elastic jobs (docs/SEMANTICS.md, "Elastic
        jobs"); the native vector env batches only sources that never do."""
        return False

    def regime_of(self, trace: Trace):
        """The :class:`~shockwave_gym.regimes.Regime` ``trace`` runs in when the source
        decides it (a regime suite's traces); ``None``: the source does not."""
        return None


class FileTraceSource(TraceSource):
    """Always the same trace: loaded once from a file or bundled name, or given directly."""

    def __init__(
        self,
        trace: Trace | str | Path,
        throughputs: ThroughputTable | None = None,
        gpus: int | None = None,
    ):
        self.trace = trace if isinstance(trace, Trace) else load_trace(trace, throughputs, gpus)

    def sample(self, rng: np.random.Generator) -> Trace:
        return self.trace

    @property
    def max_num_jobs(self) -> int:
        return self.trace.num_jobs

    @property
    def elastic(self) -> bool:
        return any(job.gangs for job in self.trace.jobs)

    def __repr__(self) -> str:
        return f"FileTraceSource({self.trace.name!r}, {self.trace.num_jobs} jobs)"


class GeneratedTraceSource(TraceSource):
    """A freshly generated trace per sample, its seed drawn from the caller's RNG.

    ``config`` gives every generator parameter; its ``seed`` is replaced at each sample.
    For RL training, ``num_jobs_range`` (inclusive integers) and
    ``arrival_rate_range_per_hour`` (uniform) randomise the job count and arrival rate per
    sample; ``None`` keeps the config's value.
    """

    fresh_samples = True

    def __init__(
        self,
        config: GeneratorConfig,
        throughputs: ThroughputTable | None = None,
        num_jobs_range: tuple[int, int] | None = None,
        arrival_rate_range_per_hour: tuple[float, float] | None = None,
    ):
        if num_jobs_range is not None:
            lo, hi = num_jobs_range
            if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
                raise InputError(f"num_jobs_range needs integers 1 <= lo <= hi, got {num_jobs_range!r}")
        if arrival_rate_range_per_hour is not None:
            lo_rate, hi_rate = arrival_rate_range_per_hour
            if not (0 < lo_rate <= hi_rate < math.inf):
                raise InputError(
                    "arrival_rate_range_per_hour needs 0 < lo <= hi < inf, got "
                    f"{arrival_rate_range_per_hour!r}"
                )
        self.config = config
        self.throughputs = ThroughputTable.builtin_v100() if throughputs is None else throughputs
        self.num_jobs_range = num_jobs_range
        self.arrival_rate_range_per_hour = arrival_rate_range_per_hour

    def sample(self, rng: np.random.Generator) -> Trace:
        changes: dict[str, object] = {"seed": int(rng.integers(0, 2**63 - 1))}
        if self.num_jobs_range is not None:
            lo, hi = self.num_jobs_range
            changes["num_jobs"] = int(rng.integers(lo, hi + 1))
        if self.arrival_rate_range_per_hour is not None:
            lo_rate, hi_rate = self.arrival_rate_range_per_hour
            changes["arrival_rate_per_hour"] = float(rng.uniform(lo_rate, hi_rate))
        return generate_trace(dataclasses.replace(self.config, **changes), self.throughputs)

    @property
    def max_num_jobs(self) -> int:
        return self.config.num_jobs if self.num_jobs_range is None else self.num_jobs_range[1]

    @property
    def elastic(self) -> bool:
        return self.config.elastic_share > 0

    def __repr__(self) -> str:
        return (
            f"GeneratedTraceSource({self.config!r}, num_jobs_range={self.num_jobs_range!r}, "
            f"arrival_rate_range_per_hour={self.arrival_rate_range_per_hour!r})"
        )
