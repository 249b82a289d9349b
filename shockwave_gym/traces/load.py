"""A trace's offered load on a cluster, and a generated trace sized to a target load.

The offered load of a trace on ``G`` GPUs is the GPU-time its jobs ask for, spread over the
time in which they arrive::

    load = sum over jobs of gang_j * iso_j  /  (G * (last arrival - first arrival))

``iso_j`` is job ``j``'s isolated time in seconds (its run time alone on its gang, the
denominator of finish-time fairness). Below 1 the cluster keeps up with the arrivals; above 1
the queue grows until the arrivals stop. :func:`~shockwave_gym.traces.suites.offered_load`
is the same quantity in expectation, for a generator config.

The generator draws its inter-arrival gaps as the mean gap times fixed standard-exponential
draws and draws every job independently of the rate, so for one seed the load is inversely
proportional to the mean gap: :func:`generate_for_load` generates once, rescales the arrival
rate by ``target / load``, rounds it to 6 significant digits (so the rate can be passed on a
command line) and generates again; the achieved load is within 1e-4 (relative) of the
target, and is printed.
"""

from __future__ import annotations

import dataclasses

from shockwave_gym.errors import InputError
from shockwave_gym.profile import job_profile
from shockwave_gym.throughput import ThroughputTable
from shockwave_gym.traces.generator import GeneratorConfig, generate_trace
from shockwave_gym.traces.types import Trace


def offered_load_of_work(work_gpu_s: float, span_s: float, gpus: int) -> float:
    """The offered load of ``work_gpu_s`` GPU-seconds arriving over ``span_s`` seconds on
    ``gpus`` GPUs (see the module); ``inf`` when every job arrives at once."""
    if span_s <= 0:
        return float("inf")
    return work_gpu_s / (gpus * span_s)


def trace_offered_load(trace: Trace, gpus: int, throughputs: ThroughputTable | None = None) -> float:
    """Offered load of ``trace`` on ``gpus`` V100s (see the module); ``nan`` for one job."""
    table = ThroughputTable.builtin_v100() if throughputs is None else throughputs
    arrivals = [job.arrival_s for job in trace.jobs]
    span_s = max(arrivals) - min(arrivals)
    if span_s <= 0:
        return float("nan")
    work_gpu_s = sum(job.gang * job_profile(job, table).isolated_time_s for job in trace.jobs)
    return offered_load_of_work(work_gpu_s, span_s, gpus)


def generate_for_load(config: GeneratorConfig, gpus: int, load: float,
                      throughputs: ThroughputTable | None = None) -> tuple[Trace, GeneratorConfig]:
    """The trace of ``config`` (its seed, jobs and mixes) with the arrival rate that gives
    offered load ``load`` on ``gpus`` GPUs, and the config that generates it."""
    if not (isinstance(load, int | float) and 0 < load < float("inf")):
        raise InputError(f"--load must be a finite number > 0, got {load!r}")
    if config.num_jobs < 2:
        raise InputError("--load needs at least 2 jobs (one job has no arrival span)")
    if config.cluster is not None or config.arrival_rate_per_gpu_hour is not None:
        raise InputError("--load sizes a trace for --gpus V100s; with --cluster use --arrival-rate-per-gpu-hour")
    first = generate_trace(config, throughputs)
    rate = config.arrival_rate_per_hour * load / trace_offered_load(first, gpus, throughputs)
    sized = dataclasses.replace(config, arrival_rate_per_hour=float(f"{rate:.6g}"))
    return generate_trace(sized, throughputs), sized
