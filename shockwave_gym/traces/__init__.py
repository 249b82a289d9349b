"""Traces: loading, validating, writing, generating and sampling workloads.

One concept per module:

* :mod:`~shockwave_gym.traces.types` - the :class:`Trace` container;
* :mod:`~shockwave_gym.traces.fields` - the twelve trace fields and their checks;
* :mod:`~shockwave_gym.traces.validation` - whole-job checks (throughput coverage);
* :mod:`~shockwave_gym.traces.tsv` / :mod:`~shockwave_gym.traces.jsonl` - the two formats;
* :mod:`~shockwave_gym.traces.loader` - :func:`load_trace`, :func:`validate_trace`,
  :func:`save_trace`;
* :mod:`~shockwave_gym.traces.bundled` - bundled traces and name resolution;
* :mod:`~shockwave_gym.traces.generator` - :func:`generate_trace`;
* :mod:`~shockwave_gym.traces.sources` - :class:`TraceSource` and its implementations,
  handed to the environment.

Example::

    from shockwave_gym.traces import load_trace, BUNDLED_GPUS

    trace = load_trace("canonical-analogue-120", gpus=BUNDLED_GPUS["canonical-analogue-120"])
    trace.num_jobs, trace.jobs[0].arrival_s        # (120, 0.0)
"""

from shockwave_gym.traces import suite_names  # noqa: F401  (registers the suites' trace names)
from shockwave_gym.traces.bundled import (
    BUNDLED_CLUSTERS,
    BUNDLED_GPUS,
    BUNDLED_RECIPES,
    bundled_command,
    bundled_traces,
    resolve_cluster,
    resolve_gpus,
    resolve_trace_path,
)
from shockwave_gym.traces.generator import GeneratorConfig, generate_trace
from shockwave_gym.traces.loader import load_trace, save_trace, validate_trace
from shockwave_gym.traces.sources import FileTraceSource, GeneratedTraceSource, TraceSource
from shockwave_gym.traces.types import Trace

__all__ = [
    "BUNDLED_CLUSTERS",
    "BUNDLED_GPUS",
    "BUNDLED_RECIPES",
    "FileTraceSource",
    "GeneratedTraceSource",
    "GeneratorConfig",
    "Trace",
    "TraceSource",
    "bundled_command",
    "bundled_traces",
    "generate_trace",
    "load_trace",
    "resolve_cluster",
    "resolve_gpus",
    "resolve_trace_path",
    "save_trace",
    "validate_trace",
]
