"""The golden round-rule fixtures: a table where one epoch lasts exactly 1 s, and jobs and
simulators on it (docs/SEMANTICS.md, R1-R5)."""

from __future__ import annotations

from shockwave_gym.jobs import JobSpec
from shockwave_gym.simulator import SimConfig, Simulator
from shockwave_gym.throughput import ThroughputTable

MODEL, BATCH = "Transformer", 100


TABLE = ThroughputTable(
    {(MODEL, BATCH, g): 100.0 for g in (1, 2, 4, 8)}
    | {(MODEL, 2 * BATCH, g): 100.0 for g in (1, 2, 4, 8)},  # 200: 50 it/epoch -> 0.5 s
    source="golden table",
)


def job(job_id: int, iso_s: int, arrival_s: float = 0.0, gang: int = 1, mode: str = "static") -> JobSpec:
    """A job of exactly ``iso_s`` seconds of isolated work (``iso_s`` 1-second epochs)."""
    return JobSpec(job_id, MODEL, BATCH, total_iterations=100 * iso_s, gang=gang, mode=mode,
                   arrival_s=arrival_s)


def sim_of(*jobs: JobSpec, gpus: int = 1, **config) -> Simulator:
    return Simulator(list(jobs), SimConfig(gpus=gpus, **config), TABLE)
